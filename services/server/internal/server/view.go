package server

import (
	"context"
	"slices"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/diagnostics"
	"uastack.dev/services/server/internal/session"
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
	h := &m.RequestHeader // m is recycled only after the response is encoded
	// Answered at once: the time the request was read stands for now throughout.
	now := s.timeOf(req)
	rc, _ := req.Channel.Local().(*readChannel)
	if rc == nil {
		rc = new(readChannel)
		req.Channel.SetLocal(rc)
	}
	rs := &rc.read
	code := s.checkRead(req.Channel, &rc.session, m, now, &rs.op.Principal)
	if code != status.Good {
		rs.release()
		s.respond(req, s.fault(*h, code))
		req.Recycle()
		return
	}
	// Field by field, here and below: the Principal is in place already, and rs is zero
	// otherwise.
	rs.op.MaxAge, rs.op.Timestamps = m.MaxAge, m.TimestampsToReturn
	rs.op.Items = m.NodesToRead
	rs.op.Results = slices.Grow(rs.results[:0], len(m.NodesToRead))[:len(m.NodesToRead)]
	rs.op.Now = codec.DateTimeOf(now)
	// The Space answers before Read returns, and Respond has encoded the response before
	// it returns: after that nothing refers to rs, the request or its slices.
	s.space.Read(ctx, &rs.op, func() {
		rs.resp.ResponseHeader = headerAt(*h, status.Good, now)
		rs.resp.Results = rs.op.Results
		if s.diag.Enabled() {
			rc.countersOf(s, *h).Count(diagnostics.SvcRead, status.Good)
		}
		s.send(req, &rs.resp)
	})
	rs.release()
	req.Recycle()
}

// readChannel is what a channel keeps for its inline Reads (uasc.ServerChannel.Local),
// used only by its reading goroutine.
type readChannel struct {
	session session.Memory
	read    readState
	// counters are the diagnostics counters of counted, the session the memory held
	// when they were looked up.
	counters *diagnostics.Counters
	counted  *session.Session
}

// countersOf returns the diagnostics counters of the session the channel remembers,
// which the Read with header h named: looked up again only when the session changed.
func (rc *readChannel) countersOf(s *Server, h ua.RequestHeader) *diagnostics.Counters {
	if live := rc.session.Session(); live != rc.counted {
		rc.counters, rc.counted = s.diag.CountersOf(h.AuthenticationToken), live
	}
	return rc.counters
}

// readState is the memory of one inline Read: the operation handed to the Space and the
// response encoded from its Results. A channel has one, in use from the start of a Read
// until release, which follows the encoding of the response.
type readState struct {
	op      nodemgr.ReadOp
	resp    ua.ReadResponse
	results []codec.DataValue
}

// maxKeptResults bounds the Results slice a readState keeps between Reads.
const maxKeptResults = 1024

// release clears rs, so that it holds no value of the Space nor anything of the request.
func (rs *readState) release() {
	results := rs.op.Results
	clear(results)
	if cap(results) > maxKeptResults {
		results = nil
	}
	*rs = readState{results: results[:0]}
}

// checkRead makes the checks of a Read that come before any node is read: the session,
// BadNothingToDo and BadTooManyOperations (OperationLimits.MaxNodesPerRead), MaxAge and
// TimestampsToReturn. It sets *p to who asks; mem, when not nil, is the channel's memory
// of its session (session.Table.PrincipalAt).
func (s *Server) checkRead(ch *uasc.ServerChannel, mem *session.Memory, m *ua.ReadRequest, now time.Time, p *nodemgr.Principal) status.Code {
	code := s.sessions.PrincipalAt(m.RequestHeader.AuthenticationToken, ch.ID(), now, p, mem)
	if code == status.Good {
		code = checkCount(len(m.NodesToRead), s.cfg.OperationLimits.MaxNodesPerRead)
	}
	if code == status.Good && m.MaxAge < 0 {
		code = status.BadMaxAgeInvalid
	}
	if code == status.Good && (m.TimestampsToReturn < ua.TimestampsToReturnSource || m.TimestampsToReturn > ua.TimestampsToReturnNeither) {
		code = status.BadTimestampsToReturnInvalid
	}
	return code
}

