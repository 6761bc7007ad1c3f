package server

import (
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/session"
)

// browse answers Browse (Part 4 §5.9.2). When a node has more than
// RequestedMaxReferencesPerNode references, the rest is kept in a continuation point of
// the session (at most Limits.MaxBrowseContinuationPoints per session; beyond that the
// result is BadNoContinuationPoints). A Browse that reaches a mounted node manager, or a
// Space node with references into one, goes through the request queue (browseRouted);
// otherwise the Space answers inline.
func (s *Server) browse(r *pipeline.Request[*conn], m *ua.BrowseRequest) {
	if code := pipeline.CheckCount(len(m.NodesToBrowse), s.cfg.OperationLimits.MaxNodesPerBrowse); code != status.Good {
		r.Respond(r.Fault(code))
		return
	}
	if !s.routes.LocalBrowse(m) {
		s.browseRouted(r, m)
		return
	}
	op := &nodemgr.BrowseOp{
		Principal: *r.Principal,
		View:      m.View,
		Items:     m.NodesToBrowse,
		Results:   make([]nodemgr.BrowseResult, len(m.NodesToBrowse)),
	}
	perNode := int(m.RequestedMaxReferencesPerNode)
	s.space.Browse(r.Ctx, op, func() {
		r.Respond(s.browseResponse(*r.Header, r.Req.Channel.ID(), op.Results, perNode))
	})
}

// browseResponse answers a Browse with the references found for each node, keeping what
// exceeds perNode (0: no limit) in continuation points of the session.
func (s *Server) browseResponse(h ua.RequestHeader, channelID uint32, found []nodemgr.BrowseResult, perNode int) codec.Structure {
	results := make([]ua.BrowseResult, len(found))
	kept := keptPoints{on: s.mirror != nil}
	code := s.sessions.Active(h.AuthenticationToken, channelID, func(sess *session.Session) status.Code {
		kept.of(sess)
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
			kept.saved(cp, r.References[perNode:], perNode)
		}
		return status.Good
	})
	if code != status.Good {
		return s.pipe.Fault(h, code)
	}
	s.keepPoints(&kept)
	return &ua.BrowseResponse{ResponseHeader: s.pipe.Header(h, status.Good), Results: results}
}

// keptPoints are the continuation points a Browse or BrowseNext saved and took, for the
// redundant set (mirror.ContinuationSaved): collected under the table's lock, written
// after it.
type keptPoints struct {
	on      bool // the server mirrors: without a mirror nothing is collected
	session codec.NodeId
	timeout time.Duration
	saves   []savedPoint
	taken   [][]byte
}

type savedPoint struct {
	cp      []byte
	refs    []ua.ReferenceDescription
	perNode int
}

func (k *keptPoints) of(sess *session.Session) { k.session, k.timeout = sess.ID(), sess.Timeout() }

func (k *keptPoints) saved(cp []byte, refs []ua.ReferenceDescription, perNode int) {
	if k.on {
		k.saves = append(k.saves, savedPoint{cp, refs, perNode})
	}
}

func (k *keptPoints) took(cp []byte) {
	if k.on {
		k.taken = append(k.taken, cp)
	}
}

// keepPoints writes k to the set and waits until it is kept, so that a client that moves
// goes on browsing there. Without a mirror it does nothing.
func (s *Server) keepPoints(k *keptPoints) {
	if len(k.saves)+len(k.taken) == 0 {
		return
	}
	for _, p := range k.saves {
		s.mirror.ContinuationSaved(k.session, k.timeout, p.cp, p.refs, p.perNode)
	}
	for _, cp := range k.taken {
		s.mirror.ContinuationTaken(k.session, cp)
	}
	if len(k.saves) > 0 {
		s.mirror.Sync()
	}
}

