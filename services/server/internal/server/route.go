package server

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/config"
)

// owner is a node manager as the server routes to it: the capabilities it has, found by
// type assertion once, when it is registered. A missing capability answers each item
// with a Bad StatusCode (see the nodemgr package doc).
type owner struct {
	reader  nodemgr.Reader
	writer  nodemgr.Writer
	browser nodemgr.Browser
	caller  nodemgr.Caller
}

func newOwner(m nodemgr.Manager) *owner {
	o := &owner{}
	o.reader, _ = m.(nodemgr.Reader)
	o.writer, _ = m.(nodemgr.Writer)
	o.browser, _ = m.(nodemgr.Browser)
	o.caller, _ = m.(nodemgr.Caller)
	return o
}

func (o *owner) read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	if o.reader == nil {
		for i := range op.Results {
			op.Results[i] = codec.DataValue{Status: status.BadNotReadable}
		}
		done()
		return
	}
	o.reader.Read(ctx, op, done)
}

func (o *owner) write(ctx context.Context, op *nodemgr.WriteOp, done func()) {
	if o.writer == nil {
		for i := range op.Results {
			op.Results[i] = status.BadNotWritable
		}
		done()
		return
	}
	o.writer.Write(ctx, op, done)
}

func (o *owner) browse(ctx context.Context, op *nodemgr.BrowseOp, done func()) {
	if o.browser == nil {
		for i := range op.Results {
			op.Results[i] = nodemgr.BrowseResult{Status: status.BadNodeIdUnknown}
		}
		done()
		return
	}
	o.browser.Browse(ctx, op, done)
}

func (o *owner) call(ctx context.Context, op *nodemgr.CallOp, done func()) {
	if o.caller == nil {
		for i := range op.Results {
			op.Results[i] = ua.CallMethodResult{StatusCode: status.BadNotExecutable}
		}
		done()
		return
	}
	o.caller.Call(ctx, op, done)
}

// routing maps namespace indexes to the owners that serve them.
type routing struct {
	// space owns the namespaces of the in-memory Space: namespace 0 and the demo one.
	space *owner
	// owners holds the owner of each namespace by index, nil (or beyond the end) for
	// space. It is empty when no manager is mounted, which keeps the fast path to one
	// length check.
	owners []*owner
	// mounts are the Space nodes with references added by a Mounter: browsing them
	// needs the managers to describe the targets.
	mounts map[codec.NodeId]bool
}

// ownerOf returns the owner of namespace ns.
func (r *routing) ownerOf(ns uint16) *owner {
	if int(ns) < len(r.owners) && r.owners[ns] != nil {
		return r.owners[ns]
	}
	return r.space
}

// routes reports whether one of the n items, whose nodes are in the namespaces nsOf
// returns, belongs to a mounted manager. Without managers it costs one length check.
func (r *routing) routes(n int, nsOf func(i int) uint16) bool {
	if len(r.owners) == 0 {
		return false
	}
	for i := range n {
		if r.ownerOf(nsOf(i)) != r.space {
			return true
		}
	}
	return false
}

