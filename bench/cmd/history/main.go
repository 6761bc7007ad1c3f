// Command history measures the history of issue 20: the uastack server runs as a child
// process with addressSpace.simulation.count historizing Double variables that all change
// every simulation interval, recorded into one store (history.store memory, durable, and
// off as the baseline). Reported per store: the values recorded per second against those
// the changes call for (the server's uastack_history_recorded counter over the window),
// the server's CPU per recorded value, and what history adds to the CPU of the same
// server with history off. Then one gopcua client reads every variable's raw history of
// the whole run (about a million values at the defaults) in HistoryReads of 1,000 nodes:
// values per second to the client.
//
//	go run ./bench/cmd/history                                   # 10,000 variables, 100 ms, 10 s
//	go run ./bench/cmd/history -stores durable -window 20s
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"

	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
)

type options struct {
	nodes          int
	change         time.Duration
	warmup, window time.Duration
	stores         string
	server         string
	batch          int
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 10_000, "historizing variables (addressSpace.simulation.count)")
	flag.DurationVar(&o.change, "change", 100*time.Millisecond, "interval at which every variable changes")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "time after start-up before the window")
	flag.DurationVar(&o.window, "window", 10*time.Second, "ingest measurement window")
	flag.StringVar(&o.stores, "stores", "off,memory,durable", "history.store values to run, in order")
	flag.StringVar(&o.server, "server", "", "server binary (default: go build uastack.dev/services/server)")
	flag.IntVar(&o.batch, "batch", 1000, "nodes per HistoryRead")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), report.Signals...)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "history:", err)
		os.Exit(1)
	}
}

// result is one store's run.
type result struct {
	store                          string
	recorded, expected             float64 // values per second
	cpu                            time.Duration
	cpuPerValue                    time.Duration
	readValues                     int
	readTime, clientCPU, serverCPU time.Duration
}

func run(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "uastack-bench-history-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.server
	if bin == "" {
		if bin, err = uaserver.Build(ctx, dir); err != nil {
			return err
		}
	}
	var results []result
	for _, store := range strings.Split(o.stores, ",") {
		r, err := runStore(ctx, o, dir, bin, store)
		if err != nil {
			return fmt.Errorf("%s: %w", store, err)
		}
		results = append(results, *r)
		fmt.Fprintf(os.Stderr, "%s: %+v\n", store, *r)
	}
	var base time.Duration
	for _, r := range results {
		if r.store == "off" {
			base = r.cpu
		}
	}
	fmt.Fprintf(out, "%d historizing variables changing every %s (%.0f values/s called for), window %s after %s\n\n", o.nodes, o.change,
		float64(o.nodes)/o.change.Seconds(), o.window, o.warmup)
	fmt.Fprintln(out, "| store | recorded values/s | server CPU in window | server CPU per value | history's CPU per value (vs off) | HistoryRead raw values | read time | values/s to the client | server CPU per value read | client CPU |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if r.store == "off" {
			fmt.Fprintf(out, "| off | — | %s | — | — | — | — | — | — | — |\n", r.cpu.Round(time.Millisecond))
			continue
		}
		added := "—"
		if base > 0 && r.recorded > 0 {
			added = fmt.Sprintf("%.2f µs", float64(r.cpu-base)/1e3/(r.recorded*o.window.Seconds()))
		}
		fmt.Fprintf(out, "| %s | %.0f | %s | %.2f µs | %s | %d | %s | %.0f | %.2f µs | %s |\n", r.store, r.recorded, r.cpu.Round(time.Millisecond),
			float64(r.cpuPerValue)/1e3, added, r.readValues, r.readTime.Round(time.Millisecond),
			float64(r.readValues)/r.readTime.Seconds(), float64(r.serverCPU)/1e3/float64(max(r.readValues, 1)), r.clientCPU.Round(time.Millisecond))
	}
	return nil
}

