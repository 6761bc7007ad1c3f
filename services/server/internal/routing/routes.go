// Package routing sends the items of a request to the node managers that own them: each
// namespace has one owner (the server's own address space serves namespace 0 and the
// demo namespace; mounted managers serve theirs), the items of a request are gathered by
// owner and their results scattered back in request order. It mounts the managers
// (their namespaces in the NamespaceArray, the references from the address space to
// their roots), keeps the registry of the kinds of node managers the configuration can
// name, and is the one place that decides whether a request is answered on the channel's
// goroutine or through the request queue (Local).
package routing

import (
	"context"
	"fmt"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/telemetry"
)

// Routes maps the namespaces of a server to their owners. It is built once, before the
// server serves, and only read after; its methods are safe for concurrent use.
type Routes struct {
	namespaces []string
	// local owns the namespaces of the server's address space, and any index beyond the
	// NamespaceArray (whose nodes it answers as unknown).
	local *owner
	// owners holds the owner of each namespace by index. It is empty when no manager is
	// mounted, which keeps Local to one length check.
	owners []*owner
	// mounts are the address space's nodes with references added by a Mounter: browsing
	// them needs the managers to describe the targets.
	mounts map[codec.NodeId]bool
	// mounted are the managers in mount order, for Start and Close.
	mounted   []*mounted
	closeOnce sync.Once
	// watches are the monitored items on the pairs Watchers watch (watch.go); watching
	// says a started Watcher exists, set by Start.
	watches  watches
	watching bool
	// panics is told of the panics the routes recover from (SetPanics).
	panics *telemetry.Panics
}

// New mounts managers after the server's address space: the NamespaceArray is the
// space's namespaces, then each manager's in order, and a nodemgr.Mounter's references
// are added to space. A URI served twice is an error, and so is a Mount whose source is
// not a node of space or whose target is not in the manager's namespaces.
func New(space *addrspace.Space, managers []Named) (*Routes, error) {
	uris := append([]string(nil), space.Namespaces()...)
	rt := &Routes{local: newOwner("address space", space, true)}
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
	for _, nm := range managers {
		m := nm.Manager
		o := newOwner(nm.Name, m, false)
		var indexes []uint16
		for _, u := range m.Namespaces() {
			if seen[u] {
				if nm.Setting != "" {
					return nil, fmt.Errorf("%s: namespace %q is served twice (by the server or an entry before it)", nm.Setting, u)
				}
				return nil, fmt.Errorf("node manager %s: namespace %q is served twice", o.name, u)
			}
			seen[u] = true
			if len(uris) > 0xffff {
				return nil, fmt.Errorf("node manager %s: more namespaces than a NamespaceIndex can address", o.name)
			}
			rt.owners = append(rt.owners, make([]*owner, len(uris)+1-len(rt.owners))...)
			rt.owners[len(uris)] = o
			indexes = append(indexes, uint16(len(uris)))
			uris = append(uris, u)
		}
		rt.mounted = append(rt.mounted, &mounted{m: m, owner: o, indexes: indexes})
		if mm, ok := m.(nodemgr.Mounter); ok {
			mounters = append(mounters, mounter{mm, o, indexes})
		}
	}
	for i, o := range rt.owners {
		if o == nil {
			rt.owners[i] = rt.local
		}
	}
	for _, mm := range mounters {
		for _, mt := range mm.m.Mount(mm.indexes) {
			if rt.ownerOf(mt.SourceId.Namespace()) != rt.local || rt.ownerOf(mt.TargetId.Namespace()) != mm.owner {
				return nil, fmt.Errorf("node manager %s: mount %v -> %v does not lead from the address space to the manager", mm.owner.name, mt.SourceId, mt.TargetId)
			}
			err := space.AddReference(mt.SourceId, addrspace.Reference{ReferenceTypeId: mt.ReferenceTypeId, TargetId: mt.TargetId, IsForward: true})
			if err != nil {
				return nil, fmt.Errorf("node manager %s: %w", mm.owner.name, err)
			}
			if rt.mounts == nil {
				rt.mounts = make(map[codec.NodeId]bool)
			}
			rt.mounts[mt.SourceId] = true
		}
	}
	rt.namespaces = uris
	return rt, nil
}

// SetPanics has the routes report the panics of node managers to p: a method of a
// manager that panics answers its items with BadInternalError, and a manager's goroutine
// the routes run (its deliveries, its Watch calls) goes on. Call it before Start.
func (r *Routes) SetPanics(p *telemetry.Panics) {
	r.panics = p
	r.local.panics = p
	for _, mt := range r.mounted {
		mt.owner.panics = p
	}
}

