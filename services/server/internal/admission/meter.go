package admission

import (
	"sync"
	"time"
)

// sweepInterval is the least time between two sweeps of a full Meter table: a sweep
// looks at every entry, and a flood of new sources must not make each refusal cost one.
const sweepInterval = 100 * time.Millisecond

// Meter is a token bucket per owner: it meters an expensive check (a password) per
// source. A bucket that has refilled to its burst is forgotten, so the table holds only
// owners seen within the last burst/rate seconds; it holds at most maxOwners of them. It is
// safe for concurrent use.
type Meter struct {
	rate      float64
	burst     int
	maxOwners int
	now       func() time.Time

	mu        sync.Mutex // guards buckets, lastSweep
	buckets   map[uint64]*Bucket
	lastSweep time.Time
}

// NewMeter returns a meter of rate per second and burst per owner, tracking at most
// maxOwners owners at once.
func NewMeter(rate float64, burst, maxOwners int, now func() time.Time) *Meter {
	return &Meter{rate: rate, burst: burst, maxOwners: max(maxOwners, 1), now: now, buckets: make(map[uint64]*Bucket)}
}

// Take takes a token of o. When there is none it returns how long until there is one,
// with reason Capacity, or OwnerTableFull when o is new and the table is full of owners
// that have not refilled yet.
func (m *Meter) Take(o Owner) (wait time.Duration, reason Reason, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	b := m.buckets[o.Key()]
	if b == nil {
		if len(m.buckets) >= m.maxOwners && !m.sweepLocked(now) {
			return sweepInterval, OwnerTableFull, false
		}
		nb := NewBucket(m.rate, m.burst, now)
		b = &nb
		m.buckets[o.Key()] = b
	}
	if !b.Take(now) {
		return b.Wait(now), Capacity, false
	}
	return 0, 0, true
}

// sweepLocked forgets the owners whose buckets are full again and reports whether it
// made room; it sweeps at most once per sweepInterval.
func (m *Meter) sweepLocked(now time.Time) bool {
	if now.Sub(m.lastSweep) < sweepInterval {
		return false
	}
	m.lastSweep = now
	for o, b := range m.buckets {
		if b.Full(now) {
			delete(m.buckets, o)
		}
	}
	return len(m.buckets) < m.maxOwners
}

// Len returns the number of owners tracked.
func (m *Meter) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets)
}
