package server

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// historyAccessAll checks that the principal may read (or write) the history of each of
// nodes (Part 11 §5.2, Part 3 §5.6.2): a Variable with the HistoryRead (HistoryWrite)
// bit in its AccessLevel, BadNotReadable (BadNotWritable) without, and in the
// principal's UserAccessLevel, BadUserAccessDenied without; for events, a notifier
// with the bit in its EventNotifier. The attributes of all the nodes are read in one
// Read from their owners, the address space or mounted managers, as the principal, so
// that a request of many nodes of a plugin is one crossing. A node whose owner keeps no
// history (another node class, a manager without a history.Store) is
// BadHistoryOperationUnsupported.
func (s *Server) historyAccessAll(ctx context.Context, p *nodemgr.Principal, nodes []codec.NodeId, events, write bool) []status.Code {
	out := make([]status.Code, len(nodes))
	second := attr.AccessLevel
	if events {
		second = attr.EventNotifier
	}
	op := &nodemgr.ReadOp{Principal: *p}
	var at []int // the node of each three items of op
	for i, n := range nodes {
		if !s.hist.routed.Serves(n, events) {
			out[i] = status.BadHistoryOperationUnsupported
			continue
		}
		at = append(at, i)
		op.Items = append(op.Items,
			ua.ReadValueId{NodeId: n, AttributeId: uint32(attr.NodeClass)},
			ua.ReadValueId{NodeId: n, AttributeId: uint32(second)},
			ua.ReadValueId{NodeId: n, AttributeId: uint32(attr.UserAccessLevel)})
	}
	if len(at) == 0 {
		return out
	}
	op.Results = make([]codec.DataValue, len(op.Items))
	if s.routes.Local(len(op.Items), func(i int) uint16 { return op.Items[i].NodeId.Namespace() }) {
		s.space.Read(ctx, op, func() {})
	} else {
		// A manager may answer from a goroutine of its own; the history services run on
		// a worker, which may wait.
		done := make(chan struct{})
		s.routes.Read(ctx, op, func() { close(done) })
		select {
		case <-done:
		case <-ctx.Done():
			for _, i := range at {
				out[i] = status.BadTimeout
			}
			return out
		}
	}
	for k, i := range at {
		out[i] = accessOf(op.Results[3*k:3*k+3], events, write)
	}
	return out
}

// accessOf is the access a node's NodeClass, AccessLevel (EventNotifier) and
// UserAccessLevel give (historyAccessAll).
func accessOf(res []codec.DataValue, events, write bool) status.Code {
	if c := res[0].Status; c != status.Good {
		return c
	}
	class := ua.NodeClass(res[0].Value.Bits())
	bits := res[1].Value.Bits()
	if events {
		bit := uint64(ua.EventNotifierTypeHistoryRead)
		if write {
			bit = uint64(ua.EventNotifierTypeHistoryWrite)
		}
		switch {
		case class != ua.NodeClassObject && class != ua.NodeClassView || res[1].Status != status.Good:
			return status.BadHistoryOperationUnsupported
		case bits&bit == 0 && write:
			return status.BadNotWritable
		case bits&bit == 0:
			return status.BadNotReadable
		}
		return status.Good
	}
	if class != ua.NodeClassVariable {
		return status.BadHistoryOperationUnsupported
	}
	user := res[2].Value.Bits()
	bit, denied := uint64(ua.AccessLevelTypeHistoryRead), status.BadNotReadable
	if write {
		bit, denied = uint64(ua.AccessLevelTypeHistoryWrite), status.BadNotWritable
	}
	current := uint64(ua.AccessLevelTypeCurrentRead)
	switch {
	case bits&bit == 0:
		return denied
	case user&bit == 0, !write && bits&current != 0 && user&current == 0:
		// Who may not read the value may not read its history either (SetReadRoles).
		return status.BadUserAccessDenied
	}
	return status.Good
}
