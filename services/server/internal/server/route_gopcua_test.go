package server

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	gua "github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/ua/id"
)

// connectRoute starts a server with a routeManager (answering after delay) and returns
// it with a gopcua client session on it (None, anonymous).
func connectRoute(t *testing.T, ctx context.Context, delay time.Duration) (*routeManager, *pipelineServer, *opcua.Client) {
	t.Helper()
	m := newRouteManager(delay)
	ps := startPipeline(t, m, nil)
	eps, err := opcua.GetEndpoints(ctx, ps.url)
	require.NoError(t, err)
	ep, err := opcua.SelectEndpoint(eps, gua.SecurityPolicyURINone, gua.MessageSecurityModeNone)
	require.NoError(t, err)
	c, err := opcua.NewClient(ps.url,
		opcua.SecurityFromEndpoint(ep, gua.UserTokenTypeAnonymous),
		opcua.RequestTimeout(10*time.Second),
		opcua.AutoReconnect(false))
	require.NoError(t, err)
	require.NoError(t, c.Connect(ctx))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return m, ps, c
}

// browseAll browses node with gopcua, following continuation points of perNode
// references, and returns all references.
func gopcuaBrowseAll(t *testing.T, ctx context.Context, c *opcua.Client, d *gua.BrowseDescription, perNode uint32) []*gua.ReferenceDescription {
	t.Helper()
	resp, err := c.Browse(ctx, &gua.BrowseRequest{
		View:                          &gua.ViewDescription{ViewID: gua.NewTwoByteNodeID(0)},
		RequestedMaxReferencesPerNode: perNode,
		NodesToBrowse:                 []*gua.BrowseDescription{d},
	})
	require.NoError(t, err)
	require.Len(t, resp.Results, 1)
	r := resp.Results[0]
	require.Equal(t, gua.StatusOK, r.StatusCode)
	refs := r.References
	for rounds := 0; len(r.ContinuationPoint) > 0; rounds++ {
		require.Less(t, rounds, 100)
		if perNode > 0 {
			require.Len(t, r.References, int(perNode), "a full page before a continuation point")
		}
		next, err := c.BrowseNext(ctx, &gua.BrowseNextRequest{ContinuationPoints: [][]byte{r.ContinuationPoint}})
		require.NoError(t, err)
		require.Len(t, next.Results, 1)
		r = next.Results[0]
		require.Equal(t, gua.StatusOK, r.StatusCode)
		refs = append(refs, r.References...)
	}
	return refs
}

