package pipeline

import (
	"errors"
	"log/slog"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/telemetry"
)

// Answerer sends the answers of requests and tells an observer of each (the diagnostics
// count them), and another of each answer sent (the service latency). It is safe for
// concurrent use.
type Answerer struct {
	now     func() time.Time
	log     *slog.Logger
	observe func(req, resp codec.Structure)
	served  func(req uasc.Request)
	panics  *telemetry.Panics
}

// Respond sends msg in answer to req; a failure means the channel is gone, which the
// channel's own goroutine reports, or that msg's encoding panicked (notSent).
func (a *Answerer) Respond(req uasc.Request, msg codec.Structure) {
	if a.observe != nil {
		a.observe(req.Message, msg)
	}
	if err := req.Respond(msg); err != nil {
		a.notSent(req, err)
	} else if a.served != nil {
		a.served(req)
	}
}

// RespondNoWait is Respond for a caller that answers many channels from one goroutine
// (published notifications): no answer waits on its peer's socket
// (uasc.Request.RespondNoWait).
func (a *Answerer) RespondNoWait(req uasc.Request, msg codec.Structure) {
	if a.observe != nil {
		a.observe(req.Message, msg)
	}
	if err := req.RespondNoWait(msg); err != nil {
		a.notSent(req, err)
	} else if a.served != nil {
		a.served(req)
	}
}

// notSent tells of an answer that was not sent: a panic in its encoding, which the
// channel answered with BadInternalError in its stead (uasc.EncodePanic), is reported
// with its stack; otherwise the channel is gone.
func (a *Answerer) notSent(req uasc.Request, err error) {
	if ep, ok := errors.AsType[*uasc.EncodePanic](err); ok {
		a.panics.Report(telemetry.PlaceEncode, ep.Value, ep.Stack)
		return
	}
	a.log.Debug("response not sent", "channel", req.Channel.ID(), "err", err)
}

// Header returns the ResponseHeader answering h with result, now.
func (a *Answerer) Header(h ua.RequestHeader, result status.Code) ua.ResponseHeader {
	return HeaderAt(h, result, a.now())
}

// HeaderAt returns the ResponseHeader answering h with result, sent at t.
func HeaderAt(h ua.RequestHeader, result status.Code, t time.Time) ua.ResponseHeader {
	return ua.ResponseHeader{
		Timestamp:     codec.DateTimeOf(t),
		RequestHandle: h.RequestHandle,
		ServiceResult: result,
	}
}

// Fault returns a ServiceFault answering h with code (Part 4 §7.33).
func (a *Answerer) Fault(h ua.RequestHeader, code status.Code) *ua.ServiceFault {
	return &ua.ServiceFault{ResponseHeader: a.Header(h, code)}
}

// TimeOf returns the current time for a request answered at once: the time it was read
// (microseconds ago, one clock reading shared by the requests of one system call, on the
// server's clock), or now when the request was not read from a channel.
func (a *Answerer) TimeOf(req uasc.Request) time.Time {
	if !req.Received.IsZero() {
		return req.Received
	}
	return a.now()
}

// retryAfterHeader returns the AdditionalHeader that tells a client how long to wait
// before it retries: an AdditionalParametersType (Part 4 §7.1) with the parameter
// RetryAfterMs, a whole number of milliseconds as Int64, as the OPC Foundation .NET
// stack sends it with BadServerTooBusy (UA-.NETStandard Docs/RetryAfterSignaling.md).
func retryAfterHeader(d time.Duration) codec.ExtensionObject {
	return codec.NewExtensionObject(&ua.AdditionalParametersType{Parameters: []ua.KeyValuePair{{
		Key:   codec.QualifiedName{Name: retryAfterKey},
		Value: codec.Int64Variant(d.Milliseconds()),
	}}})
}

// retryAfterKey is the name of the RetryAfterMs parameter of an AdditionalHeader.
const retryAfterKey = "RetryAfterMs"

// CheckCount returns the ServiceResult for a request of n operations with limit max:
// BadNothingToDo for none, BadTooManyOperations above the limit (Part 4 §7.34).
func CheckCount(n, max int) status.Code {
	switch {
	case n == 0:
		return status.BadNothingToDo
	case max > 0 && n > max:
		return status.BadTooManyOperations
	}
	return status.Good
}

// CodeOf returns the status.Code an error carries, or def.
func CodeOf(err error, def status.Code) status.Code {
	var c status.Code
	if errors.As(err, &c) {
		return c
	}
	return def
}
