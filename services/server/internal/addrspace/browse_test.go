package addrspace

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/pkg/ua/ns0"
)

func browseOne(t testing.TB, s *Space, d ua.BrowseDescription) nodemgr.BrowseResult {
	t.Helper()
	op := &nodemgr.BrowseOp{Items: []ua.BrowseDescription{d}, Results: make([]nodemgr.BrowseResult, 1)}
	calls := 0
	s.Browse(context.Background(), op, func() { calls++ })
	require.Equal(t, 1, calls)
	return op.Results[0]
}

func names(refs []ua.ReferenceDescription) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.BrowseName.Name
	}
	return out
}

func TestBrowse(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	demo(t, s)
	all := uint32(ua.BrowseResultMaskAll)
	hier := n0(id.HierarchicalReferences)
	cases := []struct {
		name  string
		d     ua.BrowseDescription
		want  status.Code
		names []string
	}{
		{"objects forward hierarchical", ua.BrowseDescription{NodeId: n0(id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: hier, IncludeSubtypes: true, ResultMask: all},
			status.Good, []string{"Server", "Aliases", "Locations", "Demo"}},
		{"objects forward without subtypes", ua.BrowseDescription{NodeId: n0(id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: hier, ResultMask: all},
			status.Good, []string{}},
		{"objects inverse", ua.BrowseDescription{NodeId: n0(id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionInverse, ResultMask: all},
			status.Good, []string{"Root"}},
		{"objects both organizes", ua.BrowseDescription{NodeId: n0(id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionBoth, ReferenceTypeId: n0(id.Organizes), ResultMask: all},
			status.Good, []string{"Root", "Server", "Aliases", "Locations", "Demo"}},
		{"server status HasChild subtypes", ua.BrowseDescription{NodeId: n0(id.Server_ServerStatus), BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: n0(id.HasChild), IncludeSubtypes: true, ResultMask: all},
			status.Good, []string{"StartTime", "CurrentTime", "State", "BuildInfo", "SecondsTillShutdown", "ShutdownReason"}},
		{"server status HasChild exact", ua.BrowseDescription{NodeId: n0(id.Server_ServerStatus), BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: n0(id.HasChild), ResultMask: all},
			status.Good, []string{}},
		{"objects type definition", ua.BrowseDescription{NodeId: n0(id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: n0(id.HasTypeDefinition), ResultMask: all},
			status.Good, []string{"FolderType"}},
		{"demo class mask variables", ua.BrowseDescription{NodeId: codec.NewStringNodeId(1, "Demo"), BrowseDirection: ua.BrowseDirectionForward, NodeClassMask: uint32(ua.NodeClassVariable), ResultMask: all},
			status.Good, []string{"Int32Array", "Matrix", "String", "Bytes", "Strings", "Number", "Time", "State", "Scalar", "Any"}},
		{"demo class mask methods", ua.BrowseDescription{NodeId: codec.NewStringNodeId(1, "Demo"), BrowseDirection: ua.BrowseDirectionForward, NodeClassMask: uint32(ua.NodeClassMethod), ResultMask: all},
			status.Good, []string{}},
		{"invalid direction", ua.BrowseDescription{NodeId: n0(id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionInvalid}, status.BadBrowseDirectionInvalid, []string{}},
		{"negative direction", ua.BrowseDescription{NodeId: n0(id.ObjectsFolder), BrowseDirection: -1}, status.BadBrowseDirectionInvalid, []string{}},
		{"unknown reference type", ua.BrowseDescription{NodeId: n0(id.ObjectsFolder), ReferenceTypeId: n0(999999)}, status.BadReferenceTypeIdInvalid, []string{}},
		{"reference type not a reference type", ua.BrowseDescription{NodeId: n0(id.ObjectsFolder), ReferenceTypeId: n0(id.FolderType)}, status.BadReferenceTypeIdInvalid, []string{}},
		{"unknown node", ua.BrowseDescription{NodeId: n0(999999)}, status.BadNodeIdUnknown, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := browseOne(t, s, tc.d)
			require.Equal(t, tc.want, r.Status)
			require.ElementsMatch(t, tc.names, names(r.References))
		})
	}
}

func TestBrowseResultMask(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	d := ua.BrowseDescription{NodeId: n0(id.Server), BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: n0(id.HasComponent)}
	find := func(refs []ua.ReferenceDescription, target uint32) ua.ReferenceDescription {
		for _, r := range refs {
			if r.NodeId.NodeId == n0(target) {
				return r
			}
		}
		t.Fatalf("target %d not found", target)
		return ua.ReferenceDescription{}
	}
	full := ua.ReferenceDescription{
		ReferenceTypeId: n0(id.HasComponent), IsForward: true, NodeId: codec.ExpandedNodeId{NodeId: n0(id.Server_ServerStatus)},
		BrowseName: codec.QualifiedName{Name: "ServerStatus"}, DisplayName: codec.LocalizedText{Text: "ServerStatus"},
		NodeClass: ua.NodeClassVariable, TypeDefinition: codec.ExpandedNodeId{NodeId: n0(id.ServerStatusType)},
	}
	for _, tc := range []struct {
		mask ua.BrowseResultMask
		want ua.ReferenceDescription
	}{
		{ua.BrowseResultMaskNone, ua.ReferenceDescription{NodeId: full.NodeId}},
		{ua.BrowseResultMaskReferenceTypeId, ua.ReferenceDescription{NodeId: full.NodeId, ReferenceTypeId: full.ReferenceTypeId}},
		{ua.BrowseResultMaskIsForward, ua.ReferenceDescription{NodeId: full.NodeId, IsForward: true}},
		{ua.BrowseResultMaskNodeClass, ua.ReferenceDescription{NodeId: full.NodeId, NodeClass: full.NodeClass}},
		{ua.BrowseResultMaskBrowseName, ua.ReferenceDescription{NodeId: full.NodeId, BrowseName: full.BrowseName}},
		{ua.BrowseResultMaskDisplayName, ua.ReferenceDescription{NodeId: full.NodeId, DisplayName: full.DisplayName}},
		{ua.BrowseResultMaskTypeDefinition, ua.ReferenceDescription{NodeId: full.NodeId, TypeDefinition: full.TypeDefinition}},
		{ua.BrowseResultMaskAll, full},
	} {
		d.ResultMask = uint32(tc.mask)
		r := browseOne(t, s, d)
		require.Equal(t, status.Good, r.Status)
		require.Equal(t, tc.want, find(r.References, id.Server_ServerStatus), "%v", tc.mask)
	}
	// TypeDefinition is only given for Object and Variable targets.
	d = ua.BrowseDescription{NodeId: n0(id.Server), BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: n0(id.HasComponent), ResultMask: uint32(ua.BrowseResultMaskAll)}
	r := browseOne(t, s, d)
	m := find(r.References, id.Server_GetMonitoredItems)
	require.Equal(t, ua.NodeClassMethod, m.NodeClass)
	require.True(t, m.TypeDefinition.IsNull())
}

func TestBrowseView(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	demo(t, s)
	op := &nodemgr.BrowseOp{View: ua.ViewDescription{ViewId: n0(id.ObjectsFolder)},
		Items: []ua.BrowseDescription{{NodeId: n0(id.RootFolder)}}, Results: make([]nodemgr.BrowseResult, 1)}
	s.Browse(context.Background(), op, func() {})
	require.Equal(t, status.BadViewIdUnknown, op.Results[0].Status)
	op.View.ViewId = codec.NewStringNodeId(1, "View")
	s.Browse(context.Background(), op, func() {})
	require.Equal(t, status.Good, op.Results[0].Status)
	require.NotEmpty(t, op.Results[0].References)
}

// TestWalkNamespace0 follows hierarchical references from the Root folder and checks
// that every node of namespace 0 that has a hierarchical parent is reached.
func TestWalkNamespace0(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	seen := map[codec.NodeId]bool{n0(id.RootFolder): true}
	queue := []codec.NodeId{n0(id.RootFolder)}
	op := &nodemgr.BrowseOp{Items: make([]ua.BrowseDescription, 1), Results: make([]nodemgr.BrowseResult, 1)}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		op.Items[0] = ua.BrowseDescription{NodeId: n, BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeId: n0(id.HierarchicalReferences), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}
		s.Browse(context.Background(), op, func() {})
		require.Equal(t, status.Good, op.Results[0].Status, "%v", n)
		for _, r := range op.Results[0].References {
			require.True(t, r.IsForward)
			require.NotEqual(t, ua.NodeClassUnspecified, r.NodeClass)
			if !seen[r.NodeId.NodeId] {
				seen[r.NodeId.NodeId] = true
				queue = append(queue, r.NodeId.NodeId)
			}
		}
	}
	// The oracle: the same walk over the raw ns0 tables, with the hierarchical
	// ReferenceTypes found by following HasSubtype there.
	hier := map[uint32]bool{id.HierarchicalReferences: true}
	for changed := true; changed; {
		changed = false
		for n := range ns0.All() {
			for _, r := range n.References() {
				if r.ReferenceTypeId == id.HasSubtype && !r.IsForward && hier[r.TargetId] && !hier[n.ID()] {
					hier[n.ID()] = true
					changed = true
				}
			}
		}
	}
	want := map[uint32]bool{id.RootFolder: true}
	rawQueue := []uint32{id.RootFolder}
	for len(rawQueue) > 0 {
		n, ok := ns0.Lookup(rawQueue[0])
		rawQueue = rawQueue[1:]
		require.True(t, ok)
		for _, r := range n.References() {
			if r.IsForward && hier[r.ReferenceTypeId] && !want[r.TargetId] {
				want[r.TargetId] = true
				rawQueue = append(rawQueue, r.TargetId)
			}
		}
	}
	require.Len(t, seen, len(want))
	for n := range want {
		require.True(t, seen[n0(n)], "node %d not reached", n)
	}
	orphans := 0
	for n := range ns0.All() {
		if !want[n.ID()] {
			orphans++
		}
	}
	t.Logf("walk from Root over %d hierarchical ReferenceTypes reached %d of %d nodes of namespace 0; %d are not below Root in the nodeset",
		len(hier), len(seen), ns0.Count(), orphans)
	require.Greater(t, len(seen), 4000)
}

func TestTranslateBrowsePaths(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	demo(t, s)
	hier := n0(id.HierarchicalReferences)
	el := func(name string) ua.RelativePathElement {
		return ua.RelativePathElement{ReferenceTypeId: hier, IncludeSubtypes: true, TargetName: codec.QualifiedName{Name: name}}
	}
	path := func(start codec.NodeId, els ...ua.RelativePathElement) ua.BrowsePath {
		return ua.BrowsePath{StartingNode: start, RelativePath: ua.RelativePath{Elements: els}}
	}
	cases := []struct {
		name string
		p    ua.BrowsePath
		want status.Code
		ids  []codec.NodeId
	}{
		{"Objects/Server/ServerStatus/CurrentTime", path(n0(id.RootFolder), el("Objects"), el("Server"), el("ServerStatus"), el("CurrentTime")),
			status.Good, []codec.NodeId{n0(id.Server_ServerStatus_CurrentTime)}},
		{"demo namespace", path(n0(id.ObjectsFolder), ua.RelativePathElement{ReferenceTypeId: n0(id.Organizes), TargetName: codec.QualifiedName{NamespaceIndex: 1, Name: "Demo"}}, ua.RelativePathElement{ReferenceTypeId: hier, IncludeSubtypes: true, TargetName: codec.QualifiedName{NamespaceIndex: 1, Name: "Scalar"}}),
			status.Good, []codec.NodeId{codec.NewStringNodeId(1, "Scalar")}},
		{"wrong namespace index", path(n0(id.ObjectsFolder), el("Demo")), status.BadNoMatch, nil},
		{"inverse", path(n0(id.Server), ua.RelativePathElement{ReferenceTypeId: n0(id.Organizes), IsInverse: true, TargetName: codec.QualifiedName{Name: "Objects"}}),
			status.Good, []codec.NodeId{n0(id.ObjectsFolder)}},
		{"no subtypes", path(n0(id.RootFolder), ua.RelativePathElement{ReferenceTypeId: hier, TargetName: codec.QualifiedName{Name: "Objects"}}), status.BadNoMatch, nil},
		{"empty last name", path(n0(id.RootFolder), el("Objects"), ua.RelativePathElement{ReferenceTypeId: n0(id.HasTypeDefinition)}),
			status.Good, []codec.NodeId{n0(id.FolderType)}},
		{"no match", path(n0(id.RootFolder), el("Objects"), el("Nope")), status.BadNoMatch, nil},
		{"empty inner name", path(n0(id.RootFolder), el(""), el("Server")), status.BadBrowseNameInvalid, nil},
		{"empty path", path(n0(id.RootFolder)), status.BadNothingToDo, nil},
		{"unknown start", path(n0(999999), el("Objects")), status.BadNodeIdUnknown, nil},
	}
	paths := make([]ua.BrowsePath, len(cases))
	for i, tc := range cases {
		paths[i] = tc.p
	}
	results := make([]ua.BrowsePathResult, len(cases))
	s.TranslateBrowsePaths(context.Background(), paths, results)
	for i, tc := range cases {
		require.Equal(t, tc.want, results[i].StatusCode, tc.name)
		var got []codec.NodeId
		for _, tg := range results[i].Targets {
			require.Equal(t, uint32(math.MaxUint32), tg.RemainingPathIndex, tc.name)
			got = append(got, tg.TargetId.NodeId)
		}
		require.Equal(t, tc.ids, got, tc.name)
	}
}

// TestRemoveReference changes the TypeDefinition of a namespace 0 node as the server
// does for the ServerRedundancy object: the table's reference goes from both ends, the
// new one is seen from both ends and in the TypeDefinition of a Browse result, and
// adding the table's reference back restores it in its place.
func TestRemoveReference(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	red := n0(id.Server_ServerRedundancy)
	typeDef := func(to uint32) Reference {
		return Reference{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(to), IsForward: true}
	}
	all := uint32(ua.BrowseResultMaskAll)
	typeOf := func() []string {
		r := browseOne(t, s, ua.BrowseDescription{NodeId: red, BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: n0(id.HasTypeDefinition), ResultMask: all})
		require.Equal(t, status.Good, r.Status)
		return names(r.References)
	}
	instances := func(typ uint32) []codec.NodeId {
		r := browseOne(t, s, ua.BrowseDescription{NodeId: n0(typ), BrowseDirection: ua.BrowseDirectionInverse, ReferenceTypeId: n0(id.HasTypeDefinition), ResultMask: all})
		require.Equal(t, status.Good, r.Status)
		out := []codec.NodeId{}
		for _, rd := range r.References {
			out = append(out, rd.NodeId.NodeId)
		}
		return out
	}
	described := func() codec.NodeId {
		r := browseOne(t, s, ua.BrowseDescription{NodeId: n0(id.Server), BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: n0(id.HasComponent), ResultMask: all})
		for _, rd := range r.References {
			if rd.NodeId.NodeId == red {
				return rd.TypeDefinition.NodeId
			}
		}
		t.Fatal("ServerRedundancy is not a component of Server")
		return codec.NodeId{}
	}
	require.Equal(t, []string{"ServerRedundancyType"}, typeOf())
	require.Contains(t, instances(id.ServerRedundancyType), red)

	require.NoError(t, s.RemoveReference(red, typeDef(id.ServerRedundancyType)))
	require.NoError(t, s.AddReference(red, typeDef(id.NonTransparentRedundancyType)))
	require.Equal(t, []string{"NonTransparentRedundancyType"}, typeOf())
	require.NotContains(t, instances(id.ServerRedundancyType), red)
	require.Equal(t, []codec.NodeId{red}, instances(id.NonTransparentRedundancyType))
	require.Equal(t, n0(id.NonTransparentRedundancyType), described())
	require.Error(t, s.RemoveReference(red, typeDef(id.ServerRedundancyType)), "gone already")

	// Back: the run-time reference goes, the table's returns.
	require.NoError(t, s.RemoveReference(red, typeDef(id.NonTransparentRedundancyType)))
	require.NoError(t, s.AddReference(red, typeDef(id.ServerRedundancyType)))
	require.Equal(t, []string{"ServerRedundancyType"}, typeOf())
	require.Empty(t, instances(id.NonTransparentRedundancyType))
	require.Contains(t, instances(id.ServerRedundancyType), red)
	require.Equal(t, n0(id.ServerRedundancyType), described())
	r := browseOne(t, s, ua.BrowseDescription{NodeId: red, BrowseDirection: ua.BrowseDirectionBoth, ResultMask: all})
	require.Equal(t, []string{"RedundancySupport", "ServerRedundancyType", "Server"}, names(r.References), "the table's order")

	require.Error(t, s.RemoveReference(n0(999999), typeDef(id.ServerRedundancyType)))
	require.Error(t, s.RemoveReference(red, typeDef(id.FolderType)))
	require.Error(t, s.RemoveReference(n0(id.NonTransparentRedundancyType),
		Reference{ReferenceTypeId: n0(id.HasSubtype), TargetId: n0(id.ServerRedundancyType)}), "the type tree is fixed")
}
