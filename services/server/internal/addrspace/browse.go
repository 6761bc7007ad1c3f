package addrspace

import (
	"context"
	"math"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// hasTypeDefinition is the HasTypeDefinition ReferenceType.
var hasTypeDefinition = codec.NewNumericNodeId(0, 40)

// Browse answers op (Part 4 §5.9.2) with every matching reference of each node and calls
// done before returning. Results[i].References is appended to from length 0, so a
// caller may pass slices to reuse. A View other than the null view is BadViewIdUnknown
// unless it names a View node, which is not yet used to filter.
func (s *Space) Browse(_ context.Context, op *nodemgr.BrowseOp, done func()) {
	s.browseAll(op)
	done()
}

// browseAll answers op under the read lock.
func (s *Space) browseAll(op *nodemgr.BrowseOp) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	viewBad := false
	if !op.View.ViewId.IsNull() {
		v, ok := s.lookupLocked(op.View.ViewId)
		viewBad = !ok || v.class() != ua.NodeClassView
	}
	for i := range op.Items {
		r := &op.Results[i]
		r.References = r.References[:0]
		if viewBad {
			r.Status = status.BadViewIdUnknown
			continue
		}
		r.Status = s.browseLocked(&op.Items[i], r)
	}
}

func (s *Space) browseLocked(d *ua.BrowseDescription, res *nodemgr.BrowseResult) status.Code {
	if d.BrowseDirection < ua.BrowseDirectionForward || d.BrowseDirection > ua.BrowseDirectionBoth {
		return status.BadBrowseDirectionInvalid
	}
	if !d.ReferenceTypeId.IsNull() {
		rt, ok := s.lookupLocked(d.ReferenceTypeId)
		if !ok || rt.class() != ua.NodeClassReferenceType {
			return status.BadReferenceTypeIdInvalid
		}
	}
	v, ok := s.lookupLocked(d.NodeId)
	if !ok {
		return status.BadNodeIdUnknown
	}
	mask := ua.BrowseResultMask(d.ResultMask)
	var memo subtypeMemo
	s.eachRefDirLocked(d.NodeId, v, d.BrowseDirection, func(r Reference) bool {
		if !directionMatches(r, d.BrowseDirection) || !memo.matchLocked(s, r.ReferenceTypeId, d.ReferenceTypeId, d.IncludeSubtypes) {
			return true
		}
		tv, known := s.lookupLocked(r.TargetId)
		if d.NodeClassMask != 0 && (!known || uint32(tv.class())&d.NodeClassMask == 0) {
			return true
		}
		rd := ua.ReferenceDescription{NodeId: codec.ExpandedNodeId{NodeId: r.TargetId}}
		if mask&ua.BrowseResultMaskReferenceTypeId != 0 {
			rd.ReferenceTypeId = r.ReferenceTypeId
		}
		if mask&ua.BrowseResultMaskIsForward != 0 {
			rd.IsForward = r.IsForward
		}
		if known {
			s.describeTargetLocked(&rd, r.TargetId, tv, mask)
		}
		res.References = append(res.References, rd)
		return true
	})
	return status.Good
}

// describeTargetLocked fills the target fields of rd that mask asks for.
func (s *Space) describeTargetLocked(rd *ua.ReferenceDescription, id codec.NodeId, tv view, mask ua.BrowseResultMask) {
	c := tv.class()
	if mask&ua.BrowseResultMaskNodeClass != 0 {
		rd.NodeClass = c
	}
	if mask&ua.BrowseResultMaskBrowseName != 0 {
		rd.BrowseName = tv.browseName()
	}
	if mask&ua.BrowseResultMaskDisplayName != 0 {
		rd.DisplayName = tv.displayName()
	}
	if mask&ua.BrowseResultMaskTypeDefinition != 0 && (c == ua.NodeClassObject || c == ua.NodeClassVariable) {
		s.eachRefDirLocked(id, tv, ua.BrowseDirectionForward, func(r Reference) bool {
			if r.IsForward && r.ReferenceTypeId == hasTypeDefinition {
				rd.TypeDefinition = codec.ExpandedNodeId{NodeId: r.TargetId}
				return false
			}
			return true
		})
	}
}

