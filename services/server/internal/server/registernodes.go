package server

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// registerNodes answers RegisterNodes (Part 4 §5.9.5). Every node is served straight
// from its NodeId already, so the registered ids are the given ones, which the service
// allows; nothing is kept per session. The checks are those of any service: the session,
// BadNothingToDo and BadTooManyOperations (OperationLimits.MaxNodesPerRegisterNodes).
func (s *Server) registerNodes(ch *uasc.ServerChannel, m *ua.RegisterNodesRequest) codec.Structure {
	h := m.RequestHeader
	if code := s.checkRegister(ch, h, len(m.NodesToRegister)); code != status.Good {
		return s.fault(h, code)
	}
	return &ua.RegisterNodesResponse{ResponseHeader: s.header(h, status.Good), RegisteredNodeIds: m.NodesToRegister}
}

// unregisterNodes answers UnregisterNodes (Part 4 §5.9.6) with the checks of
// registerNodes; there is nothing to release.
func (s *Server) unregisterNodes(ch *uasc.ServerChannel, m *ua.UnregisterNodesRequest) codec.Structure {
	h := m.RequestHeader
	if code := s.checkRegister(ch, h, len(m.NodesToUnregister)); code != status.Good {
		return s.fault(h, code)
	}
	return &ua.UnregisterNodesResponse{ResponseHeader: s.header(h, status.Good)}
}

// checkRegister makes the checks of RegisterNodes and UnregisterNodes for n nodes.
func (s *Server) checkRegister(ch *uasc.ServerChannel, h ua.RequestHeader, n int) status.Code {
	_, code := s.sessions.Principal(h.AuthenticationToken, ch.ID())
	if code != status.Good {
		return code
	}
	return checkCount(n, s.cfg.OperationLimits.MaxNodesPerRegisterNodes)
}
