package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"uastack.dev/bench/internal/drive"
	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// Namespace URIs of the three mounts of the device and of the blocking plugin.
const (
	uriBuiltin = "urn:uastack:bench:device:builtin"
	uriWASM    = "urn:uastack:bench:device:wasm"
	uriProcess = "urn:uastack:bench:device:process"
	uriBlocker = "urn:uastack:bench:blocker"
)

// Packages built for the run: the device as a WASM module and as a plugin process, and
// the hosts' test plugin, whose node "block" answers a Read after 1 s.
const (
	pkgDeviceWASM    = "uastack.dev/plugins/examples/device/wasm"
	pkgDeviceProcess = "uastack.dev/plugins/examples/device/process"
	pkgBlocker       = "uastack.dev/plugins/plugintest/testplugin"
)

// deviceVariables are the device's variables the device rows cycle over, by their
// string NodeIds (device.NodeID: "Device." and the BrowseName). Three are computed at
// each Read, the Setpoint is state behind a lock.
var deviceVariables = []string{"Device.Sine", "Device.Ramp", "Device.Counter", "Device.Setpoint"}

// ns0Variables are what the namespace 0 rows cycle over: variables of the Server Object
// every uastack server has, one of them (CurrentTime) computed at each Read.
var ns0Variables = []codec.NodeId{
	codec.NewNumericNodeId(0, id.Server_ServerStatus_State),
	codec.NewNumericNodeId(0, id.Server_ServerStatus_CurrentTime),
	codec.NewNumericNodeId(0, id.Server_ServiceLevel),
	codec.NewNumericNodeId(0, id.Server_ServerStatus_BuildInfo_ProductName),
}

// Where the nodes of a row are served.
const (
	whereNs0     = "namespace 0"
	whereBuiltin = "device in-process"
	whereWASM    = "device WASM"
	whereProcess = "device process"
)

// rowName names the row of the nodes served at where, per nodes per Read; the notes
// and the smoke test refer to rows by it.
func rowName(where string, per int) string { return where + ", " + perRead(per) }

// perRead says how many nodes a Read asks for: "1 node/Read", "10 nodes/Read".
func perRead(per int) string {
	if per == 1 {
		return "1 node/Read"
	}
	return strconv.Itoa(per) + " nodes/Read"
}

// rowBlocked is namespace 0 with one node per Read beside the blocking plugin's load.
const rowBlocked = "namespace 0, 1 node/Read, beside a plugin blocking 1 s per Read"

// Column names.
const (
	colRate      = "Reads/s"
	colValues    = "values/s"
	colServerCPU = "server CPU/Read"
	colServerUsr = "of it user"
	colClientCPU = "client CPU/Read"
	colP50       = "p50"
	colP90       = "p90"
	colP99       = "p99"
)

// blockSettle is how long the blocking load runs before the target's own load starts:
// a little over the 1 s its Reads take.
const blockSettle = 1100 * time.Millisecond

// target is one row: Reads of nodes, per at a time, cycling.
type target struct {
	name  string
	nodes []codec.NodeId
	per   int
	block bool // measured beside the blocking plugin's load
}

