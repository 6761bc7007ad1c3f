package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/bench/internal/load"
	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
)

// serverUse is one server's CPU time and resident memory at the points of the run.
type serverUse struct {
	cpuWarm, cpuKill, cpuResumed, cpuAfter time.Duration // cumulative, at each point
	rssBefore, rssAfter                    int64
	sessionsBefore, sessionsAfter          int
}

// outcome is what a run measured.
type outcome struct {
	o           options
	established int
	setup       time.Duration

	warm, failover, after time.Duration // the windows: warm-up, kill to all resumed, after
	servers               []serverUse
	benchCPU              time.Duration           // this process (NATS and clients) from the kill to all resumed
	benchWarmCPU          time.Duration           // and in the warm-up
	natsTook              [phases][]time.Duration // the NATS probe's writes, by phase
	natsFails             [phases]int

	moved                                 []movedSession
	allMoved                              time.Duration // from the kill until every affected client was at a survivor; -1 if not
	survivors                             int           // sessions of the survivors
	survivorDrops                         int           // of them, sessions that missed a value
	survivorMiss                          int           // values they missed
	notCurrent                            int           // sessions whose last value is not their server's last
	unlocated                             int           // sessions whose client was still moving at the end
	lost, recreated, republished, dropped uint64
	written                               int32 // the last value written
	standbys                              int   // moved sessions that had a standby at the kill
	writeFailed, writeSkipped             int
	errs                                  []string
}

// movedSession is what became of a session of the killed server.
type movedSession struct {
	resumed    bool
	took       time.Duration // kill to the first Publish response from a survivor
	at         int           // the server it ended on, -1 if none
	newSession bool          // its SessionId changed
	missed     int           // values it did not see outside its gap
	gap        int           // values written within its gap that it did not see
	notResumed int           // values after its last one before the kill, when it never resumed
}

