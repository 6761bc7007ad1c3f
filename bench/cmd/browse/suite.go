package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// walkStats is what one full walk saw and cost.
type walkStats struct {
	nodes, refs, calls, continuations int
	elapsed                           time.Duration
	serverCPU, clientCPU              time.Duration
	allocs, bytes                     uint64
}

func run(ctx context.Context, o options, dir string, prog *report.Progress) (*report.Report, error) {
	defer prog.Done()
	r := report.New("browse")
	prog.Stage("building the server")
	bin, ident, err := uaserver.Prepare(ctx, dir, "")
	if err != nil {
		return nil, err
	}
	defer ident.PKI.Close()
	// Every node of a batch may need a continuation point at once.
	srv, err := uaserver.Start(ctx, bin, dir, ident, "limits.maxBrowseContinuationPoints="+strconv.Itoa(o.batch))
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	c, err := client.Dial(ctx, srv.URL, client.Security(policy.URINone, ua.MessageSecurityModeNone),
		client.Certificate(ident.DER, ident.Key), client.Application(ident.URI, "uastack bench"), client.InsecureSkipVerify())
	if err != nil {
		return nil, err
	}
	defer c.Close(context.Background())

	prog.Stage("browse")
	if _, err := walk(ctx, c, o); err != nil { // warm-up
		return nil, err
	}
	var walks []walkStats
	for i := range o.repeat {
		prog.Update(float64(i) / float64(o.repeat))
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		self, _ := proc.Start(0)
		server, err := proc.Start(srv.Pid())
		if err != nil {
			return nil, err
		}
		start := time.Now()
		w, err := walk(ctx, c, o)
		if err != nil {
			return nil, err
		}
		w.elapsed = time.Since(start)
		w.clientCPU, _ = self.Stop()
		if w.serverCPU, err = server.Stop(); err != nil {
			return nil, err
		}
		mallocs, total := ms.Mallocs, ms.TotalAlloc
		runtime.ReadMemStats(&ms)
		w.allocs, w.bytes = ms.Mallocs-mallocs, ms.TotalAlloc-total
		walks = append(walks, w)
	}
	med := func(f func(walkStats) float64) float64 {
		v := make([]float64, len(walks))
		for i, w := range walks {
			v[i] = f(w)
		}
		return report.Median(v)
	}
	// CPU from /proc ticks every 10 ms, longer than a walk: the mean over all walks.
	mean := func(f func(walkStats) float64) float64 {
		var sum float64
		for _, w := range walks {
			sum += f(w)
		}
		return sum / float64(len(walks))
	}
	w := walks[0]
	r.Add(report.Row{Name: "uastack None, full address space", Values: []report.Value{
		{Name: "nodes", Value: float64(w.nodes)},
		{Name: "references", Value: float64(w.refs)},
		{Name: "requests", Value: float64(w.calls)},
		{Name: "continuation points", Value: float64(w.continuations)},
		{Name: "time", Value: med(func(w walkStats) float64 { return float64(w.elapsed.Microseconds()) / 1000 }), Unit: "ms"},
		{Name: "server CPU", Value: mean(func(w walkStats) float64 { return float64(w.serverCPU.Microseconds()) / 1000 }), Unit: "ms"},
		{Name: "client CPU", Value: mean(func(w walkStats) float64 { return float64(w.clientCPU.Microseconds()) / 1000 }), Unit: "ms"},
		{Name: "client allocs", Value: med(func(w walkStats) float64 { return float64(w.allocs) })},
		{Name: "client allocs/reference", Value: med(func(w walkStats) float64 { return float64(w.allocs) / float64(w.refs) })},
		{Name: "client KiB", Value: med(func(w walkStats) float64 { return float64(w.bytes) / 1024 }), Unit: "KiB"},
	}})
	r.Note("Medians of %d walks after one warm-up walk (CPU: means); %d nodes per Browse, RequestedMaxReferencesPerNode %d, every HierarchicalReferences subtype forward, all result fields.", o.repeat, o.batch, o.maxRefs)
	r.Note("Server CPU is the server process's utime+stime (/proc, 10 ms ticks); the server exposes no allocation counters, so its allocations are not measured.")
	return r, nil
}

// walk visits every node reachable from the Root folder over hierarchical references,
// breadth first, browsing up to o.batch nodes per request and following continuation
// points with BrowseNext. A node is browsed once however many parents it has.
func walk(ctx context.Context, c *client.Client, o options) (walkStats, error) {
	var s walkStats
	root := codec.NewNumericNodeId(0, id.RootFolder)
	seen := map[codec.NodeId]bool{root: true}
	queue := []codec.NodeId{root}
	desc := func(n codec.NodeId) ua.BrowseDescription {
		return ua.BrowseDescription{NodeId: n, BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeId: codec.NewNumericNodeId(0, id.HierarchicalReferences), IncludeSubtypes: true, ResultMask: 0x3f}
	}
	take := func(results []ua.BrowseResult) ([][]byte, error) {
		var cps [][]byte
		for _, br := range results {
			if br.StatusCode != status.Good {
				return nil, fmt.Errorf("browse: %v", br.StatusCode)
			}
			for _, ref := range br.References {
				s.refs++
				n := ref.NodeId
				if n.ServerIndex != 0 || n.NamespaceURI != "" || seen[n.NodeId] {
					continue
				}
				seen[n.NodeId] = true
				queue = append(queue, n.NodeId)
			}
			if len(br.ContinuationPoint) > 0 {
				cps = append(cps, br.ContinuationPoint)
			}
		}
		return cps, nil
	}
	for len(queue) > 0 {
		batch := queue[:min(o.batch, len(queue))]
		queue = queue[len(batch):]
		s.nodes += len(batch)
		nodes := make([]ua.BrowseDescription, len(batch))
		for i, n := range batch {
			nodes[i] = desc(n)
		}
		resp, err := c.Browse(ctx, &ua.BrowseRequest{RequestedMaxReferencesPerNode: o.maxRefs, NodesToBrowse: nodes})
		s.calls++
		if err != nil {
			return s, err
		}
		cps, err := take(resp.Results)
		if err != nil {
			return s, err
		}
		for len(cps) > 0 {
			s.continuations += len(cps)
			next, err := c.BrowseNext(ctx, &ua.BrowseNextRequest{ContinuationPoints: cps})
			s.calls++
			if err != nil {
				return s, err
			}
			if cps, err = take(next.Results); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}
