package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is an injected clock for tests. Safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

// TestLockout checks the failed-login lockout with an injected clock: 5 failures within the
// window lock the client for the lockout time, then it lifts; failures spread over more than
// the window do not add up; a success forgets the failures; other clients are not affected.
func TestLockout(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	l := newLockout(5, time.Minute, 5*time.Minute, clk.Now)

	for i := range 4 {
		require.False(t, l.fail("a"), "failure %d", i+1)
		require.False(t, l.locked("a"))
		clk.Advance(time.Second)
	}
	require.True(t, l.fail("a"), "the 5th failure locks")
	require.True(t, l.locked("a"))
	require.False(t, l.locked("b"), "another client is not locked")
	require.False(t, l.fail("a"), "failures while locked do not extend the lockout")
	clk.Advance(5*time.Minute - time.Second)
	require.True(t, l.locked("a"))
	clk.Advance(time.Second)
	require.False(t, l.locked("a"), "the lockout lifts after its time")
	require.Zero(t, l.size(), "a lifted lockout is forgotten")

	// Failures more than a window apart start a new count.
	for range 4 {
		require.False(t, l.fail("c"))
	}
	clk.Advance(time.Minute)
	require.False(t, l.fail("c"))
	require.False(t, l.locked("c"))

	// A success resets the count.
	for range 4 {
		require.False(t, l.fail("d"))
	}
	l.succeed("d")
	require.False(t, l.fail("d"))
	require.False(t, l.locked("d"))

	// An empty key (anonymous on None) is never counted.
	for range 10 {
		require.False(t, l.fail(""))
	}
	require.False(t, l.locked(""))
}

// TestLockoutDisabled checks that MaxFailedAuthenticationAttempts 0 never locks.
func TestLockoutDisabled(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	l := newLockout(0, time.Minute, 5*time.Minute, clk.Now)
	for range 100 {
		require.False(t, l.fail("a"))
	}
	require.False(t, l.locked("a"))
	require.Zero(t, l.size())
	var none *lockout
	require.False(t, none.fail("a"))
	require.False(t, none.locked("a"))
}

// TestLockoutBounded checks that the table never grows past its limit: expired entries go
// first, then the oldest unlocked one; a locked client stays locked while there is an
// unlocked one to drop.
func TestLockoutBounded(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	l := newLockout(2, time.Minute, 5*time.Minute, clk.Now)
	l.limit = 3
	require.False(t, l.fail("locked"))
	require.True(t, l.fail("locked"))
	for i := range 10 {
		clk.Advance(time.Second)
		l.fail(fmt.Sprintf("k%d", i))
		require.LessOrEqual(t, l.size(), 3)
	}
	require.True(t, l.locked("locked"), "the locked client was not evicted")

	// Once the window is over, stale entries are dropped in one sweep.
	clk.Advance(time.Minute)
	l.fail("new")
	require.Equal(t, 2, l.size(), "the locked client and the new one remain")
}
