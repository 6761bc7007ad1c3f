package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

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
}

// NewGuest returns a Guest that builds its manager with f when the host sets it up.
func NewGuest(f Factory, link Link) *Guest { return &Guest{factory: f, link: link} }

// stuckGrace is how long Serve waits, after its context ended, for a manager that does
// not call done: its frame is then answered with a Fault (BadTimeout) rather than hang
// the batch.
const stuckGrace = 100 * time.Millisecond

// Serve answers batch, a batch of request frames, and returns the batch of replies, one
// per request in order. It returns when every request is answered: an operation whose
// manager has not called done when ctx ends (plus a short grace) is answered with a
// Fault. A malformed batch is answered with an empty batch; the host sees the count
// differ and fails the call.
func (g *Guest) Serve(ctx context.Context, batch []byte) []byte {
	var out wire.Batch
	out.Reset()
	n, err := wire.Count(batch)
	if err != nil {
		return out.Bytes()
	}
	calls := make([]call, n)
	_ = wire.Split(batch, func(i int, b []byte) { calls[i].start(ctx, g, b) })
	for i := range calls {
		c := &calls[i]
		if c.done != nil {
			c.wait(ctx)
		}
		if err := out.Add(&c.reply); err != nil {
			_ = out.Add(fault(c.reply.ID, status.BadEncodingError, err.Error()))
		}
	}
	return out.Bytes()
}

// call is one request of a batch: its reply, and for an operation that may complete
// later, the channel done closes.
type call struct {
	reply nodemgr.Frame
	done  chan struct{}
}

// wait waits for the operation's done, or answers it with a Fault once ctx ended and
// the grace passed.
func (c *call) wait(ctx context.Context) {
	select {
	case <-c.done:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(stuckGrace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.reply = *fault(c.reply.ID, status.BadTimeout, "the manager did not answer before the deadline")
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
// operation, when the manager calls done (c.done is then closed).
func (c *call) start(ctx context.Context, g *Guest, b []byte) {
	var req nodemgr.Frame
	if err := req.Decode(b, wire.Limits); err != nil {
		c.reply = *fault(req.ID, CodeOf(err), err.Error())
		return
	}
	c.reply = nodemgr.Frame{Kind: req.Kind | nodemgr.KindReply, ID: req.ID}
	if req.Kind == nodemgr.KindInfo {
		c.reply.Body, c.reply.Kind = g.setup(req.Body.(*nodemgr.Setup), req.ID)
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
	switch body := req.Body.(type) {
	case *nodemgr.MountRequest:
		mt, ok := m.(nodemgr.Mounter)
		if !ok {
			unsupported("Mounter")
			return
		}
		c.reply.Body = &nodemgr.Mounts{Mounts: mt.Mount(body.Indexes)}
	case *nodemgr.StartParams:
		st, ok := m.(nodemgr.Starter)
		if !ok {
			unsupported("Starter")
			return
		}
		c.reply.Body = outcome(st.Start(ctx, &host{params: body, link: g.link}))
	case *nodemgr.ReadOp:
		r, ok := m.(nodemgr.Reader)
		if !ok {
			unsupported("Reader")
			return
		}
		c.reply.Body = &nodemgr.ReadResults{Results: body.Results}
		c.done = make(chan struct{})
		r.Read(ctx, body, once(c.done))
	case *nodemgr.WriteOp:
		w, ok := m.(nodemgr.Writer)
		if !ok {
			unsupported("Writer")
			return
		}
		c.reply.Body = &nodemgr.WriteResults{Results: body.Results}
		c.done = make(chan struct{})
		w.Write(ctx, body, once(c.done))
	case *nodemgr.BrowseOp:
		br, ok := m.(nodemgr.Browser)
		if !ok {
			unsupported("Browser")
			return
		}
		c.reply.Body = &nodemgr.BrowseResults{Results: body.Results}
		c.done = make(chan struct{})
		br.Browse(ctx, body, once(c.done))
	case *nodemgr.CallOp:
		cl, ok := m.(nodemgr.Caller)
		if !ok {
			unsupported("Caller")
			return
		}
		c.reply.Body = &nodemgr.CallResults{Results: body.Results}
		c.done = make(chan struct{})
		cl.Call(ctx, body, once(c.done))
	case *nodemgr.WatchSet:
		w, ok := m.(nodemgr.Watcher)
		if !ok {
			unsupported("Watcher")
			return
		}
		g.watchMu.Lock()
		w.Watch(ctx, body)
		g.watchMu.Unlock()
	default:
		switch req.Kind {
		case nodemgr.KindClose:
			if cl, ok := m.(nodemgr.Closer); ok {
				c.reply.Body = outcome(cl.Close(ctx))
			} else {
				c.reply.Body = &nodemgr.Outcome{Status: status.Good}
			}
		case nodemgr.KindHealth:
			h := nodemgr.Health{Status: status.Good}
			if hr, ok := m.(nodemgr.HealthReporter); ok {
				h = hr.Health(ctx)
			}
			c.reply.Body = &h
		default:
			c.reply = *fault(req.ID, status.BadServiceUnsupported, "kind "+req.Kind.String()+" is not a request")
		}
	}
}

// setup builds the manager from s the first time; later Infos describe it again.
func (g *Guest) setup(s *nodemgr.Setup, id uint32) (nodemgr.Body, nodemgr.Kind) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		m, err := g.factory(*s)
		if err == nil && m == nil {
			err = fmt.Errorf("the factory returned no manager")
		}
		if err != nil {
			f := fault(id, status.BadConfigurationError, err.Error())
			return f.Body, f.Kind
		}
		g.m = m
	}
	return &nodemgr.Info{Namespaces: g.m.Namespaces(), Capabilities: nodemgr.CapabilitiesOf(g.m)}, nodemgr.KindInfo | nodemgr.KindReply
}

// once returns a done that closes ch the first time it is called; later calls, which
// break the contract, are ignored.
func once(ch chan struct{}) func() {
	var o sync.Once
	return func() { o.Do(func() { close(ch) }) }
}

// outcome turns a lifecycle call's error into its reply.
func outcome(err error) *nodemgr.Outcome {
	if err == nil {
		return &nodemgr.Outcome{Status: status.Good}
	}
	return &nodemgr.Outcome{Status: CodeOf(err), Message: err.Error()}
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
	params *nodemgr.StartParams
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
