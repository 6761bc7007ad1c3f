package server

import (
	"context"
	"sync"
	"sync/atomic"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/subscription"
)

// serverID is the Server object, the root notifier of every event (Part 5 §8.3.2).
var serverID = codec.NewNumericNodeId(0, id.Server)

// eventTypes is subscription.EventTypes over the server's address space. Supertype
// chains and field checks are memoised: the engine asks IsSubtype while holding its
// lock, so every type it may ask about (the types of emitted events and of filters)
// is looked up in the address space beforehand, by warm and by CompileEventFilter,
// never under that lock.
type eventTypes struct {
	s *Server

	mu     sync.Mutex                      // guards chain, fields
	chain  map[codec.NodeId][]codec.NodeId // an ObjectType and its supertypes; nil for no node
	fields map[fieldKey]bool

	demoCount atomic.Uint32 // the Counter of the last demo event
}

type fieldKey struct {
	typ codec.NodeId
	key string
}

var _ subscription.EventTypes = (*eventTypes)(nil)

func newEventTypes(s *Server) *eventTypes {
	return &eventTypes{s: s, chain: make(map[codec.NodeId][]codec.NodeId), fields: make(map[fieldKey]bool)}
}

// supertypes returns typ and its supertypes when typ is an ObjectType, an empty slice
// for another node, nil for no node.
func (t *eventTypes) supertypes(typ codec.NodeId) []codec.NodeId {
	t.mu.Lock()
	c, ok := t.chain[typ]
	t.mu.Unlock()
	if ok {
		return c
	}
	switch t.nodeClass(typ) {
	case ua.NodeClassUnspecified:
		c = nil
	case ua.NodeClassObjectType:
		c = []codec.NodeId{typ}
		for cur := typ; len(c) < 64; {
			p, ok := t.super(cur)
			if !ok {
				break
			}
			c = append(c, p)
			cur = p
		}
	default:
		c = []codec.NodeId{} // a node, but no ObjectType: no event type either
	}
	t.mu.Lock()
	if c != nil || len(t.chain) < maxEventMemo {
		t.chain[typ] = c
	}
	t.mu.Unlock()
	return c
}

// maxEventMemo bounds what clients can make the memo hold: past it, unknown types and
// field paths are looked up again each time instead of remembered.
const maxEventMemo = 4096

// warm looks typ up so that IsSubtype answers from the memo.
func (t *eventTypes) warm(typ codec.NodeId) { t.supertypes(typ) }

func (t *eventTypes) nodeClass(n codec.NodeId) ua.NodeClass {
	op := &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnNeither,
		Items:   []ua.ReadValueId{{NodeId: n, AttributeId: uint32(attr.NodeClass)}},
		Results: make([]codec.DataValue, 1)}
	t.s.space.Read(context.Background(), op, func() {})
	if op.Results[0].Status != status.Good {
		return ua.NodeClassUnspecified
	}
	v := op.Results[0].Value
	return ua.NodeClass(int32(v.Bits()))
}

// super returns the supertype of a type: the source of its inverse HasSubtype.
func (t *eventTypes) super(typ codec.NodeId) (codec.NodeId, bool) {
	op := &nodemgr.BrowseOp{
		Items: []ua.BrowseDescription{{NodeId: typ, BrowseDirection: ua.BrowseDirectionInverse,
			ReferenceTypeId: codec.NewNumericNodeId(0, id.HasSubtype), ResultMask: 0}},
		Results: make([]nodemgr.BrowseResult, 1),
	}
	t.s.space.Browse(context.Background(), op, func() {})
	if r := op.Results[0]; r.Status == status.Good && len(r.References) > 0 {
		return r.References[0].NodeId.NodeId, true
	}
	return codec.NodeId{}, false
}

// Known reports whether typ is a node of the address space.
func (t *eventTypes) Known(typ codec.NodeId) bool { return t.supertypes(typ) != nil }

// IsSubtype reports whether typ is super or derives from it.
func (t *eventTypes) IsSubtype(typ, super codec.NodeId) bool {
	if typ == super {
		return true
	}
	for _, p := range t.supertypes(typ) {
		if p == super {
			return true
		}
	}
	return false
}

// HasField reports whether path leads from typ, or from one of its supertypes, to an
// instance declaration along hierarchical references.
func (t *eventTypes) HasField(typ codec.NodeId, path []codec.QualifiedName) bool {
	k := fieldKey{typ, subscription.FieldKey(path...)}
	t.mu.Lock()
	ok, found := t.fields[k]
	t.mu.Unlock()
	if found {
		return ok
	}
	elems := make([]ua.RelativePathElement, len(path))
	for i, q := range path {
		elems[i] = ua.RelativePathElement{ReferenceTypeId: codec.NewNumericNodeId(0, id.HierarchicalReferences),
			IncludeSubtypes: true, TargetName: q}
	}
	for _, ty := range t.supertypes(typ) {
		paths := []ua.BrowsePath{{StartingNode: ty, RelativePath: ua.RelativePath{Elements: elems}}}
		res := make([]ua.BrowsePathResult, 1)
		t.s.space.TranslateBrowsePaths(context.Background(), paths, res)
		if res[0].StatusCode == status.Good && len(res[0].Targets) > 0 {
			ok = true
			break
		}
	}
	t.mu.Lock()
	if len(t.fields) < maxEventMemo {
		t.fields[k] = ok
	}
	t.mu.Unlock()
	return ok
}

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
	return subscription.CompileEventFilter(f, s.events)
}

// newEvent returns an event of typ from source with the fields of BaseEventType set;
// the caller adds the fields of its subtype.
func (s *Server) newEvent(typ, source codec.NodeId, sourceName string, severity uint16, message string) *subscription.Event {
	now := codec.DateTimeOf(s.now())
	return &subscription.Event{Type: typ, Fields: map[string]codec.Variant{
		subscription.KeyEventId:     subscription.NewEventId(),
		subscription.KeyEventType:   codec.NodeIdVariant(typ),
		subscription.KeySourceNode:  codec.NodeIdVariant(source),
		subscription.KeySourceName:  codec.StringVariant(sourceName),
		subscription.KeyTime:        codec.DateTimeVariant(now),
		subscription.KeyReceiveTime: codec.DateTimeVariant(now),
		subscription.KeyMessage:     codec.MustVariant(codec.LocalizedText{Locale: "en", Text: message}),
		subscription.KeySeverity:    codec.UInt16Variant(severity),
	}}
}

// emit hands ev to the event items of notifiers, after looking its type up.
func (s *Server) emit(ev *subscription.Event, notifiers ...codec.NodeId) {
	s.events.warm(ev.Type)
	s.subs.Emit(ev, notifiers...)
}

// systemEvent reports something the server did as a SystemEventType event of the
// Server object (Part 5 §6.4.28): session and subscription lifecycle, not audited.
// Nothing is built while no client monitors events.
func (s *Server) systemEvent(message string) {
	if !s.subs.Listening() {
		return
	}
	s.emit(s.newEvent(codec.NewNumericNodeId(0, id.SystemEventType), serverID, "Server", 100, message), serverID)
}
