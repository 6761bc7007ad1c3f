package clienttest

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua/id"
)

// stallProxy forwards TCP both ways until stall is set; from then on it swallows what the
// server sends, as a server that stopped answering would look to the client.
type stallProxy struct {
	ln    net.Listener
	stall atomic.Bool
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			t.Cleanup(func() { in.Close(); out.Close() })
			go func() { _, _ = io.Copy(out, in) }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := out.Read(buf)
					if err != nil {
						in.Close()
						return
					}
					if !p.stall.Load() {
						if _, err := in.Write(buf[:n]); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return p
}

func (p *stallProxy) URL() string { return "opc.tcp://" + p.ln.Addr().String() }

// TestRequestTimeout checks client.RequestTimeout against a server that stops answering:
// the call fails with BadTimeout, not before the timeout and not long after, and a call
// with a deadline of its own follows that deadline instead.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ts, trust := testServer(t, nil)
	p := newStallProxy(t, ts.URL[len("opc.tcp://"):])
	const timeout = 300 * time.Millisecond
	c := dial(t, ctx, p.URL(), dialOpts(t, securities[0], trust, client.RequestTimeout(timeout), client.KeepAlive(-1))...)
	_, err := c.ReadValue(context.Background(), n0(id.Server_ServerStatus_State))
	require.NoError(t, err)

	p.stall.Store(true)
	for range 3 { // the pooled timer is reused
		start := time.Now()
		_, err = c.ReadValue(context.Background(), n0(id.Server_ServerStatus_State))
		took := time.Since(start)
		require.ErrorIs(t, err, status.BadTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.GreaterOrEqual(t, took, timeout)
		require.Less(t, took, timeout+2*time.Second)
	}

	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	_, err = c.ReadValue(short, n0(id.Server_ServerStatus_State))
	require.ErrorIs(t, err, status.BadTimeout)
	require.Less(t, time.Since(start), timeout, "the caller's own deadline comes first")
}