// TestRouteBrowse browses from the Objects folder into a mounted manager: the root is
// described by its manager (NodeClass, names, TypeDefinition) and filtered by
// NodeClassMask in the server; the root's own references come from the manager, in
// pages of two with continuation points, and its reference to the Objects folder is
// described by namespace 0.
func TestRouteBrowse(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _, c := connectRoute(t, ctx, 0)
	root := gua.NewStringNodeID(m.ns, "Root")
	all := uint32(gua.BrowseResultMaskAll)

	objects := gopcuaBrowseAll(t, ctx, c, &gua.BrowseDescription{
		NodeID:          gua.NewNumericNodeID(0, id.ObjectsFolder),
		BrowseDirection: gua.BrowseDirectionForward,
		ReferenceTypeID: gua.NewNumericNodeID(0, id.HierarchicalReferences),
		IncludeSubtypes: true,
		NodeClassMask:   uint32(gua.NodeClassObject),
		ResultMask:      all,
	}, 0)
	var found *gua.ReferenceDescription
	for _, r := range objects {
		require.Equal(t, gua.NodeClassObject, r.NodeClass, "%v passes the NodeClassMask", r.NodeID)
		if r.NodeID.NodeID.String() == root.String() {
			found = r
		}
	}
	require.NotNil(t, found, "the manager's root is below Objects")
	require.Equal(t, "Root", found.BrowseName.Name)
	require.Equal(t, m.ns, found.BrowseName.NamespaceIndex)
	require.Equal(t, "Root", found.DisplayName.Text)
	require.Equal(t, uint32(id.FolderType), found.TypeDefinition.NodeID.IntID())
	require.Equal(t, uint32(id.Organizes), found.ReferenceTypeID.IntID())
	require.True(t, found.IsForward)

	variables := gopcuaBrowseAll(t, ctx, c, &gua.BrowseDescription{
		NodeID:          gua.NewNumericNodeID(0, id.ObjectsFolder),
		BrowseDirection: gua.BrowseDirectionForward,
		NodeClassMask:   uint32(gua.NodeClassVariable),
		ResultMask:      all,
	}, 0)
	for _, r := range variables {
		require.NotEqual(t, root.String(), r.NodeID.NodeID.String(), "an Object fails a Variable NodeClassMask")
	}

	// The root's references, two per page, then the same in one page.
	rootDesc := &gua.BrowseDescription{NodeID: root, BrowseDirection: gua.BrowseDirectionBoth, IncludeSubtypes: true, ResultMask: all}
	paged := gopcuaBrowseAll(t, ctx, c, rootDesc, 2)
	whole := gopcuaBrowseAll(t, ctx, c, rootDesc, 0)
	require.Len(t, whole, 2+routeChildren+1, "HasTypeDefinition, inverse Organizes, children and the method")
	require.Equal(t, len(whole), len(paged))
	names := map[string]gua.NodeClass{}
	for i, r := range paged {
		require.Equal(t, whole[i].NodeID.NodeID.String(), r.NodeID.NodeID.String(), "the pages keep the order")
		names[r.BrowseName.Name] = r.NodeClass
	}
	for i := range routeChildren {
		require.Equal(t, gua.NodeClassVariable, names[childName(i)])
	}
	require.Equal(t, gua.NodeClassMethod, names["Double"])
	require.Equal(t, gua.NodeClassObject, names["Objects"], "namespace 0 describes the Objects folder")
	require.Equal(t, gua.NodeClassObjectType, names["FolderType"], "namespace 0 describes the type")
	for _, r := range whole {
		if r.BrowseName.Name == "Objects" {
			require.False(t, r.IsForward)
			require.Equal(t, "Objects", r.DisplayName.Text)
			require.Equal(t, uint32(id.FolderType), r.TypeDefinition.NodeID.IntID())
		}
	}

	// ResultMask None: nothing but the target ids, also for foreign targets.
	bare := gopcuaBrowseAll(t, ctx, c, &gua.BrowseDescription{NodeID: root, BrowseDirection: gua.BrowseDirectionInverse, IncludeSubtypes: true}, 0)
	require.Len(t, bare, 1)
	require.Equal(t, uint32(id.ObjectsFolder), bare[0].NodeID.NodeID.IntID())
	require.Equal(t, gua.NodeClassUnspecified, bare[0].NodeClass)
	require.Empty(t, bare[0].BrowseName.Name)
}