// run builds the server and the plugins, starts one server with the device mounted
// three times and the blocking plugin once, then measures the targets in o.rounds
// interleaved rounds of o.duration/o.rounds each, so that the load of a shared machine
// falls on all of them alike, and returns the report.
func run(ctx context.Context, o options, dir string, prog *report.Progress) (*report.Report, error) {
	defer prog.Done()
	r := report.New("plugins")
	prog.Stage("building the server and the plugins")
	// The plugins are built while the server is.
	var plugins [3]string
	var buildErr error
	built := make(chan struct{})
	go func() {
		defer close(built)
		for i, b := range []struct {
			pkg  string
			wasm bool
		}{{pkgDeviceWASM, true}, {pkgDeviceProcess, false}, {pkgBlocker, false}} {
			if plugins[i], buildErr = build(ctx, dir, b.pkg, b.wasm); buildErr != nil {
				return
			}
		}
	}()
	bin, ident, err := uaserver.Prepare(ctx, dir, "")
	<-built
	if err != nil {
		return nil, err
	}
	defer ident.PKI.Close()
	if buildErr != nil {
		return nil, buildErr
	}
	clients := o.clients + o.blockClients
	inflight := o.clients*o.outstanding + o.blockClients*o.blockOutstanding
	bounds := outstandingBounds(o)
	managers, err := nodeManagers(plugins[0], plugins[1], plugins[2], o.wasmInstances, bounds)
	if err != nil {
		return nil, err
	}
	sets := append([]string{managers,
		// Every round dials fresh sessions; room for all of them in case closes lag.
		"limits.maxSessionCount=" + strconv.Itoa(4*clients*o.rounds+100),
		"limits.maxQueuedRequestCount=" + strconv.Itoa(2*inflight+100),
		// The device's Reads are handed to node managers: room for all in flight.
		"limits.maxParkedRequestCount=" + strconv.Itoa(2*inflight+100)}, o.sets...)
	sets = append(sets, uaserver.ManyClientsOneSource...)
	prog.Stage("starting the server")
	srv, err := uaserver.Start(ctx, bin, dir, ident, sets...)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	if err := ident.Trust(srv.DER, "uastack-server"); err != nil {
		return nil, err
	}
	opts := []client.Option{client.Security(policy.URINone, ua.MessageSecurityModeNone),
		client.Certificate(ident.DER, ident.Key), client.Application(ident.URI, "uastack bench"),
		client.TrustStore(ident.PKI)}
	ns, err := namespaceIndexes(ctx, srv.URL, opts, uriBuiltin, uriWASM, uriProcess, uriBlocker)
	if err != nil {
		return nil, err
	}
	device3 := func(uri string) []codec.NodeId {
		var out []codec.NodeId
		for _, v := range deviceVariables {
			out = append(out, codec.NewStringNodeId(ns[uri], v))
		}
		return out
	}
	targets := []target{
		{name: rowName(whereNs0, 1), nodes: ns0Variables, per: 1},
		{name: rowBlocked, nodes: ns0Variables, per: 1, block: true},
		{name: rowName(whereBuiltin, 1), nodes: device3(uriBuiltin), per: 1},
		{name: rowName(whereWASM, 1), nodes: device3(uriWASM), per: 1},
		{name: rowName(whereProcess, 1), nodes: device3(uriProcess), per: 1},
	}
	if o.batch > 0 {
		targets = append(targets,
			target{name: rowName(whereNs0, o.batch), nodes: ns0Variables, per: o.batch},
			target{name: rowName(whereBuiltin, o.batch), nodes: device3(uriBuiltin), per: o.batch},
			target{name: rowName(whereWASM, o.batch), nodes: device3(uriWASM), per: o.batch},
			target{name: rowName(whereProcess, o.batch), nodes: device3(uriProcess), per: o.batch})
	}
	if targets, err = only(targets, o.only); err != nil {
		return nil, err
	}
	blockDial := readDial(srv.URL, opts, []codec.NodeId{codec.NewStringNodeId(ns[uriBlocker], "block")}, 1)

	load0, _ := proc.LoadAverage()
	results := make([]drive.Result, len(targets))
	var blocked blockTally
	for round := range o.rounds {
		for i, t := range targets {
			prog.Stage(fmt.Sprintf("%d/%d %s", round+1, o.rounds, t.name))
			var bl *blockLoad
			if t.block {
				if bl, err = startBlockLoad(ctx, blockDial, o.blockClients, o.blockOutstanding); err != nil {
					return nil, fmt.Errorf("blocking load: %w", err)
				}
				// Its first Reads are answered before the warm-up begins: the window sees
				// the load in its steady state, whatever the warm-up.
				sleep(ctx, blockSettle)
			}
			var res drive.Result
			// The label lets a CPU profile of this process be split by target.
			pprof.Do(ctx, pprof.Labels("target", t.name), func(ctx context.Context) {
				res, err = drive.Run(ctx, readDial(srv.URL, opts, t.nodes, t.per), drive.Options{
					Clients: o.clients, Outstanding: o.outstanding, Warmup: o.warmup,
					Window: o.duration / time.Duration(o.rounds), ServerPid: srv.Pid(), ServerTree: true,
					Progress: prog})
			})
			if bl != nil {
				blocked.add(bl.stop())
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			results[i].Add(res)
		}
	}
	load1, _ := proc.LoadAverage()

	for i, t := range targets {
		res := results[i]
		p := report.Percentiles(res.Latencies, 0.5, 0.9, 0.99)
		r.Add(report.Row{Name: t.name, Values: []report.Value{
			{Name: colRate, Value: res.PerSecond(), Unit: "1/s"},
			{Name: colValues, Value: res.PerSecond() * float64(t.per), Unit: "1/s"},
			{Name: colServerCPU, Value: res.ServerMicros(), Unit: "µs"},
			{Name: colServerUsr, Value: res.ServerUserMicros(), Unit: "µs"},
			{Name: colClientCPU, Value: res.ClientMicros(), Unit: "µs"},
			{Name: colP50, Value: ms(p[0]), Unit: "ms"},
			{Name: colP90, Value: ms(p[1]), Unit: "ms"},
			{Name: colP99, Value: ms(p[2]), Unit: "ms"},
		}})
	}
	r.Note("%d clients × %d outstanding Reads, security None; each target measured for %v in %d rounds interleaved with the others, %v of warm-up before each. Each Read asks for the next node(s) of its row in turn: the device's Sine, Ramp, Counter, Setpoint; in namespace 0 the Server's State, CurrentTime, ServiceLevel, ProductName.",
		o.clients, o.outstanding, o.duration, o.rounds, o.warmup)
	instances := "the server's default"
	if o.wasmInstances > 0 {
		instances = strconv.Itoa(o.wasmInstances)
	}
	r.Note("One server: the device built in (%s), as a WASM module (%s; instances: %s) and as a plugin process (%s), and the test plugin (%s) as a process; maxOutstanding %d for the device's plugins, %d for the test plugin. Server CPU is the server's and its plugin processes' (all of them, also when idle).",
		uriBuiltin, uriWASM, instances, uriProcess, uriBlocker, bounds.device, bounds.blocker)
	if slices.ContainsFunc(targets, func(t target) bool { return t.block }) {
		r.Note("Blocking load, beside %q: %d clients × %d Reads in flight of the test plugin's node \"block\", each answered after 1 s, started %v before the target's own load; %s.",
			rowBlocked, o.blockClients, o.blockOutstanding, blockSettle, blocked)
	}
	r.Note("Load average (1 min) of the machine: %.2f at the start, %.2f at the end.", load0, load1)
	addRatios(r, o.batch)
	return r, nil
}

// only keeps the targets whose names match re (all for nil); an error when none does.
func only(targets []target, re *regexp.Regexp) ([]target, error) {
	if re == nil {
		return targets, nil
	}
	targets = slices.DeleteFunc(targets, func(t target) bool { return !re.MatchString(t.name) })
	if len(targets) == 0 {
		return nil, fmt.Errorf("-only %s matches no row", re)
	}
	return targets, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// build compiles the main package pkg into dir, as a WASM module (a reactor, as the
// WASM host loads it) when wasm is set, and returns the file's path.
func build(ctx context.Context, dir, pkg string, wasm bool) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build", "-o"}
	env := os.Environ()
	if wasm {
		out += ".wasm"
		args = []string{"build", "-buildmode=c-shared", "-o"}
		env = append(env, "GOOS=wasip1", "GOARCH=wasm")
	} else {
		out += "-plugin"
	}
	cmd := exec.CommandContext(ctx, "go", append(args, out, pkg)...)
	cmd.Env = env
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return out, nil
}

// bounds are the maxOutstanding settings of the plugins.
type bounds struct{ device, blocker int }

// outstandingBounds returns room for every Read of the suite's loads to be queued at
// once, twice over (closing sessions may leave Reads behind): the server's default
// (256) would answer most of 10 × 100 Reads in flight BadResourceUnavailable. A bound
// of -max-outstanding replaces the device's.
func outstandingBounds(o options) bounds {
	b := bounds{device: 2 * o.clients * o.outstanding, blocker: 2 * o.blockClients * o.blockOutstanding}
	if o.maxOutstanding > 0 {
		b.device = o.maxOutstanding
	}
	return b
}

// nodeManagers is the --set of addressSpace.nodeManagers: a list of maps, given as
// JSON, which is a YAML flow sequence.
func nodeManagers(wasm, device, blocker string, instances int, b bounds) (string, error) {
	entries := []map[string]any{
		{"name": "device", "type": "builtin", "namespaceUri": uriBuiltin},
		{"name": "device-wasm", "type": "wasm", "path": wasm, "namespaceUri": uriWASM, "maxOutstanding": b.device},
		{"name": "device-process", "type": "process", "path": device, "namespaceUri": uriProcess, "maxOutstanding": b.device},
		{"name": "blocker", "type": "process", "path": blocker, "namespaceUri": uriBlocker, "maxOutstanding": b.blocker},
	}
	if instances > 0 {
		entries[1]["instances"] = instances
	}
	js, err := json.Marshal(entries)
	return "addressSpace.nodeManagers=" + string(js), err
}

// namespaceIndexes reads the server's NamespaceArray and returns the index of each of
// uris, all of which it must hold.
func namespaceIndexes(ctx context.Context, url string, opts []client.Option, uris ...string) (map[string]uint16, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := client.Dial(dctx, url, opts...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close(dctx) }()
	resp, err := c.Read(dctx, &ua.ReadRequest{NodesToRead: []ua.ReadValueId{{
		NodeId: codec.NewNumericNodeId(0, id.Server_NamespaceArray), AttributeId: uint32(attr.Value)}}})
	if err != nil {
		return nil, fmt.Errorf("NamespaceArray: %w", err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Status != status.Good {
		return nil, fmt.Errorf("NamespaceArray: %v", resp.Results)
	}
	array, ok := resp.Results[0].Value.Value().([]string)
	if !ok {
		return nil, fmt.Errorf("NamespaceArray: a %T", resp.Results[0].Value.Value())
	}
	out := map[string]uint16{}
	for _, u := range uris {
		i := slices.Index(array, u)
		if i < 0 {
			return nil, fmt.Errorf("namespace %s not mounted (NamespaceArray %v)", u, array)
		}
		out[u] = uint16(i)
	}
	return out, nil
}

// readDial dials one pkg/client session per client; a call is one Read of per nodes,
// the next ones of nodes in turn, every result Good.
func readDial(url string, opts []client.Option, nodes []codec.NodeId, per int) drive.Dial {
	return func(ctx context.Context) (drive.Call, func(), error) {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		c, err := client.Dial(dctx, url, opts...)
		if err != nil {
			return nil, nil, err
		}
		var next atomic.Uint64
		call := func(ctx context.Context) error {
			k := next.Add(uint64(per)) - uint64(per)
			items := make([]ua.ReadValueId, per)
			for j := range items {
				items[j] = ua.ReadValueId{NodeId: nodes[(k+uint64(j))%uint64(len(nodes))], AttributeId: uint32(attr.Value)}
			}
			resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: items})
			if err != nil {
				return err
			}
			if len(resp.Results) != per {
				return fmt.Errorf("read: %d results for %d nodes", len(resp.Results), per)
			}
			for j, res := range resp.Results {
				if res.Status != status.Good {
					return &badStatus{node: items[j].NodeId, code: res.Status}
				}
			}
			return nil
		}
		return call, func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = c.Close(cctx)
		}, nil
	}
}

