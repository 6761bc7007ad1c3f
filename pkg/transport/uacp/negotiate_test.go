package uacp

import (
	"testing"

	"github.com/stretchr/testify/require"
	"uastack.dev/pkg/status"
)

func TestNegotiateServer(t *testing.T) {
	t.Parallel()
	server := Limits{ReceiveBufferSize: 65536, SendBufferSize: 65536, MaxMessageSize: 1 << 22, MaxChunkCount: 64}
	cases := []struct {
		name           string
		hel            Hello
		recv, send     uint32 // server's negotiated receive and send buffers
		maxSendMessage uint32
		maxSendChunks  uint32
	}{
		{"equal", Hello{ReceiveBufferSize: 65536, SendBufferSize: 65536}, 65536, 65536, 0, 0},
		{"client smaller", Hello{ReceiveBufferSize: 8192, SendBufferSize: 16384, MaxMessageSize: 100000, MaxChunkCount: 7}, 16384, 8192, 100000, 7},
		{"client larger", Hello{ReceiveBufferSize: 1 << 20, SendBufferSize: 1 << 20}, 65536, 65536, 0, 0},
		{"client huge", Hello{ReceiveBufferSize: 0xFFFFFFFF, SendBufferSize: 0xFFFFFFFF, MaxMessageSize: 0xFFFFFFFF, MaxChunkCount: 0xFFFFFFFF}, 65536, 65536, 0xFFFFFFFF, 0xFFFFFFFF},
		{"asymmetric", Hello{ReceiveBufferSize: 20000, SendBufferSize: 1 << 20}, 65536, 20000, 0, 0},
		{"future version", Hello{ProtocolVersion: 7, ReceiveBufferSize: 8192, SendBufferSize: 8192}, 8192, 8192, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ack, n, err := NegotiateServer(server, &tc.hel)
			require.NoError(t, err)
			require.Equal(t, &Acknowledge{
				ProtocolVersion: 0, ReceiveBufferSize: tc.recv, SendBufferSize: tc.send,
				MaxMessageSize: 1 << 22, MaxChunkCount: 64,
			}, ack)
			require.Equal(t, Negotiated{
				ReceiveBufferSize: tc.recv, SendBufferSize: tc.send,
				MaxReceiveMessageSize: 1 << 22, MaxReceiveChunkCount: 64,
				MaxSendMessageSize: tc.maxSendMessage, MaxSendChunkCount: tc.maxSendChunks,
			}, n)
			// The server never receives more than the client sends, nor sends more than it receives.
			require.LessOrEqual(t, ack.ReceiveBufferSize, tc.hel.SendBufferSize)
			require.LessOrEqual(t, ack.SendBufferSize, tc.hel.ReceiveBufferSize)

			// The client's view mirrors the server's.
			cn, err := NegotiateClient(Limits{ReceiveBufferSize: min(tc.hel.ReceiveBufferSize, MaxBufferSize), SendBufferSize: min(tc.hel.SendBufferSize, MaxBufferSize)}, &tc.hel, ack)
			require.NoError(t, err)
			require.Equal(t, n.ReceiveBufferSize, cn.SendBufferSize)
			require.Equal(t, n.SendBufferSize, cn.ReceiveBufferSize)
			require.Equal(t, n.MaxReceiveMessageSize, cn.MaxSendMessageSize)
			require.Equal(t, n.MaxSendMessageSize, cn.MaxReceiveMessageSize)
		})
	}
}

func TestNegotiateServerRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		hel  Hello
		want status.Code
	}{
		{"zero sizes", Hello{}, status.BadTcpNotEnoughResources},
		{"receive below 8192", Hello{ReceiveBufferSize: 8191, SendBufferSize: 8192}, status.BadTcpNotEnoughResources},
		{"send below 8192", Hello{ReceiveBufferSize: 8192, SendBufferSize: 1024}, status.BadTcpNotEnoughResources},
		{"URL too long", Hello{ReceiveBufferSize: 8192, SendBufferSize: 8192, EndpointURL: string(make([]byte, 4097))}, status.BadTcpEndpointUrlInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := NegotiateServer(Limits{}, &tc.hel)
			require.ErrorIs(t, err, tc.want)
		})
	}
	// ECC peers may be admitted down to 1024 bytes.
	_, n, err := NegotiateServer(Limits{MinBufferSize: MinECCBufferSize}, &Hello{ReceiveBufferSize: 1024, SendBufferSize: 2048})
	require.NoError(t, err)
	require.Equal(t, uint32(2048), n.ReceiveBufferSize)
	require.Equal(t, uint32(1024), n.SendBufferSize)
}

func TestNegotiateClientRejects(t *testing.T) {
	t.Parallel()
	hel := &Hello{ReceiveBufferSize: 65536, SendBufferSize: 65536}
	_, err := NegotiateClient(Limits{}, hel, &Acknowledge{ProtocolVersion: 1, ReceiveBufferSize: 8192, SendBufferSize: 8192})
	require.ErrorIs(t, err, status.BadProtocolVersionUnsupported)
	_, err = NegotiateClient(Limits{}, hel, &Acknowledge{ReceiveBufferSize: 4096, SendBufferSize: 8192})
	require.ErrorIs(t, err, status.BadTcpNotEnoughResources)
	// A server granting more than asked is held to what was asked.
	n, err := NegotiateClient(Limits{}, hel, &Acknowledge{ReceiveBufferSize: 1 << 30, SendBufferSize: 1 << 30})
	require.NoError(t, err)
	require.Equal(t, uint32(65536), n.ReceiveBufferSize)
	require.Equal(t, uint32(65536), n.SendBufferSize)
}

func TestLimitsValidation(t *testing.T) {
	t.Parallel()
	for _, l := range []Limits{
		{ReceiveBufferSize: 100},
		{SendBufferSize: MaxBufferSize + 1},
		{MinBufferSize: 512},
	} {
		_, _, err := NegotiateServer(l, &Hello{ReceiveBufferSize: 8192, SendBufferSize: 8192})
		require.ErrorIs(t, err, status.BadTcpInternalError, "%+v", l)
	}
}
