package pipeline

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQueuePool checks the worker pool: it grows to max under load, runs jobs in
// order, refuses a job beyond the queue's capacity with a RetryAfterMs hint within its
// bounds, shrinks back to min when idle and drains on close.
func TestQueuePool(t *testing.T) {
	t.Parallel()
	q := NewQueue(2, 1, 3, time.Now)
	release := make(chan struct{})
	for i := range 3 {
		ok, _ := q.Push(Job{Run: func() { <-release }})
		require.True(t, ok)
		require.Eventually(t, func() bool { _, _, busy := q.Stats(); return busy == i+1 }, 2*time.Second, time.Millisecond)
	}
	require.Eventually(t, func() bool {
		queued, running, busy := q.Stats()
		return queued == 0 && running == 3 && busy == 3
	}, 2*time.Second, time.Millisecond, "three blocking jobs take three workers")

	var order []int
	var mu sync.Mutex // guards order
	for i := range 2 {
		ok, _ := q.Push(Job{Run: func() { mu.Lock(); order = append(order, i); mu.Unlock() }})
		require.True(t, ok)
	}
	ok, retryAfter := q.Push(Job{Run: func() {}})
	require.False(t, ok, "the queue holds two jobs")
	require.GreaterOrEqual(t, retryAfter, RetryAfterMin)
	require.LessOrEqual(t, retryAfter, RetryAfterMax)

	close(release)
	q.Wait()
	require.Equal(t, []int{0, 1}, order, "jobs run in the order queued")
	require.Eventually(t, func() bool {
		_, running, busy := q.Stats()
		return running == 1 && busy == 0
	}, 2*time.Second, time.Millisecond, "idle workers above the minimum end")

	q.Close()
	_, running, _ := q.Stats()
	require.Zero(t, running)
	ok, _ = q.Push(Job{Run: func() {}})
	require.False(t, ok, "a closed queue takes no job")
}
