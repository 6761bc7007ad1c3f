package subscription

import (
	"crypto/rand"
	"slices"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/telemetry"
)

// Event is one occurrence of an event (Part 3 §6.4.2): its EventType and the values of
// its fields by FieldKey ("0:Severity"). Emit shares it with every item it reaches;
// nobody changes it afterwards.
type Event struct {
	Type   codec.NodeId
	Fields map[string]codec.Variant
}

// Keys of the fields of BaseEventType (Part 5 §6.4.2).
var (
	KeyEventId     = FieldKey(codec.QualifiedName{Name: "EventId"})
	KeyEventType   = FieldKey(codec.QualifiedName{Name: "EventType"})
	KeySourceNode  = FieldKey(codec.QualifiedName{Name: "SourceNode"})
	KeySourceName  = FieldKey(codec.QualifiedName{Name: "SourceName"})
	KeyTime        = FieldKey(codec.QualifiedName{Name: "Time"})
	KeyReceiveTime = FieldKey(codec.QualifiedName{Name: "ReceiveTime"})
	KeyMessage     = FieldKey(codec.QualifiedName{Name: "Message"})
	KeySeverity    = FieldKey(codec.QualifiedName{Name: "Severity"})
)

// NewEventId returns a fresh EventId: 16 random bytes, unique for practical purposes
// (Part 5 §6.4.2).
func NewEventId() codec.Variant {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return codec.ByteStringVariant(b[:])
}

// EventFilter is a checked EventFilter (Part 4 §7.22.3). It is read-only once built and
// may be shared.
type EventFilter struct {
	source  *ua.EventFilter // as the client gave it, copied; the state records keep it
	types   EventTypes
	selects []field
	valid   []bool
	where   whereClause
}

// CompileEventFilter checks f. The result lists a StatusCode per select clause
// (BadNodeIdUnknown, BadTypeDefinitionInvalid, BadBrowseNameInvalid, ...) and per where
// element, and is nil when all are good; an invalid select clause only makes its field
// null. The code is BadEventFilterInvalid for a filter without select clauses or with
// an invalid where clause. The result is built from a copy of f and keeps nothing of f.
func CompileEventFilter(f *ua.EventFilter, types EventTypes) (*EventFilter, *ua.EventFilterResult, status.Code) {
	f = cloneEventFilter(f)
	ef := &EventFilter{source: f, types: types, selects: make([]field, len(f.SelectClauses)), valid: make([]bool, len(f.SelectClauses))}
	codes := make([]status.Code, len(f.SelectClauses))
	selBad := false
	for i := range f.SelectClauses {
		ef.selects[i], codes[i] = compileField(&f.SelectClauses[i], types)
		ef.valid[i] = codes[i] == status.Good
		selBad = selBad || !ef.valid[i]
	}
	var whereRes []ua.ContentFilterElementResult
	ef.where, whereRes = compileWhere(&f.WhereClause, types)
	code := status.Good
	if len(f.SelectClauses) == 0 || whereRes != nil {
		code = status.BadEventFilterInvalid
	}
	if !selBad && whereRes == nil {
		return ef, nil, code
	}
	res := &ua.EventFilterResult{WhereClauseResult: ua.ContentFilterResult{ElementResults: whereRes}}
	if selBad {
		res.SelectClauseResults = codes
	}
	return ef, res, code
}

// fields returns the selected fields of ev; invalid clauses give null.
func (f *EventFilter) fields(ev *Event) []codec.Variant {
	out := make([]codec.Variant, len(f.selects))
	for i := range f.selects {
		if f.valid[i] {
			out[i] = f.selects[i].value(ev, f.types)
		}
	}
	return out
}

// eventQueue is the queue of an event item: at most size EventFieldLists, oldest
// first; ovf is the index of the queued EventQueueOverflow event, -1 for none. q grows
// by append as events arrive and is released once drained after a burst.
type eventQueue struct {
	filter *EventFilter
	size   int
	q      []ua.EventFieldList
	ovf    int
}

