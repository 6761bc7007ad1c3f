package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/bench/internal/uaserver"
)

// TestNotifySmoke runs 3 sessions × 50 items changing every 100 ms for a 2 s window
// against a real server process with the load simulation on.
func TestNotifySmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, err := uaserver.Build(ctx, t.TempDir())
	require.NoError(t, err)
	r, err := run(ctx, options{
		sessions: 3, items: 50, change: 100 * time.Millisecond, sampling: 100 * time.Millisecond,
		publishing: 100 * time.Millisecond, queue: 1, publishes: 2, warmup: time.Second, window: 2 * time.Second,
		security: "Basic256Sha256", server: bin, quiet: true,
	}, io.Discard)
	require.NoError(t, err)
	require.Len(t, r.Rows, 1)
	get := func(name string) float64 {
		v, ok := r.Rows[0].Get(name)
		require.True(t, ok, name)
		return v
	}
	require.Equal(t, 1500.0, get("changes/s nominal"))
	require.Positive(t, get("changes/s made"))
	// 150 values change ten times a second. A loaded machine makes fewer changes (its
	// simulation ticker skips cycles), so the delivery is judged against what was made.
	require.Positive(t, get("notifications/s"))
	require.LessOrEqual(t, get("notifications/s"), 1.1*1500)
	require.InDelta(t, 100, get("delivered"), 40, "%% of the changes made that arrived")
	require.Zero(t, get("publish failures"))
	require.Positive(t, get("server CPU/notification"))
}
