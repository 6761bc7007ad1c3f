package server

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/pipeline"
)

// The services whose items reach a mounted node manager go through the request queue:
// the checks run inline, then a job hands each owner its operation (routing) and returns,
// so a manager that waits on a device holds no worker. The response is sent when the
// last owner calls done, or BadTimeout when the request's TimeoutHint passes first; a
// late result is dropped. The answer runs on whichever goroutine completed last, a
// manager's own among them: it recovers (Pending.Recover), so that a panic there is
// BadInternalError for its request.

// readRouted is Read (Part 4 §5.10.2) through the request queue.
func (s *Server) readRouted(r *pipeline.Request[*conn], m *ua.ReadRequest) {
	principal := *r.Principal
	r.Enqueue(len(m.NodesToRead), func(p *pipeline.Pending) {
		op := &nodemgr.ReadOp{
			Principal:  principal,
			MaxAge:     m.MaxAge,
			Timestamps: m.TimestampsToReturn,
			Items:      m.NodesToRead,
			Results:    make([]codec.DataValue, len(m.NodesToRead)),
		}
		s.routes.Read(p.Ctx, op, func() {
			defer p.Recover()
			p.Answer(&ua.ReadResponse{ResponseHeader: p.Header(status.Good), Results: op.Results})
		})
	})
}

// writeRouted is Write (Part 4 §5.10.4) through the request queue.
func (s *Server) writeRouted(r *pipeline.Request[*conn], m *ua.WriteRequest) {
	principal := *r.Principal
	r.Enqueue(len(m.NodesToWrite), func(p *pipeline.Pending) {
		op := &nodemgr.WriteOp{Principal: principal, Items: m.NodesToWrite, Results: make([]status.Code, len(m.NodesToWrite))}
		s.routes.Write(p.Ctx, op, func() {
			defer p.Recover()
			p.Answer(&ua.WriteResponse{ResponseHeader: p.Header(status.Good), Results: op.Results})
		})
	})
}

// callRouted is Call (Part 4 §5.11.2) through the request queue.
func (s *Server) callRouted(r *pipeline.Request[*conn], m *ua.CallRequest) {
	principal := *r.Principal
	r.Enqueue(len(m.MethodsToCall), func(p *pipeline.Pending) {
		op := &nodemgr.CallOp{Principal: principal, Items: m.MethodsToCall, Results: make([]ua.CallMethodResult, len(m.MethodsToCall))}
		s.routes.Call(p.Ctx, op, func() {
			defer p.Recover()
			p.Answer(&ua.CallResponse{ResponseHeader: p.Header(status.Good), Results: op.Results})
		})
	})
}

// browseRouted is Browse (Part 4 §5.9.2) through the request queue; the references are
// complete before the continuation points are taken, so BrowseNext never reaches a
// manager.
func (s *Server) browseRouted(r *pipeline.Request[*conn], m *ua.BrowseRequest) {
	principal, h, channelID := *r.Principal, *r.Header, r.Req.Channel.ID()
	perNode := int(m.RequestedMaxReferencesPerNode)
	r.Enqueue(len(m.NodesToBrowse), func(p *pipeline.Pending) {
		s.routes.Browse(p.Ctx, principal, m.View, m.NodesToBrowse, func(results []nodemgr.BrowseResult) {
			defer p.Recover()
			if p.Done() {
				return // timed out: take no continuation point nobody will release
			}
			p.Answer(s.browseResponse(h, channelID, results, perNode))
		})
	})
}

// translateRouted is TranslateBrowsePathsToNodeIds (Part 4 §5.9.4) through the request
// queue.
func (s *Server) translateRouted(r *pipeline.Request[*conn], m *ua.TranslateBrowsePathsToNodeIdsRequest) {
	principal := *r.Principal
	r.Enqueue(len(m.BrowsePaths), func(p *pipeline.Pending) {
		s.routes.Translate(p.Ctx, principal, m.BrowsePaths, func(results []ua.BrowsePathResult) {
			defer p.Recover()
			p.Answer(&ua.TranslateBrowsePathsToNodeIdsResponse{ResponseHeader: p.Header(status.Good), Results: results})
		})
	})
}

// sampler reads sampled monitored items: from the address space, or through the owners
// of their namespaces. It reads as the server, not as a session.
type sampler struct{ s *Server }

func (sp sampler) Sample(items []ua.ReadValueId, out []codec.DataValue, done func()) {
	s := sp.s
	op := &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnBoth, Items: items, Results: out}
	if s.routes.Local(len(items), func(i int) uint16 { return items[i].NodeId.Namespace() }) {
		s.space.Read(context.Background(), op, done)
		return
	}
	s.routes.Read(context.Background(), op, done)
}
