package server

import (
	"context"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/status"
)

// write answers Write (Part 4 §5.10.4): the session checks, BadNothingToDo and
// BadTooManyOperations (OperationLimits.MaxNodesPerWrite) as a ServiceFault, then one
// WriteOp to the address space. Per-item failures such as BadNodeIdUnknown,
// BadNotWritable and BadTypeMismatch come from the address space.
func (s *Server) write(ctx context.Context, req uasc.Request, m *ua.WriteRequest) {
	h := m.RequestHeader
	p, code := s.sessions.principal(h.AuthenticationToken, req.Channel.ID())
	if code == status.Good {
		code = checkCount(len(m.NodesToWrite), s.cfg.OperationLimits.MaxNodesPerWrite)
	}
	if code != status.Good {
		s.respond(req, s.fault(h, code))
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
