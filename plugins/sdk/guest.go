package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/plugins/wire"
)

// Factory builds the manager a plugin serves from its configuration entry: the name,
// the namespace URI the server mounts it at, and its options (JSON, nil for none). An
// error stops the server's start and is shown with the entry.
type Factory func(setup nodemgr.Setup) (nodemgr.Manager, error)

// Link is the guest's way back to its host, given by the adapter that serves it.
type Link interface {
	// Push hands the host one encoded frame of kind DataChanges or Events. It must not
	// wait on the host for long; the adapter may drop what the host cannot take.
	Push(frame []byte)
	// Log hands the host one JSON log line (package wire).
	Log(line []byte)
	// Now is the host's clock (a WASM guest) or the process's.
	Now() time.Time
}

// Guest answers the batches of frames its host sends by calling the manager its
// Factory builds. Serve is safe for concurrent use: a plugin process answers several
// batches at once.
type Guest struct {
	factory Factory
	link    Link

	mu sync.RWMutex // guards m
	m  nodemgr.Manager

	watchMu sync.Mutex // Watch is called from one goroutine at a time, in order

	states sync.Pool // *serveState: what a batch is decoded into, kept for the next
}

// NewGuest returns a Guest that builds its manager with f when the host sets it up.
func NewGuest(f Factory, link Link) *Guest { return &Guest{factory: f, link: link} }

// stuckGrace is how long Serve waits, after its context ended, for a manager that does
// not call done: its frame is then answered with a Fault (BadTimeout) rather than hang
// the batch.
const stuckGrace = 100 * time.Millisecond

// nodeIdCache is the size of a state's cache of decoded string NodeIds: a guest's
// nodes are asked for again and again.
const nodeIdCache = 1024

// serveState is the memory of one batch: its calls, each holding the request decoded
// into the body of the same kind as last time, and the decoder. A state goes back to the
// pool after its batch unless a manager never called done, which may then still write
// into it.
type serveState struct {
	d     *codec.Decoder
	out   wire.Batch
	calls []*call
	left  atomic.Int32  // operations whose done has not been called
	wake  chan struct{} // gets a value when left drops to 0
}

// call is one request of a batch and its reply.
type call struct {
	st     *serveState
	req    nodemgr.Frame
	reply  nodemgr.Frame
	fired  atomic.Bool // done was called
	waits  bool        // an operation, counted in left
	doneFn func()      // made once: calls done without a closure per operation
	// The reply bodies of the operations, kept with their slices for the next batch.
	readRes   nodemgr.ReadResults
	writeRes  nodemgr.WriteResults
	browseRes nodemgr.BrowseResults
	callRes   nodemgr.CallResults
	mounts    nodemgr.Mounts
	info      nodemgr.Info
	outcome   nodemgr.Outcome
	health    nodemgr.Health
	models    nodemgr.Models
	histRaw   nodemgr.HistoryRawResults
	histItems nodemgr.HistoryItemResults
	histEvs   nodemgr.HistoryEventResults
}

// done is the operation's done: the first call counts.
func (c *call) done() {
	if !c.fired.CompareAndSwap(false, true) {
		return
	}
	if c.st.left.Add(-1) == 0 {
		select {
		case c.st.wake <- struct{}{}:
		default:
		}
	}
}

func (g *Guest) state(n int) *serveState {
	st, _ := g.states.Get().(*serveState)
	if st == nil {
		st = &serveState{d: codec.NewDecoderLimits(nil, wire.Limits), wake: make(chan struct{}, 1)}
		st.d.CacheNodeIds(nodeIdCache)
	}
	for len(st.calls) < n {
		c := &call{st: st}
		c.doneFn = c.done
		st.calls = append(st.calls, c)
	}
	return st
}

// Serve answers batch, a batch of request frames, and returns the batch of replies, one
// per request in order, in a buffer of its own. See ServeInto.
func (g *Guest) Serve(ctx context.Context, batch []byte) []byte { return g.ServeInto(ctx, batch, nil) }

