// Command browse is the browse suite of bench/: the whole address space of the uastack
// server (a subprocess), from the Root folder, following every hierarchical reference
// forward, with continuation points (the .NET stack's BrowseFullAddressSpace benchmark).
// It reports the time of one full walk, the client's allocations and the server's CPU.
//
//	go run ./bench/cmd/browse [-repeat 20] [-max-refs 10] [-batch 100] [-out bench/out]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"uastack.dev/bench/internal/report"
)

type options struct {
	repeat  int
	maxRefs uint32
	batch   int
	out     string
	quiet   bool
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("browse", flag.ContinueOnError)
	fs.IntVar(&o.repeat, "repeat", 20, "full walks measured (medians, CPU means)")
	var maxRefs uint
	fs.UintVar(&maxRefs, "max-refs", 10, "RequestedMaxReferencesPerNode: smaller means more continuation points")
	fs.IntVar(&o.batch, "batch", 100, "nodes per Browse request")
	fs.StringVar(&o.out, "out", "bench/out", "directory for browse.md, browse.json")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.maxRefs = uint32(maxRefs)
	if o.repeat < 1 || o.batch < 1 || maxRefs < 1 {
		return o, fmt.Errorf("repeat, batch and max-refs must be positive")
	}
	return o, nil
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	report.Main("browse", o.out, func(ctx context.Context, dir string) (*report.Report, error) {
		return run(ctx, o, dir, report.NewProgress(o.quiet))
	})
}
