// Command plugins is the plugin suite of bench/ (issue 17): the example device (Sine,
// Ramp, Counter, Setpoint) mounted three times in one uastack server, at three namespace
// URIs — in-process (the built-in manager), as a WASM module and as a plugin process —
// and read under the read suite's load (N clients × M Reads in flight), one node per
// Read and a batch of nodes per Read, beside namespace 0 as the reference. Server CPU
// counts the server and its plugin processes. The same run measures namespace 0's
// latency beside a plugin whose Reads block for 1 s under a load of their own.
//
//	go run ./bench/cmd/plugins [-clients 10] [-outstanding 100] [-warmup 1s] [-duration 10s] [-rounds 5] [-batch 10] [-block-clients 4] [-block-outstanding 25] [-wasm-instances 0] [-max-outstanding 0] [-only regexp] [-set key=value] [-out bench/out]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"uastack.dev/bench/internal/report"
)

// options are the suite's flags.
type options struct {
	clients          int
	outstanding      int
	warmup           time.Duration
	duration         time.Duration
	rounds           int
	batch            int // nodes per Read of the batch rows; 0 for none
	blockClients     int
	blockOutstanding int
	wasmInstances    int            // instances of the WASM module; 0 for the server's default
	maxOutstanding   int            // maxOutstanding of the device's plugins; 0 for room for the load
	only             *regexp.Regexp // rows to measure; nil for all
	out              string
	quiet            bool
	sets             []string // extra --set key=value for the server
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("plugins", flag.ContinueOnError)
	fs.IntVar(&o.clients, "clients", 10, "clients (connections, one session each)")
	fs.IntVar(&o.outstanding, "outstanding", 100, "Reads in flight per client")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "load before each measured window")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time per target, over all rounds")
	fs.IntVar(&o.rounds, "rounds", 5, "rounds the targets are measured in, interleaved")
	fs.IntVar(&o.batch, "batch", 10, "nodes per Read of the batch rows (0: no batch rows)")
	fs.IntVar(&o.blockClients, "block-clients", 4, "clients of the blocking plugin's load")
	fs.IntVar(&o.blockOutstanding, "block-outstanding", 25, "blocking Reads in flight per client of that load")
	fs.IntVar(&o.wasmInstances, "wasm-instances", 0, "instances of the WASM module (0: the server's default)")
	fs.IntVar(&o.maxOutstanding, "max-outstanding", 0, "maxOutstanding of the device's plugins (0: twice the Reads in flight)")
	fs.Func("only", "measure only the rows whose names match this regular expression, e.g. 'WASM' (a profile of one path)", func(s string) error {
		var err error
		o.only, err = regexp.Compile(s)
		return err
	})
	fs.StringVar(&o.out, "out", "bench/out", "directory for plugins.md and plugins.json")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	fs.Func("set", "extra key=value for the server's configuration (repeatable)", func(s string) error {
		o.sets = append(o.sets, s)
		return nil
	})
	fs.SetOutput(io.Discard) // parse's caller says what is wrong
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fs.Usage()
		}
		return o, err
	}
	if o.clients < 1 || o.outstanding < 1 || o.duration <= 0 || o.warmup < 0 || o.rounds < 1 ||
		o.blockClients < 1 || o.blockOutstanding < 1 {
		return o, fmt.Errorf("clients, outstanding, duration, rounds and the blocking load must be positive")
	}
	if o.batch < 0 || o.wasmInstances < 0 || o.maxOutstanding < 0 {
		return o, fmt.Errorf("batch, wasm-instances and max-outstanding must not be negative")
	}
	return o, nil
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "plugins:", err)
		}
		os.Exit(2)
	}
	report.Main("plugins", o.out, func(ctx context.Context, dir string) (*report.Report, error) {
		return run(ctx, o, dir, report.NewProgress(o.quiet))
	})
}
