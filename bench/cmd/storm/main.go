// Command storm is the connect storm of issue 18: against the uastack server (a child
// process) holding N established Basic256Sha256 SignAndEncrypt sessions, each with a
// subscription (1,000 ms) and a monitored item on a node the bench changes once a second,
// it measures a baseline (the Read latency of a few of those sessions, the server's
// resident memory, the notifications), then fires M connection attempts within T from
// cooperative clients (pkg/client, whose Backoff honours BadServerTooBusy and
// RetryAfterMs) and rude ones (raw connects that retry at once on any refusal, drop some
// connections mid-handshake and leave some sessions behind), and once with each server
// configuration of the comparison: with admission (the server's defaults) and without.
//
//	go run ./bench/cmd/storm                               # 2,000 sessions, 20,000 attempts in 10 s
//	go run ./bench/cmd/storm -n 200 -storm 2000 -coop 100  # smaller
//
// Reported per configuration: the established sessions' notification drops (bar 0),
// their Read p99 during the storm against before it (bar ≤ 2×), the orphan sessions once
// the server's handling of unactivated and abandoned sessions has had its time (bar 0:
// the server's CurrentSessionCount against the sessions the bench keeps), the server's
// resident memory peak during the storm against before it (bar ≤ 1.5×), the time until
// every cooperative client is in, the refusals by kind, and the CPU of the server, of the
// storm process and of the bench process.
//
// The storm runs in a process of its own (this binary again, at most -client-procs cores
// of Go code), so that the probes' latency is not this process's scheduler queueing
// behind the storm's RSA work. Every client is on loopback; the established sessions,
// the rude clients and the bench's control session connect from source addresses of
// their own in 127.0.0.0/8 (the cooperative clients, which pkg/client dials, from
// 127.0.0.1), so that a server counting connections per source sees several peers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
)

// options are the command's flags.
type options struct {
	sessions    int           // established sessions (N)
	attempts    int           // connection attempts of the storm (M)
	within      time.Duration // the storm's window (T)
	cooperative int           // cooperative clients among the attempts
	inflight    int           // rude attempts in flight at most
	rudeSources int           // loopback source addresses of the rude clients
	dropShare   float64
	// abandonShare of the rude clients that got a whole session disconnect without
	// closing it.
	abandonShare       float64
	rudeTimeout        time.Duration
	rudeSessionTimeout time.Duration
	coopDeadline       time.Duration
	baseline           time.Duration
	baselineMax        time.Duration // the baseline's bound while it waits for GC cycles
	settle             time.Duration
	interval           time.Duration // publishing interval and write period
	probes             int           // established sessions that also Read
	probeEvery         time.Duration
	apps               int // client applications of the established sessions
	coopApps           int // client applications of the cooperative clients
	perSource          int // established sessions per source address
	concurrency        int // sessions being established at once
	sessionHeadroom    int // maxSessionCount above the established sessions
	channelHeadroom    int // maxChannelCount above them
	clientProcs        int // GOMAXPROCS of the storm process
	stormNice          int // nice value of the storm process
	base               []string
	configs            []serverConfig
	security           string
	server             string
	out                string
	quiet              bool
	profile            string        // directory for the server's profiles during the storm
	profileAt          time.Duration // when in the storm they are taken
	dir                string        // the run's folder, holding the identities (set by run)
}

