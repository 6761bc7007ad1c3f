package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	gua "github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/plugintest"
	"uastack.dev/services/server/internal/config"
)

// The test guests of the plugins module (issue 17): a plugin process whose "block" node
// takes 1 s per Read and whose "pid" node reads its process id, and a WASM guest whose
// options say how each node misbehaves.
const (
	testPluginPkg = "uastack.dev/plugins/plugintest/testplugin"
	misbehavePkg  = "uastack.dev/plugins/plugintest/testguest/misbehave"
)

// startPluginPipeline is startPipeline with the manager of testNamespaceURI loaded from
// the configuration entry nm (its NamespaceURI is set here) and two request workers.
func startPluginPipeline(t *testing.T, nm config.NodeManager) *pipelineServer {
	t.Helper()
	nm.NamespaceURI = testNamespaceURI
	return startPipelineWith(t, nil, Options{}, func(c *config.Config) {
		c.Limits.MinRequestThreadCount = 1
		c.Limits.MaxRequestThreadCount = 2
		c.AddressSpace.NodeManagers = append(c.AddressSpace.NodeManagers, nm)
	})
}

// gopcuaSession opens a gopcua client session (None, anonymous) on url.
func gopcuaSession(t *testing.T, ctx context.Context, url string) *opcua.Client {
	t.Helper()
	eps, err := opcua.GetEndpoints(ctx, url)
	require.NoError(t, err)
	ep, err := opcua.SelectEndpoint(eps, gua.SecurityPolicyURINone, gua.MessageSecurityModeNone)
	require.NoError(t, err)
	c, err := opcua.NewClient(url, opcua.SecurityFromEndpoint(ep, gua.UserTokenTypeAnonymous),
		opcua.RequestTimeout(10*time.Second), opcua.AutoReconnect(false))
	require.NoError(t, err)
	require.NoError(t, c.Connect(ctx))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// bystanders are clients that read namespace 0 (CurrentTime) and the demo namespace
// (Demo.Scalar_Double) in a loop while a plugin misbehaves, and count what went wrong.
type bystanders struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	reads atomic.Int64

	mu        sync.Mutex // guards latencies, errs
	latencies []time.Duration
	errs      []string // reads that failed or had an item other than Good
}

// startBystanders starts n clients on url, each reading in a loop until done is called.
func startBystanders(t *testing.T, ctx context.Context, url string, n int) *bystanders {
	t.Helper()
	b := &bystanders{stop: make(chan struct{})}
	req := &gua.ReadRequest{NodesToRead: []*gua.ReadValueID{
		{NodeID: gua.NewNumericNodeID(0, 2258), AttributeID: gua.AttributeIDValue},
		{NodeID: gua.NewStringNodeID(1, "Demo.Scalar_Double"), AttributeID: gua.AttributeIDValue},
	}}
	for range n {
		c := gopcuaSession(t, ctx, url)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for {
				select {
				case <-b.stop:
					return
				default:
				}
				start := time.Now()
				resp, err := c.Read(ctx, req)
				took := time.Since(start)
				b.reads.Add(1)
				b.mu.Lock()
				b.latencies = append(b.latencies, took)
				switch {
				case err != nil:
					b.errs = append(b.errs, err.Error())
				case len(resp.Results) != 2 || resp.Results[0].Status != gua.StatusOK || resp.Results[1].Status != gua.StatusOK:
					b.errs = append(b.errs, "a result other than Good")
				}
				b.mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return b
}

// done stops the clients and checks that every read succeeded with normal latency.
func (b *bystanders) done(t *testing.T) {
	t.Helper()
	close(b.stop)
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.errs, "reads of other clients failed (of %d)", b.reads.Load())
	require.Greater(t, b.reads.Load(), int64(20), "the other clients kept reading")
	requireNormalLatency(t, b.latencies)
}

// readItems reads the Values of nodes on the pipeline's session with timeoutHint (ms).
func (ps *pipelineServer) readItems(ctx context.Context, handle, timeoutHint uint32, nodes ...codec.NodeId) (*ua.ReadResponse, error) {
	req := &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: ps.token, RequestHandle: handle, TimeoutHint: timeoutHint}}
	for _, n := range nodes {
		req.NodesToRead = append(req.NodesToRead, ua.ReadValueId{NodeId: n, AttributeId: 13})
	}
	resp, err := ps.ch.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*ua.ReadResponse), nil
}

