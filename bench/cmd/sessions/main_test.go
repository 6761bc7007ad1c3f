package main

import (
	"context"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/bench/internal/uaserver"
)

// TestSessionsSmoke runs the suite at N=8 with short windows against a real server
// process: every session comes up on its own SignAndEncrypt channel and sees every value.
func TestSessionsSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, err := uaserver.Build(ctx, t.TempDir())
	require.NoError(t, err)
	r, err := run(ctx, options{
		counts: []int{8}, window: 3 * time.Second, idle: time.Second, interval: 500 * time.Millisecond,
		concurrency: 4, publishes: 1, security: "Basic256Sha256", server: bin, quiet: true,
	}, io.Discard)
	require.NoError(t, err)
	row, ok := r.Row("N=8")
	require.True(t, ok)
	get := func(name string) float64 {
		v, ok := row.Get(name)
		require.True(t, ok, name)
		return v
	}
	require.Equal(t, 8.0, get("established"))
	require.Zero(t, get("failed"))
	require.GreaterOrEqual(t, get("writes"), 5.0)
	require.Zero(t, get("sessions with drops"))
	require.Zero(t, get("values missed"))
	require.Zero(t, get("publish failures"))
	require.Positive(t, get("establish rate"))
	// Eight sessions move RSS by less than the runtime's own page churn, so the
	// growth may be zero or negative here; a session holding megabytes is a leak.
	require.Less(t, math.Abs(get("steady memory/session")), 4096.0)
	require.Less(t, math.Abs(get("idle memory/session")), 4096.0)
	// 8 sessions × one value per write reached the client.
	require.Positive(t, get("server CPU/notification"))
	require.Len(t, r.Charts, 2)
	require.NotEmpty(t, r.Notes)
}

// TestSecurityOf pins the -security names.
func TestSecurityOf(t *testing.T) {
	_, _, err := securityOf("basic256sha256")
	require.NoError(t, err)
	_, _, err = securityOf("None")
	require.NoError(t, err)
	_, _, err = securityOf("Basic128Rsa15")
	require.Error(t, err)
}