// mountManagers returns the NamespaceArray (the namespaces of space, then those of
// managers) and the routing to the managers. It adds the references that Mounters ask
// for to space. A URI served twice is an error, and so is a Mount whose source is not a
// node of space or whose target is not in the manager's namespaces.
func mountManagers(space *addrspace.Space, managers []nodemgr.Manager) ([]string, routing, error) {
	uris := append([]string(nil), space.Namespaces()...)
	rt := routing{space: newOwner(space)}
	seen := make(map[string]bool, len(uris))
	for _, u := range uris {
		seen[u] = true
	}
	type mounter struct {
		m       nodemgr.Mounter
		owner   *owner
		indexes []uint16
	}
	var mounters []mounter
	for _, m := range managers {
		o := newOwner(m)
		var indexes []uint16
		for _, u := range m.Namespaces() {
			if seen[u] {
				return nil, routing{}, fmt.Errorf("node manager %T: namespace %q is served twice", m, u)
			}
			seen[u] = true
			if len(uris) > 0xffff {
				return nil, routing{}, fmt.Errorf("node manager %T: more namespaces than a NamespaceIndex can address", m)
			}
			rt.owners = append(rt.owners, make([]*owner, len(uris)+1-len(rt.owners))...)
			rt.owners[len(uris)] = o
			indexes = append(indexes, uint16(len(uris)))
			uris = append(uris, u)
		}
		if mm, ok := m.(nodemgr.Mounter); ok {
			mounters = append(mounters, mounter{mm, o, indexes})
		}
	}
	for _, mm := range mounters {
		for _, mt := range mm.m.Mount(mm.indexes) {
			if rt.ownerOf(mt.SourceId.Namespace()) != rt.space || rt.ownerOf(mt.TargetId.Namespace()) != mm.owner {
				return nil, routing{}, fmt.Errorf("node manager %T: mount %v -> %v does not lead from the address space to the manager", mm.m, mt.SourceId, mt.TargetId)
			}
			err := space.AddReference(mt.SourceId, addrspace.Reference{ReferenceTypeId: mt.ReferenceTypeId, TargetId: mt.TargetId, IsForward: true})
			if err != nil {
				return nil, routing{}, fmt.Errorf("node manager %T: %w", mm.m, err)
			}
			if rt.mounts == nil {
				rt.mounts = make(map[codec.NodeId]bool)
			}
			rt.mounts[mt.SourceId] = true
		}
	}
	return uris, rt, nil
}

// gather asks the owners of items for their results and calls finish with all of them in
// request order once the last owner has called done. Items are split by ownerOf, in
// order of first appearance; each owner gets one call of ask with its items (in request
// order) and a result slot per item, and must call done once, from any goroutine. A
// second done is ignored. gather returns when every owner's method has returned, and
// owners do not wait in them (nodemgr), so it runs within a queue job without holding
// the worker, or within another owner's done (browse rounds, target descriptions).
func gather[I, R any](items []I, ownerOf func(*I) *owner, ask func(o *owner, items []I, results []R, done func()), finish func([]R)) {
	type group struct {
		owner *owner
		index []int
	}
	var groups []group
	for i := range items {
		o := ownerOf(&items[i])
		g := len(groups)
		for j := range groups {
			if groups[j].owner == o {
				g = j
				break
			}
		}
		if g == len(groups) {
			groups = append(groups, group{owner: o})
		}
		groups[g].index = append(groups[g].index, i)
	}
	results := make([]R, len(items))
	if len(groups) == 0 {
		finish(results)
		return
	}
	var left atomic.Int32
	left.Store(int32(len(groups)))
	for _, g := range groups {
		part, res := items, results
		if len(g.index) < len(items) {
			part, res = make([]I, len(g.index)), make([]R, len(g.index))
			for k, i := range g.index {
				part[k] = items[i]
			}
		}
		var once atomic.Bool
		ask(g.owner, part, res, func() {
			if !once.CompareAndSwap(false, true) {
				return // a second done from a faulty manager
			}
			if len(g.index) < len(items) {
				for k, i := range g.index {
					results[i] = res[k]
				}
			}
			if left.Add(-1) == 0 {
				finish(results)
			}
		})
	}
}

// nodeOwner returns the owner of the node of a request item.
func (s *Server) nodeOwner(n codec.NodeId) *owner { return s.routing.ownerOf(n.Namespace()) }

// routesRead reports whether m reads a node of a mounted node manager, so that it must
// go through the request queue. Without managers it costs one length check.
func (s *Server) routesRead(m *ua.ReadRequest) bool {
	return s.routing.routes(len(m.NodesToRead), func(i int) uint16 { return m.NodesToRead[i].NodeId.Namespace() })
}

