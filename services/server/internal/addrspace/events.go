package addrspace

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// EventTypes answers what the subscription engine asks about event types
// (subscription.EventTypes) from a Space. Supertype chains and field checks are
// memoised: the engine asks IsSubtype while holding its lock, so every type it may ask
// about (the types of emitted events and of filters) is looked up in the Space
// beforehand, by Warm and by CompileEventFilter, never under that lock. It is safe for
// concurrent use.
type EventTypes struct {
	s *Space

	mu     sync.Mutex                      // guards chain, fields
	chain  map[codec.NodeId][]codec.NodeId // an ObjectType and its supertypes; nil for no node
	fields map[fieldKey]bool
}

type fieldKey struct {
	typ codec.NodeId
	key string
}

// NewEventTypes returns the event types of s.
func NewEventTypes(s *Space) *EventTypes {
	return &EventTypes{s: s, chain: make(map[codec.NodeId][]codec.NodeId), fields: make(map[fieldKey]bool)}
}

// supertypes returns typ and its supertypes when typ is an ObjectType, an empty slice
// for another node, nil for no node.
func (t *EventTypes) supertypes(typ codec.NodeId) []codec.NodeId {
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

// Warm looks typ up so that IsSubtype answers from the memo.
func (t *EventTypes) Warm(typ codec.NodeId) { t.supertypes(typ) }

func (t *EventTypes) nodeClass(n codec.NodeId) ua.NodeClass {
	op := &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnNeither,
		Items:   []ua.ReadValueId{{NodeId: n, AttributeId: uint32(attr.NodeClass)}},
		Results: make([]codec.DataValue, 1)}
	t.s.Read(context.Background(), op, func() {})
	if op.Results[0].Status != status.Good {
		return ua.NodeClassUnspecified
	}
	v := op.Results[0].Value
	return ua.NodeClass(int32(v.Bits()))
}

// super returns the supertype of a type: the source of its inverse HasSubtype.
func (t *EventTypes) super(typ codec.NodeId) (codec.NodeId, bool) {
	op := &nodemgr.BrowseOp{
		Items: []ua.BrowseDescription{{NodeId: typ, BrowseDirection: ua.BrowseDirectionInverse,
			ReferenceTypeId: codec.NewNumericNodeId(0, id.HasSubtype), ResultMask: 0}},
		Results: make([]nodemgr.BrowseResult, 1),
	}
	t.s.Browse(context.Background(), op, func() {})
	if r := op.Results[0]; r.Status == status.Good && len(r.References) > 0 {
		return r.References[0].NodeId.NodeId, true
	}
	return codec.NodeId{}, false
}

// Known reports whether typ is a node of the address space.
func (t *EventTypes) Known(typ codec.NodeId) bool { return t.supertypes(typ) != nil }

// IsSubtype reports whether typ is super or derives from it.
func (t *EventTypes) IsSubtype(typ, super codec.NodeId) bool {
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
func (t *EventTypes) HasField(typ codec.NodeId, path []codec.QualifiedName) bool {
	k := fieldKey{typ, pathKey(path)}
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
		t.s.TranslateBrowsePaths(context.Background(), paths, res)
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

// pathKey is a browse path as one string, for the memo: each name behind its namespace
// index and its length, so that no two paths give one key.
func pathKey(path []codec.QualifiedName) string {
	var b strings.Builder
	for _, q := range path {
		b.WriteString(strconv.Itoa(int(q.NamespaceIndex)))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(len(q.Name)))
		b.WriteByte(':')
		b.WriteString(q.Name)
	}
	return b.String()
}
