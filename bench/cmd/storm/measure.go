package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/bench/internal/load"
	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// baselineCycles is the server's GC cycles the baseline spans at least (within
// -baseline-max).
const baselineCycles = 2

// serverConfig is one server configuration of the comparison: a name and the --set
// flags it adds to the base ones.
type serverConfig struct {
	Name string
	Sets []string
	// Decoy aims the storm at a second server of the same configuration: the measured
	// one then shares the machine with the storm and its server but serves none of it,
	// which is what the machine alone costs the probes' Reads.
	Decoy bool
}

// identities are the client applications of a run: the plant's (the established
// sessions, the first also the bench's own control session), the cooperative storm
// clients' and the rude ones'. Each has its own certificate, so that a server that gives
// each application its share sees these kinds of client, not one.
type identities struct {
	apps, coop []*uaserver.Identity
	rude       *uaserver.Identity
}

const rudeName = "storm-rude"

// coopName names the i-th cooperative client application.
func coopName(i int) string { return fmt.Sprintf("storm-cooperative-%d", i) }

func newIdentities(dir string, apps, coopApps int) (*identities, error) {
	ids := &identities{}
	var err error
	for i := range apps {
		id, err := uaserver.NewNamedIdentity(dir, fmt.Sprintf("plant-%d", i))
		if err != nil {
			ids.close()
			return nil, err
		}
		ids.apps = append(ids.apps, id)
	}
	for i := range coopApps {
		id, err := uaserver.NewNamedIdentity(dir, coopName(i))
		if err != nil {
			ids.close()
			return nil, err
		}
		ids.coop = append(ids.coop, id)
	}
	if ids.rude, err = uaserver.NewNamedIdentity(dir, rudeName); err != nil {
		ids.close()
		return nil, err
	}
	return ids, nil
}

func (ids *identities) all() []*uaserver.Identity {
	return append(append(append([]*uaserver.Identity{}, ids.apps...), ids.coop...), ids.rude)
}

func (ids *identities) close() {
	for _, id := range ids.all() {
		if id != nil {
			_ = id.PKI.Close()
		}
	}
}

// Phases of a configuration's run, for the counters that belong to one.
const (
	phaseSetup int32 = iota
	phaseBaseline
	phaseStorm
	phaseAfter
)

// outcome is the measurement of one server configuration.
type outcome struct {
	cfg  serverConfig
	sets []string // every --set passed, the base ones first

	established, failed int
	setup               time.Duration
	// The writes from the baseline's start to the storm's end, and the sessions that
	// did not see each of them.
	writes, dropSessions, missed, publishFailed int
	notesBefore, notesDuring                    int64
	before, during                              time.Duration // the baseline and the storm
	readsBefore, readsDuring                    []time.Duration
	readsRude, readsTail                        []time.Duration // readsDuring split where the last rude client is done
	readErrors                                  int
	rssBefore, rssPeak                          int64  // the baseline's peak, the storm's peak
	baselineGCs                                 int64  // the server's GC cycles in the baseline
	metrics                                     string // the server's observability.metricsAddr
	cpuBefore, cpuDuring                        time.Duration
	benchCPU                                    time.Duration // this process over the storm
	decoyCPU                                    time.Duration // the decoy server over the storm
	storm                                       *stormResult
	// The server's session count (CurrentSessionCount) against the sessions the bench
	// keeps (expected): at the storm's end, and when it came back to expected or the
	// settle time was over (settled < 0).
	expected, sessionsEnd, sessionsSettled int
	settled                                time.Duration
	// The server's session counters from the storm's start to the end of settling.
	diagBefore, diagAfter  sessionDiagnostics
	orphans                orphanWatch
	loadBefore, loadDuring float64
	errs                   []string
}

// baseSets size the server for the established sessions and their headroom, in every
// configuration.
func baseSets(o options) []string {
	sessions := strconv.Itoa(o.sessions + 1 + o.sessionHeadroom)
	return append([]string{
		"limits.maxSessionCount=" + sessions,
		"limits.maxSubscriptionCount=" + sessions,
		"limits.maxChannelCount=" + strconv.Itoa(o.sessions+1+o.channelHeadroom),
		"limits.maxQueuedRequestCount=" + strconv.Itoa(max(200, 2*o.sessions)),
	}, o.base...)
}