// readRouted answers a Read some of whose items belong to mounted node managers
// (Part 4 §5.10.2). The checks run inline; then a job of the request queue hands each
// owner one ReadOp and returns, so a manager that waits on a device holds no worker.
// The response is sent when the last owner calls done, or BadTimeout when the request's
// TimeoutHint passes first; a late result is dropped.
func (s *Server) readRouted(ctx context.Context, req uasc.Request, m *ua.ReadRequest) {
	h := m.RequestHeader
	var principal nodemgr.Principal
	code := s.checkRead(req.Channel, nil, m, s.now(), &principal)
	if code != status.Good {
		s.respond(req, s.fault(h, code))
		return
	}
	s.enqueue(ctx, req, h, func(p *pending) {
		op := &nodemgr.ReadOp{
			Principal:  principal,
			MaxAge:     m.MaxAge,
			Timestamps: m.TimestampsToReturn,
			Items:      m.NodesToRead,
			Results:    make([]codec.DataValue, len(m.NodesToRead)),
		}
		s.readAll(p.ctx, op, func() {
			p.answer(&ua.ReadResponse{ResponseHeader: s.header(h, status.Good), Results: op.Results})
		})
	})
}

// writeRouted is Write (Part 4 §5.10.4) through the request queue, as readRouted.
func (s *Server) writeRouted(ctx context.Context, req uasc.Request, h ua.RequestHeader, principal nodemgr.Principal, m *ua.WriteRequest) {
	s.enqueue(ctx, req, h, func(p *pending) {
		gather(m.NodesToWrite, func(v *ua.WriteValue) *owner { return s.nodeOwner(v.NodeId) },
			func(o *owner, items []ua.WriteValue, results []status.Code, done func()) {
				o.write(p.ctx, &nodemgr.WriteOp{Principal: principal, Items: items, Results: results}, done)
			},
			func(results []status.Code) {
				p.answer(&ua.WriteResponse{ResponseHeader: s.header(h, status.Good), Results: results})
			})
	})
}

// callRouted is Call (Part 4 §5.11.2) through the request queue, as readRouted. An item
// goes to the owner of its ObjectId: the object's manager knows which Methods it has,
// including those of types in other namespaces.
func (s *Server) callRouted(ctx context.Context, req uasc.Request, h ua.RequestHeader, principal nodemgr.Principal, m *ua.CallRequest) {
	s.enqueue(ctx, req, h, func(p *pending) {
		gather(m.MethodsToCall, func(c *ua.CallMethodRequest) *owner { return s.nodeOwner(c.ObjectId) },
			func(o *owner, items []ua.CallMethodRequest, results []ua.CallMethodResult, done func()) {
				o.call(p.ctx, &nodemgr.CallOp{Principal: principal, Items: items, Results: results}, done)
			},
			func(results []ua.CallMethodResult) {
				p.answer(&ua.CallResponse{ResponseHeader: s.header(h, status.Good), Results: results})
			})
	})
}

// routesBrowse reports whether m browses a node of a mounted manager or a Space node
// with references into one. Without managers it costs one length check.
func (s *Server) routesBrowse(m *ua.BrowseRequest) bool {
	return s.routing.routes(len(m.NodesToBrowse), func(i int) uint16 { return m.NodesToBrowse[i].NodeId.Namespace() }) ||
		(len(s.routing.mounts) > 0 && s.browsesMount(m))
}

// browsesMount reports whether m browses a Space node that a Mounter hung a reference on.
func (s *Server) browsesMount(m *ua.BrowseRequest) bool {
	for i := range m.NodesToBrowse {
		if s.routing.mounts[m.NodesToBrowse[i].NodeId] {
			return true
		}
	}
	return false
}

// browseRouted is Browse (Part 4 §5.9.2) through the request queue. Each owner gets its
// items with NodeClassMask 0 and the NodeClass asked for; targets in another owner's
// namespace are then described by that owner (describeTargets), and the client's
// NodeClassMask and ResultMask are applied before the continuation points are taken.
func (s *Server) browseRouted(ctx context.Context, req uasc.Request, h ua.RequestHeader, principal nodemgr.Principal, m *ua.BrowseRequest) {
	perNode := int(m.RequestedMaxReferencesPerNode)
	s.enqueue(ctx, req, h, func(p *pending) {
		s.browseAll(p.ctx, principal, m.View, m.NodesToBrowse, func(results []nodemgr.BrowseResult) {
			if p.done() {
				return // timed out: take no continuation point nobody will release
			}
			p.answer(s.browseResponse(h, req.Channel.ID(), results, perNode))
		})
	})
}

