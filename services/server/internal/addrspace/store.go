// Package addrspace is the server's in-memory address space: namespace 0 served straight
// from the generated tables of pkg/ua/ns0, plus nodes, references and values that the
// server or an in-process namespace (the demo namespace) adds at run time. It answers
// Read (Part 4 §5.10.2), Write (§5.10.4), Call (§5.11.2) for Methods added with
// AddMethod, Browse (§5.9.2) and TranslateBrowsePathsToNodeIds (§5.9.4) as a
// nodemgr.Manager.
//
// Start-up copies nothing: a node of namespace 0 is looked up in the static tables on
// each access, and only values the server sets or that a client reads are kept in the
// overlay maps of a Space.
package addrspace

import (
	"fmt"
	"slices"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/ns0"
	"uastack.dev/services/server/internal/telemetry"
)

// Reference is one reference of a node added at run time, as seen from that node.
type Reference struct {
	ReferenceTypeId codec.NodeId
	TargetId        codec.NodeId
	IsForward       bool
}

// Node holds the attributes of a node added at run time (Part 3 §5). Attributes a
// NodeClass does not have are ignored. Value is the initial Value of a Variable or
// VariableType.
type Node struct {
	NodeId                  codec.NodeId
	NodeClass               ua.NodeClass
	BrowseName              codec.QualifiedName
	DisplayName             codec.LocalizedText
	Description             codec.LocalizedText
	WriteMask               uint32
	IsAbstract              bool
	Symmetric               bool
	InverseName             codec.LocalizedText
	ContainsNoLoops         bool
	EventNotifier           uint8
	DataType                codec.NodeId
	ValueRank               int32
	ArrayDimensions         []uint32
	AccessLevel             uint8
	MinimumSamplingInterval float64
	Historizing             bool
	Executable              bool
	AccessRestrictions      uint16
	// WriteRoles, when not empty, are the roles (Part 3 §4.9) of which a principal
	// must hold one to write the node; the others get BadUserAccessDenied and read a
	// UserAccessLevel and UserWriteMask without write bits. Empty means anyone who may
	// write by AccessLevel and WriteMask.
	WriteRoles []codec.NodeId
	// UserAccessDenied are the AccessLevel bits no principal is granted, as a model's
	// UserAccessLevel short of its AccessLevel says: the UserAccessLevel lacks them, and
	// a write they would allow is BadUserAccessDenied.
	UserAccessDenied uint8
	// DataTypeDefinition is a DataType's StructureDefinition or EnumDefinition in an
	// ExtensionObject (attribute 23, Part 3 §5.8.3); null when it has none.
	DataTypeDefinition codec.Variant
	Value              codec.Variant
	// References are the node's references; AddNode also records each one, inverted,
	// on its target.
	References []Reference
}

// Space is an address space: namespace 0 from the static tables plus an overlay of
// run-time nodes, references and values. All methods are safe for concurrent use.
//
// Values are immutable once stored: a write replaces the stored Variant and never
// modifies an array in place, so a reader may share an array with the store.
type Space struct {
	uris []string

	mu sync.RWMutex // guards entries, refs, methods, onChange
	// entries holds the nodes added at run time and the Value state of Variables.
	entries index
	// refs holds references added at run time, by the node they belong to; for a node of
	// namespace 0 they come after its table references.
	refs map[codec.NodeId]refSet
	// methods are the handlers of the Methods added with AddMethod.
	methods map[codec.NodeId]MethodHandler
	// onChange are called after a Value changes.
	onChange []func(codec.NodeId, *codec.DataValue)

	// start is the SourceTimestamp of values taken from the nodeset.
	start codec.DateTime

	// panics is told of a ValueFunc, a MethodHandler or an OnChange callback that
	// panicked (SetPanics).
	panics *telemetry.Panics
}

// SetPanics has the Space report to p the panics of the code it calls: a ValueFunc or
// a MethodHandler that panics answers its item with BadInternalError
// (telemetry.PlaceAddressSpace), an OnChange callback that panics is skipped
// (telemetry.PlaceObserver). Call it before serving.
func (s *Space) SetPanics(p *telemetry.Panics) { s.panics = p }

