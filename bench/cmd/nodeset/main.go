// Command nodeset is the NodeSet2 import suite of bench/: the uastack server (a
// subprocess) started with no model, with the DI companion specification, and with a
// generated model of -nodes nodes in addressSpace.nodesets. It reports the time from the
// process start to listening, the server's CPU for it, and the resident memory above the
// start without a model, per imported node; a Read of a generated node checks the model
// is served. The server's PKI is made by a first start that is not measured, so that no
// start pays for its RSA key.
//
//	go run ./bench/cmd/nodeset [-repeat 3] [-nodes 100000] [-out bench/out]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"uastack.dev/bench/internal/report"
)

type options struct {
	repeat int
	nodes  int
	di     string
	out    string
	quiet  bool
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("nodeset", flag.ContinueOnError)
	fs.IntVar(&o.repeat, "repeat", 3, "starts measured per model (medians)")
	fs.IntVar(&o.nodes, "nodes", 100_000, "nodes of the generated model")
	fs.StringVar(&o.di, "di", "pkg/nodeset/testdata/Opc.Ua.Di.NodeSet2.xml", "the DI nodeset (relative to the repository root)")
	fs.StringVar(&o.out, "out", "bench/out", "directory for nodeset.md, nodeset.json")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.repeat < 1 || o.nodes < 10 {
		return o, fmt.Errorf("repeat must be positive and nodes at least 10")
	}
	return o, nil
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	report.Main("nodeset", o.out, func(ctx context.Context, dir string) (*report.Report, error) {
		return run(ctx, o, dir, report.NewProgress(o.quiet))
	})
}