// run sets the redundant set up, establishes the sessions, kills one server and
// measures; it returns the report (nil only if nothing was measured).
func run(ctx context.Context, o options, logw io.Writer) (*report.Report, error) {
	pol, mode, err := load.SecurityOf(o.security)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "uastack-failover")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	prog := report.NewProgress(o.quiet)
	defer prog.Done()
	prog.Stage("building the server")
	bin := o.server
	if bin == "" {
		if bin, err = uaserver.Build(ctx, dir); err != nil {
			return nil, err
		}
	}
	prog.Stage("client certificates")
	var ids []*uaserver.Identity
	defer func() {
		for _, id := range ids {
			_ = id.PKI.Close()
		}
	}()
	for i := range o.apps {
		id, err := uaserver.NewNamedIdentity(dir, "failover-"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	prog.Stage("NATS and the servers")
	set, err := startSet(ctx, o, bin, dir, ids)
	if err != nil {
		return nil, err
	}
	defer set.stop()
	res, err := measure(ctx, o, set, newDialer(o, set.urls, ids, client.Security(pol, mode)), prog, logw)
	if res == nil {
		return nil, err
	}
	return build(res), err
}

// measure runs the scenario on a running set.
func measure(ctx context.Context, o options, set *redundantSet, d *dialer, prog *report.Progress, logw io.Writer) (*outcome, error) {
	res := &outcome{o: o, servers: make([]serverUse, o.servers), allMoved: -1}
	var errMu sync.Mutex // guards res.errs
	note := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if len(res.errs) < 5 {
			res.errs = append(res.errs, err.Error())
		}
	}

	// The writers' clients: one per server, no failover.
	var writers []*client.Client
	defer func() {
		for _, c := range writers {
			closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.Close(closeCtx)
			cancel()
		}
	}()
	for i := range o.servers {
		c, err := d.dial(ctx, i, 0, false, client.SessionName("failover-writer"))
		if err != nil {
			return nil, fmt.Errorf("writer of server %d: %w", i, err)
		}
		writers = append(writers, c)
	}
	w, err := newWriter(ctx, o.interval, writers)
	if err != nil {
		return nil, fmt.Errorf("writing 0: %w", err)
	}

	// Establish the sessions, evenly over the servers.
	var kill atomic.Int64
	sessions := make([]*session, o.sessions)
	for k := range sessions {
		sessions[k] = newSession(k%o.servers, &kill)
	}
	defer closeAll(sessions)
	prog.Stage("establishing")
	start := time.Now()
	var next, done atomic.Int64
	var failed atomic.Int32
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Go(func() {
			for k := int(next.Add(1)) - 1; k < o.sessions && ctx.Err() == nil; k = int(next.Add(1)) - 1 {
				if err := d.establish(ctx, sessions[k], k/o.servers); err != nil {
					failed.Add(1)
					note(fmt.Errorf("session %d: %w", k, err))
					continue
				}
				prog.Update(float64(done.Add(1)) / float64(o.sessions))
			}
		})
	}
	wg.Wait()
	res.setup, res.established = time.Since(start), int(done.Load())
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if failed.Load() > 0 {
		return nil, fmt.Errorf("%d of %d sessions not established: %v", failed.Load(), o.sessions, res.errs)
	}

	// Warm-up: the counter runs; the servers' CPU is measured over it.
	prog.Stage("warm-up")
	probe, err := startNATSProbe(ctx, set.nats[len(set.nats)-1].ClientURL(), o.nats)
	if err != nil {
		return nil, fmt.Errorf("NATS probe: %w", err)
	}
	probing := true
	defer func() {
		if probing {
			probe.finish()
		}
	}()
	// cpus reads every running server's CPU time into the field point picks.
	cpus := func(point func(*serverUse) *time.Duration) {
		for i, srv := range set.servers {
			if t, err := proc.CPUTime(srv.Pid()); err == nil {
				*point(&res.servers[i]) = t
			}
		}
	}
	w.start()
	writing := true
	defer func() {
		if writing {
			w.finish()
		}
	}()
	cpus(func(u *serverUse) *time.Duration { return &u.cpuWarm })
	warmStart, benchWarm := time.Now(), proc.SelfCPU()
	stopTrack := make(chan struct{})
	go prog.Track(o.killAfter, stopTrack)
	sleep(ctx, o.killAfter)
	close(stopTrack)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.warm, res.benchWarmCPU = time.Since(warmStart), proc.SelfCPU()-benchWarm
	cpus(func(u *serverUse) *time.Duration { return &u.cpuKill })
	for i, srv := range set.servers {
		res.servers[i].rssBefore, _ = proc.RSS(srv.Pid())
	}
	var affected []*session
	for _, s := range sessions {
		res.servers[s.home].sessionsBefore++
		if s.home == o.kill {
			s.sessionID = s.c.SessionID()
			s.keepAlives = s.sub.Stats().KeepAlives
			if s.c.StandbyURL() != "" {
				res.standbys++
			}
			affected = append(affected, s)
		}
	}

	// The kill.
	prog.Stage("failover")
	w.drop(o.kill)
	if o.profile != "" {
		f, err := os.Create(o.profile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	probe.enter(phaseFailover)
	bench0 := proc.SelfCPU()
	killed := time.Now()
	gone, err := set.servers[o.kill].Kill(ctx)
	if err != nil {
		return nil, fmt.Errorf("killing server %d: %w", o.kill, err)
	}
	kill.Store(gone.UnixNano())
	deadURL := set.urls[o.kill]
	var movedMu sync.Mutex // guards movedAt
	movedAt := make([]time.Time, len(affected))
	waitCtx, stopWait := context.WithTimeout(ctx, o.wait)
	defer stopWait()
	for j, s := range affected {
		go func() {
			// URL waits while the client moves (it holds the client's lock for the
			// whole move), so it changes right after the move.
			for waitCtx.Err() == nil {
				if s.c.URL() != deadURL {
					movedMu.Lock()
					if waitCtx.Err() == nil {
						movedAt[j] = time.Now()
					}
					movedMu.Unlock()
					return
				}
				sleep(waitCtx, 10*time.Millisecond)
			}
		}()
	}
	lastLine := killed
	for waitCtx.Err() == nil {
		now, all, resumed := time.Now(), true, 0
		for _, s := range affected {
			if !s.hasResumed() && !s.noteKeepAlive(now) {
				all = false
			} else {
				resumed++
			}
		}
		if all {
			break
		}
		if o.verbose && now.Sub(lastLine) >= time.Second {
			lastLine = now
			movedMu.Lock()
			moved := 0
			for _, t := range movedAt {
				if !t.IsZero() {
					moved++
				}
			}
			movedMu.Unlock()
			fmt.Fprintf(logw, "%6.1fs after the kill: %d of %d moved, %d resumed; CPU so far: bench %s", now.Sub(killed).Seconds(), moved, len(affected), resumed, proc.SelfCPU()-bench0)
			for i, srv := range set.servers {
				if t, err := proc.CPUTime(srv.Pid()); err == nil && i != o.kill {
					fmt.Fprintf(logw, ", server %d %s", i, t-res.servers[i].cpuKill)
				}
			}
			fmt.Fprintln(logw)
		}
		prog.Update(float64(time.Since(killed)) / float64(o.wait))
		sleep(waitCtx, 5*time.Millisecond)
	}
	if o.profile != "" {
		pprof.StopCPUProfile()
	}
	probe.enter(phaseAfter)
	resumedAt := time.Now()
	res.failover = resumedAt.Sub(killed)
	res.benchCPU = proc.SelfCPU() - bench0
	cpus(func(u *serverUse) *time.Duration { return &u.cpuResumed })
	stopWait()
	// A watcher whose client is still moving returns once the move is over: it is
	// not waited for, and what it finds then is not counted.
	movedMu.Lock()
	last := time.Duration(0)
	for _, t := range movedAt {
		if t.IsZero() {
			last = -1
			break
		}
		last = max(last, t.Sub(killed))
	}
	movedMu.Unlock()
	res.allMoved = last
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	// After: the survivors with every session.
	prog.Stage("after the failover")
	stopTrack = make(chan struct{})
	go prog.Track(o.after, stopTrack)
	afterStart := time.Now()
	sleep(ctx, o.after)
	close(stopTrack)
	res.after = time.Since(afterStart)
	cpus(func(u *serverUse) *time.Duration { return &u.cpuAfter })
	for i, srv := range set.servers {
		if i != o.kill {
			res.servers[i].rssAfter, _ = proc.RSS(srv.Pid())
		}
	}
	probing = false
	res.natsTook, res.natsFails = probe.finish()
	writing = false
	res.written = w.finish()
	res.writeFailed, res.writeSkipped = w.counts()

	// Settle: the last values are due within a publishing interval; wait until every
	// session has its server's last value, or a bound.
	prog.Stage("settling")
	settleEnd := time.Now().Add(max(2*time.Second, 20*o.interval))
	for ctx.Err() == nil {
		locateAll(sessions, set, o.kill, max(time.Second, 10*o.interval))
		if countNotCurrent(sessions, w) == 0 || !time.Now().Before(settleEnd) {
			break
		}
		sleep(ctx, o.interval)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	tally(res, sessions, w, killed)
	fmt.Fprintf(logw, "\nfailover: %d sessions, %d on the killed server, %d resumed; %d values written\n",
		res.established, len(affected), countResumed(res.moved), res.written)
	for _, e := range res.errs {
		fmt.Fprintln(logw, "  error:", e)
	}
	return res, nil
}

// tally reads what every session saw against what was written, once each session has
// been located (session.locate).
func tally(res *outcome, sessions []*session, w *writer, killed time.Time) {
	o := res.o
	res.notCurrent = countNotCurrent(sessions, w)
	for _, s := range sessions {
		if !s.located {
			res.unlocated++
		}
		res.lost += s.stats.Lost
		res.recreated += s.stats.Recreated
		res.republished += s.stats.Republished
		res.dropped += s.stats.Dropped
		if s.at >= 0 {
			res.servers[s.at].sessionsAfter++
		}
		if s.home == o.kill {
			res.moved = append(res.moved, s.moved(o.kill, res.written, w, killed))
			continue
		}
		res.survivors++
		missed := 0
		for v := int32(1); v <= res.written; v++ {
			if w.wrote(s.home, v) && !s.saw(v) {
				missed++
			}
		}
		if missed > 0 {
			res.survivorDrops++
			res.survivorMiss += missed
		}
	}
}

// moved is what became of s, a session of the killed server: the values up to the last
// one it got from messages published before the kill are the killed server's, those
// from the first one in a message published after it are the survivor's, and the values
// between are its gap.
func (s *session) moved(killed int, written int32, w *writer, kill time.Time) movedSession {
	m := movedSession{at: s.at, newSession: s.located && s.endID != s.sessionID}
	s.mu.Lock()
	lastBefore, firstAfter, resumed := s.lastBefore, s.firstAfter, s.resumed
	s.mu.Unlock()
	m.resumed = !resumed.IsZero()
	if m.resumed {
		m.took = resumed.Sub(kill)
	}
	for v := int32(1); v <= written; v++ {
		switch {
		case v <= lastBefore:
			if w.wrote(killed, v) && !s.saw(v) {
				m.missed++
			}
		case !m.resumed || m.at < 0:
			m.notResumed++
		case firstAfter < 0 || v < firstAfter:
			// Written while the session was between the servers (a keep-alive resumed
			// it, firstAfter < 0, until its first value came).
			if (w.wrote(killed, v) || w.wrote(m.at, v)) && !s.saw(v) {
				m.gap++
			}
		default:
			if w.wrote(m.at, v) && !s.saw(v) {
				m.missed++
			}
		}
	}
	return m
}

// countNotCurrent counts the located sessions whose last value is not the last one
// written to the server they are on (a session still at the killed server is not
// current).
func countNotCurrent(sessions []*session, w *writer) int {
	n := 0
	for _, s := range sessions {
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		if s.at < 0 || last != w.lastWritten(s.at) {
			n++
		}
	}
	return n
}

func countResumed(moved []movedSession) int {
	n := 0
	for _, m := range moved {
		if m.resumed {
			n++
		}
	}
	return n
}

// locateAll locates every session (session.locate) at once, waiting at most bound: a
// client that is still moving holds its lock for the whole move, and is left where it
// was found last (nowhere, at first).
func locateAll(sessions []*session, set *redundantSet, killed int, bound time.Duration) {
	type place struct {
		s     *session
		where location
	}
	found := make(chan place, len(sessions))
	for _, s := range sessions {
		go func() { found <- place{s, s.find(set, killed)} }()
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	for range sessions {
		select {
		case p := <-found:
			p.s.location = p.where
		case <-t.C:
			return
		}
	}
}

// closeAll closes the established sessions, a few at a time.
func closeAll(sessions []*session) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, 16)
	for _, s := range sessions {
		if s.c == nil {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.c.Close(ctx)
		})
	}
	wg.Wait()
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
