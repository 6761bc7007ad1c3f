package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
)

// TestSessionSweepServer has the server end an idle session at its revised timeout
// (limits.maxSessionTimeout 200 ms here), which frees its slot without any request.
func TestSessionSweepServer(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Limits.MinSessionTimeout = 100 * time.Millisecond
		c.Limits.MaxSessionTimeout = 200 * time.Millisecond
	})
	require.Equal(t, 1, ps.srv.sessions.Count())
	start := time.Now()
	require.Eventually(t, func() bool { return ps.srv.sessions.Count() == 0 }, 5*time.Second, 5*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
}
