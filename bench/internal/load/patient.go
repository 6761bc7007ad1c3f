package load

import (
	"context"
	"errors"
	"time"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
)

// patientTries bounds the tries of Patiently.
const patientTries = 40

// Patiently runs f until it succeeds, fails for another reason than a busy or full
// server (Busy), has tried 40 times or ctx ends, waiting between tries as pkg/client's
// default Backoff does (100 ms doubling up to 10 s, with jitter). A bench's own clients
// are cooperative: a server whose admission turns them away for a moment must not fail
// the run.
func Patiently(ctx context.Context, f func() error) error {
	var b client.Backoff
	for n := 0; ; n++ {
		err := f()
		if err == nil || !Busy(err) || n+1 >= patientTries {
			return err
		}
		t := time.NewTimer(b.Delay(n, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// Busy reports whether err is a refusal that asks the client to come back later: the
// server or its listener is busy or full, or it closed the connection unanswered (a
// listener that refuses more connections at once than it answers).
func Busy(err error) bool {
	var code status.Code
	var ue *uacp.Error
	switch {
	case errors.As(err, &ue):
		code = ue.Code
	case errors.As(err, &code):
	default:
		return false
	}
	switch code.Sub() {
	case status.BadTcpServerTooBusy, status.BadTcpNotEnoughResources, status.BadServerTooBusy,
		status.BadTooManySessions, status.BadConnectionClosed:
		return true
	}
	return false
}
