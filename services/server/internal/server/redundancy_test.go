package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	gua "github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/redundancy"
)

// servedServer is a Server serving on 127.0.0.1 port 0 until stop.
type servedServer struct {
	*Server
	url    string
	stop   context.CancelFunc
	served chan error // Serve's result
}

// serveRedundant starts a server (ApplicationUri urn:127.0.0.1:uastack:redundancy) with
// configure applied, and registers a cleanup that stops it. before, when not nil, runs
// after New and before Serve.
func serveRedundant(t *testing.T, configure func(*config.Config), before func(*Server)) *servedServer {
	t.Helper()
	cfg := config.Default()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1", "localhost"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:redundancy"
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	cfg.AddressSpace.DemoNamespace = false
	if configure != nil {
		configure(cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.Endpoint.ListenAddress = ln.Addr().String()
	cfg.Endpoint.EndpointURL = "opc.tcp://" + ln.Addr().String()
	require.NoError(t, cfg.Validate())
	srv, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	if before != nil {
		before(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ss := &servedServer{Server: srv, url: cfg.Endpoint.EndpointURL, stop: cancel, served: make(chan error, 1)}
	go func() { ss.served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-ss.served:
			require.NoError(t, err)
			ss.served <- err // for a test that waited already
		case <-time.After(15 * time.Second):
			t.Error("server did not stop within 15 s")
		}
		require.NoError(t, srv.Close())
	})
	return ss
}

// redundancyClient opens a gopcua session (None, anonymous) on url, closed at cleanup.
func redundancyClient(t *testing.T, ctx context.Context, url string) *opcua.Client {
	t.Helper()
	eps, err := opcua.GetEndpoints(ctx, url)
	require.NoError(t, err)
	ep, err := opcua.SelectEndpoint(eps, gua.SecurityPolicyURINone, gua.MessageSecurityModeNone)
	require.NoError(t, err)
	c, err := opcua.NewClient(url, opcua.SecurityFromEndpoint(ep, gua.UserTokenTypeAnonymous),
		opcua.RequestTimeout(10*time.Second), opcua.AutoReconnect(false))
	require.NoError(t, err)
	require.NoError(t, c.Connect(ctx))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// readNS0 reads the Value of each node of namespace 0 and fails on a bad status.
func readNS0(t *testing.T, ctx context.Context, c *opcua.Client, nodes ...uint32) []any {
	t.Helper()
	req := &gua.ReadRequest{TimestampsToReturn: gua.TimestampsToReturnNeither}
	for _, n := range nodes {
		req.NodesToRead = append(req.NodesToRead, &gua.ReadValueID{NodeID: gua.NewNumericNodeID(0, n), AttributeID: gua.AttributeIDValue})
	}
	resp, err := c.Read(ctx, req)
	require.NoError(t, err)
	out := make([]any, len(resp.Results))
	for i, r := range resp.Results {
		require.Equal(t, gua.StatusOK, r.Status, "node %d", nodes[i])
		out[i] = r.Value.Value()
	}
	return out
}

// serviceLevel reads Server_ServiceLevel.
func serviceLevel(t *testing.T, ctx context.Context, c *opcua.Client) byte {
	t.Helper()
	return readNS0(t, ctx, c, id.Server_ServiceLevel)[0].(byte)
}

// browseRedundancy browses the ServerRedundancy object's forward references with every
// result field, by ReferenceType and target.
func browseRedundancy(t *testing.T, ctx context.Context, c *opcua.Client) map[[2]uint32]*gua.ReferenceDescription {
	t.Helper()
	refs := gopcuaBrowseAll(t, ctx, c, &gua.BrowseDescription{
		NodeID:          gua.NewNumericNodeID(0, id.Server_ServerRedundancy),
		BrowseDirection: gua.BrowseDirectionForward,
		IncludeSubtypes: true,
		ResultMask:      uint32(gua.BrowseResultMaskAll),
	}, 0)
	out := map[[2]uint32]*gua.ReferenceDescription{}
	for _, r := range refs {
		out[[2]uint32{r.ReferenceTypeID.IntID(), r.NodeID.NodeID.IntID()}] = r
	}
	return out
}

// TestSetRedundancyGopcua has gopcua read and browse the ServerRedundancy object of a
// HotAndMirrored set (Part 5 §6.3.9): RedundancySupport, the ServerUriArray and its
// attributes, the NonTransparentRedundancyType seen from the object, from its parent's
// Browse and from the type; then the set changes, and the server leaves it.
func TestSetRedundancyGopcua(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss := serveRedundant(t, nil, nil)
	self := ss.cfg.Application.ApplicationURI
	c := redundancyClient(t, ctx, ss.url)

	// A lone server: None, a ServerRedundancyType, the ServerUriArray unreferenced.
	require.Equal(t, []any{int32(0), nil}, readNS0(t, ctx, c, id.Server_ServerRedundancy_RedundancySupport, id.Server_ServerRedundancy_ServerUriArray))
	refs := browseRedundancy(t, ctx, c)
	require.Contains(t, refs, [2]uint32{id.HasTypeDefinition, id.ServerRedundancyType})
	require.NotContains(t, refs, [2]uint32{id.HasProperty, id.Server_ServerRedundancy_ServerUriArray})

	require.NoError(t, ss.SetRedundancy(ua.RedundancySupportHotAndMirrored, []string{self, "urn:b"}))
	require.Equal(t, []any{int32(ua.RedundancySupportHotAndMirrored), []string{self, "urn:b"}},
		readNS0(t, ctx, c, id.Server_ServerRedundancy_RedundancySupport, id.Server_ServerRedundancy_ServerUriArray))
	refs = browseRedundancy(t, ctx, c)
	require.Len(t, refs, 3, "HasTypeDefinition and two Properties")
	td := refs[[2]uint32{id.HasTypeDefinition, id.NonTransparentRedundancyType}]
	require.NotNil(t, td, "a NonTransparentRedundancyType")
	require.Equal(t, "NonTransparentRedundancyType", td.BrowseName.Name)
	require.Equal(t, gua.NodeClassObjectType, td.NodeClass)
	prop := refs[[2]uint32{id.HasProperty, id.Server_ServerRedundancy_ServerUriArray}]
	require.NotNil(t, prop, "ServerUriArray is a Property of ServerRedundancy")
	require.Equal(t, "ServerUriArray", prop.BrowseName.Name)
	require.Equal(t, gua.NodeClassVariable, prop.NodeClass)
	require.Equal(t, uint32(id.PropertyType), prop.TypeDefinition.NodeID.IntID())
	require.NotNil(t, refs[[2]uint32{id.HasProperty, id.Server_ServerRedundancy_RedundancySupport}], "the inherited RedundancySupport")

	// The Property's attributes: String[] of one dimension.
	attrs := []gua.AttributeID{gua.AttributeIDBrowseName, gua.AttributeIDDataType, gua.AttributeIDValueRank, gua.AttributeIDArrayDimensions}
	req := &gua.ReadRequest{TimestampsToReturn: gua.TimestampsToReturnNeither}
	for _, a := range attrs {
		req.NodesToRead = append(req.NodesToRead, &gua.ReadValueID{NodeID: gua.NewNumericNodeID(0, id.Server_ServerRedundancy_ServerUriArray), AttributeID: a})
	}
	resp, err := c.Read(ctx, req)
	require.NoError(t, err)
	for i, r := range resp.Results {
		require.Equal(t, gua.StatusOK, r.Status, "attribute %v", attrs[i])
	}
	require.Equal(t, "ServerUriArray", resp.Results[0].Value.Value().(*gua.QualifiedName).Name)
	require.Equal(t, uint32(id.String), resp.Results[1].Value.Value().(*gua.NodeID).IntID())
	require.Equal(t, int32(1), resp.Results[2].Value.Value())
	require.Equal(t, []uint32{0}, resp.Results[3].Value.Value())

	// The parent's Browse describes the object with its new TypeDefinition, and the
	// type lists it among its instances; the path by BrowseNames reaches the Property.
	server := gopcuaBrowseAll(t, ctx, c, &gua.BrowseDescription{
		NodeID: gua.NewNumericNodeID(0, id.Server), BrowseDirection: gua.BrowseDirectionForward,
		ReferenceTypeID: gua.NewNumericNodeID(0, id.HasComponent), ResultMask: uint32(gua.BrowseResultMaskAll),
	}, 0)
	var described uint32
	for _, r := range server {
		if r.NodeID.NodeID.IntID() == id.Server_ServerRedundancy {
			described = r.TypeDefinition.NodeID.IntID()
		}
	}
	require.Equal(t, uint32(id.NonTransparentRedundancyType), described)
	instances := gopcuaBrowseAll(t, ctx, c, &gua.BrowseDescription{
		NodeID: gua.NewNumericNodeID(0, id.NonTransparentRedundancyType), BrowseDirection: gua.BrowseDirectionInverse,
		ReferenceTypeID: gua.NewNumericNodeID(0, id.HasTypeDefinition), ResultMask: uint32(gua.BrowseResultMaskAll),
	}, 0)
	require.Len(t, instances, 1)
	require.Equal(t, uint32(id.Server_ServerRedundancy), instances[0].NodeID.NodeID.IntID())
	var path *gua.TranslateBrowsePathsToNodeIDsResponse
	require.NoError(t, c.Send(ctx, &gua.TranslateBrowsePathsToNodeIDsRequest{BrowsePaths: []*gua.BrowsePath{{
		StartingNode: gua.NewNumericNodeID(0, id.Server),
		RelativePath: &gua.RelativePath{Elements: []*gua.RelativePathElement{
			{ReferenceTypeID: gua.NewNumericNodeID(0, id.HierarchicalReferences), IncludeSubtypes: true, TargetName: &gua.QualifiedName{Name: "ServerRedundancy"}},
			{ReferenceTypeID: gua.NewNumericNodeID(0, id.HierarchicalReferences), IncludeSubtypes: true, TargetName: &gua.QualifiedName{Name: "ServerUriArray"}},
		}},
	}}}, func(r gua.Response) error {
		path = r.(*gua.TranslateBrowsePathsToNodeIDsResponse)
		return nil
	}))
	require.Len(t, path.Results, 1)
	require.Equal(t, gua.StatusOK, path.Results[0].StatusCode)
	require.Equal(t, uint32(id.Server_ServerRedundancy_ServerUriArray), path.Results[0].Targets[0].TargetID.NodeID.IntID())

	// A node joins: the array follows, the shape stays.
	require.NoError(t, ss.SetRedundancy(ua.RedundancySupportHotAndMirrored, []string{"urn:b", self, "urn:c"}))
	require.Equal(t, []any{[]string{"urn:b", self, "urn:c"}}, readNS0(t, ctx, c, id.Server_ServerRedundancy_ServerUriArray))
	require.Len(t, browseRedundancy(t, ctx, c), 3)

	// Refused: the set without this server, a URI twice or empty, Transparent, URIs
	// without a set, an unknown mode. Nothing changes.
	for _, bad := range []struct {
		support ua.RedundancySupport
		uris    []string
	}{
		{ua.RedundancySupportHotAndMirrored, []string{"urn:b"}},
		{ua.RedundancySupportHot, nil},
		{ua.RedundancySupportWarm, []string{self, "urn:b", self}},
		{ua.RedundancySupportCold, []string{self, ""}},
		{ua.RedundancySupportTransparent, []string{self}},
		{ua.RedundancySupportNone, []string{self}},
		{ua.RedundancySupport(9), []string{self}},
	} {
		require.Error(t, ss.SetRedundancy(bad.support, bad.uris), "%v %q", bad.support, bad.uris)
	}
	require.Equal(t, []any{int32(ua.RedundancySupportHotAndMirrored), []string{"urn:b", self, "urn:c"}},
		readNS0(t, ctx, c, id.Server_ServerRedundancy_RedundancySupport, id.Server_ServerRedundancy_ServerUriArray))

	// Leaving the set: a ServerRedundancyType again, the array empty and unreferenced.
	require.NoError(t, ss.SetRedundancy(ua.RedundancySupportNone, nil))
	require.Equal(t, []any{int32(0), []string{}}, readNS0(t, ctx, c, id.Server_ServerRedundancy_RedundancySupport, id.Server_ServerRedundancy_ServerUriArray))
	refs = browseRedundancy(t, ctx, c)
	require.Len(t, refs, 2)
	require.Contains(t, refs, [2]uint32{id.HasTypeDefinition, id.ServerRedundancyType})
	require.NotContains(t, refs, [2]uint32{id.HasProperty, id.Server_ServerRedundancy_ServerUriArray})
	require.NoError(t, ss.SetRedundancy(ua.RedundancySupportWarm, []string{self}), "and joining again")
	require.Contains(t, browseRedundancy(t, ctx, c), [2]uint32{id.HasTypeDefinition, id.NonTransparentRedundancyType})
}

// TestServiceLevelSubscription monitors ServiceLevel with gopcua while the load is
// sampled every 20 ms: SetHealth(Degraded) brings a notification in the Degraded
// subrange, SetHealth(Healthy) one back in the Healthy subrange, NoData one of 1.
func TestServiceLevelSubscription(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss := serveRedundant(t, func(c *config.Config) { c.Redundancy.ServiceLevelInterval = 20 * time.Millisecond }, nil)
	c := redundancyClient(t, ctx, ss.url)
	// gopcua's first Publish pauses its loop; let the pause land before Subscribe
	// resumes it (as in TestSubscriptionGopcua).
	time.Sleep(300 * time.Millisecond)
	ch := make(chan *opcua.PublishNotificationData, 64)
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 50 * time.Millisecond}, ch)
	require.NoError(t, err)
	levels := make(chan byte, 256)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case n := <-ch:
				if dcn, ok := n.Value.(*gua.DataChangeNotification); ok && n.Error == nil {
					for _, mi := range dcn.MonitoredItems {
						levels <- mi.Value.Value.Value().(byte)
					}
				}
			}
		}
	}()
	res, err := sub.Monitor(ctx, gua.TimestampsToReturnBoth,
		opcua.NewMonitoredItemCreateRequestWithDefaults(gua.NewNumericNodeID(0, id.Server_ServiceLevel), gua.AttributeIDValue, 1))
	require.NoError(t, err)
	require.Equal(t, gua.StatusOK, res.Results[0].StatusCode)

	// until waits for a notification whose level passes ok.
	until := func(what string, ok func(byte) bool) byte {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case l := <-levels:
				if ok(l) {
					return l
				}
			case <-deadline:
				t.Fatalf("no ServiceLevel notification %s", what)
			}
		}
	}
	healthy := func(l byte) bool { return l >= 200 }
	until("in Healthy at first", healthy)
	ss.SetHealth(redundancy.Degraded)
	l := until("in Degraded", func(l byte) bool { return l < 200 })
	require.GreaterOrEqual(t, l, byte(2))
	ss.SetHealth(redundancy.Healthy)
	until("back in Healthy", healthy)
	ss.SetHealth(redundancy.NoData)
	require.Equal(t, byte(1), until("of NoData", func(l byte) bool { return l < 200 }))
}

