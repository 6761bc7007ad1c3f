// Command sessions is the many-sessions load test (issue 6): for each N of a series it
// starts the uastack server as a child process, establishes N sessions, each on its own
// secure channel (Basic256Sha256 SignAndEncrypt by default) with one subscription
// (1,000 ms) and one monitored item on a shared node, lets them idle, then changes the node
// once a second for a steady window and checks that every session saw every value.
//
//	go run ./bench/cmd/sessions                      # 500, 1000, 2000, 4000; 60 s windows
//	go run ./bench/cmd/sessions -n 4000,6000,8000 -out bench/out
//
// Reported per N: sessions established, establishment rate, sessions that missed a value
// (drops), the server's CPU over the steady window and per notification, and its resident
// memory per session, idle and steady (RSS above the baseline before the first session,
// divided by N). The server's figures come from /proc of its own process.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/bench/internal/load"
	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

// options are the command's flags.
type options struct {
	counts      []int
	window      time.Duration // steady window with writes
	idle        time.Duration // idle window before it
	interval    time.Duration // publishing interval and write period
	concurrency int           // sessions being established at once
	publishes   int           // Publish requests outstanding per session
	security    string        // "Basic256Sha256" or "None"
	server      string        // prebuilt server binary; empty builds one
	out         string        // directory for the report files; empty prints Markdown only
	quiet       bool
	mirror      string // off, on, or ab (both, alternating, rounds times per N)
	rounds      int
}

func main() {
	var o options
	var counts string
	flag.StringVar(&counts, "n", "500,1000,2000,4000", "session counts, comma-separated")
	flag.DurationVar(&o.window, "window", 60*time.Second, "steady window with one write per interval")
	flag.DurationVar(&o.idle, "idle", 10*time.Second, "idle window before the writes, for the idle memory")
	flag.DurationVar(&o.interval, "interval", time.Second, "publishing interval and write period")
	flag.IntVar(&o.concurrency, "concurrency", 8, "sessions being established at once")
	flag.IntVar(&o.publishes, "publishes", 1, "Publish requests outstanding per session")
	flag.StringVar(&o.security, "security", "Basic256Sha256", "Basic256Sha256 (SignAndEncrypt) or None")
	flag.StringVar(&o.server, "server", "", "server binary (default: go build uastack.dev/services/server)")
	flag.StringVar(&o.out, "out", "", "directory for sessions.md, sessions.json and the charts")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	flag.StringVar(&o.mirror, "mirror", "off", "off, on (the server mirrors its sessions and subscriptions through a NATS server, the mirror command as a child process) or ab (both, alternating)")
	flag.IntVar(&o.rounds, "rounds", 2, "with -mirror ab, runs of each configuration per N, alternating")
	flag.Parse()
	for f := range strings.SplitSeq(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "sessions: -n: %q is not a positive count\n", f)
			os.Exit(2)
		}
		o.counts = append(o.counts, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), report.Signals...)
	defer stop()
	r, err := run(ctx, o, os.Stderr)
	report.Finish("sessions", o.out, r, err)
}

// securityOf maps the -security flag to a policy and mode.
var securityOf = load.SecurityOf

