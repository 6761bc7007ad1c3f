// Command notify measures notification throughput (issue 6): the uastack server runs as a
// child process with addressSpace.simulation.count Double variables that all change every
// simulation interval (pushed through the address space, not polled); S sessions each
// monitor I of them (distinct nodes) at the sampling interval and keep Publishes
// outstanding. Reported: data-change notifications delivered per second against the
// number the changes call for, and the server's CPU per notification.
//
//	go run ./bench/cmd/notify                          # 100 sessions × 1,000 items, 100 ms
//	go run ./bench/cmd/notify -sessions 10 -items 100 -window 5s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
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
	sessions, items int
	nodes           int           // distinct simulated nodes; 0 means sessions × items
	change          time.Duration // simulation interval: every value changes this often
	sampling        time.Duration
	publishing      time.Duration
	queue           int
	publishes       int // Publish requests outstanding per session
	warmup, window  time.Duration
	security        string
	server          string
	out             string
	quiet           bool
	mirror          string // off, on, or ab (both, alternating, rounds times)
	rounds          int
}

func main() {
	var o options
	flag.IntVar(&o.sessions, "sessions", 100, "sessions, each with one subscription")
	flag.IntVar(&o.items, "items", 1000, "monitored items per session, each on its own node")
	flag.IntVar(&o.nodes, "nodes", 0, "distinct simulated nodes, shared round-robin by the items (default sessions × items)")
	flag.DurationVar(&o.change, "change", 100*time.Millisecond, "interval at which every simulated value changes")
	flag.DurationVar(&o.sampling, "sampling", 100*time.Millisecond, "sampling interval requested")
	flag.DurationVar(&o.publishing, "publishing", 100*time.Millisecond, "publishing interval requested")
	flag.IntVar(&o.queue, "queue", 1, "queue size requested per item")
	flag.IntVar(&o.publishes, "publishes", 2, "Publish requests outstanding per session")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "time after set-up before the window")
	flag.DurationVar(&o.window, "window", 30*time.Second, "measurement window")
	flag.StringVar(&o.security, "security", "Basic256Sha256", "Basic256Sha256 (SignAndEncrypt) or None")
	flag.StringVar(&o.server, "server", "", "server binary (default: go build uastack.dev/services/server)")
	flag.StringVar(&o.out, "out", "", "directory for notify.md and notify.json")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	flag.StringVar(&o.mirror, "mirror", "off", "off, on (the server mirrors its sessions and subscriptions through a NATS server, the mirror command as a child process) or ab (both, alternating)")
	flag.IntVar(&o.rounds, "rounds", 2, "with -mirror ab, windows of each configuration, alternating")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), report.Signals...)
	defer stop()
	r, err := run(ctx, o, os.Stderr)
	report.Finish("notify", o.out, r, err)
}

// result is one run's measurement.
type result struct {
	delivered   int64         // notifications received in the window
	cycles      int64         // simulation cycles in the window (the values are cycle numbers)
	window      time.Duration // its length
	serverCPU   time.Duration // in the window
	clientCPU   time.Duration // in the window
	natsCPU     time.Duration // the NATS server's, in the window (mirrored)
	serverRSS   int64         // at the end of the window
	loadAvg     float64       // one-minute load average at the end of the window
	setup       time.Duration
	pubFailures int
	errs        []string
}

