// Command read is the read suite of bench/: N clients × M outstanding single-value Reads
// against the uastack server (a subprocess), for SecurityPolicy None and Basic256Sha256
// SignAndEncrypt, beside the ceiling of this machine (a batching TCP echo server driven by
// the same framing and the same frame sizes at the same concurrency) and beside peer
// servers (gopcua's, node-opcua's). Each server is its own process, so that its CPU time
// per Read is its own.
//
//	go run ./bench/cmd/read [-clients 10] [-outstanding 100] [-warmup 1s] [-duration 10s] [-rounds 5] [-sweep 1,2,5,10] [-set key=value] [-against bin] [-out bench/out]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"uastack.dev/bench/internal/child"
	"uastack.dev/bench/internal/report"
)

// options are the suite's flags.
type options struct {
	clients     int
	outstanding int
	warmup      time.Duration
	duration    time.Duration
	out         string
	rounds      int
	peers       string // comma-separated: gopcua, node-opcua
	sweep       []int  // client counts for the scaling chart; empty for none
	quiet       bool
	sets        []string // extra --set key=value for the uastack server
	cpuprofile  string   // file for a CPU profile of the clients, labelled by target
	against     string   // another build of the server, measured None beside this one
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("read", flag.ContinueOnError)
	fs.IntVar(&o.clients, "clients", 10, "clients (connections, one session each)")
	fs.IntVar(&o.outstanding, "outstanding", 100, "Reads in flight per client")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "load before each measured window")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time per target, over all rounds")
	fs.IntVar(&o.rounds, "rounds", 5, "rounds the targets are measured in, interleaved")
	sweepFlag := fs.String("sweep", "", "client counts for a scaling chart of uastack None and the echo ceiling, e.g. 1,2,5,10")
	fs.StringVar(&o.out, "out", "bench/out", "directory for read.md, read.json, read-sweep.svg")
	fs.StringVar(&o.peers, "peers", "gopcua,node-opcua", "peer servers to measure too (comma-separated; empty for none)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of this process (the clients) to the file; samples carry a target label")
	fs.StringVar(&o.against, "against", "", "another build of the server (a binary, e.g. of an older commit): an A/B run that measures only it and this build with None, and the None ceiling; no peers")
	fs.Func("set", "extra key=value for the uastack server's configuration (repeatable), e.g. observability.metricsAddr=127.0.0.1:6060 to profile it", func(s string) error {
		o.sets = append(o.sets, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.clients < 1 || o.outstanding < 1 || o.duration <= 0 || o.warmup < 0 || o.rounds < 1 {
		return o, fmt.Errorf("clients, outstanding, duration and rounds must be positive")
	}
	var err error
	o.sweep, err = parseSweep(*sweepFlag)
	return o, err
}

func main() {
	child.Dispatch()
	o, err := parse(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	report.Main("read", o.out, func(ctx context.Context, dir string) (*report.Report, error) {
		return run(ctx, o, dir, report.NewProgress(o.quiet))
	})
}