// browseAll browses descs through their owners and calls finish with the references
// described and filtered as the client asked.
func (s *Server) browseAll(ctx context.Context, principal nodemgr.Principal, view ua.ViewDescription, descs []ua.BrowseDescription, finish func([]nodemgr.BrowseResult)) {
	asked := make([]ua.BrowseDescription, len(descs))
	for i := range descs {
		asked[i] = descs[i]
		asked[i].NodeClassMask = 0
		asked[i].ResultMask |= uint32(ua.BrowseResultMaskNodeClass)
	}
	gather(asked, func(d *ua.BrowseDescription) *owner { return s.nodeOwner(d.NodeId) },
		func(o *owner, items []ua.BrowseDescription, results []nodemgr.BrowseResult, done func()) {
			o.browse(ctx, &nodemgr.BrowseOp{Principal: principal, View: view, Items: items, Results: results}, done)
		},
		func(results []nodemgr.BrowseResult) {
			s.describeTargets(ctx, principal, descs, results, func() {
				for i := range results {
					filterReferences(&descs[i], &results[i])
				}
				finish(results)
			})
		})
}

// targetMask is the part of a ResultMask that describes a reference's target.
const targetMask = uint32(ua.BrowseResultMaskNodeClass | ua.BrowseResultMaskBrowseName |
	ua.BrowseResultMaskDisplayName | ua.BrowseResultMaskTypeDefinition)

// foreign reports whether the target of rd, found browsing a node of from, belongs to
// another owner in this server.
func (s *Server) foreign(from *owner, rd *ua.ReferenceDescription) bool {
	return rd.NodeId.ServerIndex == 0 && rd.NodeId.NamespaceURI == "" && s.nodeOwner(rd.NodeId.NodeId) != from
}

// targetInfo is what the owner of a node says about it for a ReferenceDescription.
type targetInfo struct {
	class       ua.NodeClass
	browseName  codec.QualifiedName
	displayName codec.LocalizedText
	typeDef     codec.NodeId
}

// describeTargets fills the target fields of the references in results whose targets
// belong to another owner than the browsed node, by asking that owner (a Read of
// NodeClass, BrowseName and DisplayName, and a Browse for HasTypeDefinition when asked),
// then calls finish. Fields the client did not ask for are cleared on such references.
// finish runs at once when there is nothing to ask.
func (s *Server) describeTargets(ctx context.Context, principal nodemgr.Principal, descs []ua.BrowseDescription, results []nodemgr.BrowseResult, finish func()) {
	var targets []codec.NodeId
	var seen map[codec.NodeId]bool
	wantType := false
	for i := range results {
		want := descs[i].ResultMask&targetMask != 0 || descs[i].NodeClassMask != 0
		from := s.nodeOwner(descs[i].NodeId)
		for j := range results[i].References {
			rd := &results[i].References[j]
			if !s.foreign(from, rd) {
				continue
			}
			rd.NodeClass, rd.BrowseName, rd.DisplayName, rd.TypeDefinition = 0, codec.QualifiedName{}, codec.LocalizedText{}, codec.ExpandedNodeId{}
			if !want || seen[rd.NodeId.NodeId] {
				continue
			}
			if seen == nil {
				seen = make(map[codec.NodeId]bool)
			}
			seen[rd.NodeId.NodeId] = true
			targets = append(targets, rd.NodeId.NodeId)
			wantType = wantType || descs[i].ResultMask&uint32(ua.BrowseResultMaskTypeDefinition) != 0
		}
	}
	if len(targets) == 0 {
		finish()
		return
	}
	gather(targets, func(n *codec.NodeId) *owner { return s.nodeOwner(*n) },
		func(o *owner, ids []codec.NodeId, infos []targetInfo, done func()) {
			describe(ctx, o, principal, ids, infos, wantType, done)
		},
		func(infos []targetInfo) {
			byID := make(map[codec.NodeId]*targetInfo, len(targets))
			for k := range targets {
				byID[targets[k]] = &infos[k]
			}
			for i := range results {
				from := s.nodeOwner(descs[i].NodeId)
				mask := ua.BrowseResultMask(descs[i].ResultMask) | ua.BrowseResultMaskNodeClass
				for j := range results[i].References {
					rd := &results[i].References[j]
					info := byID[rd.NodeId.NodeId]
					if info == nil || !s.foreign(from, rd) {
						continue
					}
					if mask&ua.BrowseResultMaskNodeClass != 0 {
						rd.NodeClass = info.class
					}
					if mask&ua.BrowseResultMaskBrowseName != 0 {
						rd.BrowseName = info.browseName
					}
					if mask&ua.BrowseResultMaskDisplayName != 0 {
						rd.DisplayName = info.displayName
					}
					if mask&ua.BrowseResultMaskTypeDefinition != 0 && !info.typeDef.IsNull() &&
						(info.class == ua.NodeClassObject || info.class == ua.NodeClassVariable) {
						rd.TypeDefinition = codec.ExpandedNodeId{NodeId: info.typeDef}
					}
				}
			}
			finish()
		})
}

