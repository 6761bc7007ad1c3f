package routing

import (
	"context"
	"fmt"
	"sync/atomic"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/telemetry"
)

// owner is a node manager as the server routes to it: the capabilities it has, found by
// type assertion once, when it is mounted. A missing capability answers each item with a
// Bad StatusCode (see the nodemgr package doc).
type owner struct {
	name    string // for errors: the manager's type or configured name
	local   bool   // the server's own address space, answered on the channel's goroutine
	reader  nodemgr.Reader
	writer  nodemgr.Writer
	browser nodemgr.Browser
	caller  nodemgr.Caller
	// history and historyEvents are the manager's history.Store and EventStore, which
	// serve the history of its nodes (History).
	history       history.Store
	historyEvents history.EventStore
	// watch delivers the watch set of a started nodemgr.Watcher; nil otherwise.
	watch *watcher
	// panics is told of the panics of the manager's methods (Routes.SetPanics).
	panics *telemetry.Panics
}

// Named is a node manager with the name logs, errors and metrics give it: its
// configuration entry's name (addressSpace.nodeManagers[].name), or its Go type for one
// mounted from code (Unnamed).
type Named struct {
	Name    string
	Manager nodemgr.Manager
	// Setting is the configuration entry it comes from, for errors; empty for one
	// mounted from code.
	Setting string
}

// Unnamed names managers by their Go types.
func Unnamed(ms ...nodemgr.Manager) []Named {
	out := make([]Named, len(ms))
	for i, m := range ms {
		out[i] = Named{Name: fmt.Sprintf("%T", m), Manager: m}
	}
	return out
}

func newOwner(name string, m nodemgr.Manager, local bool) *owner {
	o := &owner{name: name, local: local}
	o.reader, _ = m.(nodemgr.Reader)
	o.writer, _ = m.(nodemgr.Writer)
	o.browser, _ = m.(nodemgr.Browser)
	o.caller, _ = m.(nodemgr.Caller)
	if !local {
		o.history, _ = m.(history.Store)
		if o.history != nil {
			o.historyEvents, _ = m.(history.EventStore)
		}
	}
	return o
}

func (o *owner) read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	if o.reader == nil {
		fill(op.Results, codec.DataValue{Status: status.BadNotReadable})
		done()
		return
	}
	o.guard(func(done func()) { o.reader.Read(ctx, op, done) },
		func() { fill(op.Results, codec.DataValue{Status: status.BadInternalError}) }, done)
}

func (o *owner) write(ctx context.Context, op *nodemgr.WriteOp, done func()) {
	if o.writer == nil {
		fill(op.Results, status.BadNotWritable)
		done()
		return
	}
	o.guard(func(done func()) { o.writer.Write(ctx, op, done) },
		func() { fill(op.Results, status.BadInternalError) }, done)
}

func (o *owner) browse(ctx context.Context, op *nodemgr.BrowseOp, done func()) {
	if o.browser == nil {
		fill(op.Results, nodemgr.BrowseResult{Status: status.BadNodeIdUnknown})
		done()
		return
	}
	o.guard(func(done func()) { o.browser.Browse(ctx, op, done) },
		func() { fill(op.Results, nodemgr.BrowseResult{Status: status.BadInternalError}) }, done)
}

func (o *owner) call(ctx context.Context, op *nodemgr.CallOp, done func()) {
	if o.caller == nil {
		fill(op.Results, ua.CallMethodResult{StatusCode: status.BadNotExecutable})
		done()
		return
	}
	o.guard(func(done func()) { o.caller.Call(ctx, op, done) },
		func() { fill(op.Results, ua.CallMethodResult{StatusCode: status.BadInternalError}) }, done)
}

// fill sets every result to r.
func fill[R any](results []R, r R) {
	for i := range results {
		results[i] = r
	}
}

// guard runs method, a call of one of the manager's methods with the done callback it
// is given, so that a manager that panics is one failed operation, not a dead server:
// the panic is reported (telemetry.PlaceNodeManager, naming the manager), fail answers
// every item of the operation (BadInternalError) and done is called; a done the manager
// called before it panicked, or calls later from a goroutine of its own, is ignored.
//
// The manager's done takes effect once it was called and the method has returned, so
// that one called by a deferred statement of a method that panics, its results half
// filled in, never answers. The manager must not touch the operation after it panicked;
// one that does races with fail. done itself runs guarded (telemetry.PlaceDone): it may
// run on the manager's goroutine, where nothing else would recover.
func (o *owner) guard(method func(done func()), fail func(), done func()) {
	c := &completion{done: done, panics: o.panics}
	if o.run(method, c.called) {
		fail()
		c.fire()
		return
	}
	c.returned()
}

// run calls method with done and reports whether it panicked.
func (o *owner) run(method func(done func()), done func()) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			o.panics.Recovered(telemetry.PlaceNodeManager, v, "nodeManager", o.name)
			panicked = true
		}
	}()
	method(done)
	return false
}

// completion is the done callback of one call of a manager's method: it fires once the
// manager called it and the method returned, in whichever order, or once the method
// panicked.
type completion struct {
	state  atomic.Uint32 // completionCalled | completionReturned
	fired  atomic.Bool
	done   func()
	panics *telemetry.Panics
}

const (
	completionCalled uint32 = 1 << iota
	completionReturned
)

// called is the done the manager gets.
func (c *completion) called() {
	if c.state.Or(completionCalled)&completionReturned != 0 {
		c.fire()
	}
}

// returned tells c that the method returned.
func (c *completion) returned() {
	if c.state.Or(completionReturned)&completionCalled != 0 {
		c.fire()
	}
}

// fire calls done, once.
func (c *completion) fire() {
	if !c.fired.CompareAndSwap(false, true) {
		return
	}
	defer c.panics.Recover(telemetry.PlaceDone)
	c.done()
}