// TestRouteTranslate resolves browse paths that cross from namespace 0 into the
// manager and back, with BadNoMatch and BadNodeIdUnknown.
func TestRouteTranslate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _, c := connectRoute(t, ctx, 0)
	step := func(typ uint32, inverse bool, ns uint16, name string) *gua.RelativePathElement {
		return &gua.RelativePathElement{
			ReferenceTypeID: gua.NewNumericNodeID(0, typ), IsInverse: inverse, IncludeSubtypes: true,
			TargetName: &gua.QualifiedName{NamespaceIndex: ns, Name: name},
		}
	}
	path := func(start *gua.NodeID, els ...*gua.RelativePathElement) *gua.BrowsePath {
		return &gua.BrowsePath{StartingNode: start, RelativePath: &gua.RelativePath{Elements: els}}
	}
	req := &gua.TranslateBrowsePathsToNodeIDsRequest{BrowsePaths: []*gua.BrowsePath{
		// Objects/Root/Child3: from namespace 0 into the manager.
		path(gua.NewNumericNodeID(0, id.ObjectsFolder),
			step(id.HierarchicalReferences, false, m.ns, "Root"),
			step(id.HierarchicalReferences, false, m.ns, childName(3))),
		// Child1 up to Root, up to Objects, down to Server: from the manager into
		// namespace 0.
		path(gua.NewStringNodeID(m.ns, childName(1)),
			step(id.HierarchicalReferences, true, m.ns, "Root"),
			step(id.Organizes, true, 0, "Objects"),
			step(id.Organizes, false, 0, "Server")),
		// Root, then every HasComponent target: an empty last TargetName.
		path(gua.NewNumericNodeID(0, id.ObjectsFolder),
			step(id.Organizes, false, m.ns, "Root"),
			&gua.RelativePathElement{ReferenceTypeID: gua.NewNumericNodeID(0, id.HasComponent), TargetName: &gua.QualifiedName{}}),
		path(gua.NewNumericNodeID(0, id.ObjectsFolder),
			step(id.Organizes, false, m.ns, "Root"),
			step(id.HasComponent, false, m.ns, "Missing")),
		path(gua.NewStringNodeID(m.ns, "Unknown"), step(id.HasComponent, false, m.ns, "Root")),
		path(gua.NewNumericNodeID(0, id.ObjectsFolder)),
	}}
	var resp *gua.TranslateBrowsePathsToNodeIDsResponse
	require.NoError(t, c.Send(ctx, req, func(r gua.Response) error {
		var ok bool
		resp, ok = r.(*gua.TranslateBrowsePathsToNodeIDsResponse)
		require.True(t, ok, "response is %T", r)
		return nil
	}))
	require.Len(t, resp.Results, 6)
	target := func(i int) []string {
		r := resp.Results[i]
		require.Equal(t, gua.StatusOK, r.StatusCode, "path %d", i)
		var ids []string
		for _, tg := range r.Targets {
			require.Equal(t, uint32(0xffffffff), tg.RemainingPathIndex)
			ids = append(ids, tg.TargetID.NodeID.String())
		}
		return ids
	}
	require.Equal(t, []string{gua.NewStringNodeID(m.ns, childName(3)).String()}, target(0))
	require.Equal(t, []string{gua.NewNumericNodeID(0, id.Server).String()}, target(1))
	require.Len(t, target(2), routeChildren+1)
	require.Equal(t, gua.StatusBadNoMatch, resp.Results[3].StatusCode)
	require.Equal(t, gua.StatusBadNodeIDUnknown, resp.Results[4].StatusCode)
	require.Equal(t, gua.StatusBadNothingToDo, resp.Results[5].StatusCode)
}

