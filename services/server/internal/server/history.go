package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/historystore"
	"uastack.dev/services/server/internal/routing"
	"uastack.dev/services/server/internal/session"
	"uastack.dev/services/server/internal/subscription"
	"uastack.dev/services/server/internal/telemetry"
)

// Recording: the changes of historizing variables and the events of historizing
// notifiers are gathered in memory and handed to the store by one goroutine, every
// recordInterval or as soon as recordBatch wait, so that a change costs the writer a
// lock and an append, never the store's time. At most maxPending wait; beyond that a
// stalled store loses the newest changes, counted in dropped.
const (
	recordInterval = 100 * time.Millisecond
	recordBatch    = 4096
	maxPending     = 1 << 20
)

// historian is the server's history: the store, what records into it, and the
// continuation points of HistoryRead.
type historian struct {
	store  history.Store
	events history.EventStore // nil when the store keeps no events
	// routed answers the history services: the store for the address space's nodes,
	// a mounted manager's own store for its nodes (routing.History).
	routed *routing.History
	close  func() error
	log    interface{ Warn(string, ...any) }
	panics *telemetry.Panics

	// historizing caches, by NodeId, whether a variable has Historizing set (values)
	// or a notifier has the HistoryRead bit of EventNotifier (events); looked up once.
	historizing sync.Map
	lookup      func(codec.NodeId, attr.ID) codec.Variant

	mu      sync.Mutex // guards values, evs
	values  []history.Value
	evs     []history.Event
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}

	recorded, dropped atomic.Uint64

	points historyPoints
}

// buildHistory opens the configured store and has the address space's value changes
// and the server's events recorded into it; with history.store off there is none, and
// the history services answer BadHistoryOperationUnsupported.
func (s *Server) buildHistory() error {
	h := s.cfg.History
	if h.Store == config.HistoryOff {
		return nil
	}
	// The Server object, the notifier of every event, keeps their history too.
	if !s.space.SetEventNotifier(serverID, ua.EventNotifierTypeSubscribeToEvents|ua.EventNotifierTypeHistoryRead) {
		return fmt.Errorf("history: no Server object")
	}
	hs := &historian{log: s.log, panics: s.tel.Panics(), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	switch h.Store {
	case config.HistoryDurable:
		st, err := historystore.Open(h.Path, historystore.Options{SyncInterval: h.SyncInterval, Retention: h.Retention, Logger: s.log})
		if err != nil {
			return fmt.Errorf("history.path: %w", err)
		}
		hs.store, hs.events, hs.close = st, st, st.Close
	default:
		m := history.NewMemory(history.MemoryLimits{PerNode: h.MaxValuesPerNode, Total: h.MaxValues, EventsPerNotifier: h.MaxEventsPerNotifier})
		hs.store, hs.events, hs.close = m, m, func() error { return nil }
	}
	hs.lookup = func(n codec.NodeId, a attr.ID) codec.Variant {
		op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: n, AttributeId: uint32(a)}}, Results: make([]codec.DataValue, 1)}
		s.space.Read(context.Background(), op, func() {})
		return op.Results[0].Value
	}
	hs.routed = s.routes.History(hs.store, hs.events)
	hs.points.bySession = make(map[codec.NodeId]map[string]*historyPoint)
	s.hist = hs
	s.space.OnChange(hs.changed)
	s.events.record = hs.event
	s.sessions.Observe(func(c *session.Change) {
		if c.Kind == session.Ended {
			hs.points.endSession(c.Record.SessionID)
		}
	})
	go hs.run()
	return nil
}

// closeHistory writes what waits and closes the store.
func (s *Server) closeHistory() {
	if s.hist == nil {
		return
	}
	close(s.hist.stop)
	<-s.hist.stopped
	if err := s.hist.close(); err != nil {
		s.log.Warn("history store", "err", err)
	}
}

type historizingKey struct {
	n      codec.NodeId
	events bool
}

// isHistorizing reports whether n records its values (Historizing) or, for events,
// its events (EventNotifier HistoryRead).
func (h *historian) isHistorizing(n codec.NodeId, events bool) bool {
	k := historizingKey{n, events}
	if v, ok := h.historizing.Load(k); ok {
		return v.(bool)
	}
	var on bool
	if events {
		v := h.lookup(n, attr.EventNotifier)
		on = v.Type() == codec.TypeByte && v.Bits()&uint64(ua.EventNotifierTypeHistoryRead) != 0
	} else {
		v := h.lookup(n, attr.Historizing)
		on = v.Type() == codec.TypeBoolean && v.Bits() != 0
	}
	h.historizing.Store(k, on)
	return on
}