// statuses returns the StatusCodes of a Read's results.
func statuses(r *ua.ReadResponse) []status.Code {
	out := make([]status.Code, len(r.Results))
	for i, dv := range r.Results {
		out[i] = dv.Status
	}
	return out
}

// TestPluginBlockingReads is issue 17's blocking proof with a real plugin process whose
// Reads take 1 s: many such Reads are in the plugin at once while no request worker is
// held, namespace 0 Reads keep their latency, other clients reading namespace 0 and
// the demo namespace in a loop meanwhile all succeed; an item of the plugin whose
// request's TimeoutHint passes is answered BadTimeout beside a Good namespace 0 item,
// and past maxOutstanding further Reads are answered BadResourceUnavailable at once.
func TestPluginBlockingReads(t *testing.T) {
	t.Parallel()
	const maxOutstanding = 12
	ps := startPluginPipeline(t, config.NodeManager{Name: "blocking", Type: config.NodeManagerProcess,
		Path: plugintest.Process(t, testPluginPkg), MaxOutstanding: maxOutstanding})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	block := codec.NewStringNodeId(ps.slowNS, "block")
	now := codec.NewNumericNodeId(0, 2258)
	demo := codec.NewStringNodeId(1, "Demo.Scalar_Double")
	handle := atomic.Uint32{}

	// parkReads sends n Reads of the blocking node at once; each result arrives on the
	// channel returned, with the time it took.
	type answer struct {
		codes []status.Code
		err   error
		took  time.Duration
	}
	parkReads := func(n int) <-chan answer {
		out := make(chan answer, n)
		for range n {
			go func() {
				start := time.Now()
				r, err := ps.readItems(ctx, handle.Add(1), 0, block)
				a := answer{err: err, took: time.Since(start)}
				if err == nil {
					a.codes = statuses(r)
				}
				out <- a
			}()
		}
		return out
	}

	t.Run("no worker held", func(t *testing.T) {
		const parked = 10
		sent := time.Now()
		answers := parkReads(parked)
		// All of them handed to the plugin (outstanding, none queued) and no worker busy.
		require.Eventually(t, func() bool {
			q, _, busy := ps.srv.pipe.Queue().Stats()
			return ps.srv.pipe.Outstanding().Len() == parked && q == 0 && busy == 0
		}, time.Second, time.Millisecond, "the workers are free while the Reads wait in the plugin")
		require.Empty(t, answers, "the plugin answers after a second")
		var latencies []time.Duration
		for range 20 {
			_, running, busy := ps.srv.pipe.Queue().Stats()
			require.Zero(t, busy, "no worker is held by a Read in the plugin")
			require.LessOrEqual(t, running, 2)
			start := time.Now()
			resp, err := ps.read(ctx, 0, handle.Add(1), 0)
			latencies = append(latencies, time.Since(start))
			requireReadGood(t, resp, err)
		}
		requireNormalLatency(t, latencies)
		require.Less(t, time.Since(sent), time.Second, "the namespace 0 Reads ran while the plugin held the others")
		for range parked {
			a := <-answers
			require.NoError(t, a.err)
			require.Equal(t, []status.Code{status.Good}, a.codes)
			require.GreaterOrEqual(t, a.took, 900*time.Millisecond)
		}
	})

	t.Run("other clients", func(t *testing.T) {
		// Reads of the blocking node keep coming while three other clients read.
		by := startBystanders(t, ctx, ps.url, 3)
		stop := make(chan struct{})
		var blockers sync.WaitGroup
		for range 4 {
			blockers.Add(1)
			go func() {
				defer blockers.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					r, err := ps.readItems(ctx, handle.Add(1), 0, block)
					if !(err == nil && r.Results[0].Status == status.Good) {
						t.Errorf("a blocking Read: %v %v", err, r)
						return
					}
				}
			}()
		}
		time.Sleep(1500 * time.Millisecond)
		by.done(t)
		close(stop)
		blockers.Wait()
	})

	t.Run("timeout per item", func(t *testing.T) {
		start := time.Now()
		r, err := ps.readItems(ctx, handle.Add(1), 300, now, block, demo)
		require.NoError(t, err, "the Read is answered, not faulted")
		require.Equal(t, []status.Code{status.Good, status.BadTimeout, status.Good}, statuses(r))
		require.Less(t, time.Since(start), 900*time.Millisecond, "answered at the TimeoutHint, not after the plugin")
	})

	t.Run("past maxOutstanding", func(t *testing.T) {
		// The timed-out Read above is still in the plugin for a moment: let it finish.
		time.Sleep(time.Second)
		const extra = 5
		answers := parkReads(maxOutstanding + extra)
		var good, refused int
		for range maxOutstanding + extra {
			a := <-answers
			require.NoError(t, a.err)
			switch a.codes[0] {
			case status.Good:
				good++
			case status.BadResourceUnavailable:
				refused++
				require.Less(t, a.took, 500*time.Millisecond, "refused at once")
			default:
				t.Fatalf("a Read past maxOutstanding: %v", a.codes)
			}
		}
		require.Equal(t, maxOutstanding, good)
		require.Equal(t, extra, refused)
	})
}

