package load

import "sync"

// Tally is what one session saw of a node written with the values 1, 2, … in turn: how
// many of them arrived in order. It is safe for concurrent use.
type Tally struct {
	mu   sync.Mutex // guards last, got
	last float64
	got  int
}

// NewTally returns a Tally that has seen nothing.
func NewTally() *Tally { return &Tally{last: -1} }

// Observe counts v if it is a written value newer than the last one seen.
func (t *Tally) Observe(v float64) {
	t.mu.Lock()
	if v > t.last {
		if v >= 1 {
			t.got++
		}
		t.last = v
	}
	t.mu.Unlock()
}

// Missed returns how many of the values 1..writes did not arrive.
func (t *Tally) Missed(writes int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return max(writes-t.got, 0)
}
