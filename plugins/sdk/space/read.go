package space

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// Read answers op (Part 4 §5.10.2) and calls done before returning. Each Value comes
// from the Variable's Get, called with op.Now (the Space's clock when zero), or from
// its stored value; every other attribute from the table. Results share array values
// with the Space and with what Get returns; the caller must not modify them. An
// IndexRange is not supported: BadIndexRangeInvalid.
func (s *Space) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	defer done()
	ts := op.Timestamps
	var bad status.Code
	switch {
	case ts < ua.TimestampsToReturnSource || ts > ua.TimestampsToReturnNeither:
		bad = status.BadTimestampsToReturnInvalid
	case op.MaxAge < 0:
		bad = status.BadMaxAgeInvalid
	}
	now := op.Now
	if now == 0 {
		now = codec.DateTimeOf(s.now())
	}
	for i := range op.Items {
		if bad != 0 {
			op.Results[i] = codec.DataValue{Status: bad}
			continue
		}
		op.Results[i] = s.readOne(&op.Items[i], ts, now)
	}
}

// readOne reads one attribute. It calls a Variable's Get without the lock held.
func (s *Space) readOne(item *ua.ReadValueId, ts ua.TimestampsToReturn, now codec.DateTime) codec.DataValue {
	a := attr.ID(item.AttributeId)
	s.mu.RLock()
	n := s.nodes[item.NodeId]
	var dv codec.DataValue
	var code status.Code
	var get func(codec.DateTime) codec.DataValue
	switch {
	case n == nil:
		code = status.BadNodeIdUnknown
	case a != attr.Value:
		code = n.attribute(a, &dv.Value)
	case n.class != ua.NodeClassVariable:
		code = status.BadAttributeIdInvalid
	case n.accessLevel&ua.AccessLevelTypeCurrentRead == 0:
		code = status.BadNotReadable
	case n.get != nil:
		get = n.get
	default:
		dv = n.value
	}
	s.mu.RUnlock()
	if code != status.Good {
		return codec.DataValue{Status: code}
	}
	if get != nil {
		dv = get(now)
		if dv.SourceTimestamp == 0 {
			dv.SourceTimestamp = now
		}
	}
	if c := checkEncoding(item.DataEncoding, a, &dv.Value); c != status.Good {
		return codec.DataValue{Status: c}
	}
	if item.IndexRange != "" {
		return codec.DataValue{Status: status.BadIndexRangeInvalid}
	}
	if a != attr.Value {
		dv.SourceTimestamp = 0 // only a Value has a source (Part 4 §7.11)
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
	return dv
}

// checkEncoding applies a ReadValueId's DataEncoding (Part 4 §7.29): none, or Default
// Binary, which the binary protocol returns anyway, for a Value; another encoding of a
// structure is not supported, and any encoding of anything else is invalid.
func checkEncoding(enc codec.QualifiedName, a attr.ID, v *codec.Variant) status.Code {
	switch {
	case enc.NamespaceIndex == 0 && enc.Name == "":
		return status.Good
	case a != attr.Value || v.Type() != codec.TypeExtensionObject:
		return status.BadDataEncodingInvalid
	case enc.NamespaceIndex == 0 && enc.Name == "Default Binary":
		return status.Good
	}
	return status.BadDataEncodingUnsupported
}

// attribute sets out to attribute a (not Value) of n (Part 3 §5.2, §5.5–§5.7); s.mu
// must be held for reading. Optional attributes the Space does not keep, and those of
// other node classes, are BadAttributeIdInvalid.
func (n *node) attribute(a attr.ID, out *codec.Variant) status.Code {
	v, m, o := n.class == ua.NodeClassVariable, n.class == ua.NodeClassMethod, n.class == ua.NodeClassObject
	switch {
	case a == attr.NodeId:
		*out = codec.NodeIdVariant(n.id)
	case a == attr.NodeClass:
		*out = codec.Int32Variant(int32(n.class))
	case a == attr.BrowseName:
		*out = codec.QualifiedNameVariant(n.browseName)
	case a == attr.DisplayName:
		*out = codec.MustVariant(n.displayName)
	case a == attr.Description:
		*out = codec.MustVariant(n.description)
	case a == attr.WriteMask || a == attr.UserWriteMask:
		*out = codec.UInt32Variant(0) // no attribute but a Value is writable
	case a == attr.EventNotifier && o:
		*out = codec.ByteVariant(byte(n.eventNotifier))
	case a == attr.DataType && v:
		*out = codec.NodeIdVariant(n.dataType)
	case a == attr.ValueRank && v:
		*out = codec.Int32Variant(n.valueRank)
	case a == attr.ArrayDimensions && v:
		d := n.dims
		if d == nil {
			d = []uint32{}
		}
		*out = codec.MustVariant(d)
	case (a == attr.AccessLevel || a == attr.UserAccessLevel) && v:
		*out = codec.ByteVariant(byte(n.accessLevel))
	case a == attr.AccessLevelEx && v:
		*out = codec.UInt32Variant(uint32(n.accessLevel))
	case a == attr.MinimumSamplingInterval && v:
		*out = codec.DoubleVariant(n.minSampling)
	case a == attr.Historizing && v:
		*out = codec.BooleanVariant(n.historizing)
	case (a == attr.Executable || a == attr.UserExecutable) && m:
		*out = codec.BooleanVariant(n.executable)
	default:
		return status.BadAttributeIdInvalid
	}
	return status.Good
}