// compute returns the value fn computes at now; one that panics is BadInternalError.
func (s *Space) compute(fn ValueFunc, now codec.DateTime) (dv codec.DataValue) {
	defer func() {
		if v := recover(); v != nil {
			s.panics.Recovered(telemetry.PlaceAddressSpace, v)
			dv = codec.DataValue{Status: status.BadInternalError, ServerTimestamp: now}
		}
	}()
	return fn(now)
}

// changed tells the OnChange callbacks fns of a new value of id; one that panics is
// reported and the others are told.
func (s *Space) changed(fns []func(codec.NodeId, *codec.DataValue), id codec.NodeId, dv *codec.DataValue) {
	for _, fn := range fns {
		s.tell(fn, id, dv)
	}
}

func (s *Space) tell(fn func(codec.NodeId, *codec.DataValue), id codec.NodeId, dv *codec.DataValue) {
	defer s.panics.Recover(telemetry.PlaceObserver)
	fn(id, dv)
}

// New returns a Space serving namespace 0 and, by name, the namespaces in uris (whose
// nodes are added with AddNode). It copies nothing from the namespace 0 tables.
func New(uris ...string) *Space {
	return &Space{
		uris:    uris,
		entries: newIndex(),
		refs:    make(map[codec.NodeId]refSet),
		methods: make(map[codec.NodeId]MethodHandler),
		start:   codec.Now(),
	}
}

// SetReadRoles lets only principals holding one of roles read the Value of the variable
// id (Part 3 §4.9 roles; Part 5 asks this of SessionSecurityDiagnostics, for example):
// the others get BadUserAccessDenied and a UserAccessLevel without the read bit. It
// reports false when there is no such variable.
func (s *Space) SetReadRoles(id codec.NodeId, roles ...codec.NodeId) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.lookupLocked(id)
	if !ok || v.class() != ua.NodeClassVariable {
		return false
	}
	e := s.entries.add(id)
	e.readRoles, e.restricted = append([]codec.NodeId(nil), roles...), true
	return true
}

// NewNamespace0 returns a Space that serves namespace 0 (http://opcfoundation.org/UA/).
func NewNamespace0() *Space { return New(NamespaceURI0) }

// NamespaceURI0 is the URI of namespace 0.
const NamespaceURI0 = "http://opcfoundation.org/UA/"

// Namespaces returns the namespace URIs given to New.
func (s *Space) Namespaces() []string { return s.uris }

// OnChange registers fn to be called after each change of a Value through Write or
// SetValue, with the node and the new DataValue. fn runs on the writer's goroutine after
// the store's lock is released; it must not modify dv and must not block.
func (s *Space) OnChange(fn func(id codec.NodeId, dv *codec.DataValue)) {
	s.mu.Lock()
	s.onChange = append(s.onChange, fn)
	s.mu.Unlock()
}

