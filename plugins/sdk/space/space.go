// Package space is a small in-memory node table for plugin node managers: it answers
// Read, Write, Browse and Call for a handful of Objects, Variables and Methods, so that
// a plugin author writes only what is special about the device (how a value is
// measured, what a method does) and not the attribute and reference bookkeeping.
//
// A Space holds Objects, Variables and Methods with their attributes, and references
// between them and to nodes of other namespaces (the ObjectsFolder a root hangs below,
// the namespace 0 type definitions). Each reference is stored forward on its source
// and answered inverse on its target, when these are nodes of the Space. Subtype
// filters of Browse and DataType checks of Write and Call follow namespace 0's own type
// tree (package ns0).
//
// A Variable's value is either stored in the Space (Variable.Value, changed by Write
// and SetValue) or owned by the plugin, which computes it at Read time (Variable.Get)
// and takes writes (Variable.Set). Code built for a WASM guest must not rely on
// goroutines between calls, so values that depend on time are computed in Get from the
// time it is passed.
//
// A Space is safe for concurrent use. It calls Get, Set and Method.Run without holding
// its lock, so they may call the Space again (SetValue, say).
package space

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// Well-known namespace 0 nodes a Space uses.
var (
	hasTypeDefinition    = codec.NewNumericNodeId(0, id.HasTypeDefinition)
	hasComponent         = codec.NewNumericNodeId(0, id.HasComponent)
	hasProperty          = codec.NewNumericNodeId(0, id.HasProperty)
	baseObjectType       = codec.NewNumericNodeId(0, id.BaseObjectType)
	baseDataVariableType = codec.NewNumericNodeId(0, id.BaseDataVariableType)
	propertyType         = codec.NewNumericNodeId(0, id.PropertyType)
	argumentType         = codec.NewNumericNodeId(0, id.Argument)
)

// Object describes an Object node (Part 3 §5.5.1).
type Object struct {
	NodeId      codec.NodeId
	BrowseName  codec.QualifiedName
	DisplayName codec.LocalizedText // BrowseName.Name when empty
	Description codec.LocalizedText
	// EventNotifier says whether clients may subscribe to the Object's events
	// (ua.EventNotifierTypeSubscribeToEvents).
	EventNotifier ua.EventNotifierType
	// TypeDefinition is the target of the HasTypeDefinition reference; BaseObjectType
	// (i=58) when null.
	TypeDefinition codec.NodeId
	// Parent, when not null, gets a reference of type ParentReference (HasComponent
	// when null) to the Object: a node of the Space, or of another namespace (the
	// ObjectsFolder i=85, with Organizes). A Parent in the Object's own namespace must
	// already be in the Space.
	Parent          codec.NodeId
	ParentReference codec.NodeId
}

// Variable describes a Variable node (Part 3 §5.6.1).
type Variable struct {
	NodeId      codec.NodeId
	BrowseName  codec.QualifiedName
	DisplayName codec.LocalizedText // BrowseName.Name when empty
	Description codec.LocalizedText
	// DataType is required. A zero ValueRank without ArrayDimensions means -1
	// (Scalar), so that scalars need not say it; set it for arrays (Part 3 §5.6.2).
	DataType        codec.NodeId
	ValueRank       int32
	ArrayDimensions []uint32
	// AccessLevel is CurrentRead when zero.
	AccessLevel             ua.AccessLevelType
	MinimumSamplingInterval float64
	Historizing             bool
	// TypeDefinition is BaseDataVariableType (i=63) when null.
	TypeDefinition codec.NodeId
	// Parent and ParentReference as for Object; HasComponent when null.
	Parent          codec.NodeId
	ParentReference codec.NodeId

	// Value is the initial stored value, used when Get is nil; Write and SetValue
	// replace it.
	Value codec.Variant
	// Get, when set, computes the value at each Read from the time of the read; the
	// Space fills a zero SourceTimestamp with that time. Set takes the writes of a
	// Variable with Get and CurrentWrite, after the Space checked them; it returns the
	// StatusCode of the write. A writable Variable with Get needs Set.
	Get func(now codec.DateTime) codec.DataValue
	Set func(v codec.DataValue) status.Code
}

// Method describes a Method node (Part 3 §5.7) and runs it (Part 4 §5.11.2).
type Method struct {
	NodeId      codec.NodeId
	BrowseName  codec.QualifiedName
	DisplayName codec.LocalizedText // BrowseName.Name when empty
	Description codec.LocalizedText
	// Parent is the Object the Method is called on, with HasComponent (required).
	Parent codec.NodeId
	// InputArguments and OutputArguments become the Method's HasProperty Variables of
	// those names, whose NodeIds are the Method's string NodeId with ".InputArguments"
	// or ".OutputArguments" appended. A Method with arguments needs a string NodeId.
	InputArguments  []ua.Argument
	OutputArguments []ua.Argument
	// Disabled makes Executable and UserExecutable false: calls are BadNotExecutable.
	Disabled bool
	// Run executes a call on object with inputs that the Space checked against
	// InputArguments (count, DataType and ValueRank). It returns the output arguments
	// and the call's StatusCode; a Bad code drops the outputs.
	Run func(object codec.NodeId, inputs []codec.Variant) ([]codec.Variant, status.Code)
}