func newEventQueue(f *EventFilter, size uint32) *eventQueue {
	return &eventQueue{filter: f, size: int(size), ovf: -1}
}

// overflowEvent is the EventQueueOverflowEventType event a queue reports when it loses
// events (Part 4 §5.12.1.5; Part 5 §6.4.33).
func overflowEvent(now codec.DateTime) *Event {
	return &Event{Type: codec.NewNumericNodeId(0, id.EventQueueOverflowEventType), Fields: map[string]codec.Variant{
		KeyEventId:     NewEventId(),
		KeyEventType:   codec.NodeIdVariant(codec.NewNumericNodeId(0, id.EventQueueOverflowEventType)),
		KeySourceNode:  codec.NodeIdVariant(codec.NewNumericNodeId(0, id.Server)),
		KeySourceName:  codec.StringVariant("Internal/EventQueueOverflow"),
		KeyTime:        codec.DateTimeVariant(now),
		KeyReceiveTime: codec.DateTimeVariant(now),
		KeyMessage:     codec.MustVariant(codec.LocalizedText{Text: "Event queue overflow"}),
		KeySeverity:    codec.UInt16Variant(1),
	}}
}

// push queues fields (Part 4 §5.12.1.5). A full queue gets one EventQueueOverflow event
// (overflow makes its fields) until it is delivered: with discardOldest it takes the oldest place and the oldest
// events make room for the new one; otherwise it replaces the newest event and new
// events are dropped. A queue of one keeps the newest event (discardOldest) or the
// oldest, with no room for an overflow event.
func (q *eventQueue) push(fields []codec.Variant, discardOldest bool, overflow func() []codec.Variant) {
	switch {
	case len(q.q) < q.size:
		q.q = append(q.q, ua.EventFieldList{EventFields: fields})
	case q.size == 1:
		if discardOldest {
			q.q[0] = ua.EventFieldList{EventFields: fields}
		}
	case discardOldest:
		if q.ovf < 0 {
			// The overflow event replaces the oldest; the next oldest makes room.
			q.q[0] = ua.EventFieldList{EventFields: overflow()}
			q.q = slices.Delete(q.q, 1, 2)
			q.ovf = 0
		} else {
			drop := 0
			if q.ovf == 0 {
				drop = 1
			}
			q.q = slices.Delete(q.q, drop, drop+1)
			if q.ovf > drop {
				q.ovf--
			}
		}
		q.q = append(q.q, ua.EventFieldList{EventFields: fields})
	case q.ovf < 0:
		q.q[len(q.q)-1] = ua.EventFieldList{EventFields: overflow()}
		q.ovf = len(q.q) - 1
	}
}

// take removes the k oldest entries.
func (q *eventQueue) take(k int) {
	n := copy(q.q, q.q[k:])
	clear(q.q[n:])
	q.q = q.q[:n]
	q.ovf -= k
	if q.ovf < 0 {
		q.ovf = -1
	}
}

// clear drops the queued events and releases the queue.
func (q *eventQueue) clear() {
	q.q = nil
	q.ovf = -1
}

// resize keeps the newest entries of a queue that shrinks.
func (q *eventQueue) resize(n uint32) {
	q.size = int(n)
	if len(q.q) > q.size {
		q.take(len(q.q) - q.size)
	}
}

// Emit hands ev to the event items that monitor any of notifiers (Part 4 §5.12.1):
// each item whose where clause ev passes queues its selected fields. Pass the source's
// notifier and every notifier above it (the Server object last); an item monitors one
// node, so it gets ev once. It does not block.
func (e *Engine) Emit(ev *Event, notifiers ...codec.NodeId) {
	if e.eventItems.Load() == 0 {
		return
	}
	now := codec.DateTimeOf(e.now())
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range notifiers {
		for _, it := range e.byNotifier[n] {
			if it.mode == ua.MonitoringModeDisabled {
				continue
			}
			e.queueEventLocked(it, ev, now, true)
		}
	}
}

