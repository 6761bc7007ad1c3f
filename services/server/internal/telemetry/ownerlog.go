package telemetry

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"time"
)

// LogLimit bounds the lines a LogLimiter writes.
type LogLimit struct {
	// Lines is how many lines of one owner are written per Interval; the others are
	// counted and dropped. Less than 1 counts as 1.
	Lines int
	// Interval is the window the Lines are counted in, from the first line of an owner.
	Interval time.Duration
	// MaxOwners bounds the owners remembered; 0 is DefaultMaxOwners. Owners beyond it
	// share one budget of Lines per Interval.
	MaxOwners int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// SharedOwners names the owners beyond LogLimit.MaxOwners in the line that tells how many
// of their lines were dropped.
const SharedOwners = "(others)"

// DefaultMaxOwners is the number of owners a LogLimiter remembers when LogLimit.MaxOwners
// is 0.
const DefaultMaxOwners = 4096

// LogLimiter writes log lines that name an owner (a peer address, an application, a
// session), at most LogLimit.Lines per owner per Interval: a client that sends a
// thousand bad requests a second costs the log a few lines, not a thousand. The first
// line written after some were dropped carries their number as "suppressed". An owner
// that goes quiet with lines dropped gets one line saying how many ("log lines
// suppressed") when its window is forgotten: at the first line of any owner after two
// Intervals from the window's start. The owners remembered are bounded
// (LogLimit.MaxOwners), so a flood of made-up owners costs bounded memory: the owners
// beyond the bound share one budget, whose lines name their own owner and count the
// lines dropped of all of them (told as owner SharedOwners when it is forgotten). It is safe for concurrent use; a level the logger does
// not write costs one Enabled check.
type LogLimiter struct {
	log   *slog.Logger
	limit LogLimit
	// mu guards owners, shared and pruned.
	mu     sync.Mutex
	owners map[string]*logWindow
	shared logWindow // the budget of the owners beyond MaxOwners
	pruned time.Time // when owners was last pruned of windows past their Interval
}

// logWindow is the budget of one owner: the lines written in the window begun at start,
// and the lines dropped since the last one written.
type logWindow struct {
	start      time.Time
	lines      int
	suppressed int
	level      slog.Level // of the last line dropped
}

// NewLogLimiter returns a LogLimiter writing to log within limit.
func NewLogLimiter(log *slog.Logger, limit LogLimit) *LogLimiter {
	limit.Lines = max(limit.Lines, 1)
	if limit.MaxOwners <= 0 {
		limit.MaxOwners = DefaultMaxOwners
	}
	if limit.Now == nil {
		limit.Now = time.Now
	}
	return &LogLimiter{log: log, limit: limit, owners: make(map[string]*logWindow), pruned: limit.Now()}
}

// Log writes msg at level with args and "owner", owner, unless owner has written its
// Lines in the current Interval already, in which case the line is counted and dropped.
// A line written after dropped ones adds "suppressed", their number.
func (l *LogLimiter) Log(ctx context.Context, level slog.Level, owner, msg string, args ...any) {
	if !l.log.Enabled(ctx, level) {
		return
	}
	now := l.limit.Now()
	l.mu.Lock()
	forgotten := l.pruneLocked(now, owner)
	w := l.owners[owner]
	if w == nil {
		if len(l.owners) < l.limit.MaxOwners {
			w = &logWindow{start: now}
			l.owners[owner] = w
		} else {
			w = &l.shared
		}
	}
	if now.Sub(w.start) >= l.limit.Interval {
		w.start, w.lines = now, 0
	}
	write := w.lines < l.limit.Lines
	suppressed := 0
	if write {
		w.lines++
		suppressed, w.suppressed = w.suppressed, 0
	} else {
		w.suppressed++
		w.level = level
	}
	l.mu.Unlock()

	var pc [1]uintptr
	runtime.Callers(2, pc[:]) // the caller of Log, for a handler that adds the source
	for _, f := range forgotten {
		r := slog.NewRecord(now, f.level, "log lines suppressed", pc[0])
		r.AddAttrs(slog.String("owner", f.owner), slog.Int("suppressed", f.suppressed))
		_ = l.log.Handler().Handle(ctx, r)
	}
	if !write {
		return
	}
	r := slog.NewRecord(now, level, msg, pc[0])
	r.Add(args...)
	r.AddAttrs(slog.String("owner", owner))
	if suppressed > 0 {
		r.AddAttrs(slog.Int("suppressed", suppressed))
	}
	_ = l.log.Handler().Handle(ctx, r)
}

// forgottenOwner is an owner forgotten with lines dropped, to be told.
type forgottenOwner struct {
	owner      string
	suppressed int
	level      slog.Level
}

// pruneLocked forgets the owners whose window is past but current, whose next line is
// this one, at most once per Interval, and returns those of them with lines dropped.
func (l *LogLimiter) pruneLocked(now time.Time, current string) []forgottenOwner {
	if now.Sub(l.pruned) < l.limit.Interval {
		return nil
	}
	l.pruned = now
	var forgotten []forgottenOwner
	for owner, w := range l.owners {
		if owner == current || now.Sub(w.start) < l.limit.Interval {
			continue
		}
		if w.suppressed > 0 {
			forgotten = append(forgotten, forgottenOwner{owner: owner, suppressed: w.suppressed, level: w.level})
		}
		delete(l.owners, owner)
	}
	if w := &l.shared; w.suppressed > 0 && now.Sub(w.start) >= l.limit.Interval {
		forgotten = append(forgotten, forgottenOwner{owner: SharedOwners, suppressed: w.suppressed, level: w.level})
		w.suppressed = 0
	}
	return forgotten
}
