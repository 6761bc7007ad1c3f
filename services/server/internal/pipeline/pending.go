package pipeline

import (
	"context"
	"sync"
	"sync/atomic"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/telemetry"
)

// Pending is a request handed to the request queue: it is answered once, by its job, by
// its deadline (RequestHeader.TimeoutHint after receipt, Part 4 §7.32) with BadTimeout,
// or not at all when the channel ends first. An answer after the first is dropped.
type Pending struct {
	a   *Answerer
	req uasc.Request
	h   ua.RequestHeader
	// Ctx ends when the request is answered, times out or its channel ends; node
	// managers get it.
	Ctx      context.Context
	cancel   context.CancelFunc
	stopTime func() bool // stops the deadline's answer; nil without a deadline
	answered atomic.Bool
	// held is what the request holds of the admission until its context ends; lent says
	// its units are lent while it waits on the network (Request.Away). The context's end
	// may release it meanwhile: hmu orders the two.
	hmu  sync.Mutex
	held hold
	lent bool
}

// release gives back what the request holds of the admission; a second call does
// nothing.
func (p *Pending) release() {
	p.hmu.Lock()
	h, lent := p.held, p.lent
	p.held, p.lent = hold{}, false
	p.hmu.Unlock()
	switch {
	case h.ledger == nil:
	case lent:
		h.ledger.ReleaseLent(h.charge)
	default:
		h.ledger.Release(h.charge)
	}
}

// lend lends the units the request holds while it waits on the network.
func (p *Pending) lend() {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	if p.held.ledger != nil && !p.lent {
		p.lent = p.held.ledger.Lend(p.held.charge)
	}
}

// unlend takes the lent units back, unless the request was released meanwhile.
func (p *Pending) unlend() {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	if p.lent {
		p.lent = false
		p.held.ledger.Return(p.held.charge)
	}
}

// Answer sends msg unless the request was answered already; it reports whether it sent.
func (p *Pending) Answer(msg codec.Structure) bool {
	if !p.answered.CompareAndSwap(false, true) {
		return false
	}
	if p.stopTime != nil {
		p.stopTime()
	}
	p.cancel()
	p.a.Respond(p.req, msg)
	return true
}

// timeout answers BadTimeout unless the request was answered already. It runs when the
// deadline passes and does not touch stopTime, which may not be set yet.
func (p *Pending) timeout() {
	if p.answered.CompareAndSwap(false, true) {
		p.a.Respond(p.req, p.a.Fault(p.h, status.BadTimeout))
	}
}

// Done reports whether the request was answered (or timed out) already, so that work
// that finds it so can be skipped.
func (p *Pending) Done() bool { return p.answered.Load() }

// Recover is for the done callbacks of node managers, which may run on the managers'
// goroutines: deferred directly by the callback (defer p.Recover()), it recovers from a
// panic of the answer the callback builds, reports it (telemetry.PlaceDone) and answers
// the request with BadInternalError unless it was answered already.
func (p *Pending) Recover() {
	if v := recover(); v != nil {
		p.failed(telemetry.PlaceDone, v)
	}
}

// recovered is deferred where the request's job runs: Recover, at place.
func (p *Pending) recovered(place telemetry.Place) {
	if v := recover(); v != nil {
		p.failed(place, v)
	}
}

// failed reports v, a panic recovered at place, and answers the request with
// BadInternalError unless it was answered already.
func (p *Pending) failed(place telemetry.Place, v any) {
	p.a.panics.Recovered(place, v)
	p.Answer(p.a.Fault(p.h, status.BadInternalError))
}

// Header returns the ResponseHeader answering the request with result.
func (p *Pending) Header(result status.Code) ua.ResponseHeader { return p.a.Header(p.h, result) }
