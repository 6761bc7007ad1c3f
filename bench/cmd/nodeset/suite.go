package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodeset/nodesettest"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// start is what one start of the server cost.
type start struct {
	elapsed   time.Duration // process start to listening
	serverCPU time.Duration // the server's CPU until listening
	rss       int64         // resident bytes once listening
}

// model is one configuration measured.
type model struct {
	name  string
	file  string // "" for none
	nodes int
}

func run(ctx context.Context, o options, dir string, prog *report.Progress) (*report.Report, error) {
	defer prog.Done()
	r := report.New("nodeset")
	prog.Stage("building the server")
	bin, ident, err := uaserver.Prepare(ctx, dir, "")
	if err != nil {
		return nil, err
	}
	defer ident.PKI.Close()
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	di := filepath.Join(root, o.di)
	prog.Stage("generating the model")
	gen := filepath.Join(dir, "generated.xml")
	f, err := os.Create(gen)
	if err != nil {
		return nil, err
	}
	err = nodesettest.Generate(f, o.nodes)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	models := []model{{"no model", "", 0}, {"DI", di, 412}, {fmt.Sprintf("generated %d", o.nodes), gen, o.nodes}}

	// The first start makes the PKI; the measured ones find it.
	if _, err := startOnce(ctx, bin, dir, ident, model{}, false); err != nil {
		return nil, err
	}
	results := make(map[string][]start)
	for i := range o.repeat {
		for _, m := range models {
			prog.Stage(fmt.Sprintf("start %d/%d: %s", i+1, o.repeat, m.name))
			s, err := startOnce(ctx, bin, dir, ident, m, m.file == gen)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.name, err)
			}
			results[m.name] = append(results[m.name], s)
		}
	}
	base := median(results["no model"], func(s start) float64 { return float64(s.rss) })
	baseCPU := median(results["no model"], func(s start) float64 { return s.serverCPU.Seconds() })
	for _, m := range models {
		ss := results[m.name]
		row := report.Row{Name: m.name, Values: []report.Value{
			{Name: "start", Value: median(ss, func(s start) float64 { return s.elapsed.Seconds() * 1e3 }), Unit: "ms"},
			{Name: "server CPU", Value: median(ss, func(s start) float64 { return s.serverCPU.Seconds() * 1e3 }), Unit: "ms"},
			{Name: "RSS", Value: median(ss, func(s start) float64 { return float64(s.rss) / (1 << 20) }), Unit: "MiB"},
		}}
		if m.nodes > 0 {
			cpu := median(ss, func(s start) float64 { return s.serverCPU.Seconds() })
			rss := median(ss, func(s start) float64 { return float64(s.rss) })
			row.Values = append(row.Values,
				report.Value{Name: "CPU per node", Value: (cpu - baseCPU) / float64(m.nodes) * 1e6, Unit: "µs"},
				report.Value{Name: "RSS per node", Value: (rss - base) / float64(m.nodes), Unit: "B"})
		}
		r.Add(row)
	}
	r.Note("median of %d starts each; per node: above the start with no model. The RSS holds the garbage of the load not yet collected; the live heap per node is BenchmarkStartModels's heap-B/node", o.repeat)
	return r, nil
}

// startOnce starts the server with m, reads ServerStatus (and, with check, a node of the
// generated model), measures and stops it.
func startOnce(ctx context.Context, bin, dir string, ident *uaserver.Identity, m model, check bool) (start, error) {
	var sets []string
	if m.file != "" {
		sets = append(sets, "addressSpace.nodesets="+m.file)
	}
	t0 := time.Now()
	srv, err := uaserver.Start(ctx, bin, dir, ident, sets...)
	if err != nil {
		return start{}, err
	}
	defer srv.Stop()
	var s start
	s.elapsed = time.Since(t0)
	if s.serverCPU, err = proc.CPUTime(srv.Pid()); err != nil {
		return s, err
	}
	if s.rss, err = proc.RSS(srv.Pid()); err != nil {
		return s, err
	}
	c, err := client.Dial(ctx, srv.URL, client.Security(policy.URINone, ua.MessageSecurityModeNone),
		client.Certificate(ident.DER, ident.Key), client.Application(ident.URI, "uastack bench"), client.InsecureSkipVerify())
	if err != nil {
		return s, err
	}
	defer c.Close(context.Background())
	items := []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, id.Server_NamespaceArray), AttributeId: 13}}
	if check {
		// The first Machine's Label: namespace 2, after the demo namespace.
		items = append(items, ua.ReadValueId{NodeId: codec.NewNumericNodeId(2, 103), AttributeId: 13})
	}
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: items})
	if err != nil {
		return s, err
	}
	if check {
		ns, _ := resp.Results[0].Value.Value().([]string)
		if len(ns) < 3 || ns[2] != nodesettest.URI {
			return s, fmt.Errorf("NamespaceArray %v", ns)
		}
		if got := resp.Results[1].Value.Value(); got != "machine 100" {
			return s, fmt.Errorf("read the generated node: %v %v", resp.Results[1].Status, got)
		}
	}
	return s, nil
}

func median[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// repoRoot is the nearest folder above the working directory with go.work.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work above the working directory")
		}
		dir = parent
	}
}