func runStore(ctx context.Context, o options, dir, bin, store string) (*result, error) {
	runDir := filepath.Join(dir, store)
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return nil, err
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	sets := []string{
		"addressSpace.simulation.count=" + strconv.Itoa(o.nodes),
		"addressSpace.simulation.interval=" + o.change.String(),
		"addressSpace.simulation.historizing=true",
		"history.store=" + store,
		"history.path=" + filepath.Join(runDir, "history"),
		"history.maxValues=0", "history.maxValuesPerNode=0",
		"observability.metricsAddr=" + metrics,
	}
	begin := time.Now()
	srv, err := uaserver.Start(ctx, bin, runDir, nil, sets...)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	r := &result{store: store, expected: float64(o.nodes) / o.change.Seconds()}
	sleep(ctx, o.warmup)
	rec0, err := recorded(ctx, metrics, store)
	if err != nil {
		return nil, err
	}
	cpu0, err := proc.CPUTime(srv.Pid())
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	sleep(ctx, o.window)
	rec1, err := recorded(ctx, metrics, store)
	if err != nil {
		return nil, err
	}
	cpu1, err := proc.CPUTime(srv.Pid())
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(t0)
	end := time.Now()
	r.cpu = cpu1 - cpu0
	if store == "off" {
		return r, ctx.Err()
	}
	r.recorded = float64(rec1-rec0) / elapsed.Seconds()
	if rec1 > rec0 {
		r.cpuPerValue = r.cpu / time.Duration(rec1-rec0)
	}
	// Let the recorder write what the window's end left waiting.
	sleep(ctx, 500*time.Millisecond)
	quiet := false
	if store == "durable" {
		// The read is measured on a quiet server: the same store opened by a server whose
		// variables change once an hour.
		srv.Stop()
		sets[1] = "addressSpace.simulation.interval=1h"
		if srv, err = uaserver.Start(ctx, bin, runDir, nil, sets...); err != nil {
			return nil, err
		}
		defer srv.Stop()
		quiet = true
	}
	cpu2, err := proc.CPUTime(srv.Pid())
	if err != nil {
		return nil, err
	}
	r.readValues, r.readTime, r.clientCPU, err = readAll(ctx, srv.URL, o, begin.Add(-time.Second), end)
	if err != nil {
		return nil, err
	}
	cpu3, err := proc.CPUTime(srv.Pid())
	r.serverCPU = cpu3 - cpu2
	if !quiet {
		// The simulation and the recorder go on during the read: their share is taken
		// off at the window's rate.
		r.serverCPU -= time.Duration(float64(r.cpu) * r.readTime.Seconds() / elapsed.Seconds())
	}
	return r, err
}

// readAll reads the raw history of every variable between start and end, o.batch nodes
// per HistoryRead, following continuation points.
func readAll(ctx context.Context, url string, o options, start, end time.Time) (int, time.Duration, time.Duration, error) {
	eps, err := opcua.GetEndpoints(ctx, url)
	if err != nil {
		return 0, 0, 0, err
	}
	ep, err := opcua.SelectEndpoint(eps, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone)
	if err != nil {
		return 0, 0, 0, err
	}
	c, err := opcua.NewClient(url, opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeAnonymous), opcua.AutoReconnect(false),
		opcua.RequestTimeout(60*time.Second), opcua.MaxMessageSize(0), opcua.MaxChunkCount(0))
	if err != nil {
		return 0, 0, 0, err
	}
	if err := c.Connect(ctx); err != nil {
		return 0, 0, 0, err
	}
	defer c.Close(ctx)
	details := &ua.ReadRawModifiedDetails{StartTime: start, EndTime: end}
	total := 0
	cpu0 := proc.SelfCPU()
	t0 := time.Now()
	for first := 0; first < o.nodes; first += o.batch {
		var nodes []*ua.HistoryReadValueID
		for i := first; i < min(first+o.batch, o.nodes); i++ {
			nodes = append(nodes, &ua.HistoryReadValueID{NodeID: ua.NewStringNodeID(1, "Demo.Simulation.Load."+strconv.Itoa(i)), DataEncoding: &ua.QualifiedName{}})
		}
		for len(nodes) > 0 {
			res, err := c.HistoryReadRawModified(ctx, nodes, details)
			if err != nil {
				return 0, 0, 0, err
			}
			var next []*ua.HistoryReadValueID
			for i, r := range res.Results {
				if r.StatusCode != ua.StatusOK {
					return 0, 0, 0, fmt.Errorf("%v: %v", nodes[i].NodeID, r.StatusCode)
				}
				if r.HistoryData != nil && r.HistoryData.Value != nil {
					total += len(r.HistoryData.Value.(*ua.HistoryData).DataValues)
				}
				if len(r.ContinuationPoint) > 0 {
					next = append(next, &ua.HistoryReadValueID{NodeID: nodes[i].NodeID, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: r.ContinuationPoint})
				}
			}
			nodes = next
		}
	}
	return total, time.Since(t0), proc.SelfCPU() - cpu0, nil
}

// recorded reads the server's uastack_history_recorded counter; 0 for history off.
func recorded(ctx context.Context, addr, store string) (int64, error) {
	if store == "off" {
		return 0, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "uastack_history_recorded") {
			v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			return int64(v), err
		}
	}
	return 0, errors.Join(sc.Err(), fmt.Errorf("%s/metrics: no uastack_history_recorded", addr))
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
