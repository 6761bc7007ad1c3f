package client

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"uastack.dev/pkg/status"
)

// Backoff is the bounded exponential backoff with jitter between connection attempts
// (Dial and reconnect). The delay before retry n (from 0) is Initial·2ⁿ capped at Max, less
// up to Jitter of itself at random, and never less than a RetryAfterMs hint the server
// sent. The zero value takes the defaults below.
type Backoff struct {
	// Initial is the first delay; zero means 100 ms.
	Initial time.Duration
	// Max caps the exponential part; zero means 10 s. A server hint may exceed it.
	Max time.Duration
	// Jitter is the fraction taken off at random, in [0, 1]; zero means 0.25, a
	// negative value none.
	Jitter float64
	// Attempts bounds the connection attempts; zero means 5, a negative value no bound
	// (the context still ends the wait).
	Attempts int
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 100 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 10 * time.Second
	}
	if b.Jitter == 0 {
		b.Jitter = 0.25
	}
	b.Jitter = min(max(b.Jitter, 0), 1)
	if b.Attempts == 0 {
		b.Attempts = 5
	}
	return b
}

// Delay returns the wait before retry n (from 0) given the server's hint (zero for none).
func (b Backoff) Delay(n int, hint time.Duration) time.Duration {
	b = b.withDefaults()
	d := b.Initial
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	d -= time.Duration(rand.Float64() * b.Jitter * float64(d))
	return max(d, hint)
}

// retryable reports whether a failed connection attempt is worth another: the server
// was busy or full (BadTcpServerTooBusy is the ERR of a listener's connection rate,
// Part 6 §7.1.5), or the network failed. A refusal on security or identity is final.
func retryable(err error) bool {
	if lost := (*lostSession)(nil); errors.As(err, &lost) {
		return true
	}
	var c status.Code
	if errors.As(err, &c) {
		switch c.Sub() {
		case status.BadServerTooBusy, status.BadTooManySessions, status.BadTcpNotEnoughResources, status.BadTcpServerTooBusy,
			status.BadTimeout, status.BadSecureChannelClosed, status.BadConnectionClosed,
			status.BadServerHalted, status.BadShutdown, status.BadCommunicationError,
			status.BadTcpInternalError, status.BadNotConnected, status.BadServerNotConnected:
			return true
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// lostSession is the error of an ActivateSession whose new session the server gave up
// before it was activated (BadSessionIdInvalid, BadSessionClosed): unlike those codes
// for a session in use, worth another attempt with a fresh session.
type lostSession struct{ err error }

func (e *lostSession) Error() string {
	return e.err.Error() + " (the new session was given up before it was activated)"
}
func (e *lostSession) Unwrap() error { return e.err }

// hintOf returns the RetryAfterMs hint carried by err, or zero.
func hintOf(err error) time.Duration {
	var se *StatusError
	if errors.As(err, &se) {
		return se.RetryAfter
	}
	return 0
}

// retry runs attempt until it succeeds, fails for good, the attempts are spent or ctx
// ends, sleeping b.Delay between tries. onRetry, if set, hears of each retry first.
func retry(ctx context.Context, b Backoff, onRetry func(error, time.Duration), attempt func() error) error {
	b = b.withDefaults()
	for n := 0; ; n++ {
		err := attempt()
		if err == nil {
			return nil
		}
		if !retryable(err) || (b.Attempts > 0 && n+1 >= b.Attempts) {
			return err
		}
		d := b.Delay(n, hintOf(err))
		if onRetry != nil {
			onRetry(err, d)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// connectionLost reports whether err says the connection under a channel failed (a
// write to a closed socket may report it before the reading goroutine does).
func connectionLost(err error) bool {
	var ne net.Error
	return errors.Is(err, status.BadConnectionClosed) || errors.Is(err, status.BadSecureChannelClosed) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.As(err, &ne)
}
