package pipeline

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/admission"
)

// fairQueue returns a fair queue of one worker over a FairShare request-queue ledger of
// capacity jobs, and a function that blocks its worker until released.
func fairQueue(t *testing.T, capacity int, weight func(admission.Owner) int) (*Queue, func() (release func())) {
	t.Helper()
	ctl, err := admission.New(admission.Config{Profile: admission.FairShare, MaxChannelCount: 10, MaxConcurrentSessionEstablishment: 10,
		MaxQueuedRequestCount: capacity, MaxParkedRequestCount: 10, MaxTrackedOwners: 100})
	require.NoError(t, err)
	q := NewQueueWith(QueueConfig{Min: 1, Max: 1, Now: time.Now, Ledger: ctl.Ledger(admission.StageQueue),
		SessionCapacity: 10, Fair: true, SessionWorkers: 1, Weight: weight})
	t.Cleanup(q.Close)
	block := func() func() {
		gate, running := make(chan struct{}), make(chan struct{})
		ok, _ := q.Push(Job{Stage: StageService, Key: owner(99), Run: func() { close(running); <-gate }})
		require.True(t, ok)
		<-running
		return func() { close(gate) }
	}
	return q, block
}

func owner(i uint64) admission.Owner { return admission.SessionOwner(i) }

// recorder records the order in which jobs run.
type recorder struct {
	mu    sync.Mutex // guards order
	order []string
}

func (r *recorder) job(q *Queue, t *testing.T, o uint64, name string, cost int) {
	t.Helper()
	ok, _ := q.Push(Job{Stage: StageService, Key: owner(o), Cost: cost, Run: func() {
		r.mu.Lock()
		r.order = append(r.order, name)
		r.mu.Unlock()
	}})
	require.True(t, ok, name)
}

// TestFairTurns: owners that arrive behind another's backlog wait for at most one of its
// jobs each, not for the backlog.
func TestFairTurns(t *testing.T) {
	t.Parallel()
	q, block := fairQueue(t, 20, nil)
	release := block()
	var r recorder
	for i := range 6 {
		r.job(q, t, 1, "a"+string(rune('1'+i)), 1)
	}
	r.job(q, t, 2, "b1", 1)
	r.job(q, t, 2, "b2", 1)
	r.job(q, t, 3, "c1", 1)
	release()
	q.Wait()
	require.Equal(t, []string{"a1", "b1", "c1", "a2", "b2", "a3", "a4", "a5", "a6"}, r.order)
}

// TestFairWeightsAndCosts: with backlogs, an owner of weight 2 gets two turns per turn
// of an owner of weight 1, and a job costing 3 operations takes three turns.
func TestFairWeightsAndCosts(t *testing.T) {
	t.Parallel()
	q, block := fairQueue(t, 40, func(o admission.Owner) int {
		if o == owner(2) {
			return 2
		}
		return 1
	})
	release := block()
	var r recorder
	for i := range 4 {
		r.job(q, t, 1, "a", 1)
		r.job(q, t, 2, "W", 1)
		if i < 2 {
			r.job(q, t, 3, "C", 3)
		}
	}
	release()
	q.Wait()
	require.Equal(t, []string{"a", "W", "C", "W", "a", "W", "W", "a", "C", "a"}, r.order)
}

// TestFairLedger: one owner alone may queue the configured capacity; beyond it the
// ledger refuses it with a RetryAfterMs hint, while another owner still gets in (the
// fair-share headroom on top).
func TestFairLedger(t *testing.T) {
	t.Parallel()
	const capacity = 32
	q, block := fairQueue(t, capacity, nil)
	release := block()
	defer release()
	n := 0
	for {
		ok, retryAfter := q.Push(Job{Stage: StageService, Key: owner(1), Run: func() {}})
		if !ok {
			require.GreaterOrEqual(t, retryAfter, RetryAfterMin)
			break
		}
		n++
	}
	require.Equal(t, capacity, n, "a lone owner has the configured capacity")
	ok, _ := q.Push(Job{Stage: StageService, Key: owner(2), Run: func() {}})
	require.True(t, ok, "another owner still gets in")
	require.Equal(t, capacity+1, q.Queued(StageService))
}