// TestServiceLevelFallsWithLoad fills a table of four sessions: the ServiceLevel falls
// with each session, to 200 with the table full, and rises as they go. The CPU is left
// out (the tests beside this one load the process), so the levels are exact.
func TestServiceLevelFallsWithLoad(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const interval = 10 * time.Millisecond
	ss := serveRedundant(t, func(c *config.Config) {
		c.Limits.MaxSessionCount = 4
		c.Redundancy.ServiceLevelInterval = interval
	}, func(s *Server) { s.red.sampler = redundancy.NewSampler(smoothingIntervals*interval, nil) })
	levelIs := func(c *opcua.Client, want byte) {
		t.Helper()
		require.Eventually(t, func() bool { return serviceLevel(t, ctx, c) == want }, 5*time.Second, interval,
			"ServiceLevel %d", want)
	}
	clients := []*opcua.Client{redundancyClient(t, ctx, ss.url)}
	levelIs(clients[0], redundancy.Level(redundancy.Healthy, 0.25)) // 242
	for range 3 {
		clients = append(clients, redundancyClient(t, ctx, ss.url))
	}
	levelIs(clients[0], 200)
	for _, c := range clients[1:] {
		require.NoError(t, c.Close(ctx))
	}
	levelIs(clients[0], 242)
	require.Equal(t, 1, ss.sessions.Count())
}