// measure runs the whole sequence against one server configuration: establish, baseline,
// storm, settle.
func measure(ctx context.Context, o options, cfg serverConfig, bin, dir string, ids *identities, prog *report.Progress, logw io.Writer) (*outcome, error) {
	res := &outcome{cfg: cfg, settled: -1}
	pol, mode, err := load.SecurityOf(o.security)
	if err != nil {
		return nil, err
	}
	// The server's /metrics tells the baseline when it has seen whole GC cycles.
	res.sets, res.metrics, err = withMetrics(append(baseSets(o), cfg.Sets...))
	if err != nil {
		return nil, err
	}
	prog.Stage(cfg.Name + ": starting the server")
	srv, err := uaserver.StartTrusting(ctx, bin, dir, ids.all(), res.sets...)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	target := srv
	if cfg.Decoy {
		sets := append(baseSets(o), cfg.Sets...)
		if target, err = uaserver.StartTrusting(ctx, bin, filepath.Join(dir, "decoy"), ids.all(), sets...); err != nil {
			return nil, fmt.Errorf("decoy: %w", err)
		}
		defer target.Stop()
	}
	// The cooperative clients check the server certificate (pkg/client): trust the
	// storm's target's, which is new with every start.
	for _, id := range ids.coop {
		if err := id.Trust(target.DER, "uastack-server"); err != nil {
			return nil, err
		}
	}
	targets := make([]*load.Target, len(ids.apps))
	for i, id := range ids.apps {
		if err := load.Patiently(ctx, func() (err error) {
			targets[i], err = load.NewTarget(ctx, srv.URL, pol, mode, id)
			return err
		}); err != nil {
			return nil, err
		}
	}
	node := codec.NewStringNodeId(1, "Demo.Scalar_Double")
	var control *load.Session
	if err := load.Patiently(ctx, func() (err error) {
		control, err = load.DialAs(ctx, targets[0], load.Conn{Local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}})
		return err
	}); err != nil {
		return nil, fmt.Errorf("control session: %w", err)
	}
	defer control.Close()
	if err := control.Write(ctx, node, codec.DoubleVariant(0)); err != nil {
		return nil, err
	}

	// Establish the sessions, each with its Publish loop.
	var (
		mu       sync.Mutex // guards sessions, tallies, res.failed, res.errs
		sessions []*load.Session
		tallies  []*load.Tally
		phase    atomic.Int32
		notes    [phaseAfter + 1]atomic.Int64
		pubWG    sync.WaitGroup
		pubFail  atomic.Int64
		next     atomic.Int64
	)
	note := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(res.errs) < 5 {
			res.errs = append(res.errs, err.Error())
		}
	}
	pubCtx, stopPub := context.WithCancel(ctx)
	defer func() {
		stopPub()
		for _, s := range sessions {
			s.Close()
		}
		pubWG.Wait()
	}()
	prog.Stage(cfg.Name + ": establishing")
	start := time.Now()
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < o.sessions && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				how := load.Conn{Local: &net.TCPAddr{IP: loopback(1, i/o.perSource)}}
				var s *load.Session
				err := load.Patiently(ctx, func() error {
					sctx, cancel := context.WithTimeout(ctx, time.Minute)
					defer cancel()
					var err error
					if s, err = load.DialAs(sctx, targets[i%len(targets)], how); err != nil {
						return err
					}
					if err = s.Subscribe(sctx, o.interval, []load.Item{{Node: node, Sampling: -1, Queue: 10}}, 1); err != nil {
						s.Close()
					}
					return err
				})
				if err != nil {
					mu.Lock()
					res.failed++
					mu.Unlock()
					note(err)
					continue
				}
				t := load.NewTally()
				mu.Lock()
				sessions = append(sessions, s)
				tallies = append(tallies, t)
				done := len(sessions)
				mu.Unlock()
				prog.Update(float64(done) / float64(o.sessions))
				pubWG.Go(func() {
					err := s.Publish(pubCtx, func(_ uint32, dv *codec.DataValue) {
						f := math.Float64frombits(dv.Value.Bits())
						notes[phase.Load()].Add(1)
						t.Observe(f)
					})
					if err != nil {
						pubFail.Add(1)
						note(err)
					}
				})
			}
		})
	}
	wg.Wait()
	res.setup, res.established = time.Since(start), len(sessions)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if res.established < o.probes {
		return res, fmt.Errorf("%d sessions established of %d: %v", res.established, o.sessions, res.errs)
	}
	res.expected = res.established + 1 // and the control session

	// The storm process, ready before the baseline so that its set-up is not in it.
	prog.Stage(cfg.Name + ": starting the storm process")
	sp, err := startStorm(ctx, plan{
		URL: target.URL, Dir: o.dir, Security: o.security, Cooperative: len(ids.coop), Rude: rudeName,
		Attempts: o.attempts, Within: o.within, Clients: o.cooperative, InFlight: o.inflight,
		Sources: o.rudeSources, DropShare: o.dropShare, AbandonShare: o.abandonShare,
		RudeTimeout: o.rudeTimeout, RudeSessionTimeout: o.rudeSessionTimeout, CoopDeadline: o.coopDeadline,
		Nice: o.stormNice,
	}, o.clientProcs, logw)
	if err != nil {
		return nil, err
	}
	defer sp.stop()
	sleep(ctx, time.Second) // let the set-up's garbage settle

	// Baseline and storm: the writer, the probes' Reads and the RSS sampler run through
	// both and stop at the storm's end.
	var (
		stopLoad = make(chan struct{})
		loadWG   sync.WaitGroup
		rmu      sync.Mutex // guards res.readsBefore, res.readsDuring, res.readsRude, res.readsTail, res.readErrors, res.rssBefore, res.rssPeak
		wErr     error
	)
	var rudeDone atomic.Bool // the storm process has said rude-done
	phase.Store(phaseBaseline)
	loadWG.Go(func() {
		tick := time.NewTicker(o.interval)
		defer tick.Stop()
		for {
			res.writes++
			if err := control.Write(ctx, node, codec.DoubleVariant(float64(res.writes))); err != nil {
				wErr = fmt.Errorf("writer: %w", err)
				return
			}
			select {
			case <-stopLoad:
				return
			case <-tick.C:
			}
		}
	})
	for _, s := range sessions[:o.probes] {
		loadWG.Go(func() {
			tick := time.NewTicker(o.probeEvery)
			defer tick.Stop()
			for {
				t0 := time.Now()
				_, err := s.Read(ctx, node)
				d := time.Since(t0)
				rmu.Lock()
				switch {
				case err != nil:
					res.readErrors++
				case phase.Load() == phaseBaseline:
					res.readsBefore = append(res.readsBefore, d)
				case phase.Load() == phaseStorm:
					res.readsDuring = append(res.readsDuring, d)
					if rudeDone.Load() {
						res.readsTail = append(res.readsTail, d)
					} else {
						res.readsRude = append(res.readsRude, d)
					}
				}
				rmu.Unlock()
				select {
				case <-stopLoad:
					return
				case <-tick.C:
				}
			}
		})
	}
	loadWG.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := proc.RSS(srv.Pid()); err == nil {
				rmu.Lock()
				switch phase.Load() {
				case phaseBaseline:
					res.rssBefore = max(res.rssBefore, rss)
				case phaseStorm:
					res.rssPeak = max(res.rssPeak, rss)
				}
				rmu.Unlock()
			}
			select {
			case <-stopLoad:
				return
			case <-tick.C:
			}
		}
	})
	prog.Stage(cfg.Name + ": baseline")
	res.loadBefore, _ = proc.LoadAverage()
	cpu0, err := proc.CPUTime(srv.Pid())
	if err != nil {
		close(stopLoad)
		loadWG.Wait()
		return nil, err
	}
	t0 := time.Now()
	gc0, gcErr := gcCycles(ctx, res.metrics)
	sleep(ctx, o.baseline)
	// The resident memory before the storm is a peak only over whole GC cycles: the
	// heap grows to its goal between two collections, and a baseline that ends halfway
	// would take the storm's part of a cycle for the storm's cost.
	for gcErr == nil && ctx.Err() == nil {
		var n int64
		if n, gcErr = gcCycles(ctx, res.metrics); gcErr != nil {
			break
		}
		if res.baselineGCs = n - gc0; res.baselineGCs >= baselineCycles || time.Since(t0) >= o.baselineMax {
			break
		}
		sleep(ctx, time.Second)
	}
	if gcErr != nil {
		close(stopLoad)
		loadWG.Wait()
		return nil, fmt.Errorf("counting the server's GC cycles: %w", gcErr)
	}
	res.before = time.Since(t0)
	cpu1, _ := proc.CPUTime(srv.Pid())

	prog.Stage(cfg.Name + ": storm")
	stopTrack := make(chan struct{})
	go prog.Track(o.within, stopTrack)
	if res.diagBefore, err = readDiagnostics(ctx, control); err != nil {
		close(stopTrack)
		close(stopLoad)
		loadWG.Wait()
		return nil, err
	}
	phase.Store(phaseStorm)
	t1, bench0 := time.Now(), proc.SelfCPU()
	decoy0, _ := proc.CPUTime(target.Pid())
	// The orphans are the rude clients' sessions still there once every rude client is
	// gone: watched from then on, while cooperative clients may still be connecting.
	var watched chan orphanWatch
	err = sp.begin()
	if o.profile != "" {
		go profileStorm(ctx, res.metrics, o.profile, cfg.Name, o.profileAt, logw)
	}
	if err == nil {
		err = sp.expect(ctx, o.within+o.rudeTimeout+time.Minute, "rude-done")
		rudeDone.Store(true)
	}
	if err == nil {
		watched = make(chan orphanWatch, 1)
		go func() { watched <- watchOrphans(ctx, control, ids.rude.URI, time.Now().Add(o.settle)) }()
		res.storm, err = sp.result(ctx, o.coopDeadline+time.Minute)
	}
	res.during, res.benchCPU = time.Since(t1), proc.SelfCPU()-bench0
	close(stopTrack)
	cpu2, _ := proc.CPUTime(srv.Pid())
	if cfg.Decoy {
		decoy1, _ := proc.CPUTime(target.Pid())
		res.decoyCPU = decoy1 - decoy0
	}
	phase.Store(phaseAfter)
	close(stopLoad)
	loadWG.Wait()
	if err != nil {
		return nil, err
	}
	if wErr != nil {
		return nil, wErr
	}
	res.cpuBefore, res.cpuDuring = cpu1-cpu0, cpu2-cpu1
	res.loadDuring, _ = proc.LoadAverage()
	stormEnd := time.Now()
	if res.sessionsEnd, err = sessionCount(ctx, control); err != nil {
		return nil, err
	}

	// The last value is due within one publishing interval; allow three.
	prog.Stage(cfg.Name + ": settling")
	sleep(ctx, 3*o.interval)
	res.notesBefore, res.notesDuring = notes[phaseBaseline].Load(), notes[phaseStorm].Load()
	res.publishFailed = int(pubFail.Load())
	for _, t := range tallies {
		if n := t.Missed(res.writes); n > 0 {
			res.dropSessions++
			res.missed += n
		}
	}

	res.orphans = <-watched
	if res.orphans.err != nil {
		return nil, res.orphans.err
	}
	// And nothing else is left: poll the session count until it is back to the sessions
	// the bench keeps (the cooperative clients' are closed, the rude ones' gone).
	deadline := stormEnd.Add(o.settle)
	for ctx.Err() == nil {
		n, err := sessionCount(ctx, control)
		if err != nil {
			return nil, err
		}
		res.sessionsSettled = n
		if n <= res.expected {
			res.settled = time.Since(stormEnd)
			break
		}
		if time.Now().After(deadline) {
			break
		}
		sleep(ctx, time.Second)
	}
	if res.diagAfter, err = readDiagnostics(ctx, control); err != nil {
		return nil, err
	}
	return res, ctx.Err()
}