// changed is the address space's OnChange: a historizing variable's new value waits
// for the recorder.
func (h *historian) changed(n codec.NodeId, dv *codec.DataValue) {
	if !h.isHistorizing(n, false) {
		return
	}
	h.mu.Lock()
	if len(h.values)+len(h.evs) >= maxPending {
		h.mu.Unlock()
		h.dropped.Add(1)
		return
	}
	h.values = append(h.values, history.Value{Node: n, Value: *dv})
	full := len(h.values) == recordBatch
	h.mu.Unlock()
	if full {
		h.poke()
	}
}

// event records an event emitted to notifiers, for those that historize events.
func (h *historian) event(typ codec.NodeId, fields map[string]codec.Variant, notifiers []codec.NodeId) {
	var list []history.EventField
	for _, n := range notifiers {
		if !h.isHistorizing(n, true) {
			continue
		}
		if list == nil {
			list = make([]history.EventField, 0, len(fields))
			for k, v := range fields {
				list = append(list, history.EventField{Key: k, Value: v})
			}
		}
		t := fields[subscription.KeyTime]
		ev := history.Event{Notifier: n, Type: typ, Fields: list, Time: codec.DateTime(t.Bits())}
		h.mu.Lock()
		if len(h.values)+len(h.evs) >= maxPending {
			h.mu.Unlock()
			h.dropped.Add(1)
			continue
		}
		h.evs = append(h.evs, ev)
		h.mu.Unlock()
	}
}

func (h *historian) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// run hands what waits to the store every recordInterval, or when a batch is full,
// until stop; then it writes the rest.
func (h *historian) run() {
	defer close(h.stopped)
	t := time.NewTicker(recordInterval)
	defer t.Stop()
	var spareV []history.Value
	var spareE []history.Event
	for {
		select {
		case <-h.stop:
			h.flush(&spareV, &spareE)
			return
		case <-t.C:
		case <-h.wake:
		}
		h.flush(&spareV, &spareE)
	}
}

// flush swaps the waiting slices for the spare ones and writes them.
func (h *historian) flush(spareV *[]history.Value, spareE *[]history.Event) {
	defer h.panics.Recover(telemetry.PlaceObserver)
	h.mu.Lock()
	vals, evs := h.values, h.evs
	h.values, h.evs = (*spareV)[:0], (*spareE)[:0]
	h.mu.Unlock()
	ctx := context.Background()
	if len(vals) > 0 {
		if err := h.store.Append(ctx, vals); err != nil {
			h.dropped.Add(uint64(len(vals)))
			h.log.Warn("history store: values lost", "count", len(vals), "err", err)
		} else {
			h.recorded.Add(uint64(len(vals)))
		}
	}
	if len(evs) > 0 && h.events != nil {
		if err := h.events.AppendEvents(ctx, evs); err != nil {
			h.log.Warn("history store: events lost", "count", len(evs), "err", err)
		}
	}
	clear(vals)
	clear(evs)
	*spareV, *spareE = vals[:0], evs[:0]
}

// historyPoints are the HistoryRead continuation points of the sessions (Part 11
// §6.3): each holds where a read stopped, plain data; a point is released when used,
// by ReleaseContinuationPoints and when its session ends.
type historyPoints struct {
	mu        sync.Mutex // guards bySession, held
	bySession map[codec.NodeId]map[string]*historyPoint
	held      int
}

// historyPoint is where one node's read stopped: the read as it was asked, and the
// store's position to go on from.
type historyPoint struct {
	node  codec.NodeId
	raw   *history.RawRead
	event *eventPoint
}

// save keeps p for the session and returns its bytes, or BadNoContinuationPoints when
// the session holds max already.
func (hp *historyPoints) save(sess codec.NodeId, p *historyPoint, max int) ([]byte, status.Code) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	m := hp.bySession[sess]
	if len(m) >= max {
		return nil, status.BadNoContinuationPoints
	}
	if m == nil {
		m = make(map[string]*historyPoint)
		hp.bySession[sess] = m
	}
	cp := session.RandomBytes(16)
	m[string(cp)] = p
	hp.held++
	return cp, status.Good
}

