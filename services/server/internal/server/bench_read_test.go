package server

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/demo"
	"uastack.dev/services/server/internal/telemetry"
)

// readValues returns n Value reads cycling over nodes.
func readValues(nodes []codec.NodeId, n int) []ua.ReadValueId {
	out := make([]ua.ReadValueId, n)
	for i := range out {
		out[i] = ua.ReadValueId{NodeId: nodes[i%len(nodes)], AttributeId: 13}
	}
	return out
}

// ns0StatusNodes are the ServerStatus children with a stored (not computed) scalar value.
var ns0StatusNodes = func() []codec.NodeId {
	var out []codec.NodeId
	for _, i := range []uint32{
		id.Server_ServerStatus_StartTime, id.Server_ServerStatus_State,
		id.Server_ServerStatus_BuildInfo_ProductName, id.Server_ServerStatus_BuildInfo_ProductUri,
		id.Server_ServerStatus_BuildInfo_ManufacturerName, id.Server_ServerStatus_BuildInfo_SoftwareVersion,
		id.Server_ServerStatus_BuildInfo_BuildNumber, id.Server_ServerStatus_BuildInfo_BuildDate,
		id.Server_ServerStatus_SecondsTillShutdown,
	} {
		out = append(out, codec.NewNumericNodeId(0, i))
	}
	return out
}()

// demoNodes are the Scalar_ and Array_ variables of the demo namespace.
var demoNodes = func() []codec.NodeId {
	var out []codec.NodeId
	for _, v := range demo.Values {
		out = append(out, demo.ID("Demo.Scalar_"+v.Type.String()), demo.ID("Demo.Array_"+v.Type.String()))
	}
	return out
}()

func benchRead(b *testing.B, nodes []codec.NodeId, n int) {
	bs := newBenchSession(b)
	body := encodeBody(b, &ua.ReadRequest{
		RequestHeader:      ua.RequestHeader{AuthenticationToken: bs.token, RequestHandle: 7, TimeoutHint: 10000},
		TimestampsToReturn: ua.TimestampsToReturnBoth,
		NodesToRead:        readValues(nodes, n),
	})
	resp := bs.run(b, body)
	rr, ok := resp.(*ua.ReadResponse)
	require.True(b, ok, "response is %T", resp)
	require.Equal(b, uint32(7), rr.ResponseHeader.RequestHandle)
	require.Len(b, rr.Results, n)
	for i, r := range rr.Results {
		require.Equal(b, status.Good, r.Status, "result %d", i)
	}
}

// BenchmarkRead1 is a Read of one Value attribute through decode, dispatch, the address
// space and the encode of the response: ns0 is ServerStatus.State (numeric NodeId),
// demo is Demo.Scalar_Int32 (string NodeId).
func BenchmarkRead1(b *testing.B) {
	b.Run("ns0", func(b *testing.B) {
		benchRead(b, []codec.NodeId{codec.NewNumericNodeId(0, id.Server_ServerStatus_State)}, 1)
	})
	b.Run("demo", func(b *testing.B) {
		benchRead(b, []codec.NodeId{demo.ID("Demo.Scalar_Int32")}, 1)
	})
}

// BenchmarkRead100 is a Read of 100 Value attributes: ns0 cycles over the stored
// ServerStatus children, demo over the demo namespace's Scalar_ and Array_ variables.
func BenchmarkRead100(b *testing.B) {
	b.Run("ns0", func(b *testing.B) { benchRead(b, ns0StatusNodes, 100) })
	b.Run("demo", func(b *testing.B) { benchRead(b, demoNodes, 100) })
}

// BenchmarkBrowseObjects is a Browse of the Objects folder (forward, hierarchical
// references and subtypes, all result fields, no continuation point).
func BenchmarkBrowseObjects(b *testing.B) {
	bs := newBenchSession(b)
	body := encodeBody(b, &ua.BrowseRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: bs.token, RequestHandle: 7},
		NodesToBrowse: []ua.BrowseDescription{{
			NodeId:          codec.NewNumericNodeId(0, id.ObjectsFolder),
			BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeId: codec.NewNumericNodeId(0, id.HierarchicalReferences),
			IncludeSubtypes: true,
			ResultMask:      uint32(ua.BrowseResultMaskAll),
		}},
	})
	resp := bs.run(b, body)
	br, ok := resp.(*ua.BrowseResponse)
	require.True(b, ok, "response is %T", resp)
	require.Len(b, br.Results, 1)
	require.Equal(b, status.Good, br.Results[0].StatusCode)
	require.NotEmpty(b, br.Results[0].References)
	b.ReportMetric(float64(len(br.Results[0].References)), "refs")
}

// TestInlineReadAllocatesNothing: a Read of the address space answered on the channel's
// goroutine, decoded into the recycled request, allocates nothing on the server's side,
// with the diagnostics on and off: dispatch, session check, read, response and the
// record of its answer time (not taken with observability.serviceLatency off).
func TestInlineReadAllocatesNothing(t *testing.T) {
	for _, tc := range []struct{ diag, latency bool }{{true, true}, {false, true}, {true, false}} {
		bs := newBenchSessionWith(t, func(c *config.Config) {
			c.Observability.DiagnosticsEnabled = tc.diag
			c.Observability.ServiceLatency = tc.latency
		})
		body := encodeBody(t, &ua.ReadRequest{
			RequestHeader:      ua.RequestHeader{AuthenticationToken: bs.token, RequestHandle: 7},
			TimestampsToReturn: ua.TimestampsToReturnBoth,
			NodesToRead:        readValues(ns0StatusNodes, 4),
		})
		ctx := context.Background()
		d := codec.NewDecoder(nil)
		d.CacheNodeIds(512)
		bs.serve(t, ctx, d, body) // warm
		var timed *telemetry.ServiceLatency
		if tc.latency {
			timed = bs.srv.latency[(*ua.ReadRequest)(nil).TypeInfo().BinaryEncoding.IntID()].h
		}
		before := timed.Count()
		allocs := testing.AllocsPerRun(200, func() { bs.serve(t, ctx, d, body) })
		require.Zero(t, allocs, "%+v", tc)
		var metrics strings.Builder
		require.NoError(t, bs.srv.WriteMetrics(&metrics))
		if tc.latency {
			require.EqualValues(t, 201, timed.Count()-before, "every Read's answer time recorded")
			require.Contains(t, metrics.String(), `opcua_server_service_duration_seconds_count{service="Read"} `)
		} else {
			require.Nil(t, bs.srv.latency)
			require.NotContains(t, metrics.String(), "opcua_server_service_duration_seconds", "observability.serviceLatency off")
		}
		rr, ok := bs.conn.lastResponse(t).(*ua.ReadResponse)
		require.True(t, ok)
		require.Len(t, rr.Results, 4)
	}
}