// ServeInto answers batch, a batch of request frames, and returns the batch of replies,
// one per request in order, built in out's memory (grown when it is too small). It
// returns when every request is answered: an operation whose manager has not called
// done when ctx ends (plus a short grace) is answered with a Fault. A malformed batch is
// answered with an empty batch; the host sees the count differ and fails the call.
func (g *Guest) ServeInto(ctx context.Context, batch, out []byte) []byte {
	n, err := wire.Count(batch)
	if err != nil {
		var b wire.Batch
		b.ResetTo(out)
		return b.Bytes()
	}
	st := g.state(n)
	calls := st.calls[:n]
	st.left.Store(1) // held until every operation is started
	_ = wire.Split(batch, func(i int, b []byte) { calls[i].start(ctx, g, b) })
	if st.left.Add(-1) == 0 || st.wait(ctx) {
		defer g.states.Put(st)
	} else {
		// Not pooled again: a manager that calls done late may still write into it.
		for _, c := range calls {
			if c.waits && !c.fired.Load() {
				c.reply = *fault(c.req.ID, status.BadTimeout, "the manager did not answer before the deadline")
			}
		}
	}
	st.out.ResetTo(out)
	for _, c := range calls {
		if err := st.out.Add(&c.reply); err != nil {
			_ = st.out.Add(fault(c.req.ID, status.BadEncodingError, err.Error()))
		}
	}
	return st.out.Bytes()
}

// wait waits until every operation called done, or ctx ended and the grace passed; it
// reports whether every one did.
func (st *serveState) wait(ctx context.Context) bool {
	select {
	case <-st.wake:
		return true
	case <-ctx.Done():
	}
	t := time.NewTimer(stuckGrace)
	defer t.Stop()
	select {
	case <-st.wake:
		return true
	case <-t.C:
		return st.left.Load() == 0
	}
}

// fault returns a Fault frame answering request id.
func fault(id uint32, code status.Code, msg string) *nodemgr.Frame {
	return &nodemgr.Frame{Kind: nodemgr.KindFault, ID: id, Body: &nodemgr.Outcome{Status: code, Message: msg}}
}

// manager returns the manager set up by KindInfo, or nil.
func (g *Guest) manager() nodemgr.Manager {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.m
}

