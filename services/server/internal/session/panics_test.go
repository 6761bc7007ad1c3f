package session

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/services/server/internal/telemetry"
)

// TestObserverPanics: an observer that panics does not keep a change from the observers
// after it, nor leave the table locked.
func TestObserverPanics(t *testing.T) {
	t.Parallel()
	tel, err := telemetry.New(telemetry.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	tab := New(10, time.Now)
	tab.SetPanics(tel.Panics())
	var seen atomic.Int32
	tab.Observe(func(*Change) { panic("an observer's bug") })
	tab.Observe(func(*Change) { seen.Add(1) })
	rec, code := tab.Create(Request{Name: "a", Timeout: time.Minute, ChannelID: 1})
	require.Zero(t, int(code))
	require.EqualValues(t, 1, seen.Load())
	require.EqualValues(t, 1, tel.Panics().Count(telemetry.PlaceObserver))
	_, _, code = tab.Lookup(rec.AuthenticationToken)
	require.Zero(t, int(code), "the table is not left locked")
}

// TestSweepPanics: a sweep that panics (here its clock) is reported and armed again, so
// that an idle session still ends.
func TestSweepPanics(t *testing.T) {
	t.Parallel()
	tel, err := telemetry.New(telemetry.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	var boom atomic.Bool
	now := func() time.Time {
		if boom.CompareAndSwap(true, false) {
			panic("a clock's bug")
		}
		return time.Now()
	}
	tab := New(10, now)
	t.Cleanup(tab.Stop)
	tab.SetPanics(tel.Panics())
	var ended atomic.Pointer[codec.NodeId]
	tab.Observe(func(c *Change) {
		if c.Kind == Ended {
			ended.Store(&c.Record.SessionID)
		}
	})
	rec, _ := tab.Create(Request{Name: "idle", Timeout: 50 * time.Millisecond, ChannelID: 1})
	boom.Store(true) // the next reading of the clock is the sweep's
	require.Eventually(t, func() bool { return tel.Panics().Count(telemetry.PlaceSweeper) == 1 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { id := ended.Load(); return id != nil && *id == rec.SessionID },
		sweepRetry+5*time.Second, 5*time.Millisecond, "the sweep ran again")
	require.Zero(t, tab.Count())
}
