package addrspace

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// Compile-time guards: a Space is a complete in-memory node manager.
var (
	_ nodemgr.Manager = (*Space)(nil)
	_ nodemgr.Reader  = (*Space)(nil)
	_ nodemgr.Writer  = (*Space)(nil)
	_ nodemgr.Browser = (*Space)(nil)
)

// Read answers op (Part 4 §5.10.2) and calls done before returning. Results[i] is
// overwritten for every item; a Value read of a scalar does not allocate. Values are
// always current, so MaxAge needs no device read. Results share array values with the
// store; the caller must not modify them. A value computed at read time (SetValueFunc)
// that panics is BadInternalError (telemetry.PlaceAddressSpace); a Read that panics
// otherwise does not call done, so that half its results are never sent.
func (s *Space) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	ts := op.Timestamps
	var bad status.Code
	switch {
	case ts < ua.TimestampsToReturnSource || ts > ua.TimestampsToReturnNeither:
		bad = status.BadTimestampsToReturnInvalid
	case op.MaxAge < 0:
		bad = status.BadMaxAgeInvalid
	}
	if bad != 0 {
		for i := range op.Items {
			op.Results[i] = codec.DataValue{Status: bad}
		}
		done()
		return
	}
	now := op.Now
	if now == 0 {
		now = codec.Now()
	}
	if s.readAll(op, ts, now) {
		s.cacheValues(op.Items)
	}
	done()
}

// readAll reads op's items under the read lock, released by a deferred call so that a
// panic leaves the store usable; it reports whether a namespace 0 value was decoded
// that is not cached yet.
func (s *Space) readAll(op *nodemgr.ReadOp, ts ua.TimestampsToReturn, now codec.DateTime) (miss bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range op.Items {
		miss = s.readLocked(&op.Items[i], &op.Results[i], ts, now, op.Principal.Roles) || miss
	}
	return miss
}

// cacheValues keeps the decoded namespace 0 values of the Value reads in items, so
// that later reads of them copy instead of decoding.
func (s *Space) cacheValues(items []ua.ReadValueId) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range items {
		id := items[i].NodeId
		if attr.ID(items[i].AttributeId) != attr.Value {
			continue
		}
		v, ok := s.lookupLocked(id)
		if !ok || v.n != nil || !v.tab.HasValue() || v.value() != nil || v.computed() {
			continue
		}
		val, err := v.tab.Value()
		if err != nil {
			continue
		}
		s.entries.add(id).value = &codec.DataValue{Value: val, SourceTimestamp: s.start, ServerTimestamp: s.start}
	}
}

// readLocked reads one attribute into dv; s.mu must be held for reading. It reports
// whether it decoded a namespace 0 value that is not cached yet.
func (s *Space) readLocked(item *ua.ReadValueId, dv *codec.DataValue, ts ua.TimestampsToReturn, now codec.DateTime, roles []codec.NodeId) (miss bool) {
	*dv = codec.DataValue{}
	v, ok := s.lookupLocked(item.NodeId)
	if !ok {
		dv.Status = status.BadNodeIdUnknown
		return
	}
	id := attr.ID(item.AttributeId)
	if !hasAttribute(v.class(), id) {
		dv.Status = status.BadAttributeIdInvalid
		return
	}
	encNull := item.DataEncoding.NamespaceIndex == 0 && item.DataEncoding.Name == ""
	if id != attr.Value {
		if !encNull {
			dv.Status = status.BadDataEncodingInvalid
			return
		}
		if c := s.attributeLocked(v, item.NodeId, id, &dv.Value, roles); c != status.Good {
			*dv = codec.DataValue{Status: c}
			return
		}
		if item.IndexRange != "" {
			if c := rangeValue(&dv.Value, item.IndexRange); c != status.Good {
				*dv = codec.DataValue{Status: c}
				return
			}
		}
		if ts == ua.TimestampsToReturnServer || ts == ua.TimestampsToReturnBoth {
			dv.ServerTimestamp = now
		}
		return
	}

	if v.class() == ua.NodeClassVariable && v.accessLevel()&uint8(ua.AccessLevelTypeCurrentRead) == 0 {
		dv.Status = status.BadNotReadable
		return
	}
	if !v.mayRead(roles) {
		dv.Status = status.BadUserAccessDenied
		return
	}
	if p := v.value(); p != nil {
		*dv = *p
	} else if v.computed() {
		*dv = s.compute(v.e.source, now)
	} else if v.n == nil && v.tab.HasValue() {
		// Not yet decoded: decode into a local copy; a later SetValue or Write caches it.
		val, err := v.tab.Value()
		if err != nil {
			dv.Status = status.BadInternalError
			return
		}
		dv.Value = val
		dv.SourceTimestamp, dv.ServerTimestamp = s.start, s.start
		miss = true
	}
	if !encNull {
		if c := checkEncoding(&dv.Value, item.DataEncoding); c != status.Good {
			*dv = codec.DataValue{Status: c}
			return
		}
	}
	if item.IndexRange != "" {
		if c := rangeValue(&dv.Value, item.IndexRange); c != status.Good {
			*dv = codec.DataValue{Status: c}
			return
		}
	}
	switch ts {
	case ua.TimestampsToReturnSource:
		dv.ServerTimestamp, dv.ServerPicoseconds = 0, 0
	case ua.TimestampsToReturnServer:
		dv.SourceTimestamp, dv.SourcePicoseconds = 0, 0
		dv.ServerTimestamp, dv.ServerPicoseconds = now, 0
	case ua.TimestampsToReturnBoth:
		dv.ServerTimestamp, dv.ServerPicoseconds = now, 0
	case ua.TimestampsToReturnNeither:
		dv.SourceTimestamp, dv.SourcePicoseconds = 0, 0
		dv.ServerTimestamp, dv.ServerPicoseconds = 0, 0
	}
	return miss
}

