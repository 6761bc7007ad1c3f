package driver

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// maxInterval is the slowest a Poller polls; longer sampling intervals are cut to it.
const maxInterval = 24 * time.Hour

// WatchItem is a point to poll and how often, as a nodemgr.WatchItem names a monitored
// pair.
type WatchItem struct {
	// Point is the point's index in Options.Points.
	Point int
	// SamplingInterval is in milliseconds, as OPC UA has it (Part 4 §5.12.1.2): the
	// fastest interval of the monitored items on the point. 0 (every change as it
	// happens) and anything below Options.MinPollInterval poll at MinPollInterval.
	SamplingInterval float64
}

// Poller polls the points that someone watches, and only those, and reports what
// changes. It follows nodemgr.WatchSet: Watch adds points (or changes their interval)
// and removes them, and nothing is polled while nothing is watched.
//
// Watched points are polled in the requests ReadPoints would make for all of them
// together, each at the fastest interval of its points: reading a neighbour along
// costs nothing, a request more costs a round trip. The Poller reports a point's first
// value after it is watched, then its value only when it changes. When the device
// cannot be reached it reports every watched point once with the *CommError (and a
// point whose request the device refuses, with its *ExceptionError), and the values
// again, changed or not, once they can be read.
//
// The Poller polls on a goroutine of its own and calls report there, one call per
// request that has something to say; report owns the slice it gets, must return soon
// (as nodemgr.Notifier.Changed does) and must not call Stop.
type Poller struct {
	dev    *Device
	report func([]Value)

	ctx    context.Context // ends when Stop is called; bounds every request
	cancel context.CancelFunc
	wake   chan struct{} // tells the goroutine that the watched set changed
	done   chan struct{} // closed when the goroutine has returned
	stop   sync.Once

	mu      sync.Mutex // guards watched, groups
	watched map[int]*watchState
	groups  []pollGroup // the requests to poll; nil when watched changed since
}

// watchState is what the Poller knows of one watched point.
type watchState struct {
	interval time.Duration // how often it must be polled, MinPollInterval at least
	due      time.Time     // when it must be polled next
	last     any           // the last value reported, if has
	has      bool
	failed   bool // the last report was an error
}

// pollGroup is the points polled in one request, and how often.
type pollGroup struct {
	points   []int
	interval time.Duration
}

// NewPoller returns a Poller of dev's points, watching none, and starts its goroutine.
// Stop ends it.
func NewPoller(dev *Device, report func([]Value)) *Poller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Poller{
		dev:     dev,
		report:  report,
		ctx:     ctx,
		cancel:  cancel,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		watched: make(map[int]*watchState),
	}
	go p.run()
	return p
}

// Watch applies a change of the watched set: it stops polling the points of remove,
// then polls those of add, or polls them at their new interval if they are watched
// already. A newly watched point is polled at once. Watch returns without waiting on
// the device, and keeps nothing of its arguments. An index that names no point is an
// error; the rest of the change still applies. Watch is safe for concurrent use.
func (p *Poller) Watch(add []WatchItem, remove []int) error {
	n := len(p.dev.opts.Points)
	var bad []int
	now := time.Now()
	p.mu.Lock()
	for _, i := range remove {
		delete(p.watched, i)
	}
	for _, a := range add {
		if a.Point < 0 || a.Point >= n {
			bad = append(bad, a.Point)
			continue
		}
		iv := p.interval(a.SamplingInterval)
		if st := p.watched[a.Point]; st != nil {
			st.interval = iv
			if d := now.Add(iv); d.Before(st.due) {
				st.due = d
			}
			continue
		}
		p.watched[a.Point] = &watchState{interval: iv, due: now}
	}
	p.groups = nil
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default: // the goroutine has a wake-up pending already
	}
	if bad != nil {
		return fmt.Errorf("modbus: no points %v", bad)
	}
	return nil
}

