package uasc

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// pausedConn is a client connection whose reads stop once paused: a peer that no longer
// reads what the server sends.
type pausedConn struct {
	net.Conn
	pauseOnce, closeOnce sync.Once
	paused, closed       chan struct{}
}

func (p *pausedConn) pause() { p.pauseOnce.Do(func() { close(p.paused) }) }

func (p *pausedConn) Read(b []byte) (int, error) {
	select {
	case <-p.paused:
		<-p.closed
		return 0, net.ErrClosed
	default:
	}
	return p.Conn.Read(b)
}

func (p *pausedConn) Close() error {
	p.closeOnce.Do(func() { close(p.closed) })
	return p.Conn.Close()
}

// TestRespondNoWaitToAPeerThatStopsReading answers one request of a peer that stopped
// reading with many large responses through RespondNoWait: no call waits on the peer's
// full socket, the backlog past MaxSendBacklog ends that channel with
// BadTcpNotEnoughResources, and another channel is answered meanwhile as usual.
func TestRespondNoWaitToAPeerThatStopsReading(t *testing.T) {
	big := codec.ByteStringVariant(make([]byte, 256<<10))
	type outcome struct {
		slowest time.Duration
		err     error
		sent    int
	}
	result := make(chan outcome, 1)
	ts := startServerWith(t, func(c *ServerConfig) { c.MaxSendBacklog = 1 << 20 }, func(_ context.Context, r Request) {
		m, ok := r.Message.(*ua.ReadRequest)
		if !ok || len(m.NodesToRead) == 0 || m.NodesToRead[0].IndexRange != "flood" {
			echoHandler(context.Background(), r)
			return
		}
		resp := &ua.ReadResponse{ResponseHeader: ua.ResponseHeader{RequestHandle: m.RequestHeader.RequestHandle},
			Results: []codec.DataValue{{Value: big}}}
		var o outcome
		for o.sent = 0; o.sent < 400; o.sent++ { // 100 MiB: more than loopback buffers hold
			start := time.Now()
			err := r.RespondNoWait(resp)
			o.slowest = max(o.slowest, time.Since(start))
			if err != nil {
				o.err = err
				break
			}
		}
		result <- o
	})

	nc, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	pc := &pausedConn{Conn: nc, paused: make(chan struct{}), closed: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := uacp.Dial(ctx, pc, uacp.ClientConfig{EndpointURL: "opc.tcp://" + ts.addr})
	require.NoError(t, err)
	defer c.Close()
	cc, err := Dial(ctx, c, ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
	require.NoError(t, err)
	defer cc.Close()
	pc.pause()
	go func() {
		_, _ = cc.Request(ctx, &ua.ReadRequest{NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13, IndexRange: "flood"}}})
	}()

	other, err := dialChannel(t, ts.addr, ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
	require.NoError(t, err)
	select {
	case o := <-result:
		require.ErrorIs(t, o.err, status.BadTcpNotEnoughResources, "after %d responses", o.sent)
		require.Less(t, o.slowest, time.Second, "RespondNoWait never waits on the peer")
	case <-ctx.Done():
		t.Fatal("the flood never ended")
	}
	read(t, other, 1, "still served")
}
