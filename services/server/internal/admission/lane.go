package admission

import (
	"context"
	"sync"
)

// Priority orders the work waiting for a Lane.
type Priority uint8

const (
	// Finish is work that completes what the server has admitted already: a
	// CreateSession or ActivateSession, the renewal of an open channel's token. It waits
	// without bound and goes first.
	Finish Priority = iota
	// Begin is work that starts something new: the first OpenSecureChannel of a
	// connection. At most the lane's queue of it waits; beyond that it is refused.
	Begin
	priorityCount
)

// Lane bounds work that would otherwise take every processor — a connect storm's RSA —
// so that the established sessions' requests always have processors to run on: at most
// slots turns at once, the others waiting by priority, then in order of arrival (.NET's
// scalability guide: finish the handshakes admitted before starting new ones, and refuse
// new ones early rather than time them out late). All methods are safe for concurrent use.
type Lane struct {
	mu       sync.Mutex // guards free, waiting
	free     int
	maxBegin int
	waiting  [priorityCount][]*turn
}

// turn is one waiter; granted is closed when the waiter holds a slot.
type turn struct{ granted chan struct{} }

// NewLane returns a lane of slots turns at once (at least 1) and at most queue waiting
// turns of priority Begin.
func NewLane(slots, queue int) *Lane {
	return &Lane{free: max(slots, 1), maxBegin: max(queue, 0)}
}

// Enter waits for a turn of priority p and returns the func that ends it. ok is false,
// and leave nil, when p is Begin and the queue is full, or when ctx ends first. A nil
// Lane admits everything at once.
func (l *Lane) Enter(ctx context.Context, p Priority) (leave func(), ok bool) {
	if l == nil {
		return func() {}, true
	}
	l.mu.Lock()
	if l.free > 0 && l.noneWaitingLocked() {
		l.free--
		l.mu.Unlock()
		return l.leave, true
	}
	if p == Begin && len(l.waiting[Begin]) >= l.maxBegin {
		l.mu.Unlock()
		return nil, false
	}
	t := &turn{granted: make(chan struct{})}
	l.waiting[p] = append(l.waiting[p], t)
	l.mu.Unlock()
	select {
	case <-t.granted:
		return l.leave, true
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-t.granted:
		// Granted as ctx ended: pass the slot on.
		l.handOnLocked()
	default:
		l.removeLocked(p, t)
	}
	return nil, false
}

// Away hands the caller's turn on while fn runs and then waits for a turn of Finish
// again: for work within a turn that waits on the network, not on a processor, so that
// others use the turn meanwhile. The caller must hold a turn. A nil Lane runs fn.
func (l *Lane) Away(fn func()) {
	if l == nil {
		fn()
		return
	}
	l.leave()
	defer l.Enter(context.Background(), Finish) // also after a panic: the caller leaves its turn
	fn()
}

// Waiting returns the turns waiting, of every priority.
func (l *Lane) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, w := range l.waiting {
		n += len(w)
	}
	return n
}

// leave ends a turn: its slot goes to the first waiter, or back to the free ones.
func (l *Lane) leave() {
	l.mu.Lock()
	l.handOnLocked()
	l.mu.Unlock()
}

// handOnLocked gives a slot that ends to the first waiter of the highest priority, or
// frees it.
func (l *Lane) handOnLocked() {
	for p := range l.waiting {
		if w := l.waiting[p]; len(w) > 0 {
			close(w[0].granted)
			w[0] = nil
			l.waiting[p] = w[1:]
			return
		}
	}
	l.free++
}

func (l *Lane) noneWaitingLocked() bool {
	for _, w := range l.waiting {
		if len(w) > 0 {
			return false
		}
	}
	return true
}

func (l *Lane) removeLocked(p Priority, t *turn) {
	w := l.waiting[p]
	for i, x := range w {
		if x == t {
			l.waiting[p] = append(w[:i:i], w[i+1:]...)
			return
		}
	}
}
