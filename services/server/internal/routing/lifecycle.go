package routing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/telemetry"
)

// Pushes is where the values and events node managers push go: the server's subscription
// engine. Its methods run on the routes' delivery goroutines, one per manager.
type Pushes interface {
	// Changed offers a new value of one attribute of one node to its monitored items.
	Changed(c *nodemgr.DataChange)
	// Event reports an event of a manager to the event items of its notifiers.
	Event(ev *nodemgr.Event)
}

// pushQueue bounds the batches a manager's notifier holds for delivery: beyond it a
// batch is dropped, so a manager that pushes faster than the engine takes loses values
// rather than stalls or grows the server's memory.
const pushQueue = 256

// dropLogInterval is how often a manager's dropped pushes are logged at most.
const dropLogInterval = time.Minute

// mounted is a manager as the routes start and close it.
type mounted struct {
	m       nodemgr.Manager
	owner   *owner
	indexes []uint16
	host    *host // set by Start for a Starter
}

// Start starts every mounted manager that is a nodemgr.Starter, in mount order, each
// with a host: its namespace indexes, a logger named for it, the clock, and a notifier
// whose batches a goroutine of its own hands to pushes. When one fails, the ones started
// before it are closed and its error is returned, naming it; it is not closed itself
// (nodemgr.Starter).
func (r *Routes) Start(ctx context.Context, log *slog.Logger, now func() time.Time, pushes Pushes) error {
	for i, mt := range r.mounted {
		s, ok := mt.m.(nodemgr.Starter)
		if !ok {
			continue
		}
		h := newHost(mt, log, now, pushes, r.panics)
		if err := guarded(r.panics, mt.owner.name, func() error { return s.Start(ctx, h) }); err != nil {
			h.stop()
			r.closeOnce.Do(func() { _ = r.closeMounted(ctx, r.mounted[:i]) })
			return fmt.Errorf("node manager %s: start: %w", mt.owner.name, err)
		}
		mt.host = h
	}
	// Watchers learn of monitored items once started: Watch runs between Start and Close.
	for _, mt := range r.mounted {
		if w, ok := mt.m.(nodemgr.Watcher); ok && (mt.host != nil || !isStarter(mt.m)) {
			mt.owner.watch = newWatcher(w, mt.owner.name, r.panics)
			r.watching = true
		}
	}
	return nil
}

// Close closes every mounted nodemgr.Closer, last mounted first, and stops delivering
// what they push; ctx bounds the wait. It is safe to call more than once: only the first
// call closes.
func (r *Routes) Close(ctx context.Context) error {
	var err error
	r.closeOnce.Do(func() { err = r.closeMounted(ctx, r.mounted) })
	return err
}

func (r *Routes) closeMounted(ctx context.Context, ms []*mounted) error {
	var errs []error
	for _, mt := range slices.Backward(ms) {
		if mt.owner.watch != nil {
			mt.owner.watch.close()
		}
		if c, ok := mt.m.(nodemgr.Closer); ok && (mt.host != nil || !isStarter(mt.m)) {
			if err := guarded(r.panics, mt.owner.name, func() error { return c.Close(ctx) }); err != nil {
				errs = append(errs, fmt.Errorf("node manager %s: close: %w", mt.owner.name, err))
			}
		}
		if mt.host != nil {
			mt.host.stop()
		}
	}
	return errors.Join(errs...)
}

func isStarter(m nodemgr.Manager) bool { _, ok := m.(nodemgr.Starter); return ok }

// guarded calls f, a method of the manager called name; one that panics is reported and
// returns an error saying so.
func guarded(panics *telemetry.Panics, name string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			panics.Recovered(telemetry.PlaceNodeManager, v, "nodeManager", name)
			err = fmt.Errorf("panicked: %v: %w", v, status.BadInternalError)
		}
	}()
	return f()
}

// host is the nodemgr.Host of one started manager, and its Notifier.
type host struct {
	indexes []uint16
	log     *slog.Logger
	now     func() time.Time
	pushes  Pushes

	queue   chan batch
	done    chan struct{}
	stopped sync.WaitGroup // the delivery goroutine
	// panics is told of a delivery that panics (the engine's filters recover their
	// own; this is what remains).
	panics  *telemetry.Panics
	closed  atomic.Bool
	dropped atomic.Uint64
	logged  atomic.Int64 // when drops were last logged, as Unix nanoseconds
}

// batch is one call of Changed or Emit, copied.
type batch struct {
	changes []nodemgr.DataChange
	events  []nodemgr.Event
}

var (
	_ nodemgr.Host     = (*host)(nil)
	_ nodemgr.Notifier = (*host)(nil)
)

func newHost(mt *mounted, log *slog.Logger, now func() time.Time, pushes Pushes, panics *telemetry.Panics) *host {
	h := &host{indexes: mt.indexes, log: log.With("nodeManager", mt.owner.name), now: now, pushes: pushes, panics: panics,
		queue: make(chan batch, pushQueue), done: make(chan struct{})}
	h.stopped.Add(1)
	go h.deliver()
	return h
}

// NamespaceIndexes returns the indexes Mount was given.
func (h *host) NamespaceIndexes() []uint16 { return h.indexes }