// run measures every count of o and returns the report (nil only if nothing ran).
func run(ctx context.Context, o options, logw io.Writer) (*report.Report, error) {
	pol, mode, err := securityOf(o.security)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "uastack-sessions")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin, id, err := uaserver.Prepare(ctx, dir, o.server)
	if err != nil {
		return nil, err
	}
	defer id.PKI.Close()
	r := report.New("sessions")
	prog := report.NewProgress(o.quiet)
	defer prog.Done()
	configs, err := uaserver.MirrorRuns(o.mirror, o.rounds) // for each N
	if err != nil {
		return r, err
	}
	var natsBin string
	if slices.Contains(configs, true) {
		if natsBin, err = uaserver.BuildMirror(ctx, dir); err != nil {
			return r, err
		}
	}
	var rate, idleKiB, steadyKiB []report.Point
	for _, n := range o.counts {
		perSession := map[bool][]float64{} // server CPU per session established, by mirrored
		perSteady := map[bool][]float64{}  // server CPU in the steady window per session
		for k, mirrored := range configs {
			runDir, err := os.MkdirTemp(dir, "run")
			if err != nil {
				return r, err
			}
			var nats *uaserver.NATS
			if mirrored {
				if nats, err = uaserver.StartNATS(ctx, natsBin, runDir); err != nil {
					return r, err
				}
			}
			res, err := measure(ctx, o, n, bin, runDir, id, pol, mode, prog, nats, k)
			if nats != nil {
				nats.Stop()
			}
			if err != nil {
				return r, fmt.Errorf("%d sessions: %w", n, err)
			}
			if slices.Contains(configs, true) {
				res.name = fmt.Sprintf("N=%d, mirror %s", n, map[bool]string{false: "off", true: "on"}[mirrored])
			}
			perSession[mirrored] = append(perSession[mirrored], (res.up.CPU-res.base.CPU).Seconds()/float64(max(res.established, 1)))
			perSteady[mirrored] = append(perSteady[mirrored], (res.steady.CPU-res.idle.CPU).Seconds()/float64(max(res.established, 1)))
			fmt.Fprintf(logw, "\nN=%d: %d established in %v, %d with drops, %d failed\n",
				n, res.established, res.setup.Round(time.Millisecond), res.dropSessions, res.failed)
			for _, e := range res.errs {
				fmt.Fprintln(logw, "  error:", e)
			}
			r.Add(res.row())
			rate = append(rate, report.Point{X: float64(n), Y: res.rate()})
			idleKiB = append(idleKiB, report.Point{X: float64(n), Y: res.perSession(res.idle.RSS) / 1024})
			steadyKiB = append(steadyKiB, report.Point{X: float64(n), Y: res.perSession(res.steady.RSS) / 1024})
		}
		if len(perSession[false]) > 0 && len(perSession[true]) > 0 {
			setup := report.Median(perSession[true]) / report.Median(perSession[false])
			steady := report.Median(perSteady[true]) / report.Median(perSteady[false])
			r.Note("N=%d, mirror on / off (medians of %d runs each): server CPU per session established **%.2f** (bar ≤ 1.2: %s), server CPU per session in the steady window %.2f",
				n, len(perSession[true]), setup, metOr(setup <= 1.2), steady)
		}
	}
	r.AddChart(report.Chart{Name: "sessions-rate", Title: "Session establishment (" + o.security + ")",
		XLabel: "sessions", YLabel: "sessions/s", Series: []report.Series{{Name: "uastack", Points: rate}}})
	r.AddChart(report.Chart{Name: "sessions-memory", Title: "Server memory per session",
		XLabel: "sessions", YLabel: "KiB/session", Series: []report.Series{
			{Name: "idle", Points: idleKiB}, {Name: "steady", Points: steadyKiB}}})
	bars(r)
	return r, nil
}

// bars notes the bars against the rows.
func bars(r *report.Report) {
	best := 0.0
	for _, row := range r.Rows {
		est, _ := row.Get("established")
		drops, _ := row.Get("sessions with drops")
		failed, _ := row.Get("failed")
		if drops == 0 && failed == 0 && est > best {
			best = est
		}
	}
	r.Note("bar 4,000 sessions with 0 drops: largest N with every session up and 0 drops = %.0f (%s)", best, metOr(best >= 4000))
	for _, row := range r.Rows {
		rate, _ := row.Get("establish rate")
		idle, _ := row.Get("idle memory/session")
		r.Note("%s: establishment %.0f sessions/s (bar ≥ 100: %s); idle memory %.1f KiB/session (bar ≤ 64: %s)",
			row.Name, rate, metOr(rate >= 100), idle, metOr(idle <= 64))
	}
}