// start decodes the request in b and starts it: the reply is set at once, or, for an
// operation, filled in by the manager until it calls done.
func (c *call) start(ctx context.Context, g *Guest, b []byte) {
	c.waits = false
	d := c.st.d
	d.Reset(b)
	c.req.DecodeBinary(d)
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail(status.BadDecodingError)
	}
	if err := d.Err(); err != nil {
		c.req.Body = nil // half decoded: not reused
		c.reply = *fault(c.req.ID, CodeOf(err), err.Error())
		return
	}
	req := &c.req
	c.reply = nodemgr.Frame{Kind: req.Kind | nodemgr.KindReply, ID: req.ID}
	if req.Kind == nodemgr.KindInfo {
		c.reply.Body, c.reply.Kind = g.setup(c, req.Body.(*nodemgr.Setup))
		return
	}
	m := g.manager()
	if m == nil {
		c.reply = *fault(req.ID, status.BadInvalidState, "the manager is not set up (Info comes first)")
		return
	}
	unsupported := func(what string) {
		c.reply = *fault(req.ID, status.BadServiceUnsupported, "the manager is not a "+what)
	}
	// An operation is counted before its method runs: done may come at once, or later
	// from another goroutine.
	begin := func() {
		c.waits = true
		c.fired.Store(false)
		c.st.left.Add(1)
	}
	switch body := req.Body.(type) {
	case *nodemgr.ReadOp:
		r, ok := m.(nodemgr.Reader)
		if !ok {
			unsupported("Reader")
			return
		}
		c.readRes.Results = body.Results
		c.reply.Body = &c.readRes
		begin()
		r.Read(ctx, body, c.doneFn)
	case *nodemgr.WriteOp:
		w, ok := m.(nodemgr.Writer)
		if !ok {
			unsupported("Writer")
			return
		}
		c.writeRes.Results = body.Results
		c.reply.Body = &c.writeRes
		begin()
		w.Write(ctx, body, c.doneFn)
	case *nodemgr.BrowseOp:
		br, ok := m.(nodemgr.Browser)
		if !ok {
			unsupported("Browser")
			return
		}
		c.browseRes.Results = body.Results
		c.reply.Body = &c.browseRes
		begin()
		br.Browse(ctx, body, c.doneFn)
	case *nodemgr.CallOp:
		cl, ok := m.(nodemgr.Caller)
		if !ok {
			unsupported("Caller")
			return
		}
		c.callRes.Results = body.Results
		c.reply.Body = &c.callRes
		begin()
		cl.Call(ctx, body, c.doneFn)
	case *nodemgr.MountRequest:
		mt, ok := m.(nodemgr.Mounter)
		if !ok {
			unsupported("Mounter")
			return
		}
		c.mounts.Mounts = mt.Mount(body.Indexes)
		c.reply.Body = &c.mounts
	case *nodemgr.StartParams:
		st, ok := m.(nodemgr.Starter)
		if !ok {
			unsupported("Starter")
			return
		}
		c.outcome = outcome(st.Start(ctx, &host{params: *body, link: g.link}))
		c.reply.Body = &c.outcome
	case *nodemgr.WatchSet:
		w, ok := m.(nodemgr.Watcher)
		if !ok {
			unsupported("Watcher")
			return
		}
		g.watchMu.Lock()
		w.Watch(ctx, body)
		g.watchMu.Unlock()
	case *nodemgr.HistoryValues, *nodemgr.HistoryReadRaw, *nodemgr.HistoryUpdate, *nodemgr.HistoryDeleteRaw,
		*nodemgr.HistoryDeleteAtTime, *nodemgr.HistoryEvents, *nodemgr.HistoryReadEvents:
		c.store(ctx, m, body)
	default:
		switch req.Kind {
		case nodemgr.KindClose:
			c.outcome = nodemgr.Outcome{Status: status.Good}
			if cl, ok := m.(nodemgr.Closer); ok {
				c.outcome = outcome(cl.Close(ctx))
			}
			c.reply.Body = &c.outcome
		case nodemgr.KindHealth:
			c.health = nodemgr.Health{Status: status.Good}
			if hr, ok := m.(nodemgr.HealthReporter); ok {
				c.health = hr.Health(ctx)
			}
			c.reply.Body = &c.health
		case nodemgr.KindModels:
			mm, ok := m.(nodemgr.Modeler)
			if !ok {
				unsupported("Modeler")
				return
			}
			c.models = nodemgr.Models{Models: mm.Models()}
			c.reply.Body = &c.models
		default:
			c.reply = *fault(req.ID, status.BadServiceUnsupported, "kind "+req.Kind.String()+" is not a request")
		}
	}
}

// store runs a history operation on the manager's history.Store (history.EventStore),
// at once: a store's methods return when they are done. A store that fails as a whole
// answers a Fault with the error's code.
func (c *call) store(ctx context.Context, m nodemgr.Manager, body nodemgr.Body) {
	st, ok := m.(history.Store)
	if !ok {
		c.reply = *fault(c.req.ID, status.BadServiceUnsupported, "the manager is not a history.Store")
		return
	}
	ev, events := st.(history.EventStore)
	var err error
	switch body := body.(type) {
	case *nodemgr.HistoryValues:
		err = st.Append(ctx, body.Values)
		c.outcome = nodemgr.Outcome{Status: status.Good}
		c.reply.Body = &c.outcome
	case *nodemgr.HistoryReadRaw:
		c.histRaw.Results = resized(c.histRaw.Results, len(body.Items))
		err = st.ReadRaw(ctx, &history.ReadRawOp{Items: body.Items, Results: c.histRaw.Results})
		c.reply.Body = &c.histRaw
	case *nodemgr.HistoryUpdate:
		c.histItems.Results = resized(c.histItems.Results, len(body.Items))
		err = st.Update(ctx, &history.UpdateOp{User: body.User, Time: body.Time, Items: body.Items, Results: c.histItems.Results})
		c.reply.Body = &c.histItems
	case *nodemgr.HistoryDeleteRaw:
		c.histItems.Results = resized(c.histItems.Results, len(body.Items))
		err = st.DeleteRaw(ctx, &history.DeleteRawOp{User: body.User, Time: body.Time, Items: body.Items, Results: c.histItems.Results})
		c.reply.Body = &c.histItems
	case *nodemgr.HistoryDeleteAtTime:
		c.histItems.Results = resized(c.histItems.Results, len(body.Items))
		err = st.DeleteAtTime(ctx, &history.DeleteAtTimeOp{User: body.User, Time: body.Time, Items: body.Items, Results: c.histItems.Results})
		c.reply.Body = &c.histItems
	case *nodemgr.HistoryEvents:
		if !events {
			c.reply = *fault(c.req.ID, status.BadServiceUnsupported, "the manager is not a history.EventStore")
			return
		}
		err = ev.AppendEvents(ctx, body.Events)
		c.outcome = nodemgr.Outcome{Status: status.Good}
		c.reply.Body = &c.outcome
	case *nodemgr.HistoryReadEvents:
		if !events {
			c.reply = *fault(c.req.ID, status.BadServiceUnsupported, "the manager is not a history.EventStore")
			return
		}
		c.histEvs.Results = resized(c.histEvs.Results, len(body.Items))
		err = ev.ReadEvents(ctx, &history.ReadEventsOp{Items: body.Items, Results: c.histEvs.Results})
		c.reply.Body = &c.histEvs
	}
	if err != nil {
		c.reply = *fault(c.req.ID, CodeOf(err), err.Error())
	}
	// A store may keep the values and items it was given: the next request of the
	// kind decodes into a body of its own.
	c.req.Body = nil
}

