package server

import (
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/pipeline"
)

// call answers Call (Part 4 §5.11.2): BadNothingToDo and BadTooManyOperations
// (OperationLimits.MaxNodesPerMethodCall) as a ServiceFault, then one CallOp to each
// owner of the objects, which checks objects, methods and arguments and runs the
// handlers. The handlers of the Space's Methods are fast, so a Call of them only is
// answered inline like Read; one that reaches a mounted manager goes through the request
// queue (callRouted).
func (s *Server) call(r *pipeline.Request[*conn], m *ua.CallRequest) {
	if code := pipeline.CheckCount(len(m.MethodsToCall), s.cfg.OperationLimits.MaxNodesPerMethodCall); code != status.Good {
		r.Respond(r.Fault(code))
		return
	}
	if !s.routes.Local(len(m.MethodsToCall), func(i int) uint16 { return m.MethodsToCall[i].ObjectId.Namespace() }) {
		s.callRouted(r, m)
		return
	}
	op := &nodemgr.CallOp{
		Principal: *r.Principal,
		Items:     m.MethodsToCall,
		Results:   make([]ua.CallMethodResult, len(m.MethodsToCall)),
	}
	s.space.Call(r.Ctx, op, func() {
		r.Respond(&ua.CallResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: op.Results})
	})
}