// browse answers Browse (Part 4 §5.9.2). When a node has more than
// RequestedMaxReferencesPerNode references, the rest is kept in a continuation point of
// the session (at most Limits.MaxBrowseContinuationPoints per session; beyond that the
// result is BadNoContinuationPoints). A Browse that reaches a mounted node manager, or a
// Space node with references into one, goes through the request queue (browseRouted);
// otherwise the Space answers inline.
func (s *Server) browse(ctx context.Context, req uasc.Request, m *ua.BrowseRequest) {
	h := m.RequestHeader
	p, code := s.sessions.Principal(h.AuthenticationToken, req.Channel.ID())
	if code == status.Good {
		code = checkCount(len(m.NodesToBrowse), s.cfg.OperationLimits.MaxNodesPerBrowse)
	}
	if code != status.Good {
		s.respond(req, s.fault(h, code))
		return
	}
	if s.routesBrowse(m) {
		s.browseRouted(ctx, req, h, p, m)
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
		s.respond(req, s.browseResponse(h, req.Channel.ID(), op.Results, perNode))
	})
}

// browseResponse answers a Browse with the references found for each node, keeping what
// exceeds perNode (0: no limit) in continuation points of the session.
func (s *Server) browseResponse(h ua.RequestHeader, channelID uint32, found []nodemgr.BrowseResult, perNode int) codec.Structure {
	results := make([]ua.BrowseResult, len(found))
	code := s.sessions.Active(h.AuthenticationToken, channelID, func(sess *session.Session) status.Code {
		for i, r := range found {
			results[i] = ua.BrowseResult{StatusCode: r.Status, References: r.References}
			if perNode == 0 || len(r.References) <= perNode {
				continue
			}
			cp, code := sess.SaveContinuation(r.References[perNode:], perNode, s.cfg.Limits.MaxBrowseContinuationPoints)
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
		return s.fault(h, code)
	}
	return &ua.BrowseResponse{ResponseHeader: s.header(h, status.Good), Results: results}
}

// browseNext answers BrowseNext (Part 4 §5.9.3) from the session's continuation points:
// an unknown one is BadContinuationPointInvalid; a used one is replaced by a new one while
// references remain; ReleaseContinuationPoints frees them and returns no references.
func (s *Server) browseNext(ch *uasc.ServerChannel, m *ua.BrowseNextRequest) codec.Structure {
	h := m.RequestHeader
	code := s.sessions.Active(h.AuthenticationToken, ch.ID(), func(*session.Session) status.Code { return status.Good })
	if code == status.Good {
		code = checkCount(len(m.ContinuationPoints), s.cfg.OperationLimits.MaxNodesPerBrowse)
	}
	if code != status.Good {
		return s.fault(h, code)
	}
	results := make([]ua.BrowseResult, len(m.ContinuationPoints))
	code = s.sessions.Active(h.AuthenticationToken, ch.ID(), func(sess *session.Session) status.Code {
		for i, cp := range m.ContinuationPoints {
			refs, perNode, ok := sess.TakeContinuation(cp)
			if !ok {
				results[i] = ua.BrowseResult{StatusCode: status.BadContinuationPointInvalid}
				continue
			}
			if m.ReleaseContinuationPoints {
				results[i] = ua.BrowseResult{StatusCode: status.Good}
				continue
			}
			n := min(perNode, len(refs))
			results[i] = ua.BrowseResult{StatusCode: status.Good, References: refs[:n]}
			if rest := refs[n:]; len(rest) > 0 {
				// The freed slot is taken again, so this cannot fail.
				next, _ := sess.SaveContinuation(rest, perNode, s.cfg.Limits.MaxBrowseContinuationPoints)
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

// translate answers TranslateBrowsePathsToNodeIds (Part 4 §5.9.4). Without mounted
// managers the Space resolves the paths inline; with them any path may cross into a
// manager, so the request goes through the queue (translateRouted).
func (s *Server) translate(ctx context.Context, req uasc.Request, m *ua.TranslateBrowsePathsToNodeIdsRequest) {
	h := m.RequestHeader
	p, code := s.sessions.Principal(h.AuthenticationToken, req.Channel.ID())
	if code == status.Good {
		code = checkCount(len(m.BrowsePaths), s.cfg.OperationLimits.MaxNodesPerTranslateBrowsePathsToNodeIds)
	}
	if code != status.Good {
		s.respond(req, s.fault(h, code))
		return
	}
	if len(s.routing.owners) != 0 {
		s.translateRouted(ctx, req, h, p, m)
		return
	}
	results := make([]ua.BrowsePathResult, len(m.BrowsePaths))
	s.space.TranslateBrowsePaths(ctx, m.BrowsePaths, results)
	s.respond(req, &ua.TranslateBrowsePathsToNodeIdsResponse{ResponseHeader: s.header(h, status.Good), Results: results})
}
