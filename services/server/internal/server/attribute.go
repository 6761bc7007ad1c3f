package server

import (
	"context"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// write answers Write (Part 4 §5.10.4): the session checks, BadNothingToDo and
// BadTooManyOperations (OperationLimits.MaxNodesPerWrite) as a ServiceFault, then one
// WriteOp to each owner of the nodes: inline when the Space owns them all, through the
// request queue when a mounted manager owns one (writeRouted). Per-item failures such as
// BadNodeIdUnknown, BadNotWritable and BadTypeMismatch come from the owners.
func (s *Server) write(ctx context.Context, req uasc.Request, m *ua.WriteRequest) {
	h := m.RequestHeader
	p, code := s.sessions.Principal(h.AuthenticationToken, req.Channel.ID())
	if code == status.Good {
		code = checkCount(len(m.NodesToWrite), s.cfg.OperationLimits.MaxNodesPerWrite)
	}
	if code != status.Good {
		s.respond(req, s.fault(h, code))
		return
	}
	if s.routing.routes(len(m.NodesToWrite), func(i int) uint16 { return m.NodesToWrite[i].NodeId.Namespace() }) {
		s.writeRouted(ctx, req, h, p, m)
		return
	}
	op := &nodemgr.WriteOp{
		Principal: p,
		Items:     m.NodesToWrite,
		Results:   make([]status.Code, len(m.NodesToWrite)),
	}
	s.space.Write(ctx, op, func() {
		s.respond(req, &ua.WriteResponse{ResponseHeader: s.header(h, status.Good), Results: op.Results})
	})
}
