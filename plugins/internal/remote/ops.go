package remote

import (
	"context"
	"sync"
	"sync/atomic"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// pending is one operation on its way to a guest. Whoever finishes it first (the lane
// with the reply, the deadline, Close) answers it: finished guards the results.
type pending struct {
	ctx      context.Context
	frame    nodemgr.Frame // the request; its ID is set per call
	fill     func(status.Code)
	apply    func(reply nodemgr.Body) bool // false: the reply does not answer the request
	done     func()
	finished atomic.Bool
	stop     atomic.Pointer[func() bool] // stops the deadline's AfterFunc

	// encoding is held by a lane while it encodes the request: the operation belongs to
	// the server again once done is called, so done waits for the encoding to end.
	encoding sync.Mutex
}

// finish claims the right to answer p; only the first caller gets it.
func (p *pending) finish() bool {
	if !p.finished.CompareAndSwap(false, true) {
		return false
	}
	if stop := p.stop.Load(); stop != nil {
		(*stop)()
	}
	return true
}

// end answers every item of p with code, unless p is answered already.
func (p *pending) end(code status.Code) {
	if p.finish() {
		p.fill(code)
		p.encoding.Lock()
		p.encoding.Unlock() //nolint:staticcheck // an empty critical section: waits for the lane's encoding
		p.done()
	}
}

// answer answers p with reply, or with BadCommunicationError when the reply does not
// fit the request, unless p is answered already.
func (p *pending) answer(reply nodemgr.Body) {
	if !p.finish() {
		return
	}
	if !p.apply(reply) {
		p.fill(status.BadCommunicationError)
	}
	p.done()
}

// enqueue queues p for the lanes, or answers it at once: BadShutdown after Close,
// BadNotConnected while no guest is connected, BadResourceUnavailable past
// MaxOutstanding, BadTimeout when its context has ended.
func (m *Manager) enqueue(p *pending) {
	if err := p.ctx.Err(); err != nil {
		p.end(status.BadTimeout)
		return
	}
	if p.ctx.Done() != nil {
		stop := context.AfterFunc(p.ctx, func() { p.end(status.BadTimeout) })
		p.stop.Store(&stop)
		if p.finished.Load() {
			stop() // answered before the AfterFunc was kept
		}
	}
	m.mu.Lock()
	var refuse status.Code
	switch {
	case m.closed:
		refuse = status.BadShutdown
	case m.ready == 0:
		refuse = status.BadNotConnected
	case m.outstanding >= m.cfg.MaxOutstanding:
		refuse = status.BadResourceUnavailable
	}
	if refuse != 0 {
		m.mu.Unlock()
		p.end(refuse)
		return
	}
	m.outstanding++
	m.queue = append(m.queue, p)
	m.wake.Broadcast() // lanes of slots that are down wait too: Signal could wake only one of them
	m.mu.Unlock()
}

// read reads through the guests (nodemgr.Reader of the served manager).
func (m *Manager) read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	fill := func(code status.Code) {
		for i := range op.Results {
			op.Results[i] = codec.DataValue{Status: code}
		}
	}
	if m.info.Capabilities&nodemgr.CapRead == 0 {
		fill(status.BadNotReadable)
		done()
		return
	}
	m.enqueue(&pending{ctx: ctx, frame: nodemgr.Frame{Kind: nodemgr.KindRead, Body: op}, fill: fill, done: done,
		apply: func(b nodemgr.Body) bool {
			r, ok := b.(*nodemgr.ReadResults)
			if !ok || len(r.Results) != len(op.Results) {
				return false
			}
			copy(op.Results, r.Results)
			return true
		}})
}

// write writes through the guests (nodemgr.Writer of the served manager).
func (m *Manager) write(ctx context.Context, op *nodemgr.WriteOp, done func()) {
	fill := func(code status.Code) {
		for i := range op.Results {
			op.Results[i] = code
		}
	}
	if m.info.Capabilities&nodemgr.CapWrite == 0 {
		fill(status.BadNotWritable)
		done()
		return
	}
	m.enqueue(&pending{ctx: ctx, frame: nodemgr.Frame{Kind: nodemgr.KindWrite, Body: op}, fill: fill, done: done,
		apply: func(b nodemgr.Body) bool {
			r, ok := b.(*nodemgr.WriteResults)
			if !ok || len(r.Results) != len(op.Results) {
				return false
			}
			copy(op.Results, r.Results)
			return true
		}})
}

// browse browses through the guests (nodemgr.Browser of the served manager).
func (m *Manager) browse(ctx context.Context, op *nodemgr.BrowseOp, done func()) {
	fill := func(code status.Code) {
		for i := range op.Results {
			op.Results[i] = nodemgr.BrowseResult{Status: code}
		}
	}
	if m.info.Capabilities&nodemgr.CapBrowse == 0 {
		fill(status.BadNodeIdUnknown)
		done()
		return
	}
	m.enqueue(&pending{ctx: ctx, frame: nodemgr.Frame{Kind: nodemgr.KindBrowse, Body: op}, fill: fill, done: done,
		apply: func(b nodemgr.Body) bool {
			r, ok := b.(*nodemgr.BrowseResults)
			if !ok || len(r.Results) != len(op.Results) {
				return false
			}
			copy(op.Results, r.Results)
			return true
		}})
}

// call calls methods through the guests (nodemgr.Caller of the served manager).
func (m *Manager) call(ctx context.Context, op *nodemgr.CallOp, done func()) {
	fill := func(code status.Code) {
		for i := range op.Results {
			op.Results[i] = callResult(code)
		}
	}
	if m.info.Capabilities&nodemgr.CapCall == 0 {
		fill(status.BadNotExecutable)
		done()
		return
	}
	m.enqueue(&pending{ctx: ctx, frame: nodemgr.Frame{Kind: nodemgr.KindCall, Body: op}, fill: fill, done: done,
		apply: func(b nodemgr.Body) bool {
			r, ok := b.(*nodemgr.CallResults)
			if !ok || len(r.Results) != len(op.Results) {
				return false
			}
			copy(op.Results, r.Results)
			return true
		}})
}

// callResult is the result of a call that failed as a whole.
func callResult(code status.Code) ua.CallMethodResult { return ua.CallMethodResult{StatusCode: code} }
