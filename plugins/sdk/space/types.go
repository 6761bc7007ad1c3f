package space

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/pkg/ua/ns0"
)

// maxTypeDepth bounds a walk up the type tree; namespace 0's deepest is far shallower.
const maxTypeDepth = 32

var (
	references  = codec.NewNumericNodeId(0, id.References)
	baseData    = codec.NewNumericNodeId(0, id.BaseDataType)
	enumeration = codec.NewNumericNodeId(0, id.Enumeration)
)

// isSubtype reports whether typ is super or one of its subtypes in namespace 0's type
// tree (HasSubtype, Part 3 §7.10). A type outside namespace 0 is a subtype of itself
// and of References only: the Space knows no type tree of its own.
func isSubtype(typ, super codec.NodeId) bool {
	if typ == super || super == references {
		return true
	}
	if super.Namespace() != 0 || super.Type() != codec.IDNumeric {
		return false
	}
	for range maxTypeDepth {
		if typ.Namespace() != 0 || typ.Type() != codec.IDNumeric {
			return false
		}
		n, ok := ns0.Lookup(typ.IntID())
		if !ok {
			return false
		}
		parent, found := uint32(0), false
		for _, r := range n.References() {
			if r.ReferenceTypeId == id.HasSubtype && !r.IsForward {
				parent, found = r.TargetId, true
				break
			}
		}
		if !found {
			return false
		}
		if typ = codec.NewNumericNodeId(0, parent); typ == super {
			return true
		}
	}
	return false
}

// isReferenceType reports whether t names a ReferenceType of namespace 0, or any node
// outside it (a plugin's own ReferenceType, which the Space cannot check).
func isReferenceType(t codec.NodeId) bool {
	if t.Namespace() != 0 {
		return true
	}
	if t.Type() != codec.IDNumeric {
		return false
	}
	n, ok := ns0.Lookup(t.IntID())
	return ok && n.NodeClass() == ua.NodeClassReferenceType
}

// typeMatches reports whether val fits a Variable or Argument of DataType dt and
// ValueRank rank (Part 4 §5.10.4, Part 3 §5.6.2): the value's DataType is dt or a
// subtype of it, or the built-in type dt derives from (a Duration travels as a Double,
// an enumeration as an Int32); the array shape fits rank.
func typeMatches(val *codec.Variant, dt codec.NodeId, rank int32) bool {
	if val.IsNull() {
		return dt == baseData
	}
	if !rankMatches(val, rank) {
		return false
	}
	if dt == baseData {
		return true
	}
	if val.Type() == codec.TypeExtensionObject {
		vt, ok := extensionObjectType(val)
		return ok && isSubtype(vt, dt)
	}
	vt := codec.NewNumericNodeId(0, uint32(val.Type()))
	switch {
	case isSubtype(vt, dt):
		return true
	case val.Type() != codec.TypeVariant && isSubtype(dt, vt):
		return true
	}
	return val.Type() == codec.TypeInt32 && isSubtype(dt, enumeration)
}

// extensionObjectType returns the DataType of the decoded structures val holds, the
// first element's for an array.
func extensionObjectType(val *codec.Variant) (codec.NodeId, bool) {
	var eo codec.ExtensionObject
	switch x := val.Value().(type) {
	case codec.ExtensionObject:
		eo = x
	case []codec.ExtensionObject:
		if len(x) == 0 {
			return codec.NodeId{}, false
		}
		eo = x[0]
	}
	if eo.Value == nil {
		return codec.NodeId{}, false
	}
	return eo.Value.TypeInfo().DataType, true
}

// rankMatches checks the array shape of val against a ValueRank (Part 3 §5.6.2).
func rankMatches(val *codec.Variant, rank int32) bool {
	switch {
	case rank == -2: // Any
		return true
	case rank == -3: // ScalarOrOneDimension
		return !val.IsArray() || len(val.Dimensions()) <= 1
	case rank == -1: // Scalar
		return !val.IsArray()
	case rank == 0: // OneOrMoreDimensions
		return val.IsArray()
	}
	return val.IsArray() && int32(len(val.Dimensions())) == rank
}