// Logger returns the server's logger, with the manager's name.
func (h *host) Logger() *slog.Logger { return h.log }

// Now returns the server's time.
func (h *host) Now() time.Time { return h.now() }

// Notifier returns h.
func (h *host) Notifier() nodemgr.Notifier { return h }

// Changed queues a copy of changes for delivery (nodemgr.Notifier).
func (h *host) Changed(changes []nodemgr.DataChange) {
	if len(changes) > 0 {
		h.put(batch{changes: slices.Clone(changes)})
	}
}

// Emit queues a copy of events for delivery (nodemgr.Notifier).
func (h *host) Emit(events []nodemgr.Event) {
	if len(events) > 0 {
		h.put(batch{events: slices.Clone(events)})
	}
}

func (h *host) put(b batch) {
	if h.closed.Load() {
		return
	}
	select {
	case h.queue <- b:
	default:
		n := h.dropped.Add(1)
		now := h.now().UnixNano()
		if last := h.logged.Load(); now-last >= int64(dropLogInterval) && h.logged.CompareAndSwap(last, now) {
			h.log.Warn("node manager pushes faster than they are delivered: batches dropped", "dropped", n)
		}
	}
}

// deliver hands the queued batches to the pushes until stop.
func (h *host) deliver() {
	defer h.stopped.Done()
	for {
		select {
		case b := <-h.queue:
			for i := range b.changes {
				h.change(&b.changes[i])
			}
			for i := range b.events {
				h.event(&b.events[i])
			}
		case <-h.done:
			return
		}
	}
}

// change delivers one pushed value; one whose delivery panics is reported, and the
// others are delivered.
func (h *host) change(c *nodemgr.DataChange) {
	defer h.panics.Recover(telemetry.PlacePush)
	h.pushes.Changed(c)
}

// event delivers one pushed event, as change does a value.
func (h *host) event(ev *nodemgr.Event) {
	defer h.panics.Recover(telemetry.PlacePush)
	h.pushes.Event(ev)
}

// stop ends the delivery; what is pushed afterwards is ignored.
func (h *host) stop() {
	if h.closed.CompareAndSwap(false, true) {
		close(h.done)
		h.stopped.Wait()
	}
}

// Dropped returns the batches of pushed values and events dropped because a manager's
// queue was full, over every manager.
func (r *Routes) Dropped() uint64 {
	var n uint64
	for _, mt := range r.mounted {
		if mt.host != nil {
			n += mt.host.dropped.Load()
		}
	}
	return n
}

// ManagerHealth is what a nodemgr.HealthReporter says of itself, with its name.
type ManagerHealth struct {
	Name   string
	Health nodemgr.Health
}

// Reloader is a manager that can load itself again from where it came from (a plugin
// from its file), keeping the sessions and monitored items that use it.
type Reloader interface {
	Reload(ctx context.Context) error
}

// Reload reloads every mounted Reloader, and returns their errors joined, each naming
// its manager.
func (r *Routes) Reload(ctx context.Context) error {
	var errs []error
	for _, mt := range r.mounted {
		if rl, ok := mt.m.(Reloader); ok {
			if err := guarded(r.panics, mt.owner.name, func() error { return rl.Reload(ctx) }); err != nil {
				errs = append(errs, fmt.Errorf("node manager %s: reload: %w", mt.owner.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// TrafficReporter is a manager behind a boundary (a plugin host) that counts what
// crosses it.
type TrafficReporter interface {
	// Traffic returns the calls made across the boundary and the operations they
	// carried so far, the guests that replaced broken ones, and the operations queued
	// or in flight now.
	Traffic() (calls, operations, replaced uint64, outstanding int)
}

// ManagerTraffic is one manager's traffic, by its name.
type ManagerTraffic struct {
	Name                        string
	Calls, Operations, Replaced uint64
	Outstanding                 int
}

// Traffic returns the traffic of every mounted TrafficReporter.
func (r *Routes) Traffic() []ManagerTraffic {
	var out []ManagerTraffic
	for _, mt := range r.mounted {
		if t, ok := mt.m.(TrafficReporter); ok {
			mtr := ManagerTraffic{Name: mt.owner.name}
			if guarded(r.panics, mt.owner.name, func() error {
				mtr.Calls, mtr.Operations, mtr.Replaced, mtr.Outstanding = t.Traffic()
				return nil
			}) == nil {
				out = append(out, mtr)
			}
		}
	}
	return out
}

// Health asks every mounted nodemgr.HealthReporter how it is. It is safe for concurrent
// use; a reporter answers without waiting on its device (nodemgr.HealthReporter). One
// that panics is BadInternalError.
func (r *Routes) Health(ctx context.Context) []ManagerHealth {
	var out []ManagerHealth
	for _, mt := range r.mounted {
		if h, ok := mt.m.(nodemgr.HealthReporter); ok {
			mh := ManagerHealth{Name: mt.owner.name}
			if err := guarded(r.panics, mt.owner.name, func() error { mh.Health = h.Health(ctx); return nil }); err != nil {
				mh.Health = nodemgr.Health{Status: status.BadInternalError, Message: err.Error()}
			}
			out = append(out, mh)
		}
	}
	return out
}
