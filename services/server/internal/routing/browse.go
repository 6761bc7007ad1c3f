package routing

import (
	"context"
	"sync/atomic"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// Browse browses descs through their owners (Part 4 §5.9.2) and calls finish with the
// references described and filtered as the client asked. Each owner gets its items with
// NodeClassMask 0 and the NodeClass asked for; targets in another owner's namespace are
// then described by that owner (describeTargets), and the client's NodeClassMask and
// ResultMask are applied. The caller takes the continuation points.
func (r *Routes) Browse(ctx context.Context, principal nodemgr.Principal, view ua.ViewDescription, descs []ua.BrowseDescription, finish func([]nodemgr.BrowseResult)) {
	asked := make([]ua.BrowseDescription, len(descs))
	for i := range descs {
		asked[i] = descs[i]
		asked[i].NodeClassMask = 0
		asked[i].ResultMask |= uint32(ua.BrowseResultMaskNodeClass)
	}
	gather(asked, func(d *ua.BrowseDescription) *owner { return r.nodeOwner(d.NodeId) },
		func(o *owner, items []ua.BrowseDescription, results []nodemgr.BrowseResult, done func()) {
			o.browse(ctx, &nodemgr.BrowseOp{Principal: principal, View: view, Items: items, Results: results}, done)
		},
		func(results []nodemgr.BrowseResult) {
			r.describeTargets(ctx, principal, descs, results, func() {
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
func (r *Routes) foreign(from *owner, rd *ua.ReferenceDescription) bool {
	return rd.NodeId.ServerIndex == 0 && rd.NodeId.NamespaceURI == "" && r.nodeOwner(rd.NodeId.NodeId) != from
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
func (r *Routes) describeTargets(ctx context.Context, principal nodemgr.Principal, descs []ua.BrowseDescription, results []nodemgr.BrowseResult, finish func()) {
	var targets []codec.NodeId
	var seen map[codec.NodeId]bool
	wantType := false
	for i := range results {
		want := descs[i].ResultMask&targetMask != 0 || descs[i].NodeClassMask != 0
		from := r.nodeOwner(descs[i].NodeId)
		for j := range results[i].References {
			rd := &results[i].References[j]
			if !r.foreign(from, rd) {
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
	gather(targets, func(n *codec.NodeId) *owner { return r.nodeOwner(*n) },
		func(o *owner, ids []codec.NodeId, infos []targetInfo, done func()) {
			describe(ctx, o, principal, ids, infos, wantType, done)
		},
		func(infos []targetInfo) {
			byID := make(map[codec.NodeId]*targetInfo, len(targets))
			for k := range targets {
				byID[targets[k]] = &infos[k]
			}
			for i := range results {
				from := r.nodeOwner(descs[i].NodeId)
				mask := ua.BrowseResultMask(descs[i].ResultMask) | ua.BrowseResultMaskNodeClass
				for j := range results[i].References {
					rd := &results[i].References[j]
					info := byID[rd.NodeId.NodeId]
					if info == nil || !r.foreign(from, rd) {
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