// TestDrain opens a session and drains: ServiceLevel reads 0 while Drain waits, Drain
// returns when its context ends with the session still there, returns when the session
// closes, and returns at once when none is left.
func TestDrain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss := serveRedundant(t, func(c *config.Config) { c.Redundancy.ServiceLevelInterval = 10 * time.Millisecond }, nil)
	require.NoError(t, ss.SetRedundancy(ua.RedundancySupportHotAndMirrored, []string{ss.cfg.Application.ApplicationURI}))
	c := redundancyClient(t, ctx, ss.url)
	require.GreaterOrEqual(t, serviceLevel(t, ctx, c), byte(200))

	const wait = 300 * time.Millisecond
	dctx, dcancel := context.WithTimeout(ctx, wait)
	defer dcancel()
	start := time.Now()
	drained := make(chan error, 1)
	go func() { drained <- ss.Drain(dctx) }()
	require.Eventually(t, func() bool { return serviceLevel(t, ctx, c) == 0 }, 5*time.Second, 10*time.Millisecond)
	err := <-drained
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "sessions left: 1")
	require.GreaterOrEqual(t, time.Since(start), wait)
	require.Equal(t, byte(0), serviceLevel(t, ctx, c), "Maintenance stays after Drain")
	ss.SetHealth(redundancy.Healthy)
	require.Equal(t, byte(0), serviceLevel(t, ctx, c), "whatever the health says")

	// A Drain that waits returns once the session closes.
	go func() { drained <- ss.Drain(ctx) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-drained:
		t.Fatalf("Drain returned with a session open: %v", err)
	default:
	}
	require.NoError(t, c.Close(ctx))
	select {
	case err := <-drained:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not return when the last session closed")
	}

	start = time.Now()
	require.NoError(t, ss.Drain(ctx))
	require.Less(t, time.Since(start), 100*time.Millisecond, "no session: at once")
}

