package routing

import (
	"context"
	"math"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Translate resolves TranslateBrowsePathsToNodeIds (Part 4 §5.9.4) through the owners and
// calls finish with a result per path. Each RelativePath step is a Browse of the current
// nodes by their owners (with the step's ReferenceType, direction and subtypes), so a
// manager needs no Translate capability and a path may cross from namespace 0 into a
// manager. All paths advance one step per round. BadNodeIdUnknown (an unknown starting
// node), BadNoMatch, BadNothingToDo and BadBrowseNameInvalid are answered; a target in
// another server (ServerIndex, Part 4 §5.9.4 RemainingPathIndex) is not followed. When
// ctx ends before the last round, finish is not called: nobody waits for the answer.
func (r *Routes) Translate(ctx context.Context, principal nodemgr.Principal, paths []ua.BrowsePath, finish func([]ua.BrowsePathResult)) {
	t := &translation{
		r:         r,
		ctx:       ctx,
		principal: principal,
		paths:     paths,
		results:   make([]ua.BrowsePathResult, len(paths)),
		cur:       make([][]codec.NodeId, len(paths)),
	}
	t.finish = func() { finish(t.results) }
	for i := range t.paths {
		if code := checkRelativePath(&t.paths[i].RelativePath); code != status.Good {
			t.results[i].StatusCode = code
			continue
		}
		t.cur[i] = []codec.NodeId{t.paths[i].StartingNode}
	}
	t.step(0)
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
	r         *Routes
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
	t.r.Browse(t.ctx, t.principal, ua.ViewDescription{}, descs, func(found []nodemgr.BrowseResult) {
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
