package remote

import (
	"context"
	"slices"
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
	ctx   context.Context
	frame nodemgr.Frame // the request: Kind and the operation as Body; ID is set per call
	// hist receives the reply of a history operation, whose request holds no results
	// (history.go); nil for the others.
	hist     histResults
	done     func()
	finished atomic.Bool
	// stop stops the deadline's AfterFunc. It is set before the lanes see p and read
	// by everyone who finishes p but the AfterFunc itself, which may run before it is set.
	stop func() bool

	// encoding is held by a lane while it reads the request (to encode or merge it):
	// the operation belongs to the server again once done is called, so done waits for
	// the lane to be through with it.
	encoding sync.Mutex
}

// finish claims the right to answer p; only the first caller gets it.
func (p *pending) finish() bool {
	if !p.finished.CompareAndSwap(false, true) {
		return false
	}
	if p.stop != nil {
		p.stop()
	}
	return true
}

// end answers every item of p with code, unless p is answered already.
func (p *pending) end(code status.Code) {
	if p.finish() {
		p.fail(code)
	}
}

// expire answers every item of p with BadTimeout, unless p is answered already: the
// deadline's AfterFunc, which leaves stop alone.
func (p *pending) expire() {
	if p.finished.CompareAndSwap(false, true) {
		p.fail(status.BadTimeout)
	}
}

// fail answers every item of p, which the caller finished, with code.
func (p *pending) fail(code status.Code) {
	if p.hist != nil {
		p.hist.fill(code)
	} else {
		fill(p.frame.Body, code)
	}
	p.encoding.Lock()
	p.encoding.Unlock() //lint:ignore SA2001 an empty critical section: waits for the lane to be through with the request
	p.done()
}

// answer fills p's results from a reply, or with BadCommunicationError when they do not
// fit the request, unless p is answered already; it reports whether p's done is still
// to be called, which the caller does.
func (p *pending) answer(results nodemgr.Body) bool {
	if !p.finish() {
		return false
	}
	switch {
	case p.hist != nil:
		if !p.hist.apply(results) {
			p.hist.fill(status.BadCommunicationError)
		}
	case !apply(p.frame.Body, results):
		fill(p.frame.Body, status.BadCommunicationError)
	}
	return true
}

// fill answers every item of the operation op with code.
func fill(op nodemgr.Body, code status.Code) {
	switch op := op.(type) {
	case *nodemgr.ReadOp:
		for i := range op.Results {
			op.Results[i] = codec.DataValue{Status: code}
		}
	case *nodemgr.WriteOp:
		for i := range op.Results {
			op.Results[i] = code
		}
	case *nodemgr.BrowseOp:
		for i := range op.Results {
			op.Results[i] = nodemgr.BrowseResult{Status: code}
		}
	case *nodemgr.CallOp:
		for i := range op.Results {
			op.Results[i] = ua.CallMethodResult{StatusCode: code}
		}
	}
}

// apply copies the results of a reply into the operation op; false when they are not
// the results of op (another kind, another count).
func apply(op, results nodemgr.Body) bool {
	switch op := op.(type) {
	case *nodemgr.ReadOp:
		if r, ok := results.(*nodemgr.ReadResults); ok && len(r.Results) == len(op.Results) {
			copy(op.Results, r.Results)
			return true
		}
	case *nodemgr.WriteOp:
		if r, ok := results.(*nodemgr.WriteResults); ok && len(r.Results) == len(op.Results) {
			copy(op.Results, r.Results)
			return true
		}
	case *nodemgr.BrowseOp:
		if r, ok := results.(*nodemgr.BrowseResults); ok && len(r.Results) == len(op.Results) {
			copy(op.Results, r.Results)
			return true
		}
	case *nodemgr.CallOp:
		if r, ok := results.(*nodemgr.CallResults); ok && len(r.Results) == len(op.Results) {
			copy(op.Results, r.Results)
			return true
		}
	}
	return false
}

// enqueue queues an operation for the lanes, or answers it at once: BadShutdown after
// Close, BadNotConnected while no guest is connected, BadResourceUnavailable past
// MaxOutstanding, BadTimeout when its context has ended.
func (m *Manager) enqueue(ctx context.Context, kind nodemgr.Kind, op nodemgr.Body, done func()) {
	m.submit(&pending{ctx: ctx, frame: nodemgr.Frame{Kind: kind, Body: op}, done: done})
}

// submit queues p for the lanes, or answers it at once (enqueue).
func (m *Manager) submit(p *pending) {
	ctx := p.ctx
	if err := ctx.Err(); err != nil {
		p.end(status.BadTimeout)
		return
	}
	if ctx.Done() != nil {
		// Set before the lanes can see p: finish reads it without a lock.
		p.stop = context.AfterFunc(ctx, p.expire)
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

// The operations of the served manager. One the guest does not implement is answered
// with the code the server gives a manager without it (not reached through Served).

func (m *Manager) read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	m.operate(ctx, nodemgr.KindRead, nodemgr.CapRead, status.BadNotReadable, op, done)
}

func (m *Manager) write(ctx context.Context, op *nodemgr.WriteOp, done func()) {
	m.operate(ctx, nodemgr.KindWrite, nodemgr.CapWrite, status.BadNotWritable, op, done)
}

func (m *Manager) browse(ctx context.Context, op *nodemgr.BrowseOp, done func()) {
	m.operate(ctx, nodemgr.KindBrowse, nodemgr.CapBrowse, status.BadNodeIdUnknown, op, done)
}

func (m *Manager) call(ctx context.Context, op *nodemgr.CallOp, done func()) {
	m.operate(ctx, nodemgr.KindCall, nodemgr.CapCall, status.BadNotExecutable, op, done)
}

func (m *Manager) operate(ctx context.Context, kind nodemgr.Kind, capability nodemgr.Capabilities, without status.Code, op nodemgr.Body, done func()) {
	if m.info.Capabilities&capability == 0 {
		fill(op, without)
		done()
		return
	}
	m.enqueue(ctx, kind, op, done)
}

// samePrincipal reports whether a and b are the same asker, so that their Reads may
// travel as one.
func samePrincipal(a, b *nodemgr.Principal) bool {
	return a.SessionID == b.SessionID && a.Anonymous == b.Anonymous && a.UserName == b.UserName &&
		a.Thumbprint == b.Thumbprint && slices.Equal(a.Roles, b.Roles)
}