// describe asks o for what a ReferenceDescription says about each of ids: one ReadOp of
// NodeClass, BrowseName and DisplayName, and with wantType one BrowseOp for the
// HasTypeDefinition of each. done is called when both have completed. An attribute
// that cannot be read stays zero; a target of unknown NodeClass fails any NodeClassMask.
func describe(ctx context.Context, o *owner, principal nodemgr.Principal, ids []codec.NodeId, infos []targetInfo, wantType bool, done func()) {
	const perNode = 3
	read := &nodemgr.ReadOp{
		Principal:  principal,
		Timestamps: ua.TimestampsToReturnNeither,
		Items:      make([]ua.ReadValueId, 0, perNode*len(ids)),
		Results:    make([]codec.DataValue, perNode*len(ids)),
	}
	for _, n := range ids {
		read.Items = append(read.Items,
			ua.ReadValueId{NodeId: n, AttributeId: uint32(attr.NodeClass)},
			ua.ReadValueId{NodeId: n, AttributeId: uint32(attr.BrowseName)},
			ua.ReadValueId{NodeId: n, AttributeId: uint32(attr.DisplayName)})
	}
	var browse *nodemgr.BrowseOp
	left := atomic.Int32{}
	left.Store(1)
	if wantType {
		left.Store(2)
		browse = &nodemgr.BrowseOp{Principal: principal, Items: make([]ua.BrowseDescription, len(ids)), Results: make([]nodemgr.BrowseResult, len(ids))}
		for k, n := range ids {
			browse.Items[k] = ua.BrowseDescription{
				NodeId:          n,
				BrowseDirection: ua.BrowseDirectionForward,
				ReferenceTypeId: codec.NewNumericNodeId(0, id.HasTypeDefinition),
				ResultMask:      uint32(ua.BrowseResultMaskNodeClass),
			}
		}
	}
	var readOnce, browseOnce atomic.Bool
	complete := func() {
		if left.Add(-1) == 0 {
			done()
		}
	}
	o.read(ctx, read, func() {
		if !readOnce.CompareAndSwap(false, true) {
			return
		}
		for k := range ids {
			r := read.Results[perNode*k : perNode*k+perNode]
			if r[0].Status == status.Good && r[0].Value.Type() == codec.TypeInt32 {
				infos[k].class = ua.NodeClass(int32(r[0].Value.Bits()))
			}
			if q, ok := r[1].Value.Value().(codec.QualifiedName); ok && r[1].Status == status.Good {
				infos[k].browseName = q
			}
			if t, ok := r[2].Value.Value().(codec.LocalizedText); ok && r[2].Status == status.Good {
				infos[k].displayName = t
			}
		}
		complete()
	})
	if browse == nil {
		return
	}
	o.browse(ctx, browse, func() {
		if !browseOnce.CompareAndSwap(false, true) {
			return
		}
		for k, r := range browse.Results {
			for _, rd := range r.References {
				if r.Status == status.Good && rd.NodeId.ServerIndex == 0 {
					infos[k].typeDef = rd.NodeId.NodeId
					break
				}
			}
		}
		complete()
	})
}

