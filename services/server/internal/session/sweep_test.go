package session

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

// TestSweep checks that idle sessions end at their timeout with nothing touching the
// table: each is reported to the observers once, as timed out, not before its deadline
// and soon after it; a session in use outlives its first deadline; after Stop nothing
// more ends.
func TestSweep(t *testing.T) {
	t.Parallel()
	tab := New(10, time.Now)
	var mu sync.Mutex // guards ended
	ended := map[codec.NodeId]time.Time{}
	tab.Observe(func(c *Change) {
		if c.Kind != Ended {
			return
		}
		// The sweep's goroutine may not stop the test: report with Errorf.
		if c.DeleteSubscriptions {
			t.Errorf("a timeout keeps subscriptions to their lifetime")
		}
		if c.End != TimedOut {
			t.Errorf("session %v ended as %d, not timed out", c.Record.SessionID, c.End)
		}
		mu.Lock()
		defer mu.Unlock()
		if _, dup := ended[c.Record.SessionID]; dup {
			t.Errorf("session %v ended twice", c.Record.SessionID)
		}
		ended[c.Record.SessionID] = time.Now()
	})
	endedAt := func(id codec.NodeId) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := ended[id]
		return at, ok
	}
	start := time.Now()
	long, _ := tab.Create(Request{Name: "long", Timeout: 300 * time.Millisecond, ChannelID: 1})
	short, _ := tab.Create(Request{Name: "short", Timeout: 100 * time.Millisecond, ChannelID: 1})
	// A timeout well above the touches' period: a loaded machine may oversleep one.
	used, _ := tab.Create(Request{Name: "used", Timeout: time.Second, ChannelID: 1})
	// Touch "used" every 20 ms for 250 ms: it must not end meanwhile.
	for range 12 {
		time.Sleep(20 * time.Millisecond)
		_, _, code := tab.Lookup(used.AuthenticationToken)
		require.Equal(t, 0, int(code), "used session ended while in use")
	}
	require.Eventually(t, func() bool { _, ok := endedAt(long.SessionID); return ok }, 5*time.Second, 5*time.Millisecond)
	for _, c := range []struct {
		id      codec.NodeId
		timeout time.Duration
	}{{short.SessionID, 100 * time.Millisecond}, {long.SessionID, 300 * time.Millisecond}} {
		at, ok := endedAt(c.id)
		require.True(t, ok)
		require.GreaterOrEqual(t, at.Sub(start), c.timeout)
		require.Less(t, at.Sub(start), c.timeout+time.Second)
	}
	require.Eventually(t, func() bool { _, ok := endedAt(used.SessionID); return ok }, 5*time.Second, 5*time.Millisecond)
	require.Zero(t, tab.Count())

	tab.Stop()
	late, _ := tab.Create(Request{Name: "late", Timeout: 10 * time.Millisecond, ChannelID: 1})
	time.Sleep(100 * time.Millisecond)
	_, ok := endedAt(late.SessionID)
	require.False(t, ok, "no sweep after stop")
	require.Equal(t, 1, tab.Count())
}