// run starts the server, sets the sessions up and measures one window, once per
// configuration of -mirror.
func run(ctx context.Context, o options, logw io.Writer) (*report.Report, error) {
	configs, err := uaserver.MirrorRuns(o.mirror, o.rounds)
	if err != nil {
		return nil, err
	}
	pol, mode, err := load.SecurityOf(o.security)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "uastack-notify")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin, id, err := uaserver.Prepare(ctx, dir, o.server)
	if err != nil {
		return nil, err
	}
	defer id.PKI.Close()
	var natsBin string
	if slices.Contains(configs, true) {
		if natsBin, err = uaserver.BuildMirror(ctx, dir); err != nil {
			return nil, err
		}
	}
	total := o.sessions * o.items
	if o.nodes <= 0 || o.nodes > total {
		o.nodes = total
	}
	expected := float64(total) * float64(time.Second) / float64(o.change)
	r := report.New("notify")
	perNote := map[bool][]float64{}
	for i, mirrored := range configs {
		res, err := runOne(ctx, o, dir, bin, natsBin, id, pol, mode, mirrored, i)
		if err != nil {
			return nil, err
		}
		for _, e := range res.errs {
			fmt.Fprintln(logw, "error:", e)
		}
		rate := float64(res.delivered) / res.window.Seconds()
		// The simulation may fall behind its interval: count the changes it made.
		// Every item sees every change of its node.
		made := float64(res.cycles) * float64(total) / res.window.Seconds()
		name := fmt.Sprintf("%d sessions × %d items on %d nodes, %v", o.sessions, o.items, o.nodes, o.change)
		if slices.Contains(configs, true) {
			name += map[bool]string{false: ", mirror off", true: ", mirror on"}[mirrored]
		}
		row := report.Row{Name: name, Values: []report.Value{
			{Name: "notifications/s", Value: rate, Unit: "1/s"},
			{Name: "changes/s nominal", Value: expected, Unit: "1/s"},
			{Name: "changes/s made", Value: made, Unit: "1/s"},
			{Name: "delivered", Value: 100 * rate / max(made, 1), Unit: "% of made"},
			{Name: "server CPU", Value: 100 * res.serverCPU.Seconds() / res.window.Seconds(), Unit: "% of a core"},
			{Name: "NATS CPU", Value: 100 * res.natsCPU.Seconds() / res.window.Seconds(), Unit: "% of a core"},
			{Name: "client CPU", Value: 100 * res.clientCPU.Seconds() / res.window.Seconds(), Unit: "% of a core"},
			{Name: "server RSS", Value: float64(res.serverRSS) / (1 << 20), Unit: "MiB"},
			{Name: "publish failures", Value: float64(res.pubFailures)},
			{Name: "load avg", Value: res.loadAvg},
		}}
		if res.delivered > 0 {
			per := float64(res.serverCPU.Nanoseconds()) / float64(res.delivered)
			perNote[mirrored] = append(perNote[mirrored], per)
			row.Values = append(row.Values, report.Value{Name: "server CPU/notification", Value: per, Unit: "ns"})
		}
		r.Add(row)
		r.Note("%s: set-up of %d sessions and %d monitored items: %v", name, o.sessions, total, res.setup.Round(time.Millisecond))
	}
	r.Note("%s; publishing %v, sampling %v, queue %d, %d Publishes outstanding per session", o.security, o.publishing, o.sampling, o.queue, o.publishes)
	if o.mirror == "ab" && len(perNote[false]) > 0 && len(perNote[true]) > 0 {
		off, on := report.Median(perNote[false]), report.Median(perNote[true])
		r.Note("server CPU per notification, mirror on / off (medians of %d windows each): %.0f / %.0f ns = **%.2f** (bar ≤ 1.3: %s)",
			len(perNote[true]), on, off, on/off, map[bool]string{true: "met", false: "missed"}[on/off <= 1.3])
	}
	return r, nil
}

// runOne starts a server (and, mirrored, a NATS server), sets the sessions up and
// measures one window.
func runOne(ctx context.Context, o options, dir, bin, natsBin string, id *uaserver.Identity, pol string, mode ua.MessageSecurityMode, mirrored bool, i int) (*result, error) {
	total := o.sessions * o.items
	limit := strconv.Itoa(o.sessions + 16)
	sets := append([]string{
		"addressSpace.simulation.count=" + strconv.Itoa(o.nodes),
		"addressSpace.simulation.interval=" + o.change.String(),
		"limits.maxSessionCount=" + limit, "limits.maxChannelCount=" + limit, "limits.maxSubscriptionCount=" + limit,
		"limits.maxMonitoredItemCount=" + strconv.Itoa(total+1000),
		"limits.maxMonitoredItemsPerSubscription=" + strconv.Itoa(max(o.items, 10000)),
	}, uaserver.ManyClientsOneSource...)
	runDir, err := os.MkdirTemp(dir, "run")
	if err != nil {
		return nil, err
	}
	var nats *uaserver.NATS
	if mirrored {
		if nats, err = uaserver.StartNATS(ctx, natsBin, runDir); err != nil {
			return nil, err
		}
		defer nats.Stop()
		sets = append(sets, nats.Sets(fmt.Sprintf("notify%d", i))...)
	}
	srv, err := uaserver.Start(ctx, bin, runDir, id, sets...)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	tgt, err := load.NewTarget(ctx, srv.URL, pol, mode, id)
	if err != nil {
		return nil, err
	}
	natsPid := 0
	if nats != nil {
		natsPid = nats.Pid()
	}
	return measure(ctx, o, tgt, srv, natsPid)
}