// rangeValue replaces v by the part r selects.
func rangeValue(v *codec.Variant, r string) status.Code {
	nr, c := parseNumericRange(r)
	if c != status.Good {
		return c
	}
	out, c := applyRange(v, &nr)
	if c != status.Good {
		return c
	}
	*v = out
	return status.Good
}

// Names of the DataTypeEncodings (Part 5 §5.2.6).
const (
	encodingBinary = "Default Binary"
	encodingXML    = "Default XML"
	encodingJSON   = "Default JSON"
)

// checkEncoding applies a ReadValueId's DataEncoding (Part 4 §7.29): Default Binary is
// what the binary protocol returns anyway; another encoding of a Structure is not
// supported here, and of any other value is invalid.
func checkEncoding(v *codec.Variant, enc codec.QualifiedName) status.Code {
	if enc.NamespaceIndex == 0 && enc.Name == encodingBinary {
		return status.Good
	}
	if v.Type() != codec.TypeExtensionObject {
		return status.BadDataEncodingInvalid
	}
	return status.BadDataEncodingUnsupported
}

// hasAttribute reports whether nodes of class c have attribute a (Part 3 §5.2–§5.9).
func hasAttribute(c ua.NodeClass, a attr.ID) bool {
	switch a {
	case attr.NodeId, attr.NodeClass, attr.BrowseName, attr.DisplayName, attr.Description,
		attr.WriteMask, attr.UserWriteMask, attr.RolePermissions, attr.UserRolePermissions,
		attr.AccessRestrictions:
		return true
	case attr.IsAbstract:
		return c == ua.NodeClassObjectType || c == ua.NodeClassVariableType ||
			c == ua.NodeClassReferenceType || c == ua.NodeClassDataType
	case attr.Symmetric, attr.InverseName:
		return c == ua.NodeClassReferenceType
	case attr.ContainsNoLoops:
		return c == ua.NodeClassView
	case attr.EventNotifier:
		return c == ua.NodeClassObject || c == ua.NodeClassView
	case attr.Value, attr.DataType, attr.ValueRank, attr.ArrayDimensions:
		return c == ua.NodeClassVariable || c == ua.NodeClassVariableType
	case attr.AccessLevel, attr.UserAccessLevel, attr.MinimumSamplingInterval,
		attr.Historizing, attr.AccessLevelEx:
		return c == ua.NodeClassVariable
	case attr.Executable, attr.UserExecutable:
		return c == ua.NodeClassMethod
	case attr.DataTypeDefinition:
		return c == ua.NodeClassDataType
	}
	return false
}