// AddNode adds n and its references (each also recorded inverted on its target). It
// fails if a node with the same NodeId exists.
func (s *Space) AddNode(n Node) error {
	if n.NodeId.IsNull() {
		return fmt.Errorf("addrspace: AddNode: null NodeId")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.lookupLocked(n.NodeId); ok {
		return fmt.Errorf("addrspace: AddNode: %v exists", n.NodeId)
	}
	e := s.entries.add(n.NodeId)
	e.n = newStored(&n)
	for _, r := range n.References {
		s.addRefLocked(n.NodeId, r)
		s.addRefLocked(r.TargetId, Reference{
			ReferenceTypeId: r.ReferenceTypeId, TargetId: n.NodeId, IsForward: !r.IsForward,
		})
	}
	if n.NodeClass == ua.NodeClassVariable || n.NodeClass == ua.NodeClassVariableType {
		e.value = &codec.DataValue{Value: n.Value, SourceTimestamp: s.start, ServerTimestamp: s.start}
	}
	return nil
}

// SetValue sets the Value of a Variable, bypassing AccessLevel and type checks: it is how
// the server updates nodes it owns (ServerStatus, NamespaceArray, ...). A zero
// SourceTimestamp or ServerTimestamp is set to now. It returns false for an unknown
// node, one that is not a Variable or VariableType, or one with a ValueFunc.
func (s *Space) SetValue(id codec.NodeId, dv codec.DataValue) bool {
	now := codec.Now()
	if dv.SourceTimestamp == 0 {
		dv.SourceTimestamp = now
	}
	if dv.ServerTimestamp == 0 {
		dv.ServerTimestamp = now
	}
	fns, ok := s.setValue(id, &dv)
	if ok {
		s.changed(fns, id, &dv)
	}
	return ok
}

// setValue stores dv as the Value of id under the lock and returns the OnChange
// callbacks to tell, or false as SetValue does.
func (s *Space) setValue(id codec.NodeId, dv *codec.DataValue) ([]func(codec.NodeId, *codec.DataValue), bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.lookupLocked(id)
	if !ok || (v.class() != ua.NodeClassVariable && v.class() != ua.NodeClassVariableType) || v.computed() {
		return nil, false
	}
	s.storeLocked(id, dv)
	return s.onChange, true
}

// SetTypedValue is SetValue for a value that must also fit the Variable's DataType and
// ValueRank as a Write would (Part 3 §5.6.2): the server publishes its configuration
// this way, so that a mistyped value fails New instead of confusing clients.
func (s *Space) SetTypedValue(id codec.NodeId, val codec.Variant) error {
	s.mu.RLock()
	v, ok := s.lookupLocked(id)
	match := ok && s.typeMatchesLocked(&val, v.dataType(), v.valueRank())
	s.mu.RUnlock()
	switch {
	case !ok:
		return fmt.Errorf("addrspace: SetTypedValue: unknown node %v", id)
	case !match:
		return fmt.Errorf("addrspace: SetTypedValue: %v (%v) does not fit DataType %v, ValueRank %d of %v",
			val.Type(), val, v.dataType(), v.valueRank(), id)
	case !s.SetValue(id, codec.DataValue{Value: val}):
		return fmt.Errorf("addrspace: SetTypedValue: %v is not a Variable with a stored value", id)
	}
	return nil
}

// ValueFunc computes the Value of a Variable at read time, e.g. Server_ServerStatus_CurrentTime.
// now is the time of the Read. It runs while the Space is locked for reading: it must be
// fast, must not block and must not call the Space.
type ValueFunc func(now codec.DateTime) codec.DataValue

// SetValueFunc makes fn the source of the Value of a Variable, replacing a stored value;
// Write is refused with BadNotWritable from then on. It returns false for an unknown node
// or one that is not a Variable. Changes of such values are not reported to OnChange;
// monitored items sample them.
func (s *Space) SetValueFunc(id codec.NodeId, fn ValueFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.lookupLocked(id)
	if !ok || v.class() != ua.NodeClassVariable {
		return false
	}
	e := s.entries.add(id)
	e.source, e.value = fn, nil
	return true
}

// Computed reports whether the Value of id comes from a ValueFunc. Such values change
// without a write, so OnChange never reports them and monitored items sample them.
func (s *Space) Computed(id codec.NodeId) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.entries.get(id)
	return e != nil && e.source != nil
}

// AddReference adds a reference from source to r.TargetId, and its inverse on the target.
// Either end may be a node of namespace 0, a node added with AddNode, or (for the
// target) a node of another manager.
func (s *Space) AddReference(source codec.NodeId, r Reference) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.lookupLocked(source); !ok {
		return fmt.Errorf("addrspace: AddReference: unknown source %v", source)
	}
	if rt, ok := s.lookupLocked(r.ReferenceTypeId); !ok || rt.class() != ua.NodeClassReferenceType {
		return fmt.Errorf("addrspace: AddReference: %v is not a ReferenceType", r.ReferenceTypeId)
	}
	inverse := Reference{ReferenceTypeId: r.ReferenceTypeId, TargetId: source, IsForward: !r.IsForward}
	if s.unhideLocked(source, r) {
		// A reference of the tables that RemoveReference hid comes back in its place.
		s.unhideLocked(r.TargetId, inverse)
		return nil
	}
	s.addRefLocked(source, r)
	s.addRefLocked(r.TargetId, inverse)
	return nil
}

