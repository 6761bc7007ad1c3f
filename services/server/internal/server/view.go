package server

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/status"
)

// checkCount returns the ServiceResult for a request of n operations with limit max:
// BadNothingToDo for none, BadTooManyOperations above the limit (Part 4 §7.34).
func checkCount(n, max int) status.Code {
	switch {
	case n == 0:
		return status.BadNothingToDo
	case max > 0 && n > max:
		return status.BadTooManyOperations
	}
	return status.Good
}

// read answers Read (Part 4 §5.10.2) from namespace 0. Per-item failures such as
// BadNodeIdUnknown and BadAttributeIdInvalid come from the address space.
func (s *Server) read(ctx context.Context, req uasc.Request, m *ua.ReadRequest) {
	h := m.RequestHeader
	p, code := s.checkRead(req.Channel, m)
	if code != status.Good {
		s.respond(req, s.fault(h, code))
		return
	}
	op := &nodemgr.ReadOp{
		Principal:  p,
		MaxAge:     m.MaxAge,
		Timestamps: m.TimestampsToReturn,
		Items:      m.NodesToRead,
		Results:    make([]codec.DataValue, len(m.NodesToRead)),
	}
	s.space.Read(ctx, op, func() {
		s.respond(req, &ua.ReadResponse{ResponseHeader: s.header(h, status.Good), Results: op.Results})
	})
}

// checkRead makes the checks of a Read that come before any node is read: the session,
// BadNothingToDo and BadTooManyOperations (OperationLimits.MaxNodesPerRead), MaxAge and
// TimestampsToReturn. It returns who asks.
func (s *Server) checkRead(ch *uasc.ServerChannel, m *ua.ReadRequest) (nodemgr.Principal, status.Code) {
	p, code := s.sessions.principal(m.RequestHeader.AuthenticationToken, ch.ID())
	if code == status.Good {
		code = checkCount(len(m.NodesToRead), s.cfg.OperationLimits.MaxNodesPerRead)
	}
	if code == status.Good && m.MaxAge < 0 {
		code = status.BadMaxAgeInvalid
	}
	if code == status.Good && (m.TimestampsToReturn < ua.TimestampsToReturnSource || m.TimestampsToReturn > ua.TimestampsToReturnNeither) {
		code = status.BadTimestampsToReturnInvalid
	}
	return p, code
}

// browse answers Browse (Part 4 §5.9.2) from namespace 0. When a node has more than
// RequestedMaxReferencesPerNode references, the rest is kept in a continuation point of
// the session (at most Limits.MaxBrowseContinuationPoints per session; beyond that the
// result is BadNoContinuationPoints).
func (s *Server) browse(ctx context.Context, req uasc.Request, m *ua.BrowseRequest) {
	h := m.RequestHeader
	p, code := s.sessions.principal(h.AuthenticationToken, req.Channel.ID())
	if code == status.Good {
		code = checkCount(len(m.NodesToBrowse), s.cfg.OperationLimits.MaxNodesPerBrowse)
	}
	if code != status.Good {
		s.respond(req, s.fault(h, code))
		return
	}
	op := &nodemgr.BrowseOp{
		Principal: p,
		View:      m.View,
		Items:     m.NodesToBrowse,
		Results:   make([]nodemgr.BrowseResult, len(m.NodesToBrowse)),
	}
	perNode := int(m.RequestedMaxReferencesPerNode)
	s.space.Browse(ctx, op, func() {
		results := make([]ua.BrowseResult, len(op.Results))
		code := s.sessions.active(h.AuthenticationToken, req.Channel.ID(), func(sess *session) status.Code {
			for i, r := range op.Results {
				results[i] = ua.BrowseResult{StatusCode: r.Status, References: r.References}
				if perNode == 0 || len(r.References) <= perNode {
					continue
				}
				cp, code := sess.saveContinuationLocked(r.References[perNode:], perNode, s.cfg.Limits.MaxBrowseContinuationPoints)
				if code != status.Good {
					results[i] = ua.BrowseResult{StatusCode: code}
					continue
				}
				results[i].References = r.References[:perNode]
				results[i].ContinuationPoint = cp
			}
			return status.Good
		})
		if code != status.Good {
			s.respond(req, s.fault(h, code))
			return
		}
		s.respond(req, &ua.BrowseResponse{ResponseHeader: s.header(h, status.Good), Results: results})
	})
}

// browseNext answers BrowseNext (Part 4 §5.9.3) from the session's continuation points:
// an unknown one is BadContinuationPointInvalid; a used one is replaced by a new one while
// references remain; ReleaseContinuationPoints frees them and returns no references.
func (s *Server) browseNext(ch *uasc.ServerChannel, m *ua.BrowseNextRequest) codec.Structure {
	h := m.RequestHeader
	code := s.sessions.active(h.AuthenticationToken, ch.ID(), func(*session) status.Code { return status.Good })
	if code == status.Good {
		code = checkCount(len(m.ContinuationPoints), s.cfg.OperationLimits.MaxNodesPerBrowse)
	}
	if code != status.Good {
		return s.fault(h, code)
	}
	results := make([]ua.BrowseResult, len(m.ContinuationPoints))
	code = s.sessions.active(h.AuthenticationToken, ch.ID(), func(sess *session) status.Code {
		for i, cp := range m.ContinuationPoints {
			c, ok := sess.browse[string(cp)]
			if !ok {
				results[i] = ua.BrowseResult{StatusCode: status.BadContinuationPointInvalid}
				continue
			}
			delete(sess.browse, string(cp))
			if m.ReleaseContinuationPoints {
				results[i] = ua.BrowseResult{StatusCode: status.Good}
				continue
			}
			n := min(c.max, len(c.refs))
			results[i] = ua.BrowseResult{StatusCode: status.Good, References: c.refs[:n]}
			if rest := c.refs[n:]; len(rest) > 0 {
				// The freed slot is taken again, so this cannot fail.
				next, _ := sess.saveContinuationLocked(rest, c.max, s.cfg.Limits.MaxBrowseContinuationPoints)
				results[i].ContinuationPoint = next
			}
		}
		return status.Good
	})
	if code != status.Good {
		return s.fault(h, code)
	}
	return &ua.BrowseNextResponse{ResponseHeader: s.header(h, status.Good), Results: results}
}

// translate answers TranslateBrowsePathsToNodeIds (Part 4 §5.9.4) from namespace 0.
func (s *Server) translate(ctx context.Context, ch *uasc.ServerChannel, m *ua.TranslateBrowsePathsToNodeIdsRequest) codec.Structure {
	h := m.RequestHeader
	_, code := s.sessions.principal(h.AuthenticationToken, ch.ID())
	if code == status.Good {
		code = checkCount(len(m.BrowsePaths), s.cfg.OperationLimits.MaxNodesPerTranslateBrowsePathsToNodeIds)
	}
	if code != status.Good {
		return s.fault(h, code)
	}
	results := make([]ua.BrowsePathResult, len(m.BrowsePaths))
	s.space.TranslateBrowsePaths(ctx, m.BrowsePaths, results)
	return &ua.TranslateBrowsePathsToNodeIdsResponse{ResponseHeader: s.header(h, status.Good), Results: results}
}
