package server

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/services/server/internal/config"
)

// TestSessionSweep checks that idle sessions end at their timeout with nothing touching
// the table: each is reported to onEnd once, not before its deadline and soon after it;
// a session in use outlives its first deadline; after stop nothing more ends.
func TestSessionSweep(t *testing.T) {
	t.Parallel()
	tab := newSessions(10, time.Now)
	var mu sync.Mutex // guards ended
	ended := map[codec.NodeId]time.Time{}
	tab.onEnd = func(id codec.NodeId, deleteSubscriptions bool) {
		// The sweep's goroutine may not stop the test: report with Errorf.
		if deleteSubscriptions {
			t.Errorf("a timeout keeps subscriptions to their lifetime")
		}
		mu.Lock()
		defer mu.Unlock()
		if _, dup := ended[id]; dup {
			t.Errorf("session %v ended twice", id)
		}
		ended[id] = time.Now()
	}
	endedAt := func(id codec.NodeId) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := ended[id]
		return at, ok
	}
	start := time.Now()
	long, _ := tab.create("long", 300*time.Millisecond, 1, nil)
	short, _ := tab.create("short", 100*time.Millisecond, 1, nil)
	used, _ := tab.create("used", 100*time.Millisecond, 1, nil)
	// Touch "used" every 20 ms for 250 ms: it must not end meanwhile.
	for range 12 {
		time.Sleep(20 * time.Millisecond)
		_, code := tab.snapshot(used.authToken)
		require.Equal(t, 0, int(code), "used session ended while in use")
	}
	require.Eventually(t, func() bool { _, ok := endedAt(long.id); return ok }, 5*time.Second, 5*time.Millisecond)
	for _, c := range []struct {
		id      codec.NodeId
		timeout time.Duration
	}{{short.id, 100 * time.Millisecond}, {long.id, 300 * time.Millisecond}} {
		at, ok := endedAt(c.id)
		require.True(t, ok)
		require.GreaterOrEqual(t, at.Sub(start), c.timeout)
		require.Less(t, at.Sub(start), c.timeout+time.Second)
	}
	require.Eventually(t, func() bool { _, ok := endedAt(used.id); return ok }, 5*time.Second, 5*time.Millisecond)
	require.Zero(t, tab.count())

	tab.stop()
	late, _ := tab.create("late", 10*time.Millisecond, 1, nil)
	time.Sleep(100 * time.Millisecond)
	_, ok := endedAt(late.id)
	require.False(t, ok, "no sweep after stop")
	require.Equal(t, 1, tab.count())
}

// TestSessionSweepServer has the server end an idle session at its revised timeout
// (limits.maxSessionTimeout 200 ms here), which frees its slot without any request.
func TestSessionSweepServer(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Limits.MinSessionTimeout = 100 * time.Millisecond
		c.Limits.MaxSessionTimeout = 200 * time.Millisecond
	})
	require.Equal(t, 1, ps.srv.sessions.count())
	start := time.Now()
	require.Eventually(t, func() bool { return ps.srv.sessions.count() == 0 }, 5*time.Second, 5*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
}