// unhideLocked shows again the reference r of id that RemoveReference hid, and reports
// whether it was hidden. s.mu must be held for writing.
func (s *Space) unhideLocked(id codec.NodeId, r Reference) bool {
	e := s.entries.get(id)
	if e == nil {
		return false
	}
	i := slices.Index(e.hidden, r)
	if i < 0 {
		return false
	}
	e.hidden = slices.Delete(e.hidden, i, i+1)
	return true
}

// RemoveReference removes the reference r of source, added at run time or of the
// namespace 0 tables, and its inverse on the target, so that a node can change what it
// is at run time (the Server's ServerRedundancy object takes another TypeDefinition
// when the server joins a redundant set). It fails when source has no such reference.
// References of the type tree (HasSubtype, HasEncoding) are refused: the subtype and
// encoding lookups read namespace 0's tables directly.
func (s *Space) RemoveReference(source codec.NodeId, r Reference) error {
	if r.ReferenceTypeId == hasSubtype || r.ReferenceTypeId == codec.NewNumericNodeId(0, hasEncoding) {
		return fmt.Errorf("addrspace: RemoveReference: %v references are fixed", r.ReferenceTypeId)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.lookupLocked(source)
	if !ok {
		return fmt.Errorf("addrspace: RemoveReference: unknown source %v", source)
	}
	found := false
	s.eachRefLocked(source, v, func(have Reference) bool {
		found = have == r
		return !found
	})
	if !found {
		return fmt.Errorf("addrspace: RemoveReference: %v has no reference %v to %v", source, r.ReferenceTypeId, r.TargetId)
	}
	s.unlinkLocked(source, r)
	s.unlinkLocked(r.TargetId, Reference{ReferenceTypeId: r.ReferenceTypeId, TargetId: source, IsForward: !r.IsForward})
	return nil
}

// unlinkLocked takes the reference r of id out of the run-time references, or hides it
// when it is one of the tables'. A reference the node does not have (the inverse on a
// target in another manager) changes nothing. s.mu must be held for writing.
func (s *Space) unlinkLocked(id codec.NodeId, r Reference) {
	rs := s.refs[id]
	list := &rs.inv
	if r.IsForward {
		list = &rs.fwd
	}
	if i := slices.Index(*list, r); i >= 0 {
		*list = slices.Delete(*list, i, i+1)
		s.refs[id] = rs
		return
	}
	v, ok := s.lookupLocked(id)
	if !ok || v.n != nil {
		return
	}
	for _, t := range v.tab.References() {
		if codec.NewNumericNodeId(0, t.ReferenceTypeId) == r.ReferenceTypeId && codec.NewNumericNodeId(0, t.TargetId) == r.TargetId && t.IsForward == r.IsForward {
			e := s.entries.add(id)
			e.hidden = append(e.hidden, r)
			return
		}
	}
}

// storeLocked stores a copy of dv as the value of id; s.mu must be held for writing.
func (s *Space) storeLocked(id codec.NodeId, dv *codec.DataValue) {
	e := s.entries.add(id)
	if e.value == nil {
		e.value = new(codec.DataValue)
	}
	*e.value = *dv
}

// eachRefLocked calls fn for each reference of the node v (id), table references first;
// it stops when fn returns false. s.mu must be held.
func (s *Space) eachRefLocked(id codec.NodeId, v view, fn func(Reference) bool) {
	s.eachRefDirLocked(id, v, ua.BrowseDirectionBoth, fn)
}

// eachRefDirLocked is eachRefLocked for the references in direction dir only, as far as
// the run-time ones go (the tables' are few and fn sees their direction): a type that
// thousands of instances point to keeps their inverse HasTypeDefinitions apart, and a
// forward Browse or a subtype walk of it never reads them. s.mu must be held.
func (s *Space) eachRefDirLocked(id codec.NodeId, v view, dir ua.BrowseDirection, fn func(Reference) bool) {
	switch {
	case v.n != nil:
	case v.e != nil && len(v.e.hidden) > 0:
		if !eachShownRef(v.tab.References(), v.e.hidden, fn) {
			return
		}
	default:
		for _, r := range v.tab.References() {
			if !fn(Reference{
				ReferenceTypeId: codec.NewNumericNodeId(0, r.ReferenceTypeId),
				TargetId:        codec.NewNumericNodeId(0, r.TargetId),
				IsForward:       r.IsForward,
			}) {
				return
			}
		}
	}
	rs := s.refs[id]
	if dir != ua.BrowseDirectionInverse {
		for _, r := range rs.fwd {
			if !fn(r) {
				return
			}
		}
	}
	if dir != ua.BrowseDirectionForward {
		for _, r := range rs.inv {
			if !fn(r) {
				return
			}
		}
	}
}

// refSet are the run-time references of one node, forward and inverse apart.
type refSet struct {
	fwd, inv []Reference
}

// addRefLocked adds r to the run-time references of id. s.mu must be held for writing.
func (s *Space) addRefLocked(id codec.NodeId, r Reference) {
	rs := s.refs[id]
	switch {
	case r.IsForward:
		rs.fwd = append(rs.fwd, r)
	case r.ReferenceTypeId == hasSubtype && len(rs.inv) > 0:
		// First, where superTypeLocked finds it at once even when the type's
		// instances were added before it.
		rs.inv = slices.Insert(rs.inv, 0, r)
	default:
		rs.inv = append(rs.inv, r)
	}
	s.refs[id] = rs
}

// eachShownRef calls fn for each of the table references refs that is not hidden, and
// reports false when fn stopped it. Apart from the loop of eachRefLocked, which every
// Browse runs, so that the nodes nothing hides pay nothing for the check.
func eachShownRef(refs []ns0.Reference, hidden []Reference, fn func(Reference) bool) bool {
	for _, r := range refs {
		ref := Reference{
			ReferenceTypeId: codec.NewNumericNodeId(0, r.ReferenceTypeId),
			TargetId:        codec.NewNumericNodeId(0, r.TargetId),
			IsForward:       r.IsForward,
		}
		if !slices.Contains(hidden, ref) && !fn(ref) {
			return false
		}
	}
	return true
}

// hasSubtype is the HasSubtype ReferenceType.
var hasSubtype = codec.NewNumericNodeId(0, 45)

// superTypeLocked returns the supertype of the type id (the source of its inverse
// HasSubtype reference). s.mu must be held.
func (s *Space) superTypeLocked(id codec.NodeId) (codec.NodeId, bool) {
	if id.Namespace() == 0 && id.Type() == codec.IDNumeric {
		if t, ok := ns0.Lookup(id.IntID()); ok {
			for _, r := range t.References() {
				if r.ReferenceTypeId == 45 && !r.IsForward {
					return codec.NewNumericNodeId(0, r.TargetId), true
				}
			}
		}
	}
	for _, r := range s.refs[id].inv {
		if r.ReferenceTypeId == hasSubtype {
			return r.TargetId, true
		}
	}
	return codec.NodeId{}, false
}

// maxTypeDepth bounds walks up the type hierarchy against loops in added nodes.
const maxTypeDepth = 64

// isSubtypeLocked reports whether typ is super or a subtype of it. s.mu must be held.
func (s *Space) isSubtypeLocked(typ, super codec.NodeId) bool {
	for range maxTypeDepth {
		if typ == super {
			return true
		}
		p, ok := s.superTypeLocked(typ)
		if !ok {
			return false
		}
		typ = p
	}
	return false
}
