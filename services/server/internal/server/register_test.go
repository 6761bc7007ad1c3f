package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// TestRegisterNodes registers and unregisters nodes through gopcua: the registered ids
// are usable in a Read, no nodes is BadNothingToDo and more than
// OperationLimits.MaxNodesPerRegisterNodes is BadTooManyOperations, for both services.
func TestRegisterNodes(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.OperationLimits.MaxNodesPerRegisterNodes = 2
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)

	ids := []*ua.NodeID{ua.NewNumericNodeID(0, 2258), ua.NewStringNodeID(1, "Demo.Scalar_Int32")}
	reg, err := c.RegisterNodes(ctx, &ua.RegisterNodesRequest{NodesToRegister: ids})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, reg.ResponseHeader.ServiceResult)
	require.Len(t, reg.RegisteredNodeIDs, 2)
	read := &ua.ReadRequest{}
	for i, id := range reg.RegisteredNodeIDs {
		require.Equal(t, ids[i].String(), id.String())
		read.NodesToRead = append(read.NodesToRead, &ua.ReadValueID{NodeID: id, AttributeID: ua.AttributeIDValue})
	}
	rr, err := c.Read(ctx, read)
	require.NoError(t, err)
	for _, r := range rr.Results {
		require.Equal(t, ua.StatusOK, r.Status)
	}
	un, err := c.UnregisterNodes(ctx, &ua.UnregisterNodesRequest{NodesToUnregister: reg.RegisteredNodeIDs})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, un.ResponseHeader.ServiceResult)

	_, err = c.RegisterNodes(ctx, &ua.RegisterNodesRequest{})
	require.ErrorIs(t, err, ua.StatusBadNothingToDo)
	_, err = c.UnregisterNodes(ctx, &ua.UnregisterNodesRequest{})
	require.ErrorIs(t, err, ua.StatusBadNothingToDo)
	three := append(ids, ua.NewNumericNodeID(0, 2259))
	_, err = c.RegisterNodes(ctx, &ua.RegisterNodesRequest{NodesToRegister: three})
	require.ErrorIs(t, err, ua.StatusBadTooManyOperations)
	_, err = c.UnregisterNodes(ctx, &ua.UnregisterNodesRequest{NodesToUnregister: three})
	require.ErrorIs(t, err, ua.StatusBadTooManyOperations)
}
