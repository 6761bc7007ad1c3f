package addrspace

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/ns0"
)

// entry is what a Space keeps of one node beyond the namespace 0 tables: the node itself
// when it was added at run time, and the state of its Value.
type entry struct {
	n *stored // nil for a node of namespace 0
	// tab is the node in the namespace 0 tables when inTable, found once when the entry
	// was made rather than searched for at every read.
	tab     ns0.Node
	inTable bool
	value   *codec.DataValue // the current Value, once set, written or read
	source  ValueFunc        // computes the Value at each read (SetValueFunc)
	// readRoles, when restricted, are the roles of which a principal must hold one to
	// read the Value (SetReadRoles); otherwise AccessLevel alone decides.
	readRoles  []codec.NodeId
	restricted bool
	// hidden are references of the tables that RemoveReference took away.
	hidden []Reference
	// notifier, when notifierSet, replaces the EventNotifier of the node (SetEventNotifier).
	notifier    uint8
	notifierSet bool
}

// index finds the entry of a NodeId. A numeric NodeId, which is what most clients read,
// is looked up by a 64-bit key: hashing that is several times cheaper than hashing the
// NodeId with its string field, and a Read makes one lookup per item. Namespace 0's ids
// are small integers, so its entries are found by indexing a slice instead.
type index struct {
	ns0     []*entry // by numeric id below maxDenseID in namespace 0; nil where there is none
	numeric map[uint64]*entry
	other   map[codec.NodeId]*entry
}

// maxDenseID bounds the namespace 0 ids kept in index.ns0 (the tables' largest is about
// 33,000), so that the slice stays within half a megabyte.
const maxDenseID = 1 << 16

func newIndex() index {
	return index{numeric: make(map[uint64]*entry), other: make(map[codec.NodeId]*entry)}
}

func numericKey(id codec.NodeId) uint64 { return uint64(id.Namespace())<<32 | uint64(id.IntID()) }

// dense reports whether id is kept in x.ns0, and its index there.
func dense(id codec.NodeId) (uint32, bool) {
	return id.IntID(), id.Type() == codec.IDNumeric && id.Namespace() == 0 && id.IntID() < maxDenseID
}

// get returns the entry of id, nil when there is none.
func (x *index) get(id codec.NodeId) *entry {
	if i, ok := dense(id); ok {
		if i < uint32(len(x.ns0)) {
			return x.ns0[i]
		}
		return nil
	}
	if id.Type() == codec.IDNumeric {
		return x.numeric[numericKey(id)]
	}
	return x.other[id]
}

// add returns the entry of id, making it when there is none.
func (x *index) add(id codec.NodeId) *entry {
	if e := x.get(id); e != nil {
		return e
	}
	e := new(entry)
	if id.Namespace() == 0 && id.Type() == codec.IDNumeric {
		e.tab, e.inTable = ns0.Lookup(id.IntID())
	}
	switch i, ok := dense(id); {
	case ok:
		if int(i) >= len(x.ns0) {
			x.ns0 = append(x.ns0, make([]*entry, int(i)+1-len(x.ns0))...)
		}
		x.ns0[i] = e
	case id.Type() == codec.IDNumeric:
		x.numeric[numericKey(id)] = e
	default:
		x.other[id] = e
	}
	return e
}

// stored is what a Space keeps of a Node added at run time: its attributes, without the
// initial Value (the entry's Value state holds it) and the References (the Space's refs
// hold them), and with the attributes only types, ReferenceTypes and Views have apart, so
// that the instances, nearly all the nodes of a large model, do not carry them (about
// 240 bytes a node instead of the Node's 400).
type stored struct {
	NodeId                  codec.NodeId
	NodeClass               ua.NodeClass
	BrowseName              codec.QualifiedName
	DisplayName             codec.LocalizedText
	Description             codec.LocalizedText
	WriteMask               uint32
	ValueRank               int32
	DataType                codec.NodeId
	ArrayDimensions         []uint32
	MinimumSamplingInterval float64
	WriteRoles              []codec.NodeId
	AccessRestrictions      uint16
	EventNotifier           uint8
	AccessLevel             uint8
	UserAccessDenied        uint8
	Historizing             bool
	Executable              bool
	// types holds the attributes of types, ReferenceTypes and Views; nil when they are
	// all zero.
	types *typeAttributes
}

// typeAttributes are the attributes of a stored node that instances do not have.
type typeAttributes struct {
	IsAbstract         bool
	Symmetric          bool
	ContainsNoLoops    bool
	InverseName        codec.LocalizedText
	DataTypeDefinition codec.Variant
}

// newStored keeps the attributes of n.
func newStored(n *Node) *stored {
	st := &stored{
		NodeId: n.NodeId, NodeClass: n.NodeClass, BrowseName: n.BrowseName, DisplayName: n.DisplayName,
		Description: n.Description, WriteMask: n.WriteMask, ValueRank: n.ValueRank, DataType: n.DataType,
		ArrayDimensions: n.ArrayDimensions, MinimumSamplingInterval: n.MinimumSamplingInterval,
		WriteRoles: n.WriteRoles, AccessRestrictions: n.AccessRestrictions, EventNotifier: n.EventNotifier,
		AccessLevel: n.AccessLevel, UserAccessDenied: n.UserAccessDenied, Historizing: n.Historizing,
		Executable: n.Executable,
	}
	t := typeAttributes{IsAbstract: n.IsAbstract, Symmetric: n.Symmetric, ContainsNoLoops: n.ContainsNoLoops,
		InverseName: n.InverseName, DataTypeDefinition: n.DataTypeDefinition}
	if t.IsAbstract || t.Symmetric || t.ContainsNoLoops || t.InverseName != (codec.LocalizedText{}) || !t.DataTypeDefinition.IsNull() {
		st.types = &t
	}
	return st
}

// typeAttrs returns the type attributes of n, zero for an instance.
func (n *stored) typeAttrs() *typeAttributes {
	if n.types == nil {
		return &noTypeAttributes
	}
	return n.types
}

var noTypeAttributes typeAttributes
