package session

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
	l := NewLockout(5, time.Minute, 5*time.Minute, clk.Now)

	for i := range 4 {
		require.False(t, l.Fail("a"), "failure %d", i+1)
		require.False(t, l.Locked("a"))
		clk.Advance(time.Second)
	}
	require.True(t, l.Fail("a"), "the 5th failure locks")
	require.True(t, l.Locked("a"))
	require.False(t, l.Locked("b"), "another client is not locked")
	require.False(t, l.Fail("a"), "failures while locked do not extend the lockout")
	clk.Advance(5*time.Minute - time.Second)
	require.True(t, l.Locked("a"))
	clk.Advance(time.Second)
	require.False(t, l.Locked("a"), "the lockout lifts after its time")
	require.Zero(t, l.size(), "a lifted lockout is forgotten")

	// Failures more than a window apart start a new count.
	for range 4 {
		require.False(t, l.Fail("c"))
	}
	clk.Advance(time.Minute)
	require.False(t, l.Fail("c"))
	require.False(t, l.Locked("c"))

	// A success resets the count.
	for range 4 {
		require.False(t, l.Fail("d"))
	}
	l.Succeed("d")
	require.False(t, l.Fail("d"))
	require.False(t, l.Locked("d"))

	// An empty key (anonymous on None) is never counted.
	for range 10 {
		require.False(t, l.Fail(""))
	}
	require.False(t, l.Locked(""))
}

// TestLockoutDisabled checks that MaxFailedAuthenticationAttempts 0 never locks.
func TestLockoutDisabled(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	l := NewLockout(0, time.Minute, 5*time.Minute, clk.Now)
	for range 100 {
		require.False(t, l.Fail("a"))
	}
	require.False(t, l.Locked("a"))
	require.Zero(t, l.size())
	var none *Lockout
	require.False(t, none.Fail("a"))
	require.False(t, none.Locked("a"))
}

// TestLockoutBounded checks that the table never grows past its limit: expired entries go
// first, then the oldest unlocked one; a locked client stays locked while there is an
// unlocked one to drop.
func TestLockoutBounded(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	l := NewLockout(2, time.Minute, 5*time.Minute, clk.Now)
	l.limit = 3
	require.False(t, l.Fail("locked"))
	require.True(t, l.Fail("locked"))
	for i := range 10 {
		clk.Advance(time.Second)
		l.Fail(fmt.Sprintf("k%d", i))
		require.LessOrEqual(t, l.size(), 3)
	}
	require.True(t, l.Locked("locked"), "the locked client was not evicted")

	// Once the window is over, stale entries are dropped in one sweep.
	clk.Advance(time.Minute)
	l.Fail("new")
	require.Equal(t, 2, l.size(), "the locked client and the new one remain")
}