// Reference is a reference of a node as the Space answers it: stored forward on the
// source and answered inverse on the target.
type Reference struct {
	ReferenceTypeId codec.NodeId
	TargetId        codec.NodeId
	IsForward       bool
}

// node is one node of the Space. Everything but value and refs is fixed when the
// node is added.
type node struct {
	id          codec.NodeId
	class       ua.NodeClass
	browseName  codec.QualifiedName
	displayName codec.LocalizedText
	description codec.LocalizedText

	eventNotifier ua.EventNotifierType // Object

	dataType    codec.NodeId // Variable
	valueRank   int32
	dims        []uint32
	accessLevel ua.AccessLevelType
	minSampling float64
	historizing bool
	value       codec.DataValue // stored value when get is nil
	get         func(now codec.DateTime) codec.DataValue
	set         func(v codec.DataValue) status.Code

	executable bool // Method
	inputs     []ua.Argument
	run        func(object codec.NodeId, inputs []codec.Variant) ([]codec.Variant, status.Code)

	refs []Reference
}

// Compile-time guards: a Space answers the operations of a node manager; the plugin
// adds Namespaces and the rest.
var (
	_ nodemgr.Reader  = (*Space)(nil)
	_ nodemgr.Writer  = (*Space)(nil)
	_ nodemgr.Browser = (*Space)(nil)
	_ nodemgr.Caller  = (*Space)(nil)
)

// Space is an in-memory table of nodes. The zero Space is not usable; call New.
type Space struct {
	now func() time.Time

	mu    sync.RWMutex // guards nodes and every node's value and refs
	nodes map[codec.NodeId]*node
}

// New returns an empty Space whose clock is now (time.Now when nil). The clock stamps
// reads whose ReadOp has no Now and the stored values the Space takes.
func New(now func() time.Time) *Space {
	if now == nil {
		now = time.Now
	}
	return &Space{now: now, nodes: make(map[codec.NodeId]*node)}
}

// ErrInvalidNode is wrapped by the errors of AddObject, AddVariable, AddMethod,
// AddReference and SetValue.
var ErrInvalidNode = errors.New("space: invalid node")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidNode}, args...)...)
}

// AddObject adds o, its HasTypeDefinition reference and its parent's reference.
func (s *Space) AddObject(o Object) error {
	n := &node{id: o.NodeId, class: ua.NodeClassObject, browseName: o.BrowseName, displayName: o.DisplayName,
		description: o.Description, eventNotifier: o.EventNotifier}
	return s.add(n, orDefault(o.TypeDefinition, baseObjectType), o.Parent, orDefault(o.ParentReference, hasComponent))
}

// AddVariable adds v, its HasTypeDefinition reference and its parent's reference.
func (s *Space) AddVariable(v Variable) error {
	if v.DataType.IsNull() {
		return invalid("Variable %v has no DataType", v.NodeId)
	}
	if v.ValueRank == 0 && len(v.ArrayDimensions) == 0 {
		v.ValueRank = -1
	}
	if v.AccessLevel == 0 {
		v.AccessLevel = ua.AccessLevelTypeCurrentRead
	}
	if v.Get != nil && v.AccessLevel&ua.AccessLevelTypeCurrentWrite != 0 && v.Set == nil {
		return invalid("Variable %v computes its value with Get and is writable, but has no Set", v.NodeId)
	}
	if v.Set != nil && v.Get == nil {
		return invalid("Variable %v has Set without Get; a stored value needs neither", v.NodeId)
	}
	if v.Get == nil && !v.Value.IsNull() && !typeMatches(&v.Value, v.DataType, v.ValueRank) {
		return invalid("Variable %v: the Value does not fit DataType %v, ValueRank %d", v.NodeId, v.DataType, v.ValueRank)
	}
	ts := codec.DateTimeOf(s.now())
	n := &node{id: v.NodeId, class: ua.NodeClassVariable, browseName: v.BrowseName, displayName: v.DisplayName,
		description: v.Description, dataType: v.DataType, valueRank: v.ValueRank, dims: v.ArrayDimensions,
		accessLevel: v.AccessLevel, minSampling: v.MinimumSamplingInterval, historizing: v.Historizing,
		value: codec.DataValue{Value: v.Value, SourceTimestamp: ts}, get: v.Get, set: v.Set}
	return s.add(n, orDefault(v.TypeDefinition, baseDataVariableType), v.Parent, orDefault(v.ParentReference, hasComponent))
}

