package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	uacodec "uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	uaua "uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// TestServerCapabilities reads the Server object's capability Variables with gopcua
// and compares them, type included, with a configuration whose limits all differ from
// the defaults.
func TestServerCapabilities(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Limits.MaxBrowseContinuationPoints = 7
		c.Limits.MaxSessionCount = 42
		c.Limits.MaxSubscriptionCount = 43
		c.Limits.MaxMonitoredItemCount = 4400
		c.Limits.MaxMonitoredItemsPerSubscription = 440
		c.Subscriptions.MaxSubscriptionsPerSession = 44
		c.Subscriptions.MinSamplingInterval = 25 * time.Millisecond
		c.Subscriptions.MaxQueueSize = 45
		c.Encoding.MaxArrayLength = 1001
		c.Encoding.MaxStringLength = 1002
		c.Encoding.MaxByteStringLength = 1003
		c.OperationLimits = config.OperationLimits{
			MaxNodesPerRead: 111, MaxNodesPerWrite: 12, MaxNodesPerBrowse: 13, MaxNodesPerMethodCall: 14,
			MaxNodesPerTranslateBrowsePathsToNodeIds: 15, MaxNodesPerRegisterNodes: 16, MaxMonitoredItemsPerCall: 17,
		}
		// The ServiceLevel of a healthy server without the load (which this test's own
		// session and the tests beside it make): redundancy_test.go tests the load.
		c.Redundancy.ServiceLevelInterval = 0
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)

	want := []struct {
		name string
		id   uint32
		val  any
	}{
		{"ServerProfileArray", 2269, []string{"http://opcfoundation.org/UA-Profile/Server/NanoEmbeddedDevice2017"}},
		{"LocaleIdArray", 2271, []string{"en"}},
		{"MinSupportedSampleRate", 2272, float64(25)},
		{"MaxBrowseContinuationPoints", 2735, uint16(7)},
		{"MaxQueryContinuationPoints", 2736, uint16(0)},
		{"MaxHistoryContinuationPoints", 2737, uint16(10)},
		{"MaxArrayLength", 11702, uint32(1001)},
		{"MaxStringLength", 11703, uint32(1002)},
		{"MaxByteStringLength", 12911, uint32(1003)},
		{"MaxSessions", 24095, uint32(42)},
		{"MaxSubscriptions", 24096, uint32(43)},
		{"MaxMonitoredItems", 24097, uint32(4400)},
		{"MaxSubscriptionsPerSession", 24098, uint32(44)},
		{"MaxMonitoredItemsQueueSize", 31916, uint32(45)},
		{"MaxMonitoredItemsPerSubscription", 24104, uint32(440)},
		{"MaxNodesPerRead", 11705, uint32(111)},
		{"MaxNodesPerWrite", 11707, uint32(12)},
		{"MaxNodesPerMethodCall", 11709, uint32(14)},
		{"MaxNodesPerBrowse", 11710, uint32(13)},
		{"MaxNodesPerRegisterNodes", 11711, uint32(16)},
		{"MaxNodesPerTranslateBrowsePathsToNodeIds", 11712, uint32(15)},
		{"MaxNodesPerNodeManagement", 11713, uint32(0)},
		{"MaxMonitoredItemsPerCall", 11714, uint32(17)},
		{"MaxNodesPerHistoryReadData", 12165, uint32(1000)},
		{"ServiceLevel", 2267, byte(255)},
		{"Auditing", 2994, false},
		{"RedundancySupport", 3709, int32(0)},
		{"NamespaceArray", 2255, []string{"http://opcfoundation.org/UA/", "urn:uastack:demo"}},
		{"ServerArray", 2254, []string{ts.Config.Application.ApplicationURI}},
	}
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnNeither}
	for _, w := range want {
		req.NodesToRead = append(req.NodesToRead, readValueID(w.id, ua.AttributeIDValue))
	}
	req.NodesToRead = append(req.NodesToRead, readValueID(3704, ua.AttributeIDValue)) // SoftwareCertificates
	resp, err := c.Read(ctx, req)
	require.NoError(t, err)
	require.Len(t, resp.Results, len(want)+1)
	for i, w := range want {
		r := resp.Results[i]
		require.Equal(t, ua.StatusOK, r.Status, w.name)
		require.Equal(t, w.val, r.Value.Value(), w.name)
	}
	soft := resp.Results[len(want)]
	require.Equal(t, ua.StatusOK, soft.Status)
	require.Equal(t, ua.TypeIDExtensionObject, soft.Value.Type())
	require.Empty(t, soft.Value.Value())
}

// TestEncodingLimitsEnforced checks that encoding.maxStringLength, maxByteStringLength
// and maxArrayLength reach the decoder of requests: a request beyond any of them is
// answered with a ServiceFault BadEncodingLimitsExceeded, one at the limits is served,
// and the channel stays usable.
func TestEncodingLimitsEnforced(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Encoding.MaxStringLength = 64
		c.Encoding.MaxByteStringLength = 80
		c.Encoding.MaxArrayLength = 10
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := dialNone(t, ctx, ts)
	token := activate(t, ctx, ch)
	read := func(nodes ...uacodec.NodeId) (uacodec.Structure, error) {
		r := &uaua.ReadRequest{RequestHeader: uaua.RequestHeader{AuthenticationToken: token, RequestHandle: 1}}
		for _, n := range nodes {
			r.NodesToRead = append(r.NodesToRead, uaua.ReadValueId{NodeId: n, AttributeId: 13})
		}
		return ch.Request(ctx, r)
	}
	str := func(n int) uacodec.NodeId { return uacodec.NewStringNodeId(1, strings.Repeat("x", n)) }
	opaque := func(n int) uacodec.NodeId { return uacodec.NewOpaqueNodeId(1, make([]byte, n)) }
	many := func(n int) []uacodec.NodeId {
		ids := make([]uacodec.NodeId, n)
		for i := range ids {
			ids[i] = uacodec.NewNumericNodeId(0, 2258)
		}
		return ids
	}
	for _, tc := range []struct {
		name  string
		nodes []uacodec.NodeId
		ok    bool
	}{
		{"string at the limit", []uacodec.NodeId{str(64)}, true},
		{"string beyond", []uacodec.NodeId{str(65)}, false},
		{"byte string at the limit", []uacodec.NodeId{opaque(80)}, true},
		{"byte string beyond", []uacodec.NodeId{opaque(81)}, false},
		{"array at the limit", many(10), true},
		{"array beyond", many(11), false},
	} {
		resp, err := read(tc.nodes...)
		if tc.ok {
			require.NoError(t, err, tc.name)
			require.IsType(t, &uaua.ReadResponse{}, resp, tc.name)
			continue
		}
		require.ErrorIs(t, err, status.BadEncodingLimitsExceeded, tc.name)
		f, ok := resp.(*uaua.ServiceFault)
		require.True(t, ok, "%s: response is %T", tc.name, resp)
		require.Equal(t, status.BadEncodingLimitsExceeded, f.ResponseHeader.ServiceResult, tc.name)
	}
}