// Default server configurations: the names of the admission settings are those of the
// admission branch of issue 18 (limits.*).
const (
	defaultAdmission   = ""
	defaultNoAdmission = "limits.isolationProfile=SharedOnly limits.connectionsPerSecond=0 " +
		"limits.maxConnectionsPerSource=0 limits.maxConcurrentSessionEstablishment=100000 " +
		"limits.unactivatedSessionTimeout=0 limits.ownerShare=1 " +
		"limits.maxConcurrentHandshakes=100000 limits.maxQueuedHandshakes=100000"
)

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("storm", flag.ContinueOnError)
	fs.IntVar(&o.sessions, "n", 2000, "established sessions")
	fs.IntVar(&o.attempts, "storm", 20000, "connection attempts of the storm (one per cooperative client, the rest rude)")
	fs.DurationVar(&o.within, "within", 10*time.Second, "the storm's window")
	fs.IntVar(&o.cooperative, "coop", 1000, "cooperative clients (pkg/client), arriving evenly over the window")
	fs.IntVar(&o.inflight, "inflight", 2000, "rude attempts in flight at most (sockets of the storm process)")
	fs.IntVar(&o.rudeSources, "rude-sources", 16, "loopback source addresses of the rude clients")
	fs.Float64Var(&o.dropShare, "drop", 0.2, "share of the rude attempts that drop the connection mid-handshake")
	fs.Float64Var(&o.abandonShare, "abandon", 0.5, "share of the rude whole sessions left without CloseSession")
	fs.DurationVar(&o.rudeTimeout, "rude-timeout", 5*time.Second, "a rude attempt gives up (and the client retries) after it")
	fs.DurationVar(&o.rudeSessionTimeout, "rude-session-timeout", 30*time.Second, "session timeout the rude clients request")
	fs.DurationVar(&o.coopDeadline, "coop-deadline", 2*time.Minute, "a cooperative client gives up after it")
	fs.DurationVar(&o.baseline, "baseline", 10*time.Second, "baseline window before the storm, at least; it goes on until the server has completed two GC cycles in it")
	fs.DurationVar(&o.baselineMax, "baseline-max", 3*time.Minute, "the baseline's bound while it waits for the server's GC cycles")
	fs.DurationVar(&o.settle, "settle", 0, "how long after the storm to wait for the orphans to go (default: rude-session-timeout + 30s)")
	fs.DurationVar(&o.interval, "interval", time.Second, "publishing interval and write period")
	fs.IntVar(&o.probes, "probes", 4, "established sessions that also Read steadily")
	fs.DurationVar(&o.probeEvery, "probe-every", 20*time.Millisecond, "period of each probe's Reads")
	fs.IntVar(&o.apps, "apps", 10, "client applications (certificates) of the established sessions")
	fs.IntVar(&o.coopApps, "coop-apps", 1, "client applications (certificates) the cooperative clients take turns with")
	fs.IntVar(&o.perSource, "per-source", 50, "established sessions per loopback source address")
	fs.IntVar(&o.concurrency, "concurrency", 8, "sessions being established at once")
	fs.IntVar(&o.sessionHeadroom, "session-headroom", 200, "limits.maxSessionCount and maxSubscriptionCount above the established sessions")
	fs.IntVar(&o.channelHeadroom, "channel-headroom", 1000, "limits.maxChannelCount above the established sessions")
	fs.IntVar(&o.clientProcs, "client-procs", 1, "GOMAXPROCS of the storm process")
	fs.IntVar(&o.stormNice, "storm-nice", 0, "nice value of the storm process (0 to 19)")
	base := fs.String("set", "", "--set key=value flags for every configuration, space-separated")
	admission := fs.String("admission", defaultAdmission, "--set key=value flags of the configuration with admission, space-separated")
	noAdmission := fs.String("no-admission", defaultNoAdmission, "--set key=value flags of the configuration without admission, space-separated")
	which := fs.String("configs", "admission,no-admission", "configurations to run, in order: admission, no-admission, decoy (the admission server measured while the storm hits a second one: what the shared machine alone costs the probes)")
	fs.StringVar(&o.security, "security", "Basic256Sha256", "Basic256Sha256 (SignAndEncrypt) or None, for every session")
	fs.StringVar(&o.server, "server", "", "server binary (default: go build uastack.dev/services/server)")
	fs.StringVar(&o.out, "out", "", "directory for storm.md and storm.json; empty prints Markdown only")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	fs.StringVar(&o.profile, "profile", "", "directory for the server's trace, CPU profile, heap and goroutines, taken in the storm from the server's observability.metricsAddr")
	fs.DurationVar(&o.profileAt, "profile-at", 2*time.Second, "when in the storm -profile takes them")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.base = strings.Fields(*base)
	named := map[string]string{"admission": *admission, "no-admission": *noAdmission, "decoy": *admission}
	for name := range strings.SplitSeq(*which, ",") {
		name = strings.TrimSpace(name)
		sets, ok := named[name]
		if !ok {
			return o, fmt.Errorf("-configs: unknown configuration %q (admission, no-admission, decoy)", name)
		}
		o.configs = append(o.configs, serverConfig{Name: strings.ReplaceAll(name, "-", " "), Sets: strings.Fields(sets), Decoy: name == "decoy"})
	}
	for _, kv := range append(append([]string{}, o.base...), strings.Fields(*admission+" "+*noAdmission)...) {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return o, fmt.Errorf("%q is not key=value", kv)
		}
	}
	if o.settle == 0 {
		o.settle = o.rudeSessionTimeout + 30*time.Second
	}
	switch {
	case o.sessions < 1 || o.attempts < 0 || o.cooperative < 0 || o.cooperative > o.attempts:
		return o, errors.New("want -n ≥ 1 and 0 ≤ -coop ≤ -storm")
	case o.within <= 0 || o.baseline <= 0 || o.interval <= 0 || o.probeEvery <= 0:
		return o, errors.New("-within, -baseline, -interval and -probe-every must be positive")
	case o.probes < 1 || o.probes > o.sessions:
		return o, errors.New("want 1 ≤ -probes ≤ -n")
	case o.inflight < 1 || o.rudeSources < 1 || o.apps < 1 || o.coopApps < 1 || o.perSource < 1 || o.concurrency < 1 || o.clientProcs < 1:
		return o, errors.New("-inflight, -rude-sources, -apps, -coop-apps, -per-source, -concurrency and -client-procs must be positive")
	case o.stormNice < 0 || o.stormNice > 19:
		return o, errors.New("-storm-nice is 0 to 19")
	case o.dropShare < 0 || o.dropShare > 1 || o.abandonShare < 0 || o.abandonShare > 1:
		return o, errors.New("-drop and -abandon are shares from 0 to 1")
	case o.sessions/o.perSource >= 254*256 || o.rudeSources > 254*256:
		return o, errors.New("too many source addresses for 127.b.0.0/16")
	}
	return o, nil
}