// TestSessionWorkers: session establishment runs on at most SessionWorkers workers at
// once, and service jobs are not held up behind it.
func TestSessionWorkers(t *testing.T) {
	t.Parallel()
	ctl, err := admission.New(admission.Config{Profile: admission.Balanced, MaxChannelCount: 10, MaxConcurrentSessionEstablishment: 10,
		MaxQueuedRequestCount: 10, MaxParkedRequestCount: 10, MaxTrackedOwners: 100})
	require.NoError(t, err)
	q := NewQueueWith(QueueConfig{Min: 1, Max: 4, Now: time.Now, Ledger: ctl.Ledger(admission.StageQueue),
		SessionCapacity: 10, Fair: true, SessionWorkers: 1})
	defer q.Close()
	gate := make(chan struct{})
	var mu sync.Mutex // guards running, most
	running, most := 0, 0
	for i := range 3 {
		ok, _ := q.Push(Job{Stage: StageSession, Key: owner(uint64(i)), Run: func() {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			<-gate
			mu.Lock()
			running--
			mu.Unlock()
		}})
		require.True(t, ok)
	}
	done := make(chan struct{})
	ok, _ := q.Push(Job{Stage: StageService, Key: owner(9), Run: func() { close(done) }})
	require.True(t, ok)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a service job waited behind session establishment")
	}
	require.Equal(t, 2, q.Queued(StageSession), "two session jobs wait for the one session worker")
	close(gate)
	q.Wait()
	require.Equal(t, 1, most)
}

// TestSessionAway: a session job waiting on the network within Away gives its turn up,
// both the session worker and the lane's, so that the next session job runs meanwhile;
// it gets a turn again before it goes on, and no more turns are held than there are.
func TestSessionAway(t *testing.T) {
	t.Parallel()
	ctl, err := admission.New(admission.Config{Profile: admission.Balanced, MaxChannelCount: 10, MaxConcurrentSessionEstablishment: 10,
		MaxQueuedRequestCount: 10, MaxParkedRequestCount: 10, MaxTrackedOwners: 100})
	require.NoError(t, err)
	lane := admission.NewLane(1, 4)
	q := NewQueueWith(QueueConfig{Min: 1, Max: 4, Now: time.Now, Ledger: ctl.Ledger(admission.StageQueue),
		SessionCapacity: 10, Fair: true, SessionWorkers: 1, Handshakes: lane})
	defer q.Close()

	away, reply := make(chan struct{}), make(chan struct{})
	answer := sync.OnceFunc(func() { close(reply) })
	defer answer()    // before q.Close: a failed check must not leave the first job waiting
	var mu sync.Mutex // guards order
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	ok, _ := q.Push(Job{Stage: StageSession, Key: owner(1), Run: func() {
		note("first in turn")
		q.Away(func() {
			close(away)
			<-reply
		})
		note("first back in turn")
	}})
	require.True(t, ok)
	<-away
	second := make(chan struct{})
	ok, _ = q.Push(Job{Stage: StageSession, Key: owner(2), Run: func() {
		note("second in turn")
		close(second)
	}})
	require.True(t, ok)
	select {
	case <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("a session job waited for one that is away on the network")
	}
	answer()
	q.Wait()
	require.Equal(t, []string{"first in turn", "second in turn", "first back in turn"}, order)

	// The lane's one turn is free again: a Begin enters at once.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	leave, ok := lane.Enter(ctx, admission.Begin)
	require.True(t, ok, "the turn came back")
	leave()
}

// TestPendingLent: a request away on the network lends its unit of session
// establishment to others and takes it back after; when its context ends while away,
// its charge is released once and not taken back.
func TestPendingLent(t *testing.T) {
	t.Parallel()
	l := admission.NewLedger(admission.LedgerConfig{Stage: admission.StageSession, Shared: 1})
	acquire := func() admission.Charge {
		c, _, ok := l.Acquire(admission.SessionOwner(1), admission.Ordinary, 1)
		require.True(t, ok)
		return c
	}
	pd := &Pending{held: hold{l, acquire()}}
	pd.lend()
	require.Zero(t, l.Stats().Used, "lent while away")
	pd.unlend()
	require.Equal(t, 1, l.Stats().Used, "back after")
	pd.release()
	require.Zero(t, l.Stats().Used)

	pd = &Pending{held: hold{l, acquire()}}
	pd.lend()
	other := acquire()
	pd.release() // the request's context ended while it was away
	pd.unlend()
	pd.release()
	require.Equal(t, 1, l.Stats().Used, "only the other charge is held")
	l.Release(other)
	require.Zero(t, l.Stats().Used)
}