// subtypeMemo remembers the last few ReferenceTypes checked against one filter, so that a
// node's many HasComponent or HasProperty references walk the type tree once. It lives
// on the stack of one Browse item.
type subtypeMemo struct {
	ids [8]codec.NodeId
	ok  [8]bool
	n   int
}

// matchLocked reports whether typ passes the filter (null: every type).
func (m *subtypeMemo) matchLocked(s *Space, typ, filter codec.NodeId, subtypes bool) bool {
	if filter.IsNull() || typ == filter {
		return true
	}
	if !subtypes {
		return false
	}
	for i := range m.n {
		if m.ids[i] == typ {
			return m.ok[i]
		}
	}
	ok := s.isSubtypeLocked(typ, filter)
	i := m.n % len(m.ids)
	m.ids[i], m.ok[i] = typ, ok
	m.n = min(m.n+1, len(m.ids))
	return ok
}

func directionMatches(r Reference, dir ua.BrowseDirection) bool {
	switch dir {
	case ua.BrowseDirectionForward:
		return r.IsForward
	case ua.BrowseDirectionInverse:
		return !r.IsForward
	}
	return true
}

// refMatchesLocked applies the direction and ReferenceType filters of Browse and of a
// RelativePathElement.
func (s *Space) refMatchesLocked(r Reference, dir ua.BrowseDirection, typ codec.NodeId, subtypes bool) bool {
	if !directionMatches(r, dir) {
		return false
	}
	if typ.IsNull() || r.ReferenceTypeId == typ {
		return true
	}
	return subtypes && s.isSubtypeLocked(r.ReferenceTypeId, typ)
}

// TranslateBrowsePaths answers TranslateBrowsePathsToNodeIds (Part 4 §5.9.4) for paths
// that stay inside this Space: results[i] answers paths[i]. Every element but the last
// needs a TargetName; an empty last one matches every target.
func (s *Space) TranslateBrowsePaths(_ context.Context, paths []ua.BrowsePath, results []ua.BrowsePathResult) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range paths {
		results[i] = s.translateLocked(&paths[i])
	}
}

func (s *Space) translateLocked(p *ua.BrowsePath) ua.BrowsePathResult {
	els := p.RelativePath.Elements
	if len(els) == 0 {
		return ua.BrowsePathResult{StatusCode: status.BadNothingToDo}
	}
	for i := range els {
		if i < len(els)-1 && els[i].TargetName.Name == "" {
			return ua.BrowsePathResult{StatusCode: status.BadBrowseNameInvalid}
		}
	}
	if _, ok := s.lookupLocked(p.StartingNode); !ok {
		return ua.BrowsePathResult{StatusCode: status.BadNodeIdUnknown}
	}
	cur := []codec.NodeId{p.StartingNode}
	for i := range els {
		e := &els[i]
		dir := ua.BrowseDirectionForward
		if e.IsInverse {
			dir = ua.BrowseDirectionInverse
		}
		var next []codec.NodeId
		for _, id := range cur {
			v, ok := s.lookupLocked(id)
			if !ok {
				continue
			}
			s.eachRefDirLocked(id, v, dir, func(r Reference) bool {
				if !s.refMatchesLocked(r, dir, e.ReferenceTypeId, e.IncludeSubtypes) {
					return true
				}
				if e.TargetName.Name != "" {
					tv, ok := s.lookupLocked(r.TargetId)
					if !ok || tv.browseName() != e.TargetName {
						return true
					}
				}
				for _, n := range next {
					if n == r.TargetId {
						return true
					}
				}
				next = append(next, r.TargetId)
				return true
			})
		}
		if len(next) == 0 {
			return ua.BrowsePathResult{StatusCode: status.BadNoMatch}
		}
		cur = next
	}
	res := ua.BrowsePathResult{Targets: make([]ua.BrowsePathTarget, len(cur))}
	for i, id := range cur {
		res.Targets[i] = ua.BrowsePathTarget{TargetId: codec.ExpandedNodeId{NodeId: id}, RemainingPathIndex: math.MaxUint32}
	}
	return res
}
