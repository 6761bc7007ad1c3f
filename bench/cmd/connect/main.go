// Command connect is the connect suite of bench/: sessions per second against the uastack
// server (a subprocess) for each SecurityPolicy × mode it offers, each connect being open
// channel, CreateSession, ActivateSession, CloseSession, close channel; server CPU and
// client allocations per connect; and, in the same run, the raw cost on this machine of
// the RSA operations the server performs per secured connect (the crypto ceiling).
//
//	go run ./bench/cmd/connect [-concurrency 4] [-duration 5s] [-out bench/out]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"uastack.dev/bench/internal/report"
)

type options struct {
	concurrency int
	warmup      time.Duration
	duration    time.Duration
	rsaOps      int
	out         string
	quiet       bool
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	fs.IntVar(&o.concurrency, "concurrency", 4, "connects in flight")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "connects before each measured window")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured window per policy and mode")
	fs.IntVar(&o.rsaOps, "rsa-ops", 100, "repetitions of each RSA operation timed for the ceiling")
	fs.StringVar(&o.out, "out", "bench/out", "directory for connect.md, connect.json")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.concurrency < 1 || o.duration <= 0 || o.rsaOps < 1 {
		return o, fmt.Errorf("concurrency, duration and rsa-ops must be positive")
	}
	return o, nil
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	report.Main("connect", o.out, func(ctx context.Context, dir string) (*report.Report, error) {
		return run(ctx, o, dir, report.NewProgress(o.quiet))
	})
}
