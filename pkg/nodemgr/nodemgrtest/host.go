package nodemgrtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"uastack.dev/pkg/nodemgr"
)

// maxRecorded bounds what a Host keeps of each kind of push; older pushes are dropped,
// as the server drops what overflows its queue.
const maxRecorded = 4096

// Host is a nodemgr.Host for tests: it logs through the test, reads the real clock, and
// records what the manager pushes. Like the server's, its Notifier copies each batch
// and returns at once. A Host is safe for concurrent use.
type Host struct {
	indexes []uint16
	logger  *slog.Logger

	mu      sync.Mutex // guards changes, events, pushed
	changes []nodemgr.DataChange
	events  []nodemgr.Event
	// pushed is closed, and replaced, at every push, to wake WaitChange.
	pushed chan struct{}
}

var (
	_ nodemgr.Host     = (*Host)(nil)
	_ nodemgr.Notifier = (*Host)(nil)
)

// NewHost returns a Host that reports indexes as the manager's namespace indexes and
// logs to t until t ends (later lines are dropped, so that a manager's goroutine may
// outlive the test).
func NewHost(t testing.TB, indexes []uint16) *Host {
	w := &testLog{t: t}
	t.Cleanup(w.stop)
	return &Host{
		indexes: append([]uint16(nil), indexes...),
		logger:  slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})).With("manager", t.Name()),
		pushed:  make(chan struct{}),
	}
}

// NamespaceIndexes returns the indexes NewHost was given.
func (h *Host) NamespaceIndexes() []uint16 { return h.indexes }

// Logger returns a logger that writes to the test's log.
func (h *Host) Logger() *slog.Logger { return h.logger }

// Now returns time.Now().
func (h *Host) Now() time.Time { return time.Now() }

// Notifier returns h, which records pushes.
func (h *Host) Notifier() nodemgr.Notifier { return h }

// Changed records a copy of changes.
func (h *Host) Changed(changes []nodemgr.DataChange) {
	h.mu.Lock()
	h.changes = keepLast(append(h.changes, changes...))
	h.wakeLocked()
	h.mu.Unlock()
}

// Emit records a copy of events.
func (h *Host) Emit(events []nodemgr.Event) {
	h.mu.Lock()
	h.events = keepLast(append(h.events, events...))
	h.wakeLocked()
	h.mu.Unlock()
}

func (h *Host) wakeLocked() {
	close(h.pushed)
	h.pushed = make(chan struct{})
}

// keepLast drops the oldest entries of s beyond maxRecorded.
func keepLast[T any](s []T) []T {
	if len(s) <= maxRecorded {
		return s
	}
	return append(s[:0], s[len(s)-maxRecorded:]...)
}

// Changes returns a copy of the changes recorded since the last Reset.
func (h *Host) Changes() []nodemgr.DataChange {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]nodemgr.DataChange(nil), h.changes...)
}

// Events returns a copy of the events recorded since the last Reset.
func (h *Host) Events() []nodemgr.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]nodemgr.Event(nil), h.events...)
}

// Reset forgets what was recorded.
func (h *Host) Reset() {
	h.mu.Lock()
	h.changes, h.events = nil, nil
	h.mu.Unlock()
}

// WaitChange waits until a recorded change satisfies match and returns it, or returns
// false when ctx ends first. Changes recorded before the call count.
func (h *Host) WaitChange(ctx context.Context, match func(*nodemgr.DataChange) bool) (nodemgr.DataChange, bool) {
	for {
		h.mu.Lock()
		for i := range h.changes {
			if match(&h.changes[i]) {
				c := h.changes[i]
				h.mu.Unlock()
				return c, true
			}
		}
		wake := h.pushed
		h.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nodemgr.DataChange{}, false
		}
	}
}

// testLog writes log lines to a test until stop, and drops them afterwards: a test's
// Log panics once the test has ended.
type testLog struct {
	mu      sync.Mutex // guards stopped, and orders Log with stop
	t       testing.TB
	stopped bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLog) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}
