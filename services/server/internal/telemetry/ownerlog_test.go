package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lines is a slog.Handler that keeps the lines it is handed, from Info up.
type lines struct {
	mu  sync.Mutex // guards got
	got []line
}

// line is a record as the tests look at it: its level, message and attributes.
type line struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

func (h *lines) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *lines) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *lines) WithGroup(string) slog.Handler                { return h }
func (h *lines) Handle(_ context.Context, r slog.Record) error {
	l := line{level: r.Level, msg: r.Message, attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool { l.attrs[a.Key] = a.Value.Any(); return true })
	h.mu.Lock()
	h.got = append(h.got, l)
	h.mu.Unlock()
	return nil
}

// take returns the lines handled since the last take.
func (h *lines) take() []line {
	h.mu.Lock()
	defer h.mu.Unlock()
	got := h.got
	h.got = nil
	return got
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newLimiter(h *lines, c *fakeClock, max int) *LogLimiter {
	return NewLogLimiter(slog.New(h), LogLimit{Lines: 2, Interval: 10 * time.Second, MaxOwners: max, Now: c.now})
}

// TestLogLimiterPerOwner: an owner gets Lines lines per Interval; the ones past them are
// dropped and their number rides on the owner's next line written, in the next window;
// another owner's budget is its own; every line names its owner and keeps its args.
func TestLogLimiterPerOwner(t *testing.T) {
	t.Parallel()
	h := &lines{}
	c := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	l := newLimiter(h, c, 0)
	ctx := context.Background()
	for i := range 5 {
		l.Log(ctx, slog.LevelWarn, "peer:10.0.0.1", "request refused", "n", i)
	}
	l.Log(ctx, slog.LevelWarn, "peer:10.0.0.2", "request refused", "n", 100)
	got := h.take()
	require.Len(t, got, 3)
	require.Equal(t, "request refused", got[0].msg)
	require.Equal(t, slog.LevelWarn, got[0].level)
	require.Equal(t, map[string]any{"n": int64(0), "owner": "peer:10.0.0.1"}, got[0].attrs)
	require.Equal(t, map[string]any{"n": int64(1), "owner": "peer:10.0.0.1"}, got[1].attrs)
	require.Equal(t, map[string]any{"n": int64(100), "owner": "peer:10.0.0.2"}, got[2].attrs, "another owner's budget")

	c.add(9 * time.Second)
	l.Log(ctx, slog.LevelWarn, "peer:10.0.0.1", "request refused", "n", 5)
	require.Empty(t, h.take(), "still the first window")
	c.add(time.Second)
	l.Log(ctx, slog.LevelWarn, "peer:10.0.0.1", "request refused", "n", 6)
	got = h.take()
	require.Len(t, got, 1)
	require.Equal(t, map[string]any{"n": int64(6), "owner": "peer:10.0.0.1", "suppressed": int64(4)}, got[0].attrs,
		"the four dropped lines counted into the next")
	l.Log(ctx, slog.LevelWarn, "peer:10.0.0.1", "request refused", "n", 7)
	got = h.take()
	require.Len(t, got, 1)
	require.NotContains(t, got[0].attrs, "suppressed", "counted once")
}

// TestLogLimiterDisabledLevel: a level the logger does not write is neither written nor
// counted.
func TestLogLimiterDisabledLevel(t *testing.T) {
	t.Parallel()
	h := &lines{}
	c := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	l := newLimiter(h, c, 0)
	for range 10 {
		l.Log(context.Background(), slog.LevelDebug, "o", "debug")
	}
	require.Empty(t, h.take())
	l.mu.Lock()
	require.Empty(t, l.owners, "not remembered")
	l.mu.Unlock()
	l.Log(context.Background(), slog.LevelInfo, "o", "info")
	require.Len(t, h.take(), 1)
}

// TestLogLimiterOwnersBounded: owners past MaxOwners share one budget (a flood of made-up
// owners costs bounded memory and bounded lines); the owners whose window passed are
// forgotten, those with lines dropped with a line saying how many.
func TestLogLimiterOwnersBounded(t *testing.T) {
	t.Parallel()
	h := &lines{}
	c := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	l := newLimiter(h, c, 3)
	ctx := context.Background()
	for i := range 3 {
		for range 3 {
			l.Log(ctx, slog.LevelWarn, fmt.Sprintf("owner%d", i), "refused")
		}
	}
	require.Len(t, h.take(), 6, "two each")
	for i := range 1000 {
		l.Log(ctx, slog.LevelWarn, fmt.Sprintf("flood%d", i), "refused")
	}
	got := h.take()
	require.Len(t, got, 2, "the flood shares one budget")
	require.Equal(t, "flood0", got[0].attrs["owner"], "a shared line names its own owner")
	require.Equal(t, "flood1", got[1].attrs["owner"])
	l.mu.Lock()
	require.Len(t, l.owners, 3)
	l.mu.Unlock()

	c.add(10 * time.Second)
	l.Log(ctx, slog.LevelWarn, "fresh", "refused")
	got = h.take()
	require.Len(t, got, 5, "three forgotten owners and the shared budget told, then the line")
	told := map[any]any{}
	for _, g := range got[:4] {
		require.Equal(t, "log lines suppressed", g.msg)
		require.Equal(t, slog.LevelWarn, g.level)
		told[g.attrs["owner"]] = g.attrs["suppressed"]
	}
	require.Equal(t, map[any]any{"owner0": int64(1), "owner1": int64(1), "owner2": int64(1), SharedOwners: int64(998)}, told)
	require.Equal(t, map[string]any{"owner": "fresh"}, got[4].attrs, "a window of its own again")
	l.mu.Lock()
	require.Len(t, l.owners, 1, "forgotten")
	l.mu.Unlock()
}

// TestLogLimiterConcurrent: owners logging at once from many goroutines get their Lines
// each and no more (run with -race).
func TestLogLimiterConcurrent(t *testing.T) {
	t.Parallel()
	h := &lines{}
	l := NewLogLimiter(slog.New(h), LogLimit{Lines: 3, Interval: time.Hour})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 100 {
				l.Log(context.Background(), slog.LevelWarn, fmt.Sprintf("owner%d", g%4), "refused")
			}
		})
	}
	wg.Wait()
	per := map[any]int{}
	for _, g := range h.take() {
		per[g.attrs["owner"]]++
	}
	require.Equal(t, map[any]int{"owner0": 3, "owner1": 3, "owner2": 3, "owner3": 3}, per)
}
