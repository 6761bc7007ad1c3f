package space

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Browse answers op (Part 4 §5.9.2) with every matching reference of each node and
// calls done before returning. A ReferenceTypeId filter with IncludeSubtypes follows
// namespace 0's type tree (HierarchicalReferences takes HasComponent, Organizes and the
// rest). Targets in the Space are described as the ResultMask asks; targets elsewhere
// (ObjectsFolder, the namespace 0 types) only by NodeId, which the server completes
// (package nodemgr). The NodeClassMask drops only targets in the Space; the server
// applies it to the others. The Space has no Views: a View is BadViewIdUnknown.
// Results[i].References is appended to from length 0, so a caller may pass slices to
// reuse.
func (s *Space) Browse(_ context.Context, op *nodemgr.BrowseOp, done func()) {
	defer done()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range op.Items {
		r := &op.Results[i]
		r.References = r.References[:0]
		if !op.View.ViewId.IsNull() {
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
	if !d.ReferenceTypeId.IsNull() && !isReferenceType(d.ReferenceTypeId) {
		return status.BadReferenceTypeIdInvalid
	}
	n := s.nodes[d.NodeId]
	if n == nil {
		return status.BadNodeIdUnknown
	}
	mask := ua.BrowseResultMask(d.ResultMask)
	for _, r := range n.refs {
		if !directionMatches(r.IsForward, d.BrowseDirection) || !typeFilter(r.ReferenceTypeId, d.ReferenceTypeId, d.IncludeSubtypes) {
			continue
		}
		t := s.nodes[r.TargetId]
		if t != nil && d.NodeClassMask != 0 && uint32(t.class)&d.NodeClassMask == 0 {
			continue
		}
		rd := ua.ReferenceDescription{NodeId: codec.ExpandedNodeId{NodeId: r.TargetId}}
		if mask&ua.BrowseResultMaskReferenceTypeId != 0 {
			rd.ReferenceTypeId = r.ReferenceTypeId
		}
		if mask&ua.BrowseResultMaskIsForward != 0 {
			rd.IsForward = r.IsForward
		}
		if t != nil {
			t.describe(&rd, mask)
		}
		res.References = append(res.References, rd)
	}
	return status.Good
}

// describe fills the target fields of rd that mask asks for; s.mu must be held.
func (n *node) describe(rd *ua.ReferenceDescription, mask ua.BrowseResultMask) {
	if mask&ua.BrowseResultMaskNodeClass != 0 {
		rd.NodeClass = n.class
	}
	if mask&ua.BrowseResultMaskBrowseName != 0 {
		rd.BrowseName = n.browseName
	}
	if mask&ua.BrowseResultMaskDisplayName != 0 {
		rd.DisplayName = n.displayName
	}
	if mask&ua.BrowseResultMaskTypeDefinition != 0 {
		for _, r := range n.refs {
			if r.IsForward && r.ReferenceTypeId == hasTypeDefinition {
				rd.TypeDefinition = codec.ExpandedNodeId{NodeId: r.TargetId}
				break
			}
		}
	}
}

// typeFilter reports whether a reference of type typ passes a Browse filter (null:
// every type).
func typeFilter(typ, filter codec.NodeId, subtypes bool) bool {
	if filter.IsNull() || typ == filter {
		return true
	}
	return subtypes && isSubtype(typ, filter)
}

func directionMatches(forward bool, dir ua.BrowseDirection) bool {
	switch dir {
	case ua.BrowseDirectionForward:
		return forward
	case ua.BrowseDirectionInverse:
		return !forward
	}
	return true
}