// TestPluginKilled is issue 17's crash proof: the plugin process is killed with SIGKILL
// while a client's subscription monitors one of its nodes and another client reads
// namespace 0 and the demo namespace in a loop. The other client sees no error; the
// monitored item reports BadNotConnected or BadCommunicationError, then Good values
// again once the host has restarted the plugin, with no client action; the plugin's
// nodes read Good from the new process.
func TestPluginKilled(t *testing.T) {
	t.Parallel()
	ps := startPluginPipeline(t, config.NodeManager{Name: "victim", Type: config.NodeManagerProcess,
		Path: plugintest.Process(t, testPluginPkg)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pid := func() int64 {
		t.Helper()
		r, err := ps.readItems(ctx, 1, 0, codec.NewStringNodeId(ps.slowNS, "pid"))
		require.NoError(t, err)
		require.Equal(t, status.Good, r.Results[0].Status)
		return r.Results[0].Value.Value().(int64)
	}
	before := pid()
	require.Equal(t, int64(os.Getpid()), parentOf(t, before), "the plugin is a child of the server's process")

	// The plugin pushes the watched node every 50 ms.
	c := gopcuaSession(t, ctx, ps.url)
	time.Sleep(300 * time.Millisecond) // see TestSubscriptionGopcua
	notes := make(chan *opcua.PublishNotificationData, 256)
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 50 * time.Millisecond}, notes)
	require.NoError(t, err)
	res, err := sub.Monitor(ctx, gua.TimestampsToReturnBoth,
		opcua.NewMonitoredItemCreateRequestWithDefaults(gua.NewStringNodeID(ps.slowNS, "pushed"), gua.AttributeIDValue, 1))
	require.NoError(t, err)
	require.Equal(t, gua.StatusOK, res.Results[0].StatusCode)
	next := func(want func(gua.StatusCode) bool, within time.Duration) gua.StatusCode {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case n := <-notes:
				require.NoError(t, n.Error)
				dcn, ok := n.Value.(*gua.DataChangeNotification)
				if !ok {
					continue
				}
				for _, mi := range dcn.MonitoredItems {
					if want(mi.Value.Status) {
						return mi.Value.Status
					}
				}
			case <-deadline:
				t.Fatalf("no such notification within %v", within)
			}
		}
	}
	good := func(s gua.StatusCode) bool { return s == gua.StatusOK }
	next(good, 5*time.Second)

	by := startBystanders(t, ctx, ps.url, 1)
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, syscall.Kill(int(before), syscall.SIGKILL))
	killed := time.Now()
	bad := next(func(s gua.StatusCode) bool { return s != gua.StatusOK }, time.Second) // issue 17: within one second
	require.Contains(t, []gua.StatusCode{gua.StatusBadNotConnected, gua.StatusBadCommunicationError}, bad)
	t.Logf("the monitored item reported %v %v after the kill", bad, time.Since(killed))
	next(good, 5*time.Second)
	t.Logf("and Good again %v after the kill", time.Since(killed))
	time.Sleep(200 * time.Millisecond)
	by.done(t)

	after := pid()
	require.NotEqual(t, before, after, "a new plugin process serves")
	require.Equal(t, int64(os.Getpid()), parentOf(t, after))

	// The restart is on /metrics, with the boundary's traffic.
	var metrics strings.Builder
	require.NoError(t, ps.srv.WriteMetrics(&metrics))
	require.Contains(t, metrics.String(), "uastack_node_manager_guests_replaced_total{manager=\"victim\"} 1\n")
	require.Regexp(t, `uastack_node_manager_calls_total\{manager="victim"\} [1-9]`, metrics.String())
	require.Contains(t, metrics.String(), "uastack_node_manager_outstanding{manager=\"victim\"} 0\n")
}

