package routing

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
)

// TestGather checks the fan-out: one call per owner with its items in request order,
// results back in request order, finish once although an owner calls done twice and the
// owners complete from other goroutines in any order.
func TestGather(t *testing.T) {
	t.Parallel()
	a, b, c := &owner{}, &owner{}, &owner{}
	owners := []*owner{a, b, a, c, a}
	items := []int{0, 1, 2, 3, 4}
	var mu sync.Mutex // guards asked
	asked := map[*owner][]int{}
	finished := make(chan []int, 2)
	gather(items, func(i *int) *owner { return owners[*i] },
		func(o *owner, part []int, res []int, done func()) {
			mu.Lock()
			asked[o] = append([]int(nil), part...)
			mu.Unlock()
			go func() {
				if o == a {
					time.Sleep(10 * time.Millisecond) // a answers last
				}
				for k, x := range part {
					res[k] = 10 * x
				}
				done()
				done() // a faulty second done is ignored
			}()
		},
		func(res []int) { finished <- res })
	select {
	case res := <-finished:
		require.Equal(t, []int{0, 10, 20, 30, 40}, res)
	case <-time.After(5 * time.Second):
		t.Fatal("gather did not finish")
	}
	select {
	case <-finished:
		t.Fatal("finish ran twice")
	case <-time.After(50 * time.Millisecond):
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[*owner][]int{a: {0, 2, 4}, b: {1}, c: {3}}, asked)

	done := false
	gather(nil, func(*int) *owner { return a }, func(*owner, []int, []int, func()) { t.Error("asked for no items") },
		func(res []int) { done = len(res) == 0 })
	require.True(t, done, "no items finish at once")
}

// mountTestManager serves namespaces and mounts what mounts returns, recording the
// indexes it got.
type mountTestManager struct {
	uris    []string
	mounts  func(indexes []uint16) []nodemgr.Mount
	indexes []uint16
}

func (m *mountTestManager) Namespaces() []string { return m.uris }

func (m *mountTestManager) Mount(indexes []uint16) []nodemgr.Mount {
	m.indexes = indexes
	return m.mounts(indexes)
}

// plain is a manager of namespace uri with no capability.
type plain string

func (p plain) Namespaces() []string { return []string{string(p)} }

// TestMountManagers checks namespace indexes, mounts and the errors of New.
func TestMountManagers(t *testing.T) {
	t.Parallel()
	objects := codec.NewNumericNodeId(0, id.ObjectsFolder)
	organizes := codec.NewNumericNodeId(0, id.Organizes)
	toOwn := func(indexes []uint16) []nodemgr.Mount {
		return []nodemgr.Mount{{SourceId: objects, ReferenceTypeId: organizes, TargetId: codec.NewStringNodeId(indexes[1], "Root")}}
	}

	space := addrspace.NewNamespace0()
	m := &mountTestManager{uris: []string{"urn:a", "urn:b"}, mounts: toOwn}
	rt, err := New(space, Unnamed(plain("urn:plain"), m))
	require.NoError(t, err)
	require.Equal(t, []string{addrspace.NamespaceURI0, "urn:plain", "urn:a", "urn:b"}, rt.Namespaces())
	require.Equal(t, []uint16{2, 3}, m.indexes)
	require.Same(t, rt.local, rt.ownerOf(0))
	require.NotSame(t, rt.local, rt.ownerOf(1))
	require.Same(t, rt.ownerOf(2), rt.ownerOf(3))
	require.Same(t, rt.local, rt.ownerOf(9), "beyond the array: the Space")
	require.True(t, rt.Local(1, func(int) uint16 { return 0 }))
	require.False(t, rt.Local(2, func(i int) uint16 { return uint16(i) }), "an item of a manager goes through the queue")
	require.Equal(t, map[codec.NodeId]bool{objects: true}, rt.mounts)
	op := &nodemgr.BrowseOp{
		Items:   []ua.BrowseDescription{{NodeId: objects, BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: organizes}},
		Results: make([]nodemgr.BrowseResult, 1),
	}
	space.Browse(context.Background(), op, func() {})
	require.Contains(t, op.Results[0].References, ua.ReferenceDescription{NodeId: codec.ExpandedNodeId{NodeId: codec.NewStringNodeId(3, "Root")}},
		"the Space has the reference to the mounted root")

	rt, err = New(addrspace.NewNamespace0(), nil)
	require.NoError(t, err)
	require.Empty(t, rt.owners, "without managers routing costs a length check")
	require.True(t, rt.Local(1, func(int) uint16 { return 5 }))

	for name, tc := range map[string]struct {
		managers []nodemgr.Manager
		errs     string
	}{
		"served twice": {[]nodemgr.Manager{plain("urn:a"), plain("urn:a")}, "served twice"},
		"target elsewhere": {[]nodemgr.Manager{&mountTestManager{uris: []string{"urn:a"}, mounts: func([]uint16) []nodemgr.Mount {
			return []nodemgr.Mount{{SourceId: objects, ReferenceTypeId: organizes, TargetId: codec.NewNumericNodeId(0, id.Server)}}
		}}}, "does not lead"},
		"source not in the Space": {[]nodemgr.Manager{&mountTestManager{uris: []string{"urn:a"}, mounts: func(ix []uint16) []nodemgr.Mount {
			return []nodemgr.Mount{{SourceId: codec.NewStringNodeId(ix[0], "x"), ReferenceTypeId: organizes, TargetId: codec.NewStringNodeId(ix[0], "Root")}}
		}}}, "does not lead"},
		"unknown source": {[]nodemgr.Manager{&mountTestManager{uris: []string{"urn:a"}, mounts: func(ix []uint16) []nodemgr.Mount {
			return []nodemgr.Mount{{SourceId: codec.NewNumericNodeId(0, 999999), ReferenceTypeId: organizes, TargetId: codec.NewStringNodeId(ix[0], "Root")}}
		}}}, "unknown source"},
	} {
		_, err := New(addrspace.NewNamespace0(), Unnamed(tc.managers...))
		require.ErrorContains(t, err, tc.errs, name)
	}
	// A configured manager is named by its setting: which entry to change.
	_, err = New(addrspace.NewNamespace0(), []Named{{Name: "plc", Manager: plain(addrspace.NamespaceURI0), Setting: "addressSpace.nodeManagers[0]"}})
	require.ErrorContains(t, err, `addressSpace.nodeManagers[0]: namespace "`+addrspace.NamespaceURI0+`" is served twice`)
}