// attributeLocked sets out to attribute a (not Value) of v as read by a principal with
// roles. Optional attributes the node does not have give BadAttributeIdInvalid.
// UserWriteMask and UserAccessLevel lose their write bits where Node.WriteRoles exclude
// the principal; UserExecutable equals Executable.
func (s *Space) attributeLocked(v view, id codec.NodeId, a attr.ID, out *codec.Variant, roles []codec.NodeId) status.Code {
	n, t := v.n, v.tab
	switch a {
	case attr.NodeId:
		*out = codec.NodeIdVariant(id)
	case attr.NodeClass:
		*out = codec.Int32Variant(int32(v.class()))
	case attr.BrowseName:
		*out = codec.QualifiedNameVariant(v.browseName())
	case attr.DisplayName:
		*out = codec.MustVariant(v.displayName())
	case attr.Description:
		if n != nil {
			*out = codec.MustVariant(n.Description)
		} else {
			*out = codec.MustVariant(t.Description())
		}
	case attr.WriteMask, attr.UserWriteMask:
		var m uint32
		if n != nil && (a == attr.WriteMask || v.mayWrite(roles)) {
			m = n.WriteMask
		}
		*out = codec.UInt32Variant(m)
	case attr.IsAbstract:
		*out = codec.BooleanVariant(pick(n != nil, func() bool { return n.typeAttrs().IsAbstract }, t.IsAbstract))
	case attr.Symmetric:
		*out = codec.BooleanVariant(pick(n != nil, func() bool { return n.typeAttrs().Symmetric }, t.Symmetric))
	case attr.InverseName:
		if n != nil {
			*out = codec.MustVariant(n.typeAttrs().InverseName)
		} else {
			*out = codec.MustVariant(t.InverseName())
		}
	case attr.ContainsNoLoops:
		*out = codec.BooleanVariant(n != nil && n.typeAttrs().ContainsNoLoops)
	case attr.EventNotifier:
		if v.e != nil && v.e.notifierSet {
			*out = codec.ByteVariant(v.e.notifier)
		} else if n != nil {
			*out = codec.ByteVariant(n.EventNotifier)
		} else {
			*out = codec.ByteVariant(t.EventNotifier())
		}
	case attr.DataType:
		*out = codec.NodeIdVariant(v.dataType())
	case attr.ValueRank:
		*out = codec.Int32Variant(v.valueRank())
	case attr.ArrayDimensions:
		var d []uint32
		if n != nil {
			d = n.ArrayDimensions
		} else {
			d = t.ArrayDimensions()
		}
		if d == nil {
			d = []uint32{}
		}
		*out = codec.MustVariant(d)
	case attr.AccessLevel:
		*out = codec.ByteVariant(v.accessLevel())
	case attr.UserAccessLevel:
		al := v.userAccessLevel(roles)
		if !v.mayRead(roles) {
			al &^= uint8(ua.AccessLevelTypeCurrentRead)
		}
		*out = codec.ByteVariant(al)
	case attr.AccessLevelEx:
		*out = codec.UInt32Variant(uint32(v.accessLevel()))
	case attr.MinimumSamplingInterval:
		if n != nil {
			*out = codec.DoubleVariant(n.MinimumSamplingInterval)
		} else {
			*out = codec.DoubleVariant(t.MinimumSamplingInterval())
		}
	case attr.Historizing:
		*out = codec.BooleanVariant(pick(n != nil, func() bool { return n.Historizing }, t.Historizing))
	case attr.Executable, attr.UserExecutable:
		*out = codec.BooleanVariant(pick(n != nil, func() bool { return n.Executable }, t.Executable))
	case attr.AccessRestrictions:
		if n != nil {
			*out = codec.UInt16Variant(n.AccessRestrictions)
		} else {
			*out = codec.UInt16Variant(t.AccessRestrictions())
		}
	case attr.DataTypeDefinition:
		if n != nil {
			if n.typeAttrs().DataTypeDefinition.IsNull() {
				return status.BadAttributeIdInvalid
			}
			*out = n.typeAttrs().DataTypeDefinition
			return status.Good
		}
		d, err := t.DataTypeDefinition()
		if err != nil {
			return status.BadInternalError
		}
		if d.IsNull() {
			return status.BadAttributeIdInvalid
		}
		*out = d
	case attr.RolePermissions, attr.UserRolePermissions:
		if n != nil {
			return status.BadAttributeIdInvalid
		}
		rp, err := t.RolePermissions()
		if err != nil {
			return status.BadInternalError
		}
		if rp.IsNull() {
			return status.BadAttributeIdInvalid
		}
		*out = rp
	default:
		return status.BadAttributeIdInvalid
	}
	return status.Good
}

// pick returns run() when local, else table().
func pick(local bool, run, table func() bool) bool {
	if local {
		return run()
	}
	return table()
}
