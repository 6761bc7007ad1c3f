package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// TestRouteMissingCapability mounts a manager that only reads: its Write, Call and
// Browse items get the Bad codes of the nodemgr contract, beside Space items answered
// as usual.
func TestRouteMissingCapability(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := ua.RequestHeader{AuthenticationToken: ps.token}
	node := codec.NewNumericNodeId(ps.slowNS, 1)

	resp, err := ps.ch.Request(ctx, &ua.WriteRequest{RequestHeader: h, NodesToWrite: []ua.WriteValue{
		{NodeId: node, AttributeId: 13, Value: codec.DataValue{Value: codec.Int32Variant(1)}},
	}})
	require.NoError(t, err)
	require.Equal(t, []status.Code{status.BadNotWritable}, resp.(*ua.WriteResponse).Results)

	resp, err = ps.ch.Request(ctx, &ua.CallRequest{RequestHeader: h, MethodsToCall: []ua.CallMethodRequest{{ObjectId: node, MethodId: node}}})
	require.NoError(t, err)
	require.Equal(t, status.BadNotExecutable, resp.(*ua.CallResponse).Results[0].StatusCode)

	resp, err = ps.ch.Request(ctx, &ua.BrowseRequest{RequestHeader: h, NodesToBrowse: []ua.BrowseDescription{
		{NodeId: node, BrowseDirection: ua.BrowseDirectionForward},
		{NodeId: codec.NewNumericNodeId(0, id.Server), BrowseDirection: ua.BrowseDirectionForward},
	}})
	require.NoError(t, err)
	results := resp.(*ua.BrowseResponse).Results
	require.Equal(t, status.BadNodeIdUnknown, results[0].StatusCode)
	require.Equal(t, status.Good, results[1].StatusCode)
	require.NotEmpty(t, results[1].References)
}
