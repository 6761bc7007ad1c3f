package client

import (
	"errors"
	"fmt"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// StatusError is a service call that failed as a whole: the server answered with a
// ServiceFault or a Bad ServiceResult, or the client gave up (BadTimeout,
// BadSecureChannelClosed, ...). errors.Is(err, status.BadXxx) holds for its Code.
// Per-item results (a Read of an unknown node) are not errors: they stay in the results.
type StatusError struct {
	// Service names the request, e.g. "Read" or "ActivateSession".
	Service string
	// Code is the ServiceResult, or the status the client failed with.
	Code status.Code
	// RetryAfter is the server's RetryAfterMs hint (AdditionalHeader) sent with
	// BadServerTooBusy or BadTooManySessions; zero when it sent none.
	RetryAfter time.Duration
	// Err is the underlying cause, if any (a transport error, a context error).
	Err error
}

// Error returns the service, the status name and the cause.
func (e *StatusError) Error() string {
	s := "client: " + e.Service + ": " + e.Code.Error()
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the status code and the cause, so that errors.Is matches either.
func (e *StatusError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Code}
	}
	return []error{e.Code, e.Err}
}

// statusError wraps err from a call of service. A ServiceFault carried in resp gives the
// code and the RetryAfterMs hint; otherwise the first status.Code found in err does.
func statusError(service string, resp codec.Structure, err error) *StatusError {
	e := &StatusError{Service: service, Code: status.BadUnexpectedError, Err: err}
	if f, ok := resp.(*ua.ServiceFault); ok {
		e.Err = nil // says no more than the fault's code
		e.Code = f.ResponseHeader.ServiceResult
		e.RetryAfter = retryAfter(&f.ResponseHeader)
		if e.Code.IsGood() {
			e.Code = status.BadUnexpectedError
		}
		return e
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se
	}
	var c status.Code
	if errors.As(err, &c) {
		e.Code = c
	}
	return e
}

// retryAfterKey is the AdditionalParametersType key of the retry hint (the OPC Foundation
// .NET stack's RetryAfterMs, Int64 milliseconds).
const retryAfterKey = "RetryAfterMs"

// retryAfter returns the RetryAfterMs hint of h, or zero.
func retryAfter(h *ua.ResponseHeader) time.Duration {
	p, ok := h.AdditionalHeader.Value.(*ua.AdditionalParametersType)
	if !ok {
		return 0
	}
	for i := range p.Parameters {
		kv := &p.Parameters[i]
		if kv.Key.Name != retryAfterKey || kv.Key.NamespaceIndex != 0 {
			continue
		}
		var ms int64
		switch kv.Value.Type() {
		case codec.TypeInt64, codec.TypeInt32, codec.TypeUInt32, codec.TypeUInt64, codec.TypeInt16, codec.TypeUInt16:
			ms = int64(kv.Value.Bits())
			if kv.Value.Type() == codec.TypeInt32 {
				ms = int64(int32(kv.Value.Bits()))
			}
		default:
			continue
		}
		if ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return 0
}
