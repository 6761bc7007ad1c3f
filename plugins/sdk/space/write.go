package space

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// Write answers op (Part 4 §5.10.4) and calls done before returning. Only the Value of
// a Variable with CurrentWrite is writable, with a value that fits its DataType and
// ValueRank and no StatusCode or timestamps unless the AccessLevel allows them. A
// Variable with Get takes the value through Set; any other stores it. An IndexRange
// is not supported: BadWriteNotSupported.
func (s *Space) Write(_ context.Context, op *nodemgr.WriteOp, done func()) {
	defer done()
	for i := range op.Items {
		op.Results[i] = s.writeOne(&op.Items[i])
	}
}

func (s *Space) writeOne(w *ua.WriteValue) status.Code {
	s.mu.RLock()
	n := s.nodes[w.NodeId]
	c := checkWrite(n, w)
	var set func(codec.DataValue) status.Code
	if c == status.Good {
		set = n.set
	}
	s.mu.RUnlock()
	if c != status.Good {
		return c
	}
	dv := w.Value
	if set != nil {
		return set(dv)
	}
	if dv.SourceTimestamp == 0 {
		dv.SourceTimestamp, dv.SourcePicoseconds = codec.DateTimeOf(s.now()), 0
	}
	dv.ServerTimestamp, dv.ServerPicoseconds = 0, 0
	s.mu.Lock()
	n.value = dv
	s.mu.Unlock()
	return status.Good
}

// checkWrite returns whether w may be applied to n (nil when unknown); s.mu must be
// held for reading.
func checkWrite(n *node, w *ua.WriteValue) status.Code {
	if n == nil {
		return status.BadNodeIdUnknown
	}
	a := attr.ID(w.AttributeId)
	if a != attr.Value {
		var v codec.Variant
		if n.attribute(a, &v) != status.Good {
			return status.BadAttributeIdInvalid
		}
		return status.BadNotWritable // WriteMask is 0
	}
	if n.class != ua.NodeClassVariable {
		return status.BadAttributeIdInvalid
	}
	al := n.accessLevel
	in := &w.Value
	switch {
	case al&ua.AccessLevelTypeCurrentWrite == 0:
		return status.BadNotWritable
	case w.IndexRange != "":
		return status.BadWriteNotSupported
	case in.Status != status.Good && al&ua.AccessLevelTypeStatusWrite == 0:
		return status.BadWriteNotSupported
	case (in.SourceTimestamp != 0 || in.ServerTimestamp != 0) && al&ua.AccessLevelTypeTimestampWrite == 0:
		return status.BadWriteNotSupported
	case !typeMatches(&in.Value, n.dataType, n.valueRank):
		return status.BadTypeMismatch
	}
	return status.Good
}