// TestDrainOnStop stops servers with a session open: a server of a redundant set serves
// on at ServiceLevel 0 until the session closes, or until redundancy.drainTimeout; a
// lone server, or one with drainTimeout 0, stops at once.
func TestDrainOnStop(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		set     bool
		timeout time.Duration
		close   bool          // close the session while the server drains
		within  time.Duration // Serve returns this long after the stop at most
		after   time.Duration // and at least this long
	}{
		{name: "set, session closes", set: true, timeout: 10 * time.Second, close: true, within: 5 * time.Second, after: 200 * time.Millisecond},
		{name: "set, timeout", set: true, timeout: 400 * time.Millisecond, within: 5 * time.Second, after: 400 * time.Millisecond},
		{name: "set, no drain", set: true, timeout: 0, within: 2 * time.Second},
		{name: "lone", timeout: 10 * time.Second, within: 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ss := serveRedundant(t, func(c *config.Config) { c.Redundancy.DrainTimeout = tc.timeout }, nil)
			if tc.set {
				require.NoError(t, ss.SetRedundancy(ua.RedundancySupportHotAndMirrored, []string{ss.cfg.Application.ApplicationURI, "urn:b"}))
			}
			c := redundancyClient(t, ctx, ss.url)
			require.NotZero(t, serviceLevel(t, ctx, c))
			stopped := time.Now()
			ss.stop()
			if tc.close {
				require.Eventually(t, func() bool { return serviceLevel(t, ctx, c) == 0 }, 5*time.Second, 10*time.Millisecond,
					"the draining server serves on at ServiceLevel 0")
				time.Sleep(tc.after - time.Since(stopped))
				select {
				case err := <-ss.served:
					t.Fatalf("Serve returned during the drain: %v", err)
				default:
				}
				require.NoError(t, c.Close(ctx))
			}
			select {
			case err := <-ss.served:
				require.NoError(t, err)
				ss.served <- err // for the cleanup
			case <-time.After(tc.within):
				t.Fatalf("Serve did not return within %v of the stop", tc.within)
			}
			require.GreaterOrEqual(t, time.Since(stopped), tc.after)
		})
	}
}