// filterReferences applies d's NodeClassMask to the targets of res (a target of unknown
// NodeClass fails a non-zero mask, as in the Space) and clears the NodeClass that
// browseAll asked for when d did not.
func filterReferences(d *ua.BrowseDescription, res *nodemgr.BrowseResult) {
	keepClass := d.ResultMask&uint32(ua.BrowseResultMaskNodeClass) != 0
	if d.NodeClassMask == 0 && keepClass {
		return
	}
	refs := res.References[:0]
	for _, rd := range res.References {
		if d.NodeClassMask != 0 && uint32(rd.NodeClass)&d.NodeClassMask == 0 {
			continue
		}
		if !keepClass {
			rd.NodeClass = 0
		}
		refs = append(refs, rd)
	}
	res.References = refs
}

// translateRouted answers TranslateBrowsePathsToNodeIds (Part 4 §5.9.4) through the
// request queue. Each RelativePath step is a Browse of the current nodes by their owners
// (browseAll, with the step's ReferenceType, direction and subtypes), so a manager needs
// no Translate capability and a path may cross from namespace 0 into a manager. All
// paths advance one step per round. BadNodeIdUnknown (an unknown starting node),
// BadNoMatch, BadNothingToDo and BadBrowseNameInvalid are answered; a target in another
// server (ServerIndex, Part 4 §5.9.4 RemainingPathIndex) is not followed.
func (s *Server) translateRouted(ctx context.Context, req uasc.Request, h ua.RequestHeader, principal nodemgr.Principal, m *ua.TranslateBrowsePathsToNodeIdsRequest) {
	s.enqueue(ctx, req, h, func(p *pending) {
		t := &translation{
			s:         s,
			ctx:       p.ctx,
			principal: principal,
			paths:     m.BrowsePaths,
			results:   make([]ua.BrowsePathResult, len(m.BrowsePaths)),
			cur:       make([][]codec.NodeId, len(m.BrowsePaths)),
		}
		t.finish = func() {
			p.answer(&ua.TranslateBrowsePathsToNodeIdsResponse{ResponseHeader: s.header(h, status.Good), Results: t.results})
		}
		for i := range t.paths {
			if code := checkRelativePath(&t.paths[i].RelativePath); code != status.Good {
				t.results[i].StatusCode = code
				continue
			}
			t.cur[i] = []codec.NodeId{t.paths[i].StartingNode}
		}
		t.step(0)
	})
}

// checkRelativePath returns BadNothingToDo for an empty path and BadBrowseNameInvalid
// when an element other than the last has no TargetName.
func checkRelativePath(rp *ua.RelativePath) status.Code {
	els := rp.Elements
	if len(els) == 0 {
		return status.BadNothingToDo
	}
	for i := range els[:len(els)-1] {
		if els[i].TargetName.Name == "" {
			return status.BadBrowseNameInvalid
		}
	}
	return status.Good
}

// translation is a TranslateBrowsePathsToNodeIds in progress. Its rounds run one after
// another, each from the done of the previous one, so its fields need no lock.
type translation struct {
	s         *Server
	ctx       context.Context
	principal nodemgr.Principal
	paths     []ua.BrowsePath
	results   []ua.BrowsePathResult
	// cur holds the nodes each path has reached; nil once the path is answered.
	cur    [][]codec.NodeId
	finish func()
}

