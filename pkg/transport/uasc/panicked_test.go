package uasc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// TestPanickedEndsOneConnection: a panic on a connection's own goroutine (here a handler
// answering inline) reaches ServerConfig.Panicked with its stack and closes that
// connection only; the server serves the next client.
func TestPanickedEndsOneConnection(t *testing.T) {
	var mu sync.Mutex
	var got []any
	var stack []byte
	ts := startServerWith(t, func(c *ServerConfig) {
		c.Panicked = func(v any, s []byte) {
			mu.Lock()
			defer mu.Unlock()
			got, stack = append(got, v), s
		}
	}, func(ctx context.Context, r Request) {
		if m, ok := r.Message.(*ua.ReadRequest); ok && len(m.NodesToRead) > 0 && m.NodesToRead[0].IndexRange == "panic" {
			panic("handler bug")
		}
		echoHandler(ctx, r)
	})
	cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)
	read(t, cc, 1, "before")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cc.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{Timestamp: codec.Now(), RequestHandle: 2},
		NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13, IndexRange: "panic"}}})
	require.Error(t, err, "the connection that panicked is closed")
	// The connection closes as the panic unwinds, before Panicked hears of it.
	snapshot := func() ([]any, string) {
		mu.Lock()
		defer mu.Unlock()
		return append([]any(nil), got...), string(stack)
	}
	require.Eventually(t, func() bool { g, _ := snapshot(); return len(g) > 0 }, 5*time.Second, time.Millisecond)
	g, st := snapshot()
	require.Equal(t, []any{"handler bug"}, g)
	require.Contains(t, st, "TestPanickedEndsOneConnection")
	requireServing(t, ts)
}