// TestSetRedundancyConcurrent joins and leaves a set from several goroutines while the
// health changes and the object is browsed (under -race), then checks that the object
// came out whole: one TypeDefinition, the ServerUriArray referenced once from each end.
func TestSetRedundancyConcurrent(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	require.NoError(t, cfg.Validate())
	srv, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer srv.Close()
	self := cfg.Application.ApplicationURI
	browse := func(node uint32) []ua.ReferenceDescription {
		op := &nodemgr.BrowseOp{
			Items:   []ua.BrowseDescription{{NodeId: ns0Node(node), BrowseDirection: ua.BrowseDirectionBoth, ResultMask: uint32(ua.BrowseResultMaskAll)}},
			Results: make([]nodemgr.BrowseResult, 1),
		}
		srv.space.Browse(context.Background(), op, func() {})
		return op.Results[0].References
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				switch g {
				case 0, 1:
					if i%2 == g {
						assert.NoError(t, srv.SetRedundancy(ua.RedundancySupportHotAndMirrored, []string{self, "urn:b"}))
					} else {
						assert.NoError(t, srv.SetRedundancy(ua.RedundancySupportNone, nil))
					}
				case 2:
					srv.SetHealth(redundancy.Health(i % 3))
				case 3:
					browse(id.Server_ServerRedundancy)
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, srv.SetRedundancy(ua.RedundancySupportHot, []string{self}))
	count := func(refs []ua.ReferenceDescription, typ, target uint32, forward bool) int {
		n := 0
		for _, r := range refs {
			if r.ReferenceTypeId == ns0Node(typ) && r.NodeId.NodeId == ns0Node(target) && r.IsForward == forward {
				n++
			}
		}
		return n
	}
	refs := browse(id.Server_ServerRedundancy)
	require.Len(t, refs, 4, "TypeDefinition, two Properties, the Server")
	require.Equal(t, 1, count(refs, id.HasTypeDefinition, id.NonTransparentRedundancyType, true))
	require.Equal(t, 1, count(refs, id.HasProperty, id.Server_ServerRedundancy_ServerUriArray, true))
	require.Equal(t, 1, count(browse(id.Server_ServerRedundancy_ServerUriArray), id.HasProperty, id.Server_ServerRedundancy, false))
	require.Zero(t, count(browse(id.ServerRedundancyType), id.HasTypeDefinition, id.Server_ServerRedundancy, false))
	require.Equal(t, 1, count(browse(id.NonTransparentRedundancyType), id.HasTypeDefinition, id.Server_ServerRedundancy, false))
}