// browseNext answers BrowseNext (Part 4 §5.9.3) from the session's continuation points:
// an unknown one is BadContinuationPointInvalid; a used one is replaced by a new one while
// references remain; ReleaseContinuationPoints frees them and returns no references.
func (s *Server) browseNext(r *pipeline.Request[*conn], m *ua.BrowseNextRequest) codec.Structure {
	if code := pipeline.CheckCount(len(m.ContinuationPoints), s.cfg.OperationLimits.MaxNodesPerBrowse); code != status.Good {
		return r.Fault(code)
	}
	results := make([]ua.BrowseResult, len(m.ContinuationPoints))
	kept := keptPoints{on: s.mirror != nil}
	var unknown []int // points this server does not hold: another server of the set may
	code := s.sessions.Active(r.Header.AuthenticationToken, r.Req.Channel.ID(), func(sess *session.Session) status.Code {
		kept.of(sess)
		for i, cp := range m.ContinuationPoints {
			refs, perNode, ok := sess.TakeContinuation(cp)
			if !ok {
				results[i] = ua.BrowseResult{StatusCode: status.BadContinuationPointInvalid}
				unknown = append(unknown, i)
				continue
			}
			kept.took(cp)
			s.nextReferences(sess, &results[i], refs, perNode, m.ReleaseContinuationPoints, &kept)
		}
		return status.Good
	})
	if code != status.Good {
		return r.Fault(code)
	}
	if s.mirror != nil && len(unknown) > 0 {
		// Made on another server of the set before the client moved here: read from the
		// set (which forgets them), then served as if held here.
		type found struct {
			i       int
			refs    []ua.ReferenceDescription
			perNode int
		}
		var got []found
		for _, i := range unknown {
			if refs, perNode, ok := s.mirror.Continuation(r.Ctx, kept.session, m.ContinuationPoints[i]); ok {
				got = append(got, found{i, refs, perNode})
			}
		}
		if len(got) > 0 {
			code = s.sessions.Active(r.Header.AuthenticationToken, r.Req.Channel.ID(), func(sess *session.Session) status.Code {
				for _, f := range got {
					s.nextReferences(sess, &results[f.i], f.refs, f.perNode, m.ReleaseContinuationPoints, &kept)
				}
				return status.Good
			})
			if code != status.Good {
				return r.Fault(code)
			}
		}
	}
	s.keepPoints(&kept)
	return &ua.BrowseNextResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: results}
}

// nextReferences answers one continuation point of a BrowseNext from refs, perNode of
// them, saving the rest under a new point (for the fn of Table.Active).
func (s *Server) nextReferences(sess *session.Session, res *ua.BrowseResult, refs []ua.ReferenceDescription, perNode int, release bool, kept *keptPoints) {
	if release {
		*res = ua.BrowseResult{StatusCode: status.Good}
		return
	}
	n := min(perNode, len(refs))
	*res = ua.BrowseResult{StatusCode: status.Good, References: refs[:n]}
	if rest := refs[n:]; len(rest) > 0 {
		// A freed slot is taken again; a point read from the set may find the session
		// at its limit.
		next, code := sess.SaveContinuation(rest, perNode, s.cfg.Limits.MaxBrowseContinuationPoints)
		if code != status.Good {
			*res = ua.BrowseResult{StatusCode: code}
			return
		}
		res.ContinuationPoint = next
		kept.saved(next, rest, perNode)
	}
}

// translate answers TranslateBrowsePathsToNodeIds (Part 4 §5.9.4). Without mounted
// managers the Space resolves the paths inline; with them any path may cross into a
// manager, so the request goes through the queue (translateRouted).
func (s *Server) translate(r *pipeline.Request[*conn], m *ua.TranslateBrowsePathsToNodeIdsRequest) {
	if code := pipeline.CheckCount(len(m.BrowsePaths), s.cfg.OperationLimits.MaxNodesPerTranslateBrowsePathsToNodeIds); code != status.Good {
		r.Respond(r.Fault(code))
		return
	}
	if s.routes.Mounted() {
		s.translateRouted(r, m)
		return
	}
	results := make([]ua.BrowsePathResult, len(m.BrowsePaths))
	s.space.TranslateBrowsePaths(r.Ctx, m.BrowsePaths, results)
	r.Respond(&ua.TranslateBrowsePathsToNodeIdsResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: results})
}

// registerNodes answers RegisterNodes (Part 4 §5.9.5). Every node is served straight
// from its NodeId already, so the registered ids are the given ones, which the service
// allows; nothing is kept per session. The checks are those of any service: the session,
// BadNothingToDo and BadTooManyOperations (OperationLimits.MaxNodesPerRegisterNodes).
func (s *Server) registerNodes(r *pipeline.Request[*conn], m *ua.RegisterNodesRequest) codec.Structure {
	if code := pipeline.CheckCount(len(m.NodesToRegister), s.cfg.OperationLimits.MaxNodesPerRegisterNodes); code != status.Good {
		return r.Fault(code)
	}
	return &ua.RegisterNodesResponse{ResponseHeader: r.ResponseHeader(status.Good), RegisteredNodeIds: m.NodesToRegister}
}

// unregisterNodes answers UnregisterNodes (Part 4 §5.9.6) with the checks of
// registerNodes; there is nothing to release.
func (s *Server) unregisterNodes(r *pipeline.Request[*conn], m *ua.UnregisterNodesRequest) codec.Structure {
	if code := pipeline.CheckCount(len(m.NodesToUnregister), s.cfg.OperationLimits.MaxNodesPerRegisterNodes); code != status.Good {
		return r.Fault(code)
	}
	return &ua.UnregisterNodesResponse{ResponseHeader: r.ResponseHeader(status.Good)}
}
