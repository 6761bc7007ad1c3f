package admission

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// enterAsync enters l at p on a goroutine and sends its name to order once it holds a
// turn; the returned channel yields the turn's leave (nil if refused).
func enterAsync(ctx context.Context, l *Lane, p Priority, name string, order chan<- string) <-chan func() {
	got := make(chan func(), 1)
	go func() {
		leave, ok := l.Enter(ctx, p)
		if ok {
			order <- name
		}
		got <- leave
	}()
	return got
}

// waitWaiting waits until n turns wait on l.
func waitWaiting(t *testing.T, l *Lane, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return l.Waiting() == n }, 5*time.Second, time.Millisecond)
}

func TestLaneFinishGoesBeforeBegin(t *testing.T) {
	l := NewLane(1, 4)
	ctx := t.Context()
	hold, ok := l.Enter(ctx, Begin)
	require.True(t, ok)
	order := make(chan string, 3)
	b1 := enterAsync(ctx, l, Begin, "begin-1", order)
	waitWaiting(t, l, 1)
	b2 := enterAsync(ctx, l, Begin, "begin-2", order)
	waitWaiting(t, l, 2)
	f := enterAsync(ctx, l, Finish, "finish", order)
	waitWaiting(t, l, 3)

	hold()
	for _, want := range []struct {
		name string
		c    <-chan func()
	}{{"finish", f}, {"begin-1", b1}, {"begin-2", b2}} {
		require.Equal(t, want.name, <-order)
		leave := <-want.c
		require.NotNil(t, leave)
		select {
		case got := <-order:
			t.Fatalf("%s got a turn while %s holds the only one", got, want.name)
		case <-time.After(20 * time.Millisecond):
		}
		leave()
	}
	// Every slot is free again: an Enter does not wait.
	leave, ok := l.Enter(ctx, Begin)
	require.True(t, ok)
	leave()
}

func TestLaneRefusesBeginPastItsQueue(t *testing.T) {
	l := NewLane(2, 1)
	ctx := t.Context()
	a, _ := l.Enter(ctx, Begin)
	b, _ := l.Enter(ctx, Begin)
	order := make(chan string, 4)
	queued := enterAsync(ctx, l, Begin, "queued", order)
	waitWaiting(t, l, 1)

	leave, ok := l.Enter(ctx, Begin)
	require.False(t, ok, "a Begin beyond the queue is refused at once")
	require.Nil(t, leave)
	// Finish is never refused: it waits beyond the queue.
	fin := enterAsync(ctx, l, Finish, "finish", order)
	waitWaiting(t, l, 2)

	a()
	require.Equal(t, "finish", <-order)
	b()
	require.Equal(t, "queued", <-order)
	(<-fin)()
	(<-queued)()
}

func TestLaneCancelledWaiterLeavesTheQueue(t *testing.T) {
	l := NewLane(1, 1)
	hold, _ := l.Enter(t.Context(), Begin)
	ctx, cancel := context.WithCancel(t.Context())
	order := make(chan string, 2)
	gone := enterAsync(ctx, l, Begin, "cancelled", order)
	waitWaiting(t, l, 1)
	cancel()
	require.Nil(t, <-gone)
	require.Equal(t, 0, l.Waiting())
	// Its place in the queue is free for the next Begin.
	next := enterAsync(t.Context(), l, Begin, "next", order)
	waitWaiting(t, l, 1)
	hold()
	require.Equal(t, "next", <-order)
	(<-next)()
}

// TestLaneKeepsItsSlots races Enter, cancellation and leave and checks that no turn is
// lost or made: at most slots hold a turn at once, and all are free at the end.
func TestLaneKeepsItsSlots(t *testing.T) {
	const slots = 3
	l := NewLane(slots, 8)
	var mu sync.Mutex
	holding, most := 0, 0
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i%5)*100*time.Microsecond)
			defer cancel()
			leave, ok := l.Enter(ctx, Priority(i%2))
			if !ok {
				return
			}
			mu.Lock()
			holding++
			most = max(most, holding)
			mu.Unlock()
			time.Sleep(50 * time.Microsecond)
			mu.Lock()
			holding--
			mu.Unlock()
			leave()
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most, slots)
	require.Equal(t, 0, l.Waiting())
	var leaves []func()
	for range slots {
		leave, ok := l.Enter(t.Context(), Begin)
		require.True(t, ok, "a slot was lost")
		leaves = append(leaves, leave)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	_, ok := l.Enter(ctx, Finish)
	require.False(t, ok, "a slot was made")
	for _, leave := range leaves {
		leave()
	}
}
