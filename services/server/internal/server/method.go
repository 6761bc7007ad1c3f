package server

import (
	"context"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// call answers Call (Part 4 §5.11.2): the session checks, BadNothingToDo and
// BadTooManyOperations (OperationLimits.MaxNodesPerMethodCall) as a ServiceFault, then
// one CallOp to each owner of the objects, which checks objects, methods and arguments
// and runs the handlers. The handlers of the Space's Methods are fast, so a Call of them
// only is answered inline like Read; one that reaches a mounted manager goes through the
// request queue (callRouted).
func (s *Server) call(ctx context.Context, req uasc.Request, m *ua.CallRequest) {
	h := m.RequestHeader
	p, code := s.sessions.Principal(h.AuthenticationToken, req.Channel.ID())
	if code == status.Good {
		code = checkCount(len(m.MethodsToCall), s.cfg.OperationLimits.MaxNodesPerMethodCall)
	}
	if code != status.Good {
		s.respond(req, s.fault(h, code))
		return
	}
	if s.routing.routes(len(m.MethodsToCall), func(i int) uint16 { return m.MethodsToCall[i].ObjectId.Namespace() }) {
		s.callRouted(ctx, req, h, p, m)
		return
	}
	op := &nodemgr.CallOp{
		Principal: p,
		Items:     m.MethodsToCall,
		Results:   make([]ua.CallMethodResult, len(m.MethodsToCall)),
	}
	s.space.Call(ctx, op, func() {
		s.respond(req, &ua.CallResponse{ResponseHeader: s.header(h, status.Good), Results: op.Results})
	})
}
