package server

import (
	"slices"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/demo"
	"uastack.dev/services/server/internal/routing"
	"uastack.dev/services/server/internal/subscription"
)

// serverID is the Server object, the root notifier of every event (Part 5 §8.3.2).
var serverID = codec.NewNumericNodeId(0, id.Server)

// eventFilter checks the filter of an item on the EventNotifier attribute (Part 4
// §7.22.3): the node must be a notifier one may subscribe to (BadNotSupported), the
// filter an EventFilter (BadMonitoredItemFilterInvalid when missing, BadFilterNotAllowed
// for another kind). The result, when not nil, goes back as the item's FilterResult.
func (s *Server) eventFilter(x *codec.ExtensionObject, notifier *codec.Variant) (*subscription.EventFilter, *ua.EventFilterResult, status.Code) {
	if notifier.Type() != codec.TypeByte || notifier.Bits()&uint64(ua.EventNotifierTypeSubscribeToEvents) == 0 {
		return nil, nil, status.BadNotSupported
	}
	if x.IsNull() {
		return nil, nil, status.BadMonitoredItemFilterInvalid
	}
	f, ok := x.Value.(*ua.EventFilter)
	if !ok {
		return nil, nil, status.BadFilterNotAllowed
	}
	return subscription.CompileEventFilter(f, s.eventTypes)
}

// events builds and emits the server's events: its own (SystemEventType) and the demo
// namespace's (demo.Events). Nothing is built while no client monitors events. It is
// safe for concurrent use once subs and types are set, before the server serves.
type events struct {
	subs  *subscription.Engine
	types *addrspace.EventTypes
	now   func() time.Time
	// record, when history is on, keeps each event of the notifiers that historize
	// events (history.go); set before serving.
	record func(typ codec.NodeId, fields map[string]codec.Variant, notifiers []codec.NodeId)
}

var (
	_ demo.Events    = (*events)(nil)
	_ routing.Pushes = (*events)(nil)
)

// Listening reports whether any client monitors events, or history records them.
func (e *events) Listening() bool { return e.record != nil || e.subs.Listening() }

// Emit hands an event of typ from source, with the fields of BaseEventType and fields, to
// the event items of notifiers (demo.Events).
func (e *events) Emit(typ, source codec.NodeId, sourceName string, severity uint16, message string, fields []nodemgr.EventField, notifiers ...codec.NodeId) {
	f := make(map[string]codec.Variant, len(fields)+8)
	f[subscription.KeySourceName] = codec.StringVariant(sourceName)
	f[subscription.KeyMessage] = codec.MustVariant(codec.LocalizedText{Locale: "en", Text: message})
	f[subscription.KeySeverity] = codec.UInt16Variant(severity)
	e.emit(typ, source, f, fields, notifiers)
}

// Changed offers a value a node manager pushed to the monitored items of its node
// (routing.Pushes): only a Value reaches them.
func (e *events) Changed(c *nodemgr.DataChange) {
	if c.AttributeId == uint32(attr.Value) {
		e.subs.Changed(c.NodeId, &c.Value)
	}
}

// Event reports an event a node manager pushed (routing.Pushes) on its notifiers and the
// Server object, with the fields the manager left out filled in (nodemgr.Event).
func (e *events) Event(ev *nodemgr.Event) {
	if e.Listening() {
		f := make(map[string]codec.Variant, len(ev.Fields)+5)
		e.emit(ev.EventType, ev.SourceNode, f, ev.Fields, append(slices.Clone(ev.Notifiers), serverID))
	}
}

// emit hands an event of typ from source to the event items of notifiers, after looking
// its type up: the fields of f, those of fields by browse path, and the fields of
// BaseEventType they lack (EventId, EventType, SourceNode, Time, ReceiveTime).
func (e *events) emit(typ, source codec.NodeId, f map[string]codec.Variant, fields []nodemgr.EventField, notifiers []codec.NodeId) {
	for _, x := range fields {
		f[subscription.FieldKey(x.BrowsePath...)] = x.Value
	}
	now := codec.DateTimeVariant(codec.DateTimeOf(e.now()))
	defaults := [...]struct {
		key string
		val codec.Variant
	}{
		{subscription.KeyEventId, subscription.NewEventId()},
		{subscription.KeyEventType, codec.NodeIdVariant(typ)},
		{subscription.KeySourceNode, codec.NodeIdVariant(source)},
		{subscription.KeyTime, now},
		{subscription.KeyReceiveTime, now},
	}
	for _, d := range defaults {
		if _, ok := f[d.key]; !ok {
			f[d.key] = d.val
		}
	}
	e.types.Warm(typ)
	if e.record != nil {
		e.record(typ, f, notifiers)
	}
	e.subs.Emit(&subscription.Event{Type: typ, Fields: f}, notifiers...)
}

// system reports something the server did as a SystemEventType event of the Server
// object (Part 5 §6.4.28): session and subscription lifecycle, not audited.
func (e *events) system(message string) {
	if e.Listening() {
		e.Emit(codec.NewNumericNodeId(0, id.SystemEventType), serverID, "Server", 100, message, nil, serverID)
	}
}