// interval returns how often to poll for a sampling interval of ms milliseconds.
func (p *Poller) interval(ms float64) time.Duration {
	minIv := p.dev.opts.MinPollInterval
	switch {
	case math.IsNaN(ms) || ms*float64(time.Millisecond) < float64(minIv):
		return minIv
	case ms*float64(time.Millisecond) >= float64(maxInterval):
		return maxInterval
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// Stop stops polling and waits for the goroutine to return, which is within
// Options.Timeout when a request is on the wire. Later calls to Watch change nothing
// that is polled. Stop may be called more than once.
func (p *Poller) Stop() {
	p.stop.Do(p.cancel)
	<-p.done
}

func (p *Poller) run() {
	defer close(p.done)
	timer := time.NewTimer(maxInterval)
	defer timer.Stop()
	for p.ctx.Err() == nil {
		p.mu.Lock()
		next, ok := p.nextDueLocked()
		p.mu.Unlock()
		var fire <-chan time.Time
		if ok {
			wait := time.Until(next)
			if wait <= 0 {
				p.pollDue()
				continue
			}
			timer.Reset(wait)
			fire = timer.C
		}
		select {
		case <-p.ctx.Done():
			return
		case <-p.wake:
			timer.Stop()
		case <-fire:
			p.pollDue()
		}
	}
}

// nextDueLocked returns when the next point is due, and false if none is watched.
func (p *Poller) nextDueLocked() (time.Time, bool) {
	var next time.Time
	for _, st := range p.watched {
		if next.IsZero() || st.due.Before(next) {
			next = st.due
		}
	}
	return next, len(p.watched) > 0
}

// groupsLocked returns the requests that poll the watched points, planning them anew
// after a Watch.
func (p *Poller) groupsLocked() []pollGroup {
	if p.groups != nil || len(p.watched) == 0 {
		return p.groups
	}
	idx := make([]int, 0, len(p.watched))
	for i := range p.watched {
		idx = append(idx, i)
	}
	for _, r := range plan(p.dev.opts.Points, idx) {
		g := pollGroup{points: r.points, interval: maxInterval}
		for _, i := range r.points {
			g.interval = min(g.interval, p.watched[i].interval)
		}
		p.groups = append(p.groups, g)
	}
	return p.groups
}

// pollDue polls the groups with a point that is due, and reports what changed. After
// a CommError it polls no further group this time: the device is unreachable, and
// each group tries again at its interval.
func (p *Poller) pollDue() {
	p.mu.Lock()
	now := time.Now()
	var due []pollGroup
	for _, g := range p.groupsLocked() {
		if slices.ContainsFunc(g.points, func(i int) bool { return !p.watched[i].due.After(now) }) {
			due = append(due, g)
		}
	}
	p.mu.Unlock()
	for _, g := range due {
		start := time.Now()
		vals, err := p.dev.ReadPoints(p.ctx, g.points)
		if p.ctx.Err() != nil {
			return
		}
		var out []Value
		p.mu.Lock()
		if err != nil {
			out = p.failLocked(err)
		} else {
			out = p.applyLocked(vals, start.Add(g.interval))
		}
		p.mu.Unlock()
		if len(out) > 0 {
			p.report(out)
		}
		if err != nil {
			return
		}
	}
}

// applyLocked records the values read and returns those to report: the first value of
// a point, a changed value, an error after a value.
func (p *Poller) applyLocked(vals []Value, due time.Time) []Value {
	var out []Value
	for _, v := range vals {
		st := p.watched[v.Point]
		if st == nil {
			continue // no longer watched
		}
		st.due = due
		if v.Err != nil {
			if !st.failed {
				st.failed, st.has, st.last = true, false, nil
				out = append(out, v)
			}
			continue
		}
		if st.has && same(st.last, v.Value) {
			continue
		}
		st.failed, st.has, st.last = false, true, v.Value
		out = append(out, v)
	}
	return out
}

// failLocked records that the device could not be reached: every watched point fails,
// and every group is due again after its interval. It returns the points to report,
// those that had not failed yet.
func (p *Poller) failLocked(err error) []Value {
	now := time.Now()
	var out []Value
	for i, st := range p.watched {
		if !st.failed {
			st.failed, st.has, st.last = true, false, nil
			out = append(out, Value{Point: i, Err: err, Time: now})
		}
	}
	for _, g := range p.groupsLocked() {
		for _, i := range g.points {
			p.watched[i].due = now.Add(g.interval)
		}
	}
	slices.SortFunc(out, func(a, b Value) int { return a.Point - b.Point })
	return out
}
