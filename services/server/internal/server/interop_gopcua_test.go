package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"
)

// interopChannels are the secure channels issue 4 asks every client to open.
var interopChannels = []struct {
	name   string
	policy string
	mode   ua.MessageSecurityMode
}{
	{"None", ua.SecurityPolicyURINone, ua.MessageSecurityModeNone},
	{"Basic256Sha256_SignAndEncrypt", ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt},
	{"Aes256Sha256RsaPss_Sign", ua.SecurityPolicyURIAes256Sha256RsaPss, ua.MessageSecurityModeSign},
}

// TestInteropGopcua is issue 4's interoperability proof for gopcua's client: each of the
// three channels with each of the three logins reads ServerStatus; on Basic256Sha256 the
// client browses all of namespace 0 from Root through continuation points; on
// Aes256_Sha256_RsaPss it writes and reads back every demo variable, calls Demo/Add and
// checks the StatusCode of each error case; a wrong password is BadUserAccessDenied.
//
// The default certificate token policy uses the channel's SecurityPolicy, so on None no
// user token signature is possible and the server rejects every X509 token; None/x509
// runs against a second server whose certificate token names Basic256Sha256, as the
// username token does by default.
func TestInteropGopcua(t *testing.T) {
	t.Parallel()
	id := newInteropIdentity(t)
	ts := interopServer(t, id)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	app := []opcua.Option{opcua.Certificate(id.appDER), opcua.PrivateKey(id.appKey)}
	logins := []struct {
		name string
		typ  ua.UserTokenType
		opts []opcua.Option
	}{
		{"anonymous", ua.UserTokenTypeAnonymous, nil},
		{"username", ua.UserTokenTypeUserName, []opcua.Option{opcua.AuthUsername(interopUser, interopPassword)}},
		{"x509", ua.UserTokenTypeCertificate, []opcua.Option{opcua.AuthCertificate(id.userDER), opcua.AuthPrivateKey(id.userKey)}},
	}
	for i, ch := range interopChannels {
		for j, login := range logins {
			t.Run(ch.name+"/"+login.name, func(t *testing.T) {
				opts := append(append([]opcua.Option{}, app...), login.opts...)
				c := connect(t, ctx, ts.URL, ch.policy, ch.mode, login.typ, opts...)
				defer func() { require.NoError(t, c.Close(ctx)) }()
				gopcuaServerStatus(t, ctx, c)
				switch {
				case i == 1 && j == 1:
					gopcuaBrowseChecks(t, ctx, c)
				case i == 2 && j == 2:
					gopcuaServiceChecks(t, ctx, c)
				}
			})
		}
	}
	t.Run("wrong password", func(t *testing.T) {
		err := connectErr(t, ctx, ts.URL, ua.UserTokenTypeUserName, append([]opcua.Option{opcua.AuthUsername(interopUser, "wrong")}, app...)...)
		require.ErrorIs(t, err, ua.StatusBadUserAccessDenied)
	})
}

// gopcuaServerStatus reads ServerStatus and checks the decoded structure.
func gopcuaServerStatus(t *testing.T, ctx context.Context, c *opcua.Client) {
	t.Helper()
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{readValueID(2256, ua.AttributeIDValue)}})
	require.NoError(t, err)
	require.Len(t, resp.Results, 1)
	require.Equal(t, ua.StatusOK, resp.Results[0].Status)
	eo, ok := resp.Results[0].Value.Value().(*ua.ExtensionObject)
	require.True(t, ok, "ServerStatus is %T", resp.Results[0].Value.Value())
	st, ok := eo.Value.(*ua.ServerStatusDataType)
	require.True(t, ok, "ServerStatus body is %T", eo.Value)
	require.Equal(t, ua.ServerStateRunning, st.State)
	require.WithinDuration(t, time.Now(), st.CurrentTime, 10*time.Second)
	require.Equal(t, "urn:uastack.dev:server", st.BuildInfo.ProductURI)

	// A client that polls sends the same request but for its Timestamp and RequestHandle,
	// which the channel answers without decoding it again: each answer is its own.
	var last time.Time
	var handles []uint32
	for range 3 {
		time.Sleep(5 * time.Millisecond)
		resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{readValueID(2258, ua.AttributeIDValue)}})
		require.NoError(t, err)
		require.Len(t, resp.Results, 1)
		now, ok := resp.Results[0].Value.Value().(time.Time)
		require.True(t, ok, "CurrentTime is %T", resp.Results[0].Value.Value())
		require.True(t, now.After(last), "CurrentTime %v after %v", now, last)
		last = now
		handles = append(handles, resp.ResponseHeader.RequestHandle)
	}
	require.NotEqual(t, handles[0], handles[1])
	require.NotEqual(t, handles[1], handles[2])
}