// resized returns s with n zero slots, reusing its memory when it has room.
func resized[T any](s []T, n int) []T {
	if cap(s) < n || s == nil {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// setup builds the manager from s the first time; later Infos describe it again.
func (g *Guest) setup(c *call, s *nodemgr.Setup) (nodemgr.Body, nodemgr.Kind) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		m, err := g.factory(*s)
		if err == nil && m == nil {
			err = fmt.Errorf("the factory returned no manager")
		}
		if err != nil {
			f := fault(c.req.ID, status.BadConfigurationError, err.Error())
			return f.Body, f.Kind
		}
		g.m = m
	}
	c.info = nodemgr.Info{Namespaces: g.m.Namespaces(), Capabilities: nodemgr.CapabilitiesOf(g.m)}
	return &c.info, nodemgr.KindInfo | nodemgr.KindReply
}

// outcome turns a lifecycle call's error into its reply.
func outcome(err error) nodemgr.Outcome {
	if err == nil {
		return nodemgr.Outcome{Status: status.Good}
	}
	return nodemgr.Outcome{Status: CodeOf(err), Message: err.Error()}
}

// CodeOf returns the StatusCode err wraps, or BadInternalError when it wraps none.
func CodeOf(err error) status.Code {
	var c status.Code
	if errors.As(err, &c) {
		return c
	}
	return status.BadInternalError
}

// host is the guest's side of a nodemgr.Host: the data the host sent at Start, with
// the logger, clock and notifier going back through the link.
type host struct {
	params nodemgr.StartParams // a copy: the request's body is reused by the next batch
	link   Link
}

func (h *host) NamespaceIndexes() []uint16 { return h.params.NamespaceIndexes }
func (h *host) Now() time.Time             { return h.link.Now() }
func (h *host) Notifier() nodemgr.Notifier { return notifier{h.link} }

func (h *host) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(lineWriter{h.link}, &slog.HandlerOptions{Level: slog.Level(h.params.LogLevel)}))
}

// lineWriter hands each log line to the link: slog's JSON handler writes one record per
// Write.
type lineWriter struct{ link Link }

func (w lineWriter) Write(b []byte) (int, error) {
	w.link.Log(b)
	return len(b), nil
}

// notifier encodes pushes into frames for the link.
type notifier struct{ link Link }

func (n notifier) Changed(changes []nodemgr.DataChange) {
	n.push(&nodemgr.Frame{Kind: nodemgr.KindDataChanges, Body: &nodemgr.DataChanges{Changes: changes}})
}

func (n notifier) Emit(events []nodemgr.Event) {
	n.push(&nodemgr.Frame{Kind: nodemgr.KindEvents, Body: &nodemgr.Events{Events: events}})
}

func (n notifier) push(f *nodemgr.Frame) {
	b, err := f.AppendBinary(nil)
	if err != nil {
		return // an unencodable push is the manager's bug; the host cannot take it
	}
	n.link.Push(b)
}