// badStatus is a Read result that is not Good.
type badStatus struct {
	node codec.NodeId
	code status.Code
}

func (e *badStatus) Error() string { return fmt.Sprintf("read %v: %v", e.node, e.code) }

// addRatios notes the bars of issue 17 and whether they are met.
func addRatios(r *report.Report, batch int) {
	get := func(row, col string) (float64, bool) {
		x, ok := r.Row(row)
		if !ok {
			return 0, false
		}
		return x.Get(col)
	}
	ratio := func(a, b, col string) (float64, bool) {
		va, ok1 := get(a, col)
		vb, ok2 := get(b, col)
		if !ok1 || !ok2 || vb == 0 {
			return 0, false
		}
		return va / vb, true
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	pers := []int{1}
	if batch > 0 {
		pers = append(pers, batch)
	}
	for _, per := range pers {
		in := rowName(whereBuiltin, per)
		what := perRead(per)
		if x, ok := ratio(rowName(whereWASM, per), in, colRate); ok {
			c, _ := ratio(rowName(whereWASM, per), in, colServerCPU)
			r.Note("WASM/in-process, %s: Reads/s **%.2f** (bar ≥ 0.8: %s); server CPU per Read %.2f.", what, x, verdict(x >= 0.8), c)
		}
		if x, ok := ratio(rowName(whereProcess, per), in, colRate); ok {
			c, _ := ratio(rowName(whereProcess, per), in, colServerCPU)
			r.Note("process/in-process, %s: Reads/s **%.2f** (bar ≥ 0.4: %s); server CPU per Read %.2f.", what, x, verdict(x >= 0.4), c)
		}
		if x, ok := ratio(in, rowName(whereNs0, per), colRate); ok {
			r.Note("in-process device/namespace 0, %s: Reads/s %.2f.", what, x)
		}
	}
	if x, ok := ratio(rowBlocked, rowName(whereNs0, 1), colP99); ok {
		p, _ := ratio(rowBlocked, rowName(whereNs0, 1), colP50)
		r.Note("Namespace 0 p99 beside the blocking plugin / without its load: **%.3f** (bar: within 5 %%, ≤ 1.05: %s); p50 %.3f.", x, verdict(x <= 1.05), p)
	}
}
