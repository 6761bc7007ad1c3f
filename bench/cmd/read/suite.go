package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	gopcua "github.com/gopcua/opcua"
	gua "github.com/gopcua/opcua/ua"

	"uastack.dev/bench/internal/child"
	"uastack.dev/bench/internal/drive"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/tools/nodepeer"
)

// readNode is what every Read asks for: Server_ServerStatus_State, a static Int32 every
// server here has.
var readNode = codec.NewNumericNodeId(0, id.Server_ServerStatus_State)

// Row names; the notes and the smoke test refer to them.
const (
	rowUastackNone = "uastack None"
	rowUastackSaE  = "uastack Basic256Sha256 SignAndEncrypt"
	rowEchoNone    = "echo ceiling, None frame sizes"
	rowEchoSaE     = "echo ceiling, SignAndEncrypt frame sizes"
	rowGopcuaCli   = "gopcua client → uastack None"
	rowGopcuaSrv   = "gopcua server None"
	rowNodeNone    = "node-opcua server None"
	rowNodeSaE     = "node-opcua server Basic256Sha256 SignAndEncrypt"
	rowAgainst     = "-against build None"
)

// Column names.
const (
	colRate      = "Reads/s"
	colServerCPU = "server CPU/Read"
	colServerUsr = "of it user"
	colClientCPU = "client CPU/Read"
	colP50       = "p50"
	colP90       = "p90"
	colP99       = "p99"
)

// target is one server (or ceiling) under load.
type target struct {
	name string
	pid  int // the process charged with server CPU
	dial drive.Dial
	peer bool // a failure is noted, not fatal
}

