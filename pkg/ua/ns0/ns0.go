// Package ns0 is the standard OPC UA address space, namespace 0, as read-only static
// data generated from Opc.Ua.NodeSet2.xml (Part 5) by tools/gen.
//
// Nothing is parsed at start-up: the nodes are arrays of fixed-size records that the
// compiler lays out in the binary, sorted by numeric id. Values, DataTypeDefinitions and
// RolePermissions are stored in their binary encoding (Part 6 §5.2.2.16) and decoded
// only when asked for. Every reference is stored in both directions, so Browse can
// follow inverse references (Part 3 §5.3.1) without an index built at run time.
//
// All node ids in this package are numeric ids in namespace 0, given as uint32; wrap
// them with codec.NewNumericNodeId(0, id) where a NodeId is needed. Everything here is
// safe for concurrent use.
package ns0

import (
	"iter"
	"unsafe"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// record is one node as laid out by the generator (tools/gen/nodeset.go); string
// fields index strs, value fields index blobs.
type record struct {
	id              uint32
	class           uint8 // ua.NodeClass
	flags           uint8 // flag* bits
	accessLevel     uint8
	userAccessLevel uint8
	eventNotifier   uint8
	dimsLen         uint8
	accessRestr     uint16
	browseName      uint16
	displayLocale   uint16
	displayText     uint16
	descLocale      uint16
	descText        uint16
	symbolicName    uint16
	inverseLocale   uint16
	inverseText     uint16
	dataType        uint32
	valueRank       int32
	minSampling     int32 // whole milliseconds
	dims            uint16
	value           uint16
	definition      uint16
	rolePermissions uint16
	refs            uint32
}

// Flag bits of record.flags; keep in step with tools/gen/nodeset.go.
const (
	flagHistorizing = 1 << iota
	flagExecutable
	flagUserExecutable
	flagIsAbstract
	flagSymmetric
)

// Reference is one reference of a node: its ReferenceType, the node at its other end
// and its direction as seen from the node it belongs to.
type Reference struct {
	ReferenceTypeId uint32
	TargetId        uint32
	IsForward       bool
}

// Node is a read-only view of one node of namespace 0. It is a small value; copying it
// is cheap. The zero Node is not a node and its methods panic; get one from Lookup or All.
type Node struct {
	r *record
	i int // index of r in nodes
}

// Count returns the number of nodes in namespace 0.
func Count() int { return nodeCount }

// Lookup returns the node with numeric id i=id in namespace 0. It does not allocate.
func Lookup(id uint32) (Node, bool) {
	lo, hi := 0, nodeCount
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if nodes[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < nodeCount && nodes[lo].id == id {
		return Node{&nodes[lo], lo}, true
	}
	return Node{}, false
}

// All yields every node in ascending id order.
func All() iter.Seq[Node] {
	return func(yield func(Node) bool) {
		for i := range nodes {
			if !yield(Node{&nodes[i], i}) {
				return
			}
		}
	}
}

func str(i uint16) string { return strs[i] }

func text(locale, txt uint16) codec.LocalizedText {
	return codec.LocalizedText{Locale: strs[locale], Text: strs[txt]}
}

// ID returns the node's numeric id.
func (n Node) ID() uint32 { return n.r.id }

// NodeId returns the node's NodeId.
func (n Node) NodeId() codec.NodeId { return codec.NewNumericNodeId(0, n.r.id) }

// NodeClass returns the node's NodeClass.
func (n Node) NodeClass() ua.NodeClass { return ua.NodeClass(n.r.class) }

// BrowseName returns the node's BrowseName; its namespace index is 0.
func (n Node) BrowseName() codec.QualifiedName {
	return codec.QualifiedName{Name: str(n.r.browseName)}
}

// DisplayName returns the node's DisplayName.
func (n Node) DisplayName() codec.LocalizedText { return text(n.r.displayLocale, n.r.displayText) }

// Description returns the node's Description; it is null for most nodes.
func (n Node) Description() codec.LocalizedText { return text(n.r.descLocale, n.r.descText) }

// SymbolicName returns the nodeset's SymbolicName where it differs from the BrowseName,
// else "". It is not an attribute; code generators use it for identifiers.
func (n Node) SymbolicName() string { return str(n.r.symbolicName) }

// AccessRestrictions returns the AccessRestrictions attribute (Part 3 §8.56), 0 if unset.
func (n Node) AccessRestrictions() uint16 { return n.r.accessRestr }

// RolePermissions returns the RolePermissions attribute as a Variant holding an array of
// ExtensionObjects of *ua.RolePermissionType, decoded anew on each call (the caller owns
// the result), or a null Variant when the nodeset gives none.
func (n Node) RolePermissions() (codec.Variant, error) { return decodeBlob(n.r.rolePermissions) }

// DataType returns the id of the DataType of a Variable or VariableType, else 0.
func (n Node) DataType() uint32 { return n.r.dataType }

// ValueRank returns the ValueRank of a Variable or VariableType (-1, scalar, unless the
// nodeset says otherwise), else 0.
func (n Node) ValueRank() int32 { return n.r.valueRank }

// ArrayDimensions returns the ArrayDimensions of a Variable or VariableType, or nil. The
// slice is shared static data: the caller must not modify it.
func (n Node) ArrayDimensions() []uint32 {
	if n.r.dimsLen == 0 {
		return nil
	}
	return dims[n.r.dims : int(n.r.dims)+int(n.r.dimsLen) : int(n.r.dims)+int(n.r.dimsLen)]
}

// AccessLevel returns the AccessLevel of a Variable (Part 3 §8.57).
func (n Node) AccessLevel() uint8 { return n.r.accessLevel }

// UserAccessLevel returns the UserAccessLevel of a Variable as the nodeset states it
// (its AccessLevel unless given); a server still restricts it per user.
func (n Node) UserAccessLevel() uint8 { return n.r.userAccessLevel }

// MinimumSamplingInterval returns the MinimumSamplingInterval of a Variable in
// milliseconds; 0 means the nodeset gives none.
func (n Node) MinimumSamplingInterval() float64 { return float64(n.r.minSampling) }

// Historizing returns the Historizing attribute of a Variable.
func (n Node) Historizing() bool { return n.r.flags&flagHistorizing != 0 }

// EventNotifier returns the EventNotifier attribute of an Object or View.
func (n Node) EventNotifier() uint8 { return n.r.eventNotifier }

// Executable returns the Executable attribute of a Method.
func (n Node) Executable() bool { return n.r.flags&flagExecutable != 0 }

// UserExecutable returns the UserExecutable attribute of a Method as the nodeset
// states it; a server still restricts it per user.
func (n Node) UserExecutable() bool { return n.r.flags&flagUserExecutable != 0 }

// IsAbstract returns the IsAbstract attribute of a type node.
func (n Node) IsAbstract() bool { return n.r.flags&flagIsAbstract != 0 }

// Symmetric returns the Symmetric attribute of a ReferenceType.
func (n Node) Symmetric() bool { return n.r.flags&flagSymmetric != 0 }

// InverseName returns the InverseName of a ReferenceType; it is null for symmetric
// and for most abstract ones.
func (n Node) InverseName() codec.LocalizedText { return text(n.r.inverseLocale, n.r.inverseText) }

// HasValue reports whether the nodeset gives the node a Value.
func (n Node) HasValue() bool { return n.r.value != 0 }

// Value decodes the node's Value. Each call decodes anew, so the caller owns the result
// and may cache it; a node without a value gives a null Variant.
func (n Node) Value() (codec.Variant, error) { return decodeBlob(n.r.value) }

// EncodedValue returns the binary encoding of the node's Value as a Variant (Part 6
// §5.2.2.16), or "" when it has none, for writing into a response without decoding.
func (n Node) EncodedValue() string { return blobs[n.r.value] }

// DataTypeDefinition decodes the DataTypeDefinition of a DataType (Part 3 §5.8.3): a
// Variant holding an ExtensionObject of *ua.StructureDefinition or *ua.EnumDefinition,
// or a null Variant when the DataType has none. Each call decodes anew.
func (n Node) DataTypeDefinition() (codec.Variant, error) { return decodeBlob(n.r.definition) }

// References returns the node's references, forward and inverse: those the nodeset lists
// on this node, in its order, then the inverses of those it lists only on the other end.
// The slice is shared static data: the caller must not modify it. It does not allocate.
func (n Node) References() []Reference {
	start := n.r.refs
	end := uint32(len(refs))
	if i := n.i + 1; i < nodeCount {
		end = nodes[i].refs
	}
	return refs[start:end:end]
}

func decodeBlob(i uint16) (codec.Variant, error) {
	var v codec.Variant
	if i == 0 {
		return v, nil
	}
	// The Decoder only reads its input and copies what it returns, so it may read the
	// static string in place instead of a copy.
	b := blobs[i]
	d := codec.NewDecoder(unsafe.Slice(unsafe.StringData(b), len(b)))
	d.Variant(&v)
	if err := d.Err(); err != nil {
		return codec.Variant{}, err
	}
	if d.Remaining() != 0 {
		return codec.Variant{}, status.BadDecodingError
	}
	return v, nil
}
