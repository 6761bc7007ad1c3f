package addrspace

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// Write answers op (Part 4 §5.10.4) and calls done before returning. Only the Value
// attribute of Variables is writable in namespace 0; a run-time node's DisplayName and
// Description are writable where its WriteMask allows. OnChange callbacks run after
// the store's lock is released, before done.
func (s *Space) Write(_ context.Context, op *nodemgr.WriteOp, done func()) {
	now := codec.Now()
	for i := range op.Items {
		op.Results[i] = s.writeOne(&op.Items[i], now, op.Principal.Roles)
	}
	done()
}

func (s *Space) writeOne(w *ua.WriteValue, now codec.DateTime, roles []codec.NodeId) status.Code {
	c, dv, fns := s.write(w, now, roles)
	if c == status.Good && dv != nil {
		s.changed(fns, w.NodeId, dv)
	}
	return c
}

// write applies w under the lock and returns the OnChange callbacks to tell.
func (s *Space) write(w *ua.WriteValue, now codec.DateTime, roles []codec.NodeId) (status.Code, *codec.DataValue, []func(codec.NodeId, *codec.DataValue)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, dv := s.writeLocked(w, now, roles)
	return c, dv, s.onChange
}

// writeLocked applies w for a principal with roles; s.mu must be held for writing. It
// returns the new DataValue when a Value changed. A node the principal may not write
// (Node.WriteRoles) is BadUserAccessDenied once the node itself would be writable.
func (s *Space) writeLocked(w *ua.WriteValue, now codec.DateTime, roles []codec.NodeId) (status.Code, *codec.DataValue) {
	v, ok := s.lookupLocked(w.NodeId)
	if !ok {
		return status.BadNodeIdUnknown, nil
	}
	a := attr.ID(w.AttributeId)
	if !hasAttribute(v.class(), a) {
		return status.BadAttributeIdInvalid, nil
	}
	if a != attr.Value {
		return s.writeAttributeLocked(v, a, w, roles), nil
	}
	if v.class() != ua.NodeClassVariable {
		// VariableType values are defaults that only WriteMask ValueForVariableType
		// allows; none is writable here.
		return status.BadNotWritable, nil
	}
	al := ua.AccessLevelType(v.accessLevel())
	if al&ua.AccessLevelTypeCurrentWrite == 0 || v.computed() {
		return status.BadNotWritable, nil
	}
	if !v.mayWrite(roles) {
		return status.BadUserAccessDenied, nil
	}
	in := &w.Value
	if in.Status != status.Good && al&ua.AccessLevelTypeStatusWrite == 0 {
		return status.BadWriteNotSupported, nil
	}
	if (in.SourceTimestamp != 0 || in.ServerTimestamp != 0) && al&ua.AccessLevelTypeTimestampWrite == 0 {
		return status.BadWriteNotSupported, nil
	}
	val := in.Value
	if w.IndexRange != "" {
		nr, c := parseNumericRange(w.IndexRange)
		if c != status.Good {
			return c, nil
		}
		cur := s.currentValueLocked(v)
		if !s.typeMatchesLocked(&val, v.dataType(), 1) {
			return status.BadTypeMismatch, nil
		}
		out, c := replaceRange(&cur, &val, &nr)
		if c != status.Good {
			return c, nil
		}
		val = out
	}
	if !s.typeMatchesLocked(&val, v.dataType(), v.valueRank()) {
		return status.BadTypeMismatch, nil
	}
	dv := codec.DataValue{Value: val, Status: in.Status, SourceTimestamp: in.SourceTimestamp,
		SourcePicoseconds: in.SourcePicoseconds, ServerTimestamp: now}
	if dv.SourceTimestamp == 0 {
		dv.SourceTimestamp = now
		dv.SourcePicoseconds = 0
	}
	s.storeLocked(w.NodeId, &dv)
	return status.Good, &dv
}

// currentValueLocked returns the stored or nodeset value of a Variable.
func (s *Space) currentValueLocked(v view) codec.Variant {
	if p := v.value(); p != nil {
		return p.Value
	}
	if v.n == nil && v.tab.HasValue() {
		if val, err := v.tab.Value(); err == nil {
			return val
		}
	}
	return codec.Variant{}
}

// writeAttributeLocked writes an attribute other than Value where the WriteMask allows.
func (s *Space) writeAttributeLocked(v view, a attr.ID, w *ua.WriteValue, roles []codec.NodeId) status.Code {
	if v.n == nil {
		return status.BadNotWritable
	}
	var bit ua.AttributeWriteMask
	switch a {
	case attr.DisplayName:
		bit = ua.AttributeWriteMaskDisplayName
	case attr.Description:
		bit = ua.AttributeWriteMaskDescription
	default:
		if writeMaskBit(a)&v.n.WriteMask == 0 {
			return status.BadNotWritable
		}
		return status.BadWriteNotSupported
	}
	if uint32(bit)&v.n.WriteMask == 0 {
		return status.BadNotWritable
	}
	if !v.mayWrite(roles) {
		return status.BadUserAccessDenied
	}
	if w.IndexRange != "" {
		return status.BadIndexRangeInvalid
	}
	lt, ok := w.Value.Value.Value().(codec.LocalizedText)
	if !ok || w.Value.Value.IsArray() {
		return status.BadTypeMismatch
	}
	if a == attr.DisplayName {
		v.n.DisplayName = lt
	} else {
		v.n.Description = lt
	}
	return status.Good
}

