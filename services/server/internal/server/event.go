package server

import (
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/demo"
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
}

var _ demo.Events = (*events)(nil)

// Listening reports whether any client monitors events.
func (e *events) Listening() bool { return e.subs.Listening() }

// Emit hands an event of typ from source, with the fields of BaseEventType and fields, to
// the event items of notifiers, after looking its type up.
func (e *events) Emit(typ, source codec.NodeId, sourceName string, severity uint16, message string, fields []demo.Field, notifiers ...codec.NodeId) {
	now := codec.DateTimeOf(e.now())
	ev := &subscription.Event{Type: typ, Fields: map[string]codec.Variant{
		subscription.KeyEventId:     subscription.NewEventId(),
		subscription.KeyEventType:   codec.NodeIdVariant(typ),
		subscription.KeySourceNode:  codec.NodeIdVariant(source),
		subscription.KeySourceName:  codec.StringVariant(sourceName),
		subscription.KeyTime:        codec.DateTimeVariant(now),
		subscription.KeyReceiveTime: codec.DateTimeVariant(now),
		subscription.KeyMessage:     codec.MustVariant(codec.LocalizedText{Locale: "en", Text: message}),
		subscription.KeySeverity:    codec.UInt16Variant(severity),
	}}
	for _, f := range fields {
		ev.Fields[subscription.FieldKey(f.Path...)] = f.Value
	}
	e.types.Warm(typ)
	e.subs.Emit(ev, notifiers...)
}

// system reports something the server did as a SystemEventType event of the Server
// object (Part 5 §6.4.28): session and subscription lifecycle, not audited.
func (e *events) system(message string) {
	if e.Listening() {
		e.Emit(codec.NewNumericNodeId(0, id.SystemEventType), serverID, "Server", 100, message, nil, serverID)
	}
}