// orphanWatch is what became of the rude clients' sessions once the last rude client was
// gone: how many there were then, how many were left when the watch ended, and when
// the last went (negative: not within the watch).
type orphanWatch struct {
	atRudeEnd, left int
	gone            time.Duration
	err             error
}

// watchOrphans counts the sessions of application uri every 2 s until there are none or
// the deadline has passed.
func watchOrphans(ctx context.Context, s *load.Session, uri string, deadline time.Time) orphanWatch {
	w := orphanWatch{gone: -1}
	start := time.Now()
	for first := true; ctx.Err() == nil; first = false {
		n, err := sessionsOf(ctx, s, uri)
		if err != nil {
			w.err = err
			return w
		}
		if first {
			w.atRudeEnd = n
		}
		w.left = n
		if n == 0 {
			w.gone = time.Since(start)
			return w
		}
		if time.Now().After(deadline) {
			return w
		}
		sleep(ctx, 2*time.Second)
	}
	w.err = ctx.Err()
	return w
}

// sessionsOf counts the sessions whose client is application uri, from the server's
// SessionDiagnosticsArray (Part 5 §6.3.4), which describes every session created and not
// yet ended, activated or not.
func sessionsOf(ctx context.Context, s *load.Session, uri string) (int, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dv, err := s.Read(rctx, codec.NewNumericNodeId(0, id.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray))
	if err != nil {
		return 0, fmt.Errorf("SessionDiagnosticsArray: %w", err)
	}
	if dv[0].Status.IsBad() {
		return 0, fmt.Errorf("SessionDiagnosticsArray: %w", dv[0].Status)
	}
	all, _ := dv[0].Value.Value().([]codec.ExtensionObject)
	if len(all) == 0 {
		// It holds at least the bench's own sessions.
		return 0, fmt.Errorf("SessionDiagnosticsArray is empty: is observability.diagnosticsEnabled off?")
	}
	n := 0
	for _, eo := range all {
		sd, ok := eo.Value.(*ua.SessionDiagnosticsDataType)
		if !ok {
			return 0, fmt.Errorf("SessionDiagnosticsArray holds a %T", eo.Value)
		}
		if sd.ClientDescription.ApplicationUri == uri {
			n++
		}
	}
	return n, nil
}