func measure(ctx context.Context, o options, tgt *load.Target, srv *uaserver.Server, natsPid int) (*result, error) {
	res := &result{}
	prog := report.NewProgress(o.quiet)
	defer prog.Done()
	prog.Stage("notify set-up")
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	var (
		mu       sync.Mutex // guards sessions, res.errs
		sessions []*load.Session
		pubWG    sync.WaitGroup
		counted  atomic.Int64
		cycle    atomic.Int64 // the largest value seen: the simulation's cycle number
		failures atomic.Int64
		next     atomic.Int64
		setupErr error
	)
	note := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(res.errs) < 5 {
			res.errs = append(res.errs, err.Error())
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range min(8, o.sessions) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= o.sessions || ctx.Err() != nil {
					return
				}
				items := make([]load.Item, o.items)
				for j := range items {
					items[j] = load.Item{
						Node:     codec.NewStringNodeId(1, "Demo.Simulation.Load."+strconv.Itoa((i*o.items+j)%o.nodes)),
						Sampling: float64(o.sampling) / float64(time.Millisecond), Queue: uint32(o.queue),
					}
				}
				sctx, cancel := context.WithTimeout(ctx, time.Minute)
				s, err := load.Dial(sctx, tgt)
				if err == nil {
					if err = s.Subscribe(sctx, o.publishing, items, 1000); err != nil {
						s.Close()
					}
				}
				cancel()
				mu.Lock()
				if err != nil {
					setupErr = errors.Join(setupErr, err)
					mu.Unlock()
					return
				}
				sessions = append(sessions, s)
				prog.Update(float64(len(sessions)) / float64(o.sessions))
				mu.Unlock()
				for range o.publishes {
					pubWG.Go(func() {
						err := s.Publish(pubCtx, func(_ uint32, dv *codec.DataValue) {
							counted.Add(1)
							c := int64(math.Float64frombits(dv.Value.Bits()))
							for {
								old := cycle.Load()
								if c <= old || cycle.CompareAndSwap(old, c) {
									break
								}
							}
						})
						if err != nil {
							failures.Add(1)
							note(err)
						}
					})
				}
			}
		})
	}
	wg.Wait()
	res.setup = time.Since(start)
	if setupErr != nil {
		return nil, setupErr
	}
	prog.Stage("notify warm-up")
	sleep(ctx, o.warmup)
	prog.Stage("notify window")
	stop := make(chan struct{})
	go prog.Track(o.window, stop)
	u0, err := load.ProcUsage(srv.Pid())
	if err != nil {
		return nil, err
	}
	var n0cpu time.Duration
	if natsPid != 0 {
		n0cpu, _ = proc.CPUTime(natsPid)
	}
	c0, t0, n0, y0 := selfCPU(), time.Now(), counted.Load(), cycle.Load()
	sleep(ctx, o.window)
	n1, t1, c1, y1 := counted.Load(), time.Now(), selfCPU(), cycle.Load()
	u1, err := load.ProcUsage(srv.Pid())
	close(stop)
	if err != nil {
		return nil, err
	}
	if natsPid != 0 {
		n1cpu, _ := proc.CPUTime(natsPid)
		res.natsCPU = n1cpu - n0cpu
	}
	res.delivered, res.window, res.cycles = n1-n0, t1.Sub(t0), y1-y0
	res.serverCPU, res.clientCPU, res.serverRSS = u1.CPU-u0.CPU, c1-c0, u1.RSS
	res.pubFailures = int(failures.Load())
	res.loadAvg, _ = proc.LoadAverage()
	stopPub()
	for _, s := range sessions {
		s.Close()
	}
	pubWG.Wait()
	return res, ctx.Err()
}

// selfCPU is this process's CPU time (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
