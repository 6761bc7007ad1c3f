package main

import (
	"context"
	"errors"
	"time"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
)

// patientTries bounds the tries of patiently.
const patientTries = 40

// patiently runs f until it succeeds, fails for another reason than a busy or full server,
// has tried patientTries times or ctx ends, waiting between tries as pkg/client's Backoff
// does (its defaults: 100 ms doubling up to 10 s, with jitter). The bench's own clients,
// the established sessions and the set-up of the storm process, are cooperative too: a
// server whose admission turns them away for a moment must not fail the run.
func patiently(ctx context.Context, f func() error) error {
	var b client.Backoff
	for n := 0; ; n++ {
		err := f()
		if err == nil || !busy(err) || n+1 >= patientTries {
			return err
		}
		if !sleepUntil(ctx, time.Now().Add(b.Delay(n, 0))) {
			return errors.Join(err, ctx.Err())
		}
	}
}

// busy reports whether err is a refusal that asks the client to come back later: the
// server or its listener is busy or full, or it closed the connection unanswered (a
// listener that refuses more connections at once than it answers).
func busy(err error) bool {
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