func main() {
	if os.Getenv(envStorm) != "" {
		os.Exit(stormMain(os.Stdin, os.Stdout))
	}
	o, err := parse(os.Args[1:])
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "storm:", err)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), report.Signals...)
	defer stop()
	r, err := run(ctx, o, os.Stderr)
	report.Finish("storm", o.out, r, err)
}

// run measures every configuration of o and returns the report (nil only if nothing ran).
func run(ctx context.Context, o options, logw io.Writer) (*report.Report, error) {
	if err := checkFileLimit(o); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "uastack-storm")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	o.dir = dir
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
	ids, err := newIdentities(dir, o.apps, o.coopApps)
	if err != nil {
		return nil, err
	}
	defer ids.close()
	var outs []*outcome
	for i, cfg := range o.configs {
		runDir, err := os.MkdirTemp(dir, "run")
		if err != nil {
			return nil, err
		}
		res, err := measure(ctx, o, cfg, bin, runDir, ids, prog, logw)
		if err != nil {
			if res != nil {
				outs = append(outs, res)
			}
			r := build(o, outs)
			return r, fmt.Errorf("%s: %w", cfg.Name, err)
		}
		outs = append(outs, res)
		fmt.Fprintf(logw, "\n%s: %d established; storm of %d rude attempts fired, %d of %d cooperative in; %d sessions with drops\n",
			cfg.Name, res.established, res.storm.Rude.Fired, res.storm.Coop.In, res.storm.Coop.Clients, res.dropSessions)
		for _, e := range res.errs {
			fmt.Fprintln(logw, "  error:", e)
		}
		if i+1 < len(o.configs) {
			// Let the sockets of this run close before the next server starts.
			sleep(ctx, 2*time.Second)
		}
	}
	return build(o, outs), nil
}

// checkFileLimit raises this process's soft limit of open files to the hard one if that
// is short of what the run needs (the server and the storm process, Go programs, raise
// theirs themselves) and fails early if even the hard limit is short.
func checkFileLimit(o options) error {
	need := uint64(max(o.sessions+o.channelHeadroom, o.inflight+o.cooperative, o.sessions) + 256)
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Max < need {
		return fmt.Errorf("open files: the run needs about %d, the hard limit is %d (lower -n, -inflight or -coop)", need, l.Max)
	}
	if l.Cur < need {
		l.Cur = l.Max
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
	return nil
}
