// Command failover is the failover benchmark of issue 19: a HotAndMirrored redundant set
// (Part 4 §6.6.2) of uastack servers, child processes mirroring their sessions and
// subscriptions through a NATS JetStream cluster that runs in this process (three
// nodes, every bucket and stream replicated three times), carries N sessions, each
// with one subscription monitoring the demo variable ns=1;s=Demo.Scalar_Int32, spread
// evenly over the servers. Every interval the bench writes a counter to that variable
// on every live server, so that all servers carry the same values. After a warm-up one
// server is killed with SIGKILL; its clients (pkg/client with a Failover list of the
// set) move their sessions to the survivors, which take them over with their
// subscriptions.
//
//	go run ./bench/cmd/failover                     # 1,000 sessions on 3 servers, Basic256Sha256
//	go run ./bench/cmd/failover -n 90 -security None -out /tmp/failover
//
// Reported: per moved session the failover time, from the kill to the first Publish
// response from the survivor (Part 4 §6.6.2's measure), as p50, p90, p99 and max (bar:
// p99 under 2 s, every moved session resumed) and as a histogram (failover.svg); the
// notifications lost (sequence numbers the client could not Republish), subscriptions
// created again instead of taken over and sessions created anew (bar 0 each); the
// counter values a moved session did not see outside its gap between the servers (bar
// 0) and, as information, those it did not see within the gap (the survivor reports
// the current value, not the values written while the session was away); the survivors'
// own sessions' missed values (bar 0); whether every session ends on the current value;
// each server's CPU and resident memory before, during and after the failover, and the
// time until every moved session was at a survivor.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"uastack.dev/bench/internal/load"
	"uastack.dev/bench/internal/report"
	"uastack.dev/pkg/client"
)

// options are the command's flags.
type options struct {
	sessions    int           // -n
	servers     int           // uastack servers of the set
	nats        int           // NATS nodes (and replicas of the mirror's buckets)
	kill        int           // index of the server killed
	interval    time.Duration // write period and publishing interval
	killAfter   time.Duration // warm-up: from the first write to the kill
	after       time.Duration // measured once every moved session resumed
	wait        time.Duration // bound on the wait for the moved sessions to resume
	concurrency int           // sessions being established at once
	apps        int           // client applications (certificates) the sessions take turns with
	queue       uint32        // monitored item queue size
	backoff     client.Backoff
	security    string
	server      string
	out         string
	quiet       bool
	verbose     bool          // a line a second on stderr while the sessions move
	profile     string        // file for this process's CPU profile from the kill until every moved session resumed
	standby     time.Duration // the sessions' Standby interval; 0 without
	bins        int           // histogram bins
}

// barFailoverP99 is issue 19's bar for the failover time's 99th percentile.
const barFailoverP99 = 2 * time.Second

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("failover", flag.ContinueOnError)
	fs.IntVar(&o.sessions, "n", 1000, "sessions, each with one subscription, spread evenly over the servers")
	fs.IntVar(&o.servers, "servers", 3, "uastack servers of the redundant set (child processes)")
	fs.IntVar(&o.nats, "nats", 3, "NATS nodes in this process: 1, 3 or 5, also the replicas of the mirror's buckets")
	fs.IntVar(&o.kill, "kill", 0, "index of the server killed, from 0")
	fs.DurationVar(&o.interval, "interval", 100*time.Millisecond, "the counter is written every interval; also the publishing interval")
	fs.DurationVar(&o.killAfter, "kill-after", 10*time.Second, "warm-up from the first write to the kill")
	fs.DurationVar(&o.after, "after", 10*time.Second, "measured once every moved session resumed (CPU and memory after, the survivors' sessions)")
	fs.DurationVar(&o.wait, "wait", time.Minute, "bound on the wait for the moved sessions to resume")
	fs.IntVar(&o.concurrency, "concurrency", 8, "sessions being established at once")
	fs.IntVar(&o.apps, "apps", 10, "client applications (certificates) the sessions of each server take turns with")
	queue := fs.Uint("queue", 10, "queue size of each monitored item")
	fs.DurationVar(&o.backoff.Initial, "backoff-initial", 20*time.Millisecond, "the clients' Backoff: first delay between reconnect attempts")
	fs.DurationVar(&o.backoff.Max, "backoff-max", 100*time.Millisecond, "the clients' Backoff: longest delay")
	fs.IntVar(&o.backoff.Attempts, "backoff-attempts", 2, "the clients' Backoff: attempts at the lost server before the move")
	fs.DurationVar(&o.standby, "standby", 5*time.Second, "each session keeps a standby (client.Standby) read every interval; 0: none, the move probes the servers and opens a channel")
	fs.StringVar(&o.security, "security", "Basic256Sha256", "Basic256Sha256 (SignAndEncrypt) or None, for every session")
	fs.StringVar(&o.server, "server", "", "server binary (default: go build uastack.dev/services/server)")
	fs.StringVar(&o.out, "out", "", "directory for failover.md, failover.json and failover.svg; empty prints Markdown only")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	fs.StringVar(&o.profile, "profile", "", "file for this process's CPU profile (the clients' and NATS's) from the kill until every moved session resumed")
	fs.BoolVar(&o.verbose, "v", false, "a line a second on stderr while the sessions move: how many moved and resumed, the CPU spent")
	fs.IntVar(&o.bins, "bins", 40, "bins of the failover time histogram, about")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.queue = uint32(*queue)
	if _, _, err := load.SecurityOf(o.security); err != nil {
		return o, err
	}
	switch {
	case o.servers < 2:
		return o, errors.New("-servers: a redundant set has at least 2")
	case o.sessions < o.servers:
		return o, errors.New("-n: at least one session per server")
	case o.kill < 0 || o.kill >= o.servers:
		return o, fmt.Errorf("-kill: a server index from 0 to %d", o.servers-1)
	case o.nats != 1 && o.nats != 3 && o.nats != 5:
		return o, errors.New("-nats: 1, 3 or 5")
	case o.interval <= 0 || o.killAfter <= 0 || o.after <= 0 || o.wait <= 0:
		return o, errors.New("-interval, -kill-after, -after and -wait must be positive")
	case o.standby < 0:
		return o, errors.New("-standby: 0 or a positive interval")
	case o.concurrency < 1 || o.apps < 1 || o.bins < 1 || o.queue < 1:
		return o, errors.New("-concurrency, -apps, -bins and -queue must be positive")
	case o.backoff.Attempts < 1:
		return o, errors.New("-backoff-attempts: at least 1 (without a bound the client never moves)")
	}
	return o, nil
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "failover:", err)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), report.Signals...)
	defer stop()
	r, err := run(ctx, o, os.Stderr)
	report.Finish("failover", o.out, r, err)
}