// gopcuaDemoIndex returns the namespace index of urn:uastack:demo.
func gopcuaDemoIndex(t *testing.T, ctx context.Context, c *opcua.Client) uint16 {
	t.Helper()
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{readValueID(2255, ua.AttributeIDValue)}})
	require.NoError(t, err)
	uris, ok := resp.Results[0].Value.Value().([]string)
	require.True(t, ok, "NamespaceArray is %T", resp.Results[0].Value.Value())
	for i, u := range uris {
		if u == "urn:uastack:demo" {
			return uint16(i)
		}
	}
	t.Fatalf("urn:uastack:demo not in NamespaceArray %v", uris)
	return 0
}

func hierarchicalFrom(id *ua.NodeID) *ua.BrowseDescription {
	return &ua.BrowseDescription{
		NodeID:          id,
		BrowseDirection: ua.BrowseDirectionForward,
		ReferenceTypeID: ua.NewNumericNodeID(0, 33), // HierarchicalReferences
		IncludeSubtypes: true,
		ResultMask:      uint32(ua.BrowseResultMaskAll),
	}
}

// interopWalk visits every node reachable from Root through forward hierarchical
// references, browsing at most interopMaxBrowse nodes per request with perNode references
// per node and following every continuation point with BrowseNext. It returns the
// visited node ids and the number of BrowseNext requests.
func interopWalk(t *testing.T, ctx context.Context, c *opcua.Client, perNode uint32) (map[string]bool, int) {
	t.Helper()
	root := ua.NewNumericNodeID(0, 84)
	visited := map[string]bool{root.String(): true}
	queue := []*ua.NodeID{root}
	nexts := 0
	take := func(where string, r *ua.BrowseResult, cps *[][]byte) {
		t.Helper()
		require.Equal(t, ua.StatusOK, r.StatusCode, where) // never BadNoContinuationPoints
		if perNode > 0 {
			require.LessOrEqual(t, len(r.References), int(perNode), where)
		}
		for _, ref := range r.References {
			require.Zero(t, ref.NodeID.ServerIndex, where)
			if id := ref.NodeID.NodeID.String(); !visited[id] {
				visited[id] = true
				queue = append(queue, ref.NodeID.NodeID)
			}
		}
		if len(r.ContinuationPoint) > 0 {
			*cps = append(*cps, r.ContinuationPoint)
		}
	}
	for len(queue) > 0 {
		batch := queue[:min(interopMaxBrowse, len(queue))]
		queue = queue[len(batch):]
		req := &ua.BrowseRequest{View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)}, RequestedMaxReferencesPerNode: perNode}
		for _, id := range batch {
			req.NodesToBrowse = append(req.NodesToBrowse, hierarchicalFrom(id))
		}
		resp, err := c.Browse(ctx, req)
		require.NoError(t, err)
		require.Len(t, resp.Results, len(batch))
		var cps [][]byte
		for k, r := range resp.Results {
			take("browse "+batch[k].String(), r, &cps)
		}
		for len(cps) > 0 {
			next, err := c.BrowseNext(ctx, &ua.BrowseNextRequest{ContinuationPoints: cps})
			nexts++
			require.NoError(t, err)
			require.Len(t, next.Results, len(cps))
			cps = nil
			for _, r := range next.Results {
				take("browse next", r, &cps)
			}
		}
	}
	return visited, nexts
}