// step resolves element k of every open path and goes on with k+1, or finishes.
func (t *translation) step(k int) {
	if t.ctx.Err() != nil {
		return // timed out or the channel is gone: nobody waits for the answer
	}
	var descs []ua.BrowseDescription
	var pathOf []int // the path of each of descs
	for i := range t.paths {
		if t.cur[i] == nil {
			continue
		}
		e := &t.paths[i].RelativePath.Elements[k]
		d := ua.BrowseDescription{
			BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeId: e.ReferenceTypeId,
			IncludeSubtypes: e.IncludeSubtypes,
		}
		if e.IsInverse {
			d.BrowseDirection = ua.BrowseDirectionInverse
		}
		if e.TargetName.Name != "" {
			d.ResultMask = uint32(ua.BrowseResultMaskBrowseName)
		}
		for _, n := range t.cur[i] {
			d.NodeId = n
			descs = append(descs, d)
			pathOf = append(pathOf, i)
		}
	}
	if len(descs) == 0 {
		t.finish()
		return
	}
	t.s.browseAll(t.ctx, t.principal, ua.ViewDescription{}, descs, func(found []nodemgr.BrowseResult) {
		next := make([][]codec.NodeId, len(t.paths))
		for j, r := range found {
			i := pathOf[j]
			if r.Status != status.Good {
				if k == 0 {
					t.results[i].StatusCode = r.Status
				}
				continue
			}
			name := t.paths[i].RelativePath.Elements[k].TargetName
			for _, rd := range r.References {
				if rd.NodeId.ServerIndex != 0 || rd.NodeId.NamespaceURI != "" {
					continue
				}
				if name.Name != "" && rd.BrowseName != name {
					continue
				}
				next[i] = appendNew(next[i], rd.NodeId.NodeId)
			}
		}
		for i := range t.paths {
			if t.cur[i] == nil {
				continue
			}
			switch {
			case len(next[i]) == 0:
				if t.results[i].StatusCode == status.Good {
					t.results[i].StatusCode = status.BadNoMatch
				}
				t.cur[i] = nil
			case k+1 == len(t.paths[i].RelativePath.Elements):
				t.results[i] = ua.BrowsePathResult{Targets: make([]ua.BrowsePathTarget, len(next[i]))}
				for n, id := range next[i] {
					t.results[i].Targets[n] = ua.BrowsePathTarget{TargetId: codec.ExpandedNodeId{NodeId: id}, RemainingPathIndex: math.MaxUint32}
				}
				t.cur[i] = nil
			default:
				t.cur[i] = next[i]
			}
		}
		t.step(k + 1)
	})
}

// appendNew appends n to ids unless ids holds it.
func appendNew(ids []codec.NodeId, n codec.NodeId) []codec.NodeId {
	for _, x := range ids {
		if x == n {
			return ids
		}
	}
	return append(ids, n)
}

// readAll reads op's items from their owners, as one ReadOp per owner, and calls done
// once all have answered.
// op.Results must have a slot per item.
func (s *Server) readAll(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	if len(s.routing.owners) == 0 {
		s.space.Read(ctx, op, done)
		return
	}
	gather(op.Items, func(v *ua.ReadValueId) *owner { return s.nodeOwner(v.NodeId) },
		func(o *owner, items []ua.ReadValueId, results []codec.DataValue, done func()) {
			o.read(ctx, &nodemgr.ReadOp{Principal: op.Principal, MaxAge: op.MaxAge, Timestamps: op.Timestamps, Items: items, Results: results}, done)
		},
		func(results []codec.DataValue) {
			copy(op.Results, results)
			done()
		})
}

// configuredManagers refuses node managers named in addressSpace.nodeManagers that this
// build cannot load, rather than start without them: the WASM and plugin hosts are not
// built yet, and no built-in manager exists besides namespace 0 and the demo namespace
// (addressSpace.demoNamespace). Managers written in Go are mounted with Options.Managers.
func configuredManagers(cfg *config.Config) error {
	if len(cfg.AddressSpace.NodeManagers) == 0 {
		return nil
	}
	nm := cfg.AddressSpace.NodeManagers[0]
	return fmt.Errorf("addressSpace.nodeManagers[0] (%q, type %s): this build cannot load %s node managers yet; remove the entry (the demo namespace is addressSpace.demoNamespace)",
		nm.Name, nm.Type, nm.Type)
}