// writeMaskBit maps an attribute to its AttributeWriteMask bit (Part 3 §8.60).
func writeMaskBit(a attr.ID) uint32 { return uint32(writeMaskBits[a]) }

var writeMaskBits = map[attr.ID]ua.AttributeWriteMask{
	attr.AccessLevel: ua.AttributeWriteMaskAccessLevel, attr.ArrayDimensions: ua.AttributeWriteMaskArrayDimensions,
	attr.BrowseName: ua.AttributeWriteMaskBrowseName, attr.ContainsNoLoops: ua.AttributeWriteMaskContainsNoLoops,
	attr.DataType: ua.AttributeWriteMaskDataType, attr.EventNotifier: ua.AttributeWriteMaskEventNotifier,
	attr.Executable: ua.AttributeWriteMaskExecutable, attr.Historizing: ua.AttributeWriteMaskHistorizing,
	attr.InverseName: ua.AttributeWriteMaskInverseName, attr.IsAbstract: ua.AttributeWriteMaskIsAbstract,
	attr.MinimumSamplingInterval: ua.AttributeWriteMaskMinimumSamplingInterval,
	attr.NodeClass:               ua.AttributeWriteMaskNodeClass, attr.NodeId: ua.AttributeWriteMaskNodeId,
	attr.Symmetric: ua.AttributeWriteMaskSymmetric, attr.UserAccessLevel: ua.AttributeWriteMaskUserAccessLevel,
	attr.UserExecutable: ua.AttributeWriteMaskUserExecutable, attr.UserWriteMask: ua.AttributeWriteMaskUserWriteMask,
	attr.ValueRank: ua.AttributeWriteMaskValueRank, attr.WriteMask: ua.AttributeWriteMaskWriteMask,
	attr.DataTypeDefinition: ua.AttributeWriteMaskDataTypeDefinition,
	attr.RolePermissions:    ua.AttributeWriteMaskRolePermissions,
}

// Well-known DataTypes used by the type check.
var (
	baseDataType = codec.NewNumericNodeId(0, 24)
	enumeration  = codec.NewNumericNodeId(0, 29)
	hasEncoding  = uint32(38)
)

// typeMatchesLocked reports whether val fits a Variable of DataType dt and ValueRank
// rank (Part 4 §5.10.4, Part 3 §5.6.2): the value's DataType must be dt or a subtype of
// it, or the built-in type that dt derives from (a UtcTime travels as a DateTime, an
// enumeration as an Int32); the array shape must fit rank.
func (s *Space) typeMatchesLocked(val *codec.Variant, dt codec.NodeId, rank int32) bool {
	if val.IsNull() {
		return dt.IsNull() || dt == baseDataType
	}
	if !rankMatches(val, rank) {
		return false
	}
	if dt.IsNull() || dt == baseDataType {
		return true
	}
	vt := codec.NewNumericNodeId(0, uint32(val.Type()))
	if val.Type() == codec.TypeExtensionObject {
		if t, ok := s.extensionObjectType(val); ok {
			vt = t
		}
	}
	if s.isSubtypeLocked(vt, dt) {
		return true
	}
	// dt may be a subtype of the value's built-in type.
	if val.Type() != codec.TypeExtensionObject && val.Type() != codec.TypeVariant && s.isSubtypeLocked(dt, vt) {
		return true
	}
	return val.Type() == codec.TypeInt32 && s.isSubtypeLocked(dt, enumeration)
}

// extensionObjectType returns the DataType of a scalar ExtensionObject: that of its
// decoded value, else the target of its encoding's inverse HasEncoding reference.
func (s *Space) extensionObjectType(val *codec.Variant) (codec.NodeId, bool) {
	if val.IsArray() {
		arr, _ := val.Value().([]codec.ExtensionObject)
		if len(arr) == 0 {
			return codec.NodeId{}, false
		}
		first := codec.MustVariant(arr[0])
		return s.extensionObjectType(&first)
	}
	eo, ok := val.Value().(codec.ExtensionObject)
	if !ok {
		return codec.NodeId{}, false
	}
	if eo.Value != nil {
		return eo.Value.TypeInfo().DataType, true
	}
	enc := eo.TypeID
	if enc.Namespace() != 0 || enc.Type() != codec.IDNumeric {
		return codec.NodeId{}, false
	}
	v, ok := s.lookupLocked(enc)
	if !ok || v.n != nil {
		return codec.NodeId{}, false
	}
	for _, r := range v.tab.References() {
		if r.ReferenceTypeId == hasEncoding && !r.IsForward {
			return codec.NewNumericNodeId(0, r.TargetId), true
		}
	}
	return codec.NodeId{}, false
}

// rankMatches checks the array shape of val against a ValueRank (Part 3 §5.6.2).
func rankMatches(val *codec.Variant, rank int32) bool {
	switch {
	case rank == -2: // Any
		return true
	case rank == -3: // ScalarOrOneDimension
		return !val.IsArray() || len(val.Dimensions()) == 1
	case rank == -1: // Scalar
		return !val.IsArray()
	case rank == 0: // OneOrMoreDimensions
		return val.IsArray()
	}
	return val.IsArray() && int32(len(val.Dimensions())) == rank
}