func metOr(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// result is the measurement of one N.
type result struct {
	name                   string // the row's name; "" is N=n
	n, established, failed int
	setup                  time.Duration // establishing every session
	writes                 int           // values written in the steady window
	dropSessions, missed   int           // sessions that missed a value; values missed in all
	publishFailed          int           // sessions whose Publish loop failed
	notifications          int64         // data changes received in the steady window
	// Server usage: before the sessions, once they are up, after the idle window, at the
	// end of the steady window, and after the drain (RSS only).
	base, up, idle, steady, done load.Usage
	window                       time.Duration
	loadSetup, loadSteady        float64       // one-minute load average after set-up and after the window
	clientSetup                  time.Duration // this process's CPU while establishing
	errs                         []string      // the first few errors
}

func (r *result) rate() float64 {
	if r.setup <= 0 {
		return 0
	}
	return float64(r.established) / r.setup.Seconds()
}

// perSession is the RSS above the baseline per established session, in bytes.
func (r *result) perSession(rss int64) float64 {
	if r.established == 0 {
		return 0
	}
	return float64(rss-r.base.RSS) / float64(r.established)
}

func (r *result) row() report.Row {
	cpu := r.steady.CPU - r.idle.CPU
	name := r.name
	if name == "" {
		name = fmt.Sprintf("N=%d", r.n)
	}
	row := report.Row{Name: name, Values: []report.Value{
		{Name: "established", Value: float64(r.established)},
		{Name: "failed", Value: float64(r.failed)},
		{Name: "establish rate", Value: r.rate(), Unit: "sessions/s"},
		{Name: "writes", Value: float64(r.writes)},
		{Name: "sessions with drops", Value: float64(r.dropSessions)},
		{Name: "values missed", Value: float64(r.missed)},
		{Name: "publish failures", Value: float64(r.publishFailed)},
		{Name: "server CPU steady", Value: 100 * cpu.Seconds() / r.window.Seconds(), Unit: "% of a core"},
		{Name: "server CPU setup", Value: 1e3 * (r.up.CPU - r.base.CPU).Seconds() / float64(max(r.established, 1)), Unit: "ms/session"},
		{Name: "client CPU setup", Value: 1e3 * r.clientSetup.Seconds() / float64(max(r.established, 1)), Unit: "ms/session"},
		{Name: "idle memory/session", Value: r.perSession(r.idle.RSS) / 1024, Unit: "KiB"},
		{Name: "steady memory/session", Value: r.perSession(r.steady.RSS) / 1024, Unit: "KiB"},
		{Name: "load avg set-up", Value: r.loadSetup},
		{Name: "load avg steady", Value: r.loadSteady},
	}}
	if r.notifications > 0 {
		row.Values = append(row.Values, report.Value{Name: "server CPU/notification", Value: float64(cpu.Microseconds()) / float64(r.notifications), Unit: "µs"})
	}
	return row
}

// measure runs one N against a fresh server.
func measure(ctx context.Context, o options, n int, bin, dir string, id *uaserver.Identity, pol string, mode ua.MessageSecurityMode, prog *report.Progress, nats *uaserver.NATS, k int) (*result, error) {
	limit := strconv.Itoa(n + 16)
	// The Balanced profile keeps part of the channels for bootstrap, reconnect and
	// control traffic (issue 18): twice the sessions leaves every session its channel.
	sets := append([]string{
		"limits.maxSessionCount=" + limit, "limits.maxChannelCount=" + strconv.Itoa(2*n+16),
		"limits.maxSubscriptionCount=" + limit, "limits.maxQueuedRequestCount=" + strconv.Itoa(max(200, 2*n)),
	}, uaserver.ManyClientsOneSource...)
	if nats != nil {
		sets = append(sets, nats.Sets(fmt.Sprintf("sessions%d", k))...)
	}
	srv, err := uaserver.Start(ctx, bin, dir, id, sets...)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	tgt, err := load.NewTarget(ctx, srv.URL, pol, mode, id)
	if err != nil {
		return nil, err
	}
	node := codec.NewStringNodeId(1, "Demo.Scalar_Double")
	writer, err := load.Dial(ctx, tgt)
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	defer writer.Close()
	if err := writer.Write(ctx, node, codec.DoubleVariant(0)); err != nil {
		return nil, err
	}
	time.Sleep(time.Second) // let the start-up garbage settle before the baseline
	res := &result{n: n, window: o.window}
	if res.base, err = load.ProcUsage(srv.Pid()); err != nil {
		return nil, err
	}

	// Establish: o.concurrency workers, each session's Publish loops started at once.
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	var (
		mu        sync.Mutex // guards sessions, tallies, res.failed, res.errs
		sessions  []*load.Session
		tallies   []*load.Tally
		pubWG     sync.WaitGroup
		pubFailed atomic.Int64
		notes     atomic.Int64
		counting  atomic.Bool
		next      atomic.Int64
	)
	note := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(res.errs) < 5 {
			res.errs = append(res.errs, err.Error())
		}
	}
	fail := func(err error) {
		mu.Lock()
		res.failed++
		if len(res.errs) < 5 {
			res.errs = append(res.errs, err.Error())
		}
		mu.Unlock()
	}
	prog.Stage(fmt.Sprintf("N=%d establishing", n))
	start, cpu0 := time.Now(), proc.SelfCPU()
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Go(func() {
			for int(next.Add(1)) <= n && ctx.Err() == nil {
				sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				s, err := load.Dial(sctx, tgt)
				if err == nil {
					err = s.Subscribe(sctx, o.interval, []load.Item{{Node: node, Sampling: -1, Queue: 10}}, 1)
					if err != nil {
						s.Close()
					}
				}
				cancel()
				if err != nil {
					fail(err)
					continue
				}
				t := load.NewTally()
				mu.Lock()
				sessions = append(sessions, s)
				tallies = append(tallies, t)
				done := len(sessions)
				mu.Unlock()
				prog.Update(float64(done) / float64(n))
				for range o.publishes {
					pubWG.Go(func() {
						err := s.Publish(pubCtx, func(_ uint32, dv *codec.DataValue) {
							v := dv.Value.Bits()
							f := math.Float64frombits(v)
							if counting.Load() {
								notes.Add(1)
							}
							t.Observe(f)
						})
						if err != nil {
							pubFailed.Add(1)
							note(err)
						}
					})
				}
			}
		})
	}
	wg.Wait()
	res.setup, res.clientSetup = time.Since(start), proc.SelfCPU()-cpu0
	res.established = len(sessions)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if res.up, err = load.ProcUsage(srv.Pid()); err != nil {
		return nil, err
	}
	res.loadSetup, _ = proc.LoadAverage()

	// Idle: keep-alives only.
	prog.Stage(fmt.Sprintf("N=%d idle", n))
	stopIdle := make(chan struct{})
	go prog.Track(o.idle, stopIdle)
	sleep(ctx, o.idle)
	close(stopIdle)
	if res.idle, err = load.ProcUsage(srv.Pid()); err != nil {
		return nil, err
	}

	// Steady: one write per interval, values 1, 2, ...
	prog.Stage(fmt.Sprintf("N=%d steady", n))
	stopSteady := make(chan struct{})
	go prog.Track(o.window, stopSteady)
	counting.Store(true)
	t0 := time.Now()
	tick := time.NewTicker(o.interval)
	for time.Since(t0) < o.window && ctx.Err() == nil {
		res.writes++
		if err := writer.Write(ctx, node, codec.DoubleVariant(float64(res.writes))); err != nil {
			tick.Stop()
			close(stopSteady)
			return nil, fmt.Errorf("writer: %w", err)
		}
		<-tick.C
	}
	tick.Stop()
	close(stopSteady)
	res.window = time.Since(t0)
	if res.steady, err = load.ProcUsage(srv.Pid()); err != nil {
		return nil, err
	}
	res.loadSteady, _ = proc.LoadAverage()
	// The last value is due within one publishing interval; allow three.
	sleep(ctx, 3*o.interval)
	counting.Store(false)
	if res.done, err = load.ProcUsage(srv.Pid()); err != nil {
		return nil, err
	}
	res.notifications = notes.Load()
	res.publishFailed = int(pubFailed.Load())
	for _, t := range tallies {
		if n := t.Missed(res.writes); n > 0 {
			res.dropSessions++
			res.missed += n
		}
	}
	stopPub()
	for _, s := range sessions {
		s.Close()
	}
	pubWG.Wait()
	return res, ctx.Err()
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