// parentOf returns the parent process id of pid, from /proc.
func parentOf(t *testing.T, pid int64) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	// pid (comm) state ppid ...; comm may hold spaces, so count from its closing ")".
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, err := strconv.ParseInt(fields[1], 10, 64)
	require.NoError(t, err)
	return ppid
}

// TestPluginWASMTrapAndLoop is issue 17's sandbox proof: a WASM guest that panics, one
// that loads past its memory and one that loops forever (stopped by the request's
// TimeoutHint) answer those items BadInternalError or BadTimeout, beside a Good namespace
// 0 item of the same Read, while another client reading namespace 0 and the demo
// namespace sees no error. The broken instance is replaced by a fresh one: the good node
// of the same guest is answered BadNotConnected until it is up (one instance), and then
// Good.
func TestPluginWASMTrapAndLoop(t *testing.T) {
	t.Parallel()
	ps := startPluginPipeline(t, config.NodeManager{Name: "misbehave", Type: config.NodeManagerWasm,
		Path:    pluginWASM(t, misbehavePkg),
		Options: map[string]any{"nodes": map[string]any{"good": "value", "boom": "panic", "oob": "oob", "spin": "loop"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node := func(name string) codec.NodeId { return codec.NewStringNodeId(ps.slowNS, name) }
	now := codec.NewNumericNodeId(0, 2258)
	by := startBystanders(t, ctx, ps.url, 1)
	handle := uint32(0)
	// readGood reads the good node until it is Good, allowing only BadNotConnected
	// (no instance up) before.
	readGood := func(what string) {
		t.Helper()
		start := time.Now()
		for {
			handle++
			r, err := ps.readItems(ctx, handle, 0, node("good"))
			require.NoError(t, err)
			if r.Results[0].Status == status.Good {
				require.Equal(t, "good", r.Results[0].Value.Value())
				t.Logf("after %s: Good again after %v", what, time.Since(start))
				return
			}
			require.Equal(t, status.BadNotConnected, r.Results[0].Status, "after %s", what)
			require.Less(t, time.Since(start), 3*time.Second, "the instance broken by %s is not replaced", what)
			time.Sleep(5 * time.Millisecond)
		}
	}
	readGood("nothing")
	for _, tc := range []struct {
		node        string
		timeoutHint uint32
		want        status.Code
	}{
		{"boom", 0, status.BadInternalError},
		{"oob", 0, status.BadInternalError},
		{"spin", 200, status.BadTimeout},
	} {
		handle++
		start := time.Now()
		r, err := ps.readItems(ctx, handle, tc.timeoutHint, now, node(tc.node))
		require.NoError(t, err, tc.node)
		require.Equal(t, []status.Code{status.Good, tc.want}, statuses(r), tc.node)
		require.Less(t, time.Since(start), 900*time.Millisecond, tc.node)
		// A Read that reaches the broken instance before the host has taken it out of
		// service is answered as if it had broken the instance (a race in the host's
		// lanes, reported; not what this test is about): let the host see the break.
		time.Sleep(50 * time.Millisecond)
		readGood(tc.node)
	}
	by.done(t)
}