// gopcuaBrowseChecks browses all of namespace 0 in steps of interopPerNode references and
// compares the result with the tables; then shows that no continuation point was left
// behind (the session still has all interopMaxCPs), that the limit is enforced, that
// release works and that a released continuation point is invalid.
func gopcuaBrowseChecks(t *testing.T, ctx context.Context, c *opcua.Client) {
	t.Helper()
	visited, nexts := interopWalk(t, ctx, c, interopPerNode)
	requireHierarchy(t, visited, gopcuaDemoIndex(t, ctx, c))
	require.Greater(t, nexts, 100, "the browse should have needed BrowseNext")
	unlimited, _ := interopWalk(t, ctx, c, 0)
	require.Equal(t, sortedKeys(unlimited), sortedKeys(visited))
	t.Logf("full browse: %d nodes, %d BrowseNext requests", len(visited), nexts)

	// Root has three hierarchical references: one per node leaves a continuation point each.
	browseRoot := func(n int) *ua.BrowseResponse {
		t.Helper()
		req := &ua.BrowseRequest{View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)}, RequestedMaxReferencesPerNode: 1}
		for range n {
			req.NodesToBrowse = append(req.NodesToBrowse, hierarchicalFrom(ua.NewNumericNodeID(0, 84)))
		}
		resp, err := c.Browse(ctx, req)
		require.NoError(t, err)
		require.Len(t, resp.Results, n)
		return resp
	}
	held := browseRoot(interopMaxCPs)
	var cps [][]byte
	for _, r := range held.Results {
		require.Equal(t, ua.StatusOK, r.StatusCode, "a continuation point leaked from the full browse")
		require.Len(t, r.References, 1)
		require.NotEmpty(t, r.ContinuationPoint)
		cps = append(cps, r.ContinuationPoint)
	}
	over := browseRoot(1).Results[0]
	require.Equal(t, ua.StatusBadNoContinuationPoints, over.StatusCode)
	rel, err := c.BrowseNext(ctx, &ua.BrowseNextRequest{ReleaseContinuationPoints: true, ContinuationPoints: cps})
	require.NoError(t, err)
	require.Len(t, rel.Results, len(cps))
	for _, r := range rel.Results {
		require.Equal(t, ua.StatusOK, r.StatusCode)
		require.Empty(t, r.References)
		require.Empty(t, r.ContinuationPoint)
	}
	again, err := c.BrowseNext(ctx, &ua.BrowseNextRequest{ContinuationPoints: cps[:1]})
	require.NoError(t, err)
	require.Equal(t, ua.StatusBadContinuationPointInvalid, again.Results[0].StatusCode)
	for _, r := range browseRoot(interopMaxCPs).Results {
		require.Equal(t, ua.StatusOK, r.StatusCode, "released continuation points were not freed")
		cps = append(cps[:0], r.ContinuationPoint)
	}
	rel, err = c.BrowseNext(ctx, &ua.BrowseNextRequest{ReleaseContinuationPoints: true, ContinuationPoints: cps})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, rel.Results[0].StatusCode)
}

