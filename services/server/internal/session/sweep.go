package session

import (
	"time"

	"uastack.dev/services/server/internal/telemetry"
)

// sweepSlack is added to a sweep's delay so that it fires after the deadline it is for,
// not a clock tick before.
const sweepSlack = time.Millisecond

// armLocked makes the sweep fire no later than deadline. A refreshed session only moves
// its deadline later, so the timer is never moved for that: when it fires early, the
// sweep finds nothing to end there and re-arms for the new earliest deadline. t.mu must
// be held.
func (t *Table) armLocked(deadline time.Time) {
	if t.stopped || (!t.sweepAt.IsZero() && !deadline.Before(t.sweepAt)) {
		return
	}
	t.sweepAt = deadline
	d := max(deadline.Sub(t.now()), 0) + sweepSlack
	if t.sweep == nil {
		t.sweep = time.AfterFunc(d, t.runSweep)
		return
	}
	t.sweep.Reset(d)
}

// runSweep ends every session idle past its timeout (Part 4 §5.6.2: the server may
// close a session the client has not used within its revised timeout) and every session
// not activated within Limits.UnactivatedTimeout, and re-arms for the earliest remaining
// deadline. It costs one pass over the sessions per deadline reached, not a periodic
// scan.
func (t *Table) runSweep() {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.sweepRecovered() // before the unlock
	if t.stopped {
		return
	}
	now := t.now()
	var next time.Time
	for _, s := range t.byToken {
		deadline := t.deadlineLocked(s)
		if !now.Before(deadline) {
			t.endLocked(s, false)
			continue
		}
		if next.IsZero() || deadline.Before(next) {
			next = deadline
		}
	}
	t.sweepAt = time.Time{}
	if !next.IsZero() {
		t.armLocked(next)
	}
}

// sweepRetry is how soon a sweep that panicked runs again.
const sweepRetry = time.Second

// sweepRecovered is deferred by runSweep, under t.mu: a sweep that panicked is reported
// and armed again, soon, so that the sessions past their deadline still end.
func (t *Table) sweepRecovered() {
	if v := recover(); v != nil {
		t.panics.Recovered(telemetry.PlaceSweeper, v)
		t.sweepAt = time.Time{}
		t.armLocked(t.now().Add(sweepRetry))
	}
}

// Stop ends the sweep; sessions then expire only when touched. It is safe to call more
// than once.
func (t *Table) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.sweep != nil {
		t.sweep.Stop()
	}
}