// queueEventLocked queues the selected fields of ev on the event item it when ev passes
// its where clause (or where is false).
func (e *Engine) queueEventLocked(it *item, ev *Event, now codec.DateTime, where bool) {
	fields, ok := e.filterEvent(it, ev, where)
	if !ok {
		return
	}
	if len(it.events.q) >= it.events.size {
		it.sub.counters.queueOverflows++
	}
	var ovf []codec.Variant
	it.events.push(fields, it.discardOld, func() []codec.Variant {
		ovf = it.events.filter.fields(overflowEvent(now))
		return ovf
	})
	it.n = len(it.events.q)
	e.reportLocked(it)
	if len(e.observers) > 0 {
		e.notifyLocked(Change{Kind: ChangeEventQueued, Subscription: it.sub.id, Item: it.id, Event: fields, Overflow: ovf})
	}
}

// filterEvent runs it's EventFilter on ev: the selected fields when ev passes the where
// clause. A filter that panics (a field of a node manager's Structure whose encoding
// panics, which a comparison encodes, or which comparer.check finds among the selected
// fields) is reported, and the item skips ev.
func (e *Engine) filterEvent(it *item, ev *Event, where bool) (fields []codec.Variant, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			e.panics.Recovered(telemetry.PlaceFilter, v, "monitoredItem", it.id)
			fields, ok = nil, false
		}
	}()
	f := it.events.filter
	if where && !f.where.matches(ev, f.types, &e.cmp) {
		return nil, false
	}
	fields = f.fields(ev)
	for i := range fields {
		e.cmp.check(&fields[i])
	}
	return fields, true
}

// Listening reports whether any event item exists, so that a source can skip building
// events nobody receives.
func (e *Engine) Listening() bool { return e.eventItems.Load() > 0 }

// reportLocked marks an item that queued something for reporting, with the Sampling
// items it triggers (Part 4 §5.12.1.6).
func (e *Engine) reportLocked(it *item) {
	s := it.sub
	switch {
	case it.mode == ua.MonitoringModeReporting:
		s.markDirty(it)
		for _, id := range it.triggers {
			if t := s.items[id]; t != nil && t.mode == ua.MonitoringModeSampling && t.n > 0 {
				t.triggered = true
				s.markDirty(t)
			}
		}
	case it.triggered:
		s.markDirty(it)
	}
}

// addNotifierLocked indexes an event item by the node it monitors.
func (e *Engine) addNotifierLocked(it *item) {
	if e.byNotifier == nil {
		e.byNotifier = make(map[codec.NodeId][]*item)
	}
	e.byNotifier[it.key] = append(e.byNotifier[it.key], it)
	e.eventItems.Add(1)
}

// removeNotifierLocked drops an event item from the index.
func (e *Engine) removeNotifierLocked(it *item) {
	list := e.byNotifier[it.key]
	if j := slices.Index(list, it); j >= 0 {
		list = slices.Delete(list, j, j+1)
		e.eventItems.Add(-1)
	}
	if len(list) == 0 {
		delete(e.byNotifier, it.key)
	} else {
		e.byNotifier[it.key] = list
	}
}

// drainEventsLocked moves queued events of it into m, at most limit in m (0 is none).
func drainEventsLocked(it *item, m *message, limit int) {
	q := it.events
	k := 0
	for k < len(q.q) && (limit == 0 || len(m.items)+len(m.events) < limit) {
		fl := q.q[k]
		fl.ClientHandle = it.handle
		m.events = append(m.events, fl)
		k++
	}
	q.take(k)
	if len(q.q) == 0 && cap(q.q) > queueRetain {
		q.q = nil // the memory of a burst goes back, as for data items (item.dequeue)
	}
	it.n = len(q.q)
}