// gopcuaServiceChecks writes and reads back every demo variable, calls Demo/Add and checks
// the StatusCode of an unknown node, an invalid attribute, bad index ranges, a write of
// the wrong type and too many operations.
func gopcuaServiceChecks(t *testing.T, ctx context.Context, c *opcua.Client) {
	t.Helper()
	ns := gopcuaDemoIndex(t, ctx, c)
	node := func(name string) *ua.NodeID { return ua.NewStringNodeID(ns, name) }
	valueOf := func(id *ua.NodeID, rng string) *ua.ReadValueID {
		return &ua.ReadValueID{NodeID: id, AttributeID: ua.AttributeIDValue, IndexRange: rng}
	}

	// Write every Scalar_ and Array_ variable, then read them back. gopcua v0.8.0 encodes
	// an array of ByteString without its elements, so Array_ByteString is only read.
	var writes []*ua.WriteValue
	var reads []*ua.ReadValueID
	var wants []any
	var types []ua.TypeID
	for k, w := range demoWrites {
		typ := ua.TypeID(k + 1) // built-in type ids 1..21 in demoWrites order
		writes = append(writes, writeValue(node("Demo.Scalar_"+w.typ), w.scalar))
		reads = append(reads, valueOf(node("Demo.Scalar_"+w.typ), ""))
		wants = append(wants, w.scalar)
		types = append(types, typ)
		if w.array != nil {
			writes = append(writes, writeValue(node("Demo.Array_"+w.typ), w.array))
			reads = append(reads, valueOf(node("Demo.Array_"+w.typ), ""))
			wants = append(wants, w.array)
			types = append(types, typ)
		}
	}
	require.Len(t, writes, 2*len(demoWrites)-1)
	before, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: reads})
	require.NoError(t, err)
	wr, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: writes})
	require.NoError(t, err)
	require.Len(t, wr.Results, len(writes))
	for k, code := range wr.Results {
		require.Equal(t, ua.StatusOK, code, "write %s", writes[k].NodeID)
	}
	after, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: reads})
	require.NoError(t, err)
	require.Len(t, after.Results, len(reads))
	for k, want := range wants {
		id := reads[k].NodeID.String()
		require.Equal(t, ua.StatusOK, before.Results[k].Status, id)
		require.Equal(t, ua.StatusOK, after.Results[k].Status, id)
		got := after.Results[k].Value.Value()
		require.Equal(t, types[k], after.Results[k].Value.Type(), id)
		require.Equal(t, strings.HasPrefix(reads[k].NodeID.StringID(), "Demo.Array_"), after.Results[k].Value.Has(ua.VariantArrayValues), id)
		switch want := want.(type) {
		case time.Time: // DateTime has 100 ns ticks
			require.True(t, want.Truncate(100*time.Nanosecond).Equal(got.(time.Time)), "%s: %v", id, got)
		case []time.Time:
			require.Len(t, got, len(want), id)
			for m := range want {
				require.True(t, want[m].Equal(got.([]time.Time)[m]), id)
			}
		default:
			require.Equal(t, canonical(want), canonical(got), id)
		}
		require.NotEqual(t, canonical(before.Results[k].Value.Value()), canonical(got), "%s: the write changed nothing", id)
	}
	bs, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{valueOf(node("Demo.Array_ByteString"), "")}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, bs.Results[0].Status)
	require.IsType(t, [][]byte{}, bs.Results[0].Value.Value())

	// The demo method.
	res, err := c.Call(ctx, &ua.CallMethodRequest{ObjectID: node("Demo"), MethodID: node("Demo.Add"),
		InputArguments: []*ua.Variant{ua.MustVariant(2.5), ua.MustVariant(4.0)}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, res.StatusCode)
	require.Len(t, res.OutputArguments, 1)
	require.Equal(t, 6.5, res.OutputArguments[0].Value())
	res, err = c.Call(ctx, &ua.CallMethodRequest{ObjectID: node("Demo"), MethodID: node("Demo.Add"),
		InputArguments: []*ua.Variant{ua.MustVariant(2.5), ua.MustVariant("4")}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusBadInvalidArgument, res.StatusCode)
	require.Equal(t, []ua.StatusCode{ua.StatusOK, ua.StatusBadTypeMismatch}, res.InputArgumentResults)

	// Per-item errors of Read and Write. Array_Int32 holds two elements now.
	rr, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{
		valueOf(node("Demo.Nope"), ""),
		{NodeID: node("Demo.Scalar_Int32"), AttributeID: ua.AttributeID(999)},
		valueOf(node("Demo"), ""), // an Object has no Value
		valueOf(node("Demo.Array_Int32"), "1:0"),
		valueOf(node("Demo.Array_Int32"), "5:7"),
		valueOf(node("Demo.Array_Int32"), "1"),
	}})
	require.NoError(t, err)
	codes := make([]ua.StatusCode, len(rr.Results))
	for k, r := range rr.Results {
		codes[k] = r.Status
	}
	require.Equal(t, []ua.StatusCode{
		ua.StatusBadNodeIDUnknown, ua.StatusBadAttributeIDInvalid, ua.StatusBadAttributeIDInvalid,
		ua.StatusBadIndexRangeInvalid, ua.StatusBadIndexRangeNoData, ua.StatusOK,
	}, codes)
	require.Equal(t, []int32{7}, rr.Results[5].Value.Value())

	ranged := func(id *ua.NodeID, rng string, v any) *ua.WriteValue {
		w := writeValue(id, v)
		w.IndexRange = rng
		return w
	}
	wr, err = c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{
		writeValue(node("Demo.Nope"), int32(1)),
		writeValue(node("Demo.Scalar_Int32"), "x"),
		writeValue(node("Demo.Scalar_Int32"), int64(1)),
		ranged(node("Demo.Array_Int32"), "1:0", []int32{1, 2}),
		ranged(node("Demo.Array_Int32"), "5:6", []int32{1, 2}),
		ranged(node("Demo.Array_Int32"), "1", []int32{8}),
	}})
	require.NoError(t, err)
	require.Equal(t, []ua.StatusCode{
		ua.StatusBadNodeIDUnknown, ua.StatusBadTypeMismatch, ua.StatusBadTypeMismatch,
		ua.StatusBadIndexRangeInvalid, ua.StatusBadIndexRangeNoData, ua.StatusOK,
	}, wr.Results)

	// Too many operations: one over each limit is a service fault.
	many := make([]*ua.ReadValueID, interopMaxRead+1)
	for k := range many {
		many[k] = readValueID(2259, ua.AttributeIDValue)
	}
	_, err = c.Read(ctx, &ua.ReadRequest{NodesToRead: many})
	require.ErrorIs(t, err, ua.StatusBadTooManyOperations)
	rr, err = c.Read(ctx, &ua.ReadRequest{NodesToRead: many[:interopMaxRead]})
	require.NoError(t, err)
	require.Len(t, rr.Results, interopMaxRead)
	manyW := make([]*ua.WriteValue, interopMaxWrite+1)
	for k := range manyW {
		manyW[k] = writeValue(node("Demo.Scalar_Int32"), int32(k))
	}
	_, err = c.Write(ctx, &ua.WriteRequest{NodesToWrite: manyW})
	require.ErrorIs(t, err, ua.StatusBadTooManyOperations)
	manyB := &ua.BrowseRequest{View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)}}
	for range interopMaxBrowse + 1 {
		manyB.NodesToBrowse = append(manyB.NodesToBrowse, hierarchicalFrom(ua.NewNumericNodeID(0, 85)))
	}
	_, err = c.Browse(ctx, manyB)
	require.ErrorIs(t, err, ua.StatusBadTooManyOperations)
}