// AddMethod adds m with HasComponent from its Parent, and its InputArguments and
// OutputArguments properties.
func (s *Space) AddMethod(m Method) error {
	if m.Parent.IsNull() || m.Run == nil {
		return invalid("Method %v needs a Parent and Run", m.NodeId)
	}
	if (len(m.InputArguments) > 0 || len(m.OutputArguments) > 0) && m.NodeId.Type() != codec.IDString {
		return invalid("Method %v has arguments but no string NodeId to name them by", m.NodeId)
	}
	n := &node{id: m.NodeId, class: ua.NodeClassMethod, browseName: m.BrowseName, displayName: m.DisplayName,
		description: m.Description, executable: !m.Disabled, inputs: m.InputArguments, run: m.Run}
	if err := s.add(n, codec.NodeId{}, m.Parent, hasComponent); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		args []ua.Argument
	}{{"InputArguments", m.InputArguments}, {"OutputArguments", m.OutputArguments}} {
		if len(p.args) == 0 {
			continue
		}
		eos := make([]codec.ExtensionObject, len(p.args))
		for i := range p.args {
			eos[i] = codec.NewExtensionObject(&p.args[i])
		}
		err := s.AddVariable(Variable{
			NodeId:     codec.NewStringNodeId(m.NodeId.Namespace(), m.NodeId.StringID()+"."+p.name),
			BrowseName: codec.QualifiedName{Name: p.name}, DataType: argumentType,
			ValueRank: 1, ArrayDimensions: []uint32{uint32(len(eos))}, Value: codec.MustVariant(eos),
			TypeDefinition: propertyType, Parent: m.NodeId, ParentReference: hasProperty,
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// AddReference adds a reference of type typ from source to target. At least one of
// them must be a node of the Space; the other may belong to another namespace, or to
// the Space's, in which case it must be in the Space too.
func (s *Space) AddReference(source, typ, target codec.NodeId) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addReferenceLocked(source, typ, target)
}

func (s *Space) addReferenceLocked(source, typ, target codec.NodeId) error {
	src, tgt := s.nodes[source], s.nodes[target]
	switch {
	case typ.IsNull() || source.IsNull() || target.IsNull():
		return invalid("reference %v -%v-> %v has a null NodeId", source, typ, target)
	case src == nil && tgt == nil:
		return invalid("reference %v -%v-> %v: neither end is in the Space", source, typ, target)
	case src == nil && source.Namespace() == target.Namespace():
		return invalid("reference %v -%v-> %v: the source is not in the Space", source, typ, target)
	case tgt == nil && source.Namespace() == target.Namespace():
		return invalid("reference %v -%v-> %v: the target is not in the Space", source, typ, target)
	}
	if src != nil {
		src.refs = append(src.refs, Reference{ReferenceTypeId: typ, TargetId: target, IsForward: true})
	}
	if tgt != nil {
		tgt.refs = append(tgt.refs, Reference{ReferenceTypeId: typ, TargetId: source, IsForward: false})
	}
	return nil
}

// add inserts n with a HasTypeDefinition to typeDef (when not null) and a reference of
// type parentRef from parent (when not null).
func (s *Space) add(n *node, typeDef, parent, parentRef codec.NodeId) error {
	if n.id.IsNull() {
		return invalid("a %v has a null NodeId", n.class)
	}
	if n.browseName.Name == "" {
		return invalid("%v has no BrowseName", n.id)
	}
	if n.displayName.Text == "" {
		n.displayName = codec.LocalizedText{Text: n.browseName.Name}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.nodes[n.id]; dup {
		return invalid("%v is already in the Space", n.id)
	}
	if !parent.IsNull() && s.nodes[parent] == nil && parent.Namespace() == n.id.Namespace() {
		return invalid("the parent %v of %v is not in the Space", parent, n.id)
	}
	s.nodes[n.id] = n
	if !typeDef.IsNull() {
		n.refs = append(n.refs, Reference{ReferenceTypeId: hasTypeDefinition, TargetId: typeDef, IsForward: true})
	}
	if !parent.IsNull() {
		return s.addReferenceLocked(parent, parentRef, n.id)
	}
	return nil
}

// SetValue replaces the stored value of a Variable without Get, as a plugin does when
// it learns a new value; a zero SourceTimestamp becomes the Space's clock. It does not
// check the value against the DataType.
func (s *Space) SetValue(node codec.NodeId, v codec.DataValue) error {
	if v.SourceTimestamp == 0 {
		v.SourceTimestamp = codec.DateTimeOf(s.now())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[node]
	if n == nil || n.class != ua.NodeClassVariable || n.get != nil {
		return invalid("%v is not a Variable with a stored value", node)
	}
	n.value = v
	return nil
}

// References returns a copy of the references of node, forward and inverse, in the
// order they were added, and whether node is in the Space.
func (s *Space) References(node codec.NodeId) ([]Reference, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[node]
	if n == nil {
		return nil, false
	}
	return append([]Reference(nil), n.refs...), true
}

func orDefault(n, def codec.NodeId) codec.NodeId {
	if n.IsNull() {
		return def
	}
	return n
}