// TestRouteMixed sends Read, Write and Call requests whose items alternate between the
// Space and the manager: each result comes back in request order, the manager's items
// as the manager answers them and the Space's as the Space answers them alone.
func TestRouteMixed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _, c := connectRoute(t, ctx, 5*time.Millisecond)
	child := func(i int) *gua.NodeID { return gua.NewStringNodeID(m.ns, childName(i)) }
	value := func(n *gua.NodeID) *gua.ReadValueID {
		return &gua.ReadValueID{NodeID: n, AttributeID: gua.AttributeIDValue}
	}
	state := gua.NewNumericNodeID(0, id.Server_ServerStatus_State)

	dv := func(v any) *gua.DataValue {
		return &gua.DataValue{EncodingMask: gua.DataValueValue, Value: gua.MustVariant(v)}
	}
	writes := []*gua.WriteValue{
		{NodeID: child(0), AttributeID: gua.AttributeIDValue, Value: dv(int32(-7))},
		{NodeID: state, AttributeID: gua.AttributeIDValue, Value: dv(int32(1))},
		{NodeID: child(1), AttributeID: gua.AttributeIDValue, Value: dv("text")},
		{NodeID: child(2), AttributeID: gua.AttributeIDValue, Value: dv(int32(8))},
	}
	spaceW, err := c.Write(ctx, &gua.WriteRequest{NodesToWrite: writes[1:2]})
	require.NoError(t, err)
	require.NotEqual(t, gua.StatusOK, spaceW.Results[0], "ServerStatus.State is not writable")
	w, err := c.Write(ctx, &gua.WriteRequest{NodesToWrite: writes})
	require.NoError(t, err)
	require.Equal(t, []gua.StatusCode{gua.StatusOK, spaceW.Results[0], gua.StatusBadTypeMismatch, gua.StatusOK}, w.Results)

	r, err := c.Read(ctx, &gua.ReadRequest{NodesToRead: []*gua.ReadValueID{
		value(child(0)), value(state), value(child(2)),
		value(gua.NewNumericNodeID(0, 99999)), value(gua.NewStringNodeID(m.ns, "Nope")), value(child(1)),
	}})
	require.NoError(t, err)
	require.Len(t, r.Results, 6)
	require.Equal(t, int32(-7), r.Results[0].Value.Value())
	require.Equal(t, gua.StatusOK, r.Results[1].Status)
	require.EqualValues(t, 0, r.Results[1].Value.Value(), "Running")
	require.Equal(t, int32(8), r.Results[2].Value.Value())
	require.Equal(t, gua.StatusBadNodeIDUnknown, r.Results[3].Status)
	require.Equal(t, gua.StatusBadNodeIDUnknown, r.Results[4].Status)
	require.Equal(t, int32(101), r.Results[5].Value.Value(), "the failed write left Child1 alone")

	root, double := gua.NewStringNodeID(m.ns, "Root"), gua.NewStringNodeID(m.ns, "Double")
	calls := []*gua.CallMethodRequest{
		{ObjectID: root, MethodID: double, InputArguments: []*gua.Variant{gua.MustVariant(int32(21))}},
		{ObjectID: gua.NewNumericNodeID(0, id.Server), MethodID: gua.NewNumericNodeID(0, id.Server_GetMonitoredItems), InputArguments: []*gua.Variant{gua.MustVariant(uint32(1))}},
		{ObjectID: root, MethodID: double, InputArguments: []*gua.Variant{gua.MustVariant("x")}},
		{ObjectID: root, MethodID: double},
	}
	spaceC, err := c.Call(ctx, calls[1])
	require.NoError(t, err)
	var res *gua.CallResponse
	require.NoError(t, c.Send(ctx, &gua.CallRequest{MethodsToCall: calls}, func(r gua.Response) error {
		var ok bool
		res, ok = r.(*gua.CallResponse)
		require.True(t, ok, "response is %T", r)
		return nil
	}))
	require.Len(t, res.Results, 4)
	require.Equal(t, gua.StatusOK, res.Results[0].StatusCode)
	require.Equal(t, []*gua.Variant{gua.MustVariant(int32(42))}, res.Results[0].OutputArguments)
	require.Equal(t, spaceC.StatusCode, res.Results[1].StatusCode)
	require.Equal(t, gua.StatusBadInvalidArgument, res.Results[2].StatusCode)
	require.Equal(t, []gua.StatusCode{gua.StatusBadTypeMismatch}, res.Results[2].InputArgumentResults)
	require.Equal(t, gua.StatusBadArgumentsMissing, res.Results[3].StatusCode)

	all := uint32(gua.BrowseResultMaskAll)
	server := &gua.BrowseDescription{NodeID: gua.NewNumericNodeID(0, id.Server), BrowseDirection: gua.BrowseDirectionForward, IncludeSubtypes: true, ResultMask: all}
	alone, err := c.Browse(ctx, &gua.BrowseRequest{View: &gua.ViewDescription{ViewID: gua.NewTwoByteNodeID(0)}, NodesToBrowse: []*gua.BrowseDescription{server}})
	require.NoError(t, err)
	b, err := c.Browse(ctx, &gua.BrowseRequest{View: &gua.ViewDescription{ViewID: gua.NewTwoByteNodeID(0)}, NodesToBrowse: []*gua.BrowseDescription{
		{NodeID: root, BrowseDirection: gua.BrowseDirectionForward, ReferenceTypeID: gua.NewNumericNodeID(0, id.HasComponent), ResultMask: all},
		server,
		{NodeID: gua.NewStringNodeID(m.ns, "Nope"), BrowseDirection: gua.BrowseDirectionForward, ResultMask: all},
	}})
	require.NoError(t, err)
	require.Len(t, b.Results, 3)
	require.Equal(t, gua.StatusOK, b.Results[0].StatusCode)
	require.Len(t, b.Results[0].References, routeChildren+1)
	require.Equal(t, alone.Results[0], b.Results[1], "the Space's item as the Space answers it alone")
	require.Equal(t, gua.StatusBadNodeIDUnknown, b.Results[2].StatusCode)
	require.Positive(t, m.ops.Load())
}
