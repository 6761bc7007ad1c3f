package server_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// TestTransportDeadlinesFromConfig checks that the limits.* transport settings reach the
// channels: peers that send a Hello and then nothing fill limits.maxChannelCount, the
// Acknowledge they get offers limits.maxRetainedBytes as MaxMessageSize (under SharedOnly
// a channel's share is the whole budget), each gets an ERR Bad_Timeout once
// limits.handshakeTimeout has passed, and then a gopcua client connects and reads.
func TestTransportDeadlinesFromConfig(t *testing.T) {
	t.Parallel()
	const channels, handshake, share = 4, 500 * time.Millisecond, 100000
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Limits.MaxChannelCount = channels
		c.Limits.IsolationProfile = "SharedOnly" // no reserves: the peers can take every slot
		c.Limits.HandshakeTimeout = handshake
		c.Limits.MaxRetainedBytes, c.Limits.MaxRetainedBytesPerChannel = share, share
	}})
	addr := strings.TrimPrefix(ts.URL, "opc.tcp://")
	start := time.Now()
	peers := make([]net.Conn, channels)
	for i := range peers {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
		_, err = nc.Write((&uacp.Hello{ReceiveBufferSize: 1 << 16, SendBufferSize: 1 << 16, EndpointURL: ts.URL}).Append(nil))
		require.NoError(t, err)
		ack := make([]byte, uacp.AcknowledgeSize)
		_, err = io.ReadFull(nc, ack)
		require.NoError(t, err)
		require.Equal(t, "ACKF", string(ack[:4]))
		require.EqualValues(t, share, binary.LittleEndian.Uint32(ack[20:]), "MaxMessageSize")
		peers[i] = nc
	}
	for i, nc := range peers {
		b, err := io.ReadAll(nc)
		require.NoError(t, err, "peer %d", i)
		m, err := uacp.DecodeMessage(b)
		require.NoError(t, err, "peer %d got %q", i, b)
		require.Equal(t, status.BadTimeout, m.(*uacp.Error).Code, "peer %d", i)
		nc.Close() // as Part 6 §7.1.5 asks of a client after ERR
	}
	require.GreaterOrEqual(t, time.Since(start), handshake)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Eventually(t, func() bool {
		_, err := opcua.GetEndpoints(ctx, ts.URL)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the slots are free again")
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{readValueID(2258, ua.AttributeIDValue)}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, resp.Results[0].Status)
}