// sessionDiagnostics are the session counters of the server's ServerDiagnosticsSummary
// (Part 5 §6.3.3, Part 5 §12.9).
type sessionDiagnostics struct {
	Cumulated, Rejected, TimedOut, Aborted uint64
}

// readDiagnostics reads the session counters of the ServerDiagnosticsSummary.
func readDiagnostics(ctx context.Context, s *load.Session) (sessionDiagnostics, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nodes := []uint32{
		id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSessionCount,
		id.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedSessionCount,
		id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionTimeoutCount,
		id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionAbortCount,
	}
	ids := make([]codec.NodeId, len(nodes))
	for i, n := range nodes {
		ids[i] = codec.NewNumericNodeId(0, n)
	}
	dv, err := s.Read(rctx, ids...)
	if err != nil {
		return sessionDiagnostics{}, fmt.Errorf("ServerDiagnosticsSummary: %w", err)
	}
	for i := range dv {
		if dv[i].Status.IsBad() {
			return sessionDiagnostics{}, fmt.Errorf("ServerDiagnosticsSummary %d: %w", nodes[i], dv[i].Status)
		}
	}
	return sessionDiagnostics{Cumulated: dv[0].Value.Bits(), Rejected: dv[1].Value.Bits(),
		TimedOut: dv[2].Value.Bits(), Aborted: dv[3].Value.Bits()}, nil
}

// sessionCount reads the server's CurrentSessionCount (Part 5 §6.3.3,
// ServerDiagnosticsSummary), created and not yet ended, activated or not.
func sessionCount(ctx context.Context, s *load.Session) (int, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dv, err := s.Read(rctx, codec.NewNumericNodeId(0, id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount))
	if err != nil {
		return 0, fmt.Errorf("CurrentSessionCount: %w", err)
	}
	if dv[0].Status.IsBad() {
		return 0, fmt.Errorf("CurrentSessionCount: %w", dv[0].Status)
	}
	return int(dv[0].Value.Bits()), nil
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