// Namespaces returns the NamespaceArray. The caller must not modify it.
func (r *Routes) Namespaces() []string { return r.namespaces }

// ownerOf returns the owner of namespace ns.
func (r *Routes) ownerOf(ns uint16) *owner {
	if int(ns) < len(r.owners) {
		return r.owners[ns]
	}
	return r.local
}

// nodeOwner returns the owner of a node.
func (r *Routes) nodeOwner(n codec.NodeId) *owner { return r.ownerOf(n.Namespace()) }

// Local reports whether every one of the n items, whose nodes are in the namespaces nsOf
// returns, belongs to the server's own address space: such a request is answered on the
// channel's goroutine, by the address space directly; any other goes through the request
// queue, since a mounted manager may wait. This is the one place that decides. Without
// managers it costs one length check.
func (r *Routes) Local(n int, nsOf func(i int) uint16) bool {
	if len(r.owners) == 0 {
		return true
	}
	for i := range n {
		if !r.ownerOf(nsOf(i)).local {
			return false
		}
	}
	return true
}

// LocalNode reports whether node belongs to the server's own address space: its values
// are pushed on write and its events come from the subscription engine.
func (r *Routes) LocalNode(node codec.NodeId) bool { return r.nodeOwner(node).local }

// Watched reports whether node belongs to a started nodemgr.Watcher: the values of its
// monitored items are pushed, not sampled.
func (r *Routes) Watched(node codec.NodeId) bool { return r.nodeOwner(node).watch != nil }

// Mounted reports whether a node manager is mounted: a path of TranslateBrowsePaths may
// then cross into one, which only resolving it can tell.
func (r *Routes) Mounted() bool { return len(r.owners) != 0 }

// LocalBrowse reports whether m browses only nodes of the address space that no Mounter
// hung a reference on, so that the address space answers it alone.
func (r *Routes) LocalBrowse(m *ua.BrowseRequest) bool {
	if !r.Local(len(m.NodesToBrowse), func(i int) uint16 { return m.NodesToBrowse[i].NodeId.Namespace() }) {
		return false
	}
	if len(r.mounts) > 0 {
		for i := range m.NodesToBrowse {
			if r.mounts[m.NodesToBrowse[i].NodeId] {
				return false
			}
		}
	}
	return true
}

// Read reads op's items from their owners, as one ReadOp per owner, and calls done once
// all have answered. op.Results must have a slot per item.
func (r *Routes) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	gather(op.Items, func(v *ua.ReadValueId) *owner { return r.nodeOwner(v.NodeId) },
		func(o *owner, items []ua.ReadValueId, results []codec.DataValue, done func()) {
			o.read(ctx, &nodemgr.ReadOp{Principal: op.Principal, MaxAge: op.MaxAge, Timestamps: op.Timestamps, Now: op.Now, Items: items, Results: results}, done)
		},
		func(results []codec.DataValue) {
			copy(op.Results, results)
			done()
		})
}

// Write writes op's items through their owners (Part 4 §5.10.4) and calls done once all
// have answered.
func (r *Routes) Write(ctx context.Context, op *nodemgr.WriteOp, done func()) {
	gather(op.Items, func(v *ua.WriteValue) *owner { return r.nodeOwner(v.NodeId) },
		func(o *owner, items []ua.WriteValue, results []status.Code, done func()) {
			o.write(ctx, &nodemgr.WriteOp{Principal: op.Principal, Items: items, Results: results}, done)
		},
		func(results []status.Code) {
			copy(op.Results, results)
			done()
		})
}

// Call calls op's methods through their owners (Part 4 §5.11.2) and calls done once all
// have answered. An item goes to the owner of its ObjectId: the object's manager knows
// which Methods it has, including those of types in other namespaces.
func (r *Routes) Call(ctx context.Context, op *nodemgr.CallOp, done func()) {
	gather(op.Items, func(c *ua.CallMethodRequest) *owner { return r.nodeOwner(c.ObjectId) },
		func(o *owner, items []ua.CallMethodRequest, results []ua.CallMethodResult, done func()) {
			o.call(ctx, &nodemgr.CallOp{Principal: op.Principal, Items: items, Results: results}, done)
		},
		func(results []ua.CallMethodResult) {
			copy(op.Results, results)
			done()
		})
}