// run starts every server, then measures the targets in o.rounds interleaved rounds of
// o.duration/o.rounds each, so that the load of a shared machine falls on all of them
// alike, and returns the report.
func run(ctx context.Context, o options, dir string, prog *report.Progress) (*report.Report, error) {
	defer prog.Done()
	r := report.New("read")
	prog.Stage("building the server")
	bin, ident, err := uaserver.Prepare(ctx, dir, "")
	if err != nil {
		return nil, err
	}
	defer ident.PKI.Close()
	inflight := max(o.clients, slices.Max(append(o.sweep, 1))) * o.outstanding
	sets := append([]string{
		// Every round dials fresh sessions; room for all of them in case closes lag.
		"limits.maxSessionCount=" + strconv.Itoa(4*max(o.clients, slices.Max(append(o.sweep, 1)))*(o.rounds+len(o.sweep))+100),
		"limits.maxQueuedRequestCount=" + strconv.Itoa(2*inflight+100)}, o.sets...)
	srv, err := uaserver.Start(ctx, bin, dir, ident, sets...)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	if err := ident.Trust(srv.DER, "uastack-server"); err != nil {
		return nil, err
	}
	ours := func(pol string, mode ua.MessageSecurityMode) drive.Dial {
		return pkgClient(srv.URL, pol, mode, client.Certificate(ident.DER, ident.Key),
			client.Application(ident.URI, "uastack bench"), client.TrustStore(ident.PKI))
	}
	// An A/B run (-against) measures only the two builds with None and their ceiling, so
	// that each gets more of the run's time.
	ab := o.against != ""
	targets := []target{{name: rowUastackNone, pid: srv.Pid(), dial: ours(policy.URINone, ua.MessageSecurityModeNone)}}
	if ab {
		other, err := uaserver.Start(ctx, o.against, filepath.Join(dir, "against"), ident, sets...)
		if err != nil {
			return nil, fmt.Errorf("-against: %w", err)
		}
		defer other.Stop()
		targets = append(targets, target{name: rowAgainst, pid: other.Pid(),
			dial: pkgClient(other.URL, policy.URINone, ua.MessageSecurityModeNone, client.InsecureSkipVerify())})
		r.Note("%s: %s.", rowAgainst, o.against)
	} else {
		targets = append(targets, target{name: rowUastackSaE, pid: srv.Pid(), dial: ours(policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt)})
	}

	// The ceiling exchanges frames of the sizes uastack's Read request and response have
	// on the wire, taken from a real exchange.
	reqBody, respBody, err := sampleBodies(ctx, srv.URL)
	if err != nil {
		return nil, err
	}
	echoes := []struct {
		name    string
		reqLen  int
		respLen int
	}{
		{rowEchoNone, frameNone(len(reqBody)), frameNone(len(respBody))},
		{rowEchoSaE, frameSignAndEncrypt(len(reqBody)), frameSignAndEncrypt(len(respBody))},
	}
	if ab {
		echoes = echoes[:1]
	}
	for _, e := range echoes {
		echo, err := child.Start(ctx, "echo", hex.EncodeToString(responseFrame(respBody, e.respLen)))
		if err != nil {
			return nil, err
		}
		defer echo.Stop()
		targets = append(targets, target{name: e.name, pid: echo.Pid(), dial: echoDial(echo.Addr, e.reqLen, len(respBody))})
		r.Note("%s: request frame %d B, response frame %d B.", e.name, e.reqLen, e.respLen)
	}
	peers := o.peers
	if ab {
		peers = ""
	} else {
		targets = append(targets, target{name: rowGopcuaCli, pid: srv.Pid(), dial: gopcuaClient(srv.URL), peer: true})
	}

	peerOpts := []client.Option{client.Certificate(ident.DER, ident.Key), client.Application(ident.URI, "uastack bench"), client.InsecureSkipVerify()}
	for _, peer := range strings.Split(peers, ",") {
		switch strings.TrimSpace(peer) {
		case "":
		case "gopcua":
			prog.Stage("starting gopcua's server")
			p, err := child.Start(ctx, "gopcua")
			if err != nil {
				r.Note("%s not measured: %v", rowGopcuaSrv, err)
				continue
			}
			defer p.Stop()
			targets = append(targets, target{name: rowGopcuaSrv, pid: p.Pid(), peer: true,
				dial: pkgClient(p.Addr, policy.URINone, ua.MessageSecurityModeNone, peerOpts...)})
		case "node-opcua":
			prog.Stage("starting node-opcua's server")
			url, p, err := startNode(dir)
			if err != nil {
				r.Note("node-opcua server not measured: %v", err)
				continue
			}
			defer p.Stop()
			targets = append(targets,
				target{name: rowNodeNone, pid: p.Pid(), peer: true, dial: pkgClient(url, policy.URINone, ua.MessageSecurityModeNone, peerOpts...)},
				target{name: rowNodeSaE, pid: p.Pid(), peer: true, dial: pkgClient(url, policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt, peerOpts...)})
		default:
			return nil, fmt.Errorf("unknown peer %q", peer)
		}
	}

	results := make([]drive.Result, len(targets))
	failed := make([]bool, len(targets))
	for round := range o.rounds {
		for i, t := range targets {
			if failed[i] {
				continue
			}
			prog.Stage(fmt.Sprintf("%d/%d %s", round+1, o.rounds, t.name))
			var res drive.Result
			var err error
			// The label lets a -cpuprofile be split by target (pprof -tagfocus).
			pprof.Do(ctx, pprof.Labels("target", t.name), func(ctx context.Context) {
				res, err = drive.Run(ctx, t.dial, drive.Options{Clients: o.clients, Outstanding: o.outstanding,
					Warmup: o.warmup, Window: o.duration / time.Duration(o.rounds), ServerPid: t.pid, Progress: prog})
			})
			if err != nil {
				if !t.peer {
					return nil, fmt.Errorf("%s: %w", t.name, err)
				}
				failed[i] = true
				r.Note("%s not measured: %v", t.name, err)
				continue
			}
			results[i].Add(res)
		}
	}
	for i, t := range targets {
		if failed[i] {
			continue
		}
		res := results[i]
		p := report.Percentiles(res.Latencies, 0.5, 0.9, 0.99)
		r.Add(report.Row{Name: t.name, Values: []report.Value{
			{Name: colRate, Value: res.PerSecond(), Unit: "1/s"},
			{Name: colServerCPU, Value: res.ServerMicros(), Unit: "µs"},
			{Name: colServerUsr, Value: res.ServerUserMicros(), Unit: "µs"},
			{Name: colClientCPU, Value: res.ClientMicros(), Unit: "µs"},
			{Name: colP50, Value: ms(p[0]), Unit: "ms"},
			{Name: colP90, Value: ms(p[1]), Unit: "ms"},
			{Name: colP99, Value: ms(p[2]), Unit: "ms"},
		}})
	}
	r.Note("%d clients × %d outstanding Reads; each target measured for %v in %d rounds interleaved with the others, %v of warm-up before each.",
		o.clients, o.outstanding, o.duration, o.rounds, o.warmup)
	addRatios(r)
	if len(o.sweep) > 0 {
		if err := sweep(ctx, o, r, srv, ident, frameNone(len(reqBody)), frameNone(len(respBody)), respBody, prog); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// addRatios notes the bars of issue 5 and whether they are met.
func addRatios(r *report.Report) {
	ratio := func(a, b, col string) (float64, bool) {
		ra, ok1 := r.Row(a)
		rb, ok2 := r.Row(b)
		if !ok1 || !ok2 {
			return 0, false
		}
		va, _ := ra.Get(col)
		vb, _ := rb.Get(col)
		if vb == 0 {
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
	if x, ok := ratio(rowUastackNone, rowEchoNone, colRate); ok {
		r.Note("uastack/echo Reads/s, None: **%.2f** (bar ≥ 0.80: %s).", x, verdict(x >= 0.80))
	}
	if x, ok := ratio(rowUastackNone, rowEchoNone, colServerCPU); ok {
		r.Note("uastack server CPU per Read / echo server CPU per message, None: **%.2f** (bar ≤ 1.2: %s).", x, verdict(x <= 1.2))
	}
	if own, ok := r.Row(rowUastackNone); ok {
		if echo, ok := r.Row(rowEchoNone); ok {
			ou, _ := own.Get(colServerUsr)
			eu, _ := echo.Get(colServerUsr)
			r.Note("Server user CPU per Read, None: uastack %.2f µs, echo %.2f µs per message; the rest is the kernel's work for their system calls.", ou, eu)
		}
	}
	if x, ok := ratio(rowUastackNone, rowAgainst, colServerCPU); ok {
		y, _ := ratio(rowUastackNone, rowAgainst, colServerUsr)
		r.Note("This build / the -against build, None: server CPU per Read %.2f, of it user %.2f.", x, y)
	}
	if x, ok := ratio(rowUastackSaE, rowEchoNone, colRate); ok {
		r.Note("uastack/echo Reads/s, Basic256Sha256 SignAndEncrypt against the None ceiling: **%.2f** (bar ≥ 0.35: %s).", x, verdict(x >= 0.35))
	}
	if x, ok := ratio(rowUastackSaE, rowEchoSaE, colRate); ok {
		r.Note("uastack/echo Reads/s, SignAndEncrypt against the ceiling with its frame sizes: %.2f.", x)
	}
	if x, ok := ratio(rowUastackNone, rowGopcuaCli, colClientCPU); ok {
		r.Note("pkg/client CPU per Read / gopcua client CPU per Read, same server: **%.2f** (bar ≤ 0.5: %s).", x, verdict(x <= 0.5))
	}
	for _, peer := range []string{rowGopcuaSrv, rowNodeNone, rowNodeSaE} {
		own := rowUastackNone
		if peer == rowNodeSaE {
			own = rowUastackSaE
		}
		if x, ok := ratio(own, peer, colRate); ok {
			r.Note("uastack/%s Reads/s: %.2f.", peer, x)
		}
	}
}

// pkgClient dials one pkg/client session per client; a call is one single-value Read.
func pkgClient(url, pol string, mode ua.MessageSecurityMode, opts ...client.Option) drive.Dial {
	return func(ctx context.Context) (drive.Call, func(), error) {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		c, err := client.Dial(dctx, url, append([]client.Option{client.Security(pol, mode)}, opts...)...)
		if err != nil {
			return nil, nil, err
		}
		call := func(ctx context.Context) error {
			resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []ua.ReadValueId{{NodeId: readNode, AttributeId: uint32(attr.Value)}}})
			if err != nil {
				return err
			}
			if len(resp.Results) != 1 || resp.Results[0].Status != status.Good {
				return fmt.Errorf("read: %d results, first %v", len(resp.Results), resp.Results)
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

// gopcuaClient dials gopcua's client over None; a call is one single-value Read.
func gopcuaClient(url string) drive.Dial {
	return func(ctx context.Context) (drive.Call, func(), error) {
		c, err := gopcua.NewClient(url, gopcua.SecurityMode(gua.MessageSecurityModeNone), gopcua.AutoReconnect(false))
		if err != nil {
			return nil, nil, err
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := c.Connect(dctx); err != nil {
			return nil, nil, err
		}
		node := gua.NewNumericNodeID(0, id.Server_ServerStatus_State)
		call := func(ctx context.Context) error {
			resp, err := c.Read(ctx, &gua.ReadRequest{NodesToRead: []*gua.ReadValueID{{NodeID: node, AttributeID: gua.AttributeIDValue}}})
			if err != nil {
				return err
			}
			if len(resp.Results) != 1 || resp.Results[0].Status != gua.StatusOK {
				return fmt.Errorf("gopcua read: %d results", len(resp.Results))
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

// nodeServer is node-opcua's server on port argv[2] with its PKI in argv[3], accepting
// any client certificate, with room for the suite's sessions.
const nodeServer = `
const { OPCUAServer } = require("node-opcua-server");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
(async () => {
  const [port, pki] = process.argv.slice(2);
  const serverCertificateManager = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  const server = new OPCUAServer({
    port: Number(port), serverCertificateManager,
    maxConnectionsPerEndpoint: 1000, maxAllowedSessionNumber: 1000,
    serverCapabilities: { maxSessions: 1000, operationLimits: {} },
  });
  await server.start();
  process.on("SIGINT", async () => { await server.shutdown(0); process.exit(0); });
  result({ ready: true });
})().catch((e) => { console.error(e); process.exit(1); });
`

// startNode runs node-opcua's server on a free port and returns its URL. pkg/client
// does not check its certificate (InsecureSkipVerify): trust decides nothing about the
// cost of a Read.
func startNode(dir string) (string, *nodepeer.Process, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	p, err := nodepeer.StartProcess(dir, nodeServer, strconv.Itoa(port), filepath.Join(dir, "node-pki"))
	if err != nil {
		return "", nil, err
	}
	return "opc.tcp://127.0.0.1:" + strconv.Itoa(port), p, nil
}