// take removes and returns the session's point cp.
func (hp *historyPoints) take(sess codec.NodeId, cp []byte) (*historyPoint, bool) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	m := hp.bySession[sess]
	p, ok := m[string(cp)]
	if ok {
		delete(m, string(cp))
		hp.held--
		if len(m) == 0 {
			delete(hp.bySession, sess)
		}
	}
	return p, ok
}

// endSession releases the points of a session that ended.
func (hp *historyPoints) endSession(sess codec.NodeId) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	hp.held -= len(hp.bySession[sess])
	delete(hp.bySession, sess)
}

// count is the number of points held by all sessions.
func (hp *historyPoints) count() int {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	return hp.held
}

// initHistoryCapabilities publishes HistoryServerCapabilities (Part 11 §5.4.2) and the
// aggregates the server computes (AggregateFunctions of it and of ServerCapabilities,
// Part 13 §4.2.1.1).
func (s *Server) initHistoryCapabilities() error {
	on := s.hist != nil
	max := uint32(s.cfg.History.MaxValuesPerRead)
	if !on {
		max = 0
	}
	values := []struct {
		id  uint32
		val codec.Variant
	}{
		{id.HistoryServerCapabilities_AccessHistoryDataCapability, codec.BooleanVariant(on)},
		{id.HistoryServerCapabilities_AccessHistoryEventsCapability, codec.BooleanVariant(on)},
		{id.HistoryServerCapabilities_MaxReturnDataValues, codec.UInt32Variant(max)},
		{id.HistoryServerCapabilities_MaxReturnEventValues, codec.UInt32Variant(max)},
		{id.HistoryServerCapabilities_InsertDataCapability, codec.BooleanVariant(on)},
		{id.HistoryServerCapabilities_ReplaceDataCapability, codec.BooleanVariant(on)},
		{id.HistoryServerCapabilities_UpdateDataCapability, codec.BooleanVariant(on)},
		{id.HistoryServerCapabilities_DeleteRawCapability, codec.BooleanVariant(on)},
		{id.HistoryServerCapabilities_DeleteAtTimeCapability, codec.BooleanVariant(on)},
		{id.HistoryServerCapabilities_InsertEventCapability, codec.BooleanVariant(false)},
		{id.HistoryServerCapabilities_ReplaceEventCapability, codec.BooleanVariant(false)},
		{id.HistoryServerCapabilities_UpdateEventCapability, codec.BooleanVariant(false)},
		{id.HistoryServerCapabilities_DeleteEventCapability, codec.BooleanVariant(false)},
		{id.HistoryServerCapabilities_InsertAnnotationCapability, codec.BooleanVariant(false)},
		{id.HistoryServerCapabilities_ServerTimestampSupported, codec.BooleanVariant(on)},
	}
	for _, v := range values {
		if err := s.space.SetTypedValue(codec.NewNumericNodeId(0, v.id), v.val); err != nil {
			return fmt.Errorf("history capabilities: %w", err)
		}
	}
	if !on {
		return nil
	}
	for _, folder := range []uint32{id.HistoryServerCapabilities_AggregateFunctions, id.Server_ServerCapabilities_AggregateFunctions} {
		for _, agg := range history.Aggregates {
			ref := addrspace.Reference{ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes), TargetId: agg, IsForward: true}
			if err := s.space.AddReference(codec.NewNumericNodeId(0, folder), ref); err != nil {
				return fmt.Errorf("history capabilities: %w", err)
			}
		}
	}
	return nil
}

// instrumentHistory registers the history's instruments on m: values recorded and
// lost, and the continuation points the sessions hold.
func (s *Server) instrumentHistory(m metric.Meter) error {
	if s.hist == nil {
		return nil
	}
	recorded, err := m.Int64ObservableCounter("uastack.history.recorded",
		metric.WithDescription("Values of historizing variables written to the history store."))
	if err != nil {
		return err
	}
	dropped, err := m.Int64ObservableCounter("uastack.history.dropped",
		metric.WithDescription("Values of historizing variables lost: the store failed or fell too far behind."))
	if err != nil {
		return err
	}
	points, err := m.Int64ObservableGauge("uastack.history.continuation_points",
		metric.WithDescription("HistoryRead continuation points the sessions hold."))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(recorded, int64(s.hist.recorded.Load()))
		o.ObserveInt64(dropped, int64(s.hist.dropped.Load()))
		o.ObserveInt64(points, int64(s.hist.points.count()))
		return nil
	}, recorded, dropped, points)
	return err
}
