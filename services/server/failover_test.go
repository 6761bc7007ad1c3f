//go:build unix

package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/mirror/natsnode"
)

// serveEnv holds the flags of a server the test binary runs as a child process.
const serveEnv = "UASTACK_TEST_SERVE"

// serveChild runs the server with the flags in args until SIGINT or SIGTERM, printing
// "ready <address>" once it accepts connections.
func serveChild(args string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, strings.Split(args, "\x1f"), os.Environ(), os.Stderr, func(a net.Addr) { fmt.Println("ready", a) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childServer starts the server with flags as a child process and returns its endpoint
// URL and the process, which the test may kill.
func childServer(t *testing.T, flags ...string) (string, *os.Process) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+strings.Join(flags, "\x1f"))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- addr
			}
		}
	}()
	select {
	case addr := <-ready:
		return "opc.tcp://" + addr, cmd.Process
	case <-time.After(60 * time.Second):
		t.Fatal("the child server did not start")
		return "", nil
	}
}

// childSet are the flags of the servers of one test's redundant set: mirrored through
// natsURLs into set cluster with a fresh key.
type childSet struct {
	t        *testing.T
	natsURLs string
	cluster  string
	key      string
	extra    []string // for every server
}

func newChildSet(t *testing.T, cluster string, natsURLs []string, extra ...string) *childSet {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return &childSet{t: t, natsURLs: strings.Join(natsURLs, ","), cluster: cluster, key: base64.StdEncoding.EncodeToString(k), extra: extra}
}

// start starts server name of the set as a child process, with flags added.
func (cs *childSet) start(name string, flags ...string) (string, *os.Process) {
	cs.t.Helper()
	args := append([]string{"--pki", filepath.Join(cs.t.TempDir(), "pki"),
		"--set", "endpoint.listenAddress=127.0.0.1:0", "--set", "endpoint.endpointUrl=opc.tcp://127.0.0.1:0",
		"--set", "endpoint.hostnames=127.0.0.1",
		"--set", "application.applicationUri=urn:127.0.0.1:uastack:" + cs.cluster + ":" + name,
		"--set", "mirror.urls=" + cs.natsURLs, "--set", "mirror.cluster=" + cs.cluster, "--set", "mirror.key=" + cs.key}, cs.extra...)
	return childServer(cs.t, append(args, flags...)...)
}

// setClients dials, over None, the client under test on A with the set as its Failover
// list and a bounded backoff (a move starts once A refuses), and a writer on each
// server; A's writer gives up at once when A is gone. They close with the test.
func setClients(t *testing.T, ctx context.Context, urlA, urlB string) (cl, wa, wb *client.Client) {
	t.Helper()
	none := client.Security(policy.URINone, ua.MessageSecurityModeNone)
	dial := func(url string, opts ...client.Option) *client.Client {
		c, err := client.Dial(ctx, url, append([]client.Option{none}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	cl = dial(urlA, client.Failover(urlA, urlB),
		client.WithBackoff(client.Backoff{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 3}))
	wa = dial(urlA, client.WithBackoff(client.Backoff{Attempts: 1}))
	wb = dial(urlB)
	return cl, wa, wb
}

// metricsAddress returns a free loopback address for a server's /metrics.
func metricsAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// metricOf reads metric name (no labels) from the /metrics at addr; "" when it cannot.
func metricOf(addr, name string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+" "); ok {
			return v
		}
	}
	return ""
}

// TestFailoverAfterKill is Part 4 §6.6.2's HotAndMirrored failover with the server
// killed (SIGKILL, nothing written on the way out), the set mirrored through a cluster of
// three NATS servers: a client with a subscription on A
// moves to B with the same session and the same subscription, whose sequence numbers go
// on; nothing A sent is missing (what the client had not received, it Republishes from
// B), and the values written on B after the move arrive.
func TestFailoverAfterKill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// Three NATS servers in a cluster, the set's records kept on all three.
	cluster, err := natsnode.StartCluster(t.TempDir(), 3, "kill")
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, n := range cluster {
			n.Shutdown()
		}
	})
	urls := make([]string, len(cluster))
	for i, n := range cluster {
		urls[i] = n.ClientURL()
	}
	set := newChildSet(t, "kill", urls, "--set", "mirror.replicas=3")
	urlA, procA := set.start("A")
	urlB, _ := set.start("B")

	cl, wa, wb := setClients(t, ctx, urlA, urlB)

	node := codec.NewStringNodeId(1, "Demo.Scalar_Int32")
	_, err = wa.WriteValue(ctx, node, codec.Int32Variant(0))
	require.NoError(t, err)
	var (
		mu   sync.Mutex // guards vals
		vals []int32
		seqs []uint32
		got  = make(chan struct{}, 1)
	)
	sub, err := cl.Subscribe(ctx, client.SubscriptionParams{Interval: 20 * time.Millisecond, Notify: func(n *client.Notification) {
		mu.Lock()
		for _, dc := range n.DataChanges {
			vals = append(vals, int32(dc.Value.Value.Bits()))
			seqs = append(seqs, n.SequenceNumber)
		}
		mu.Unlock()
		select {
		case got <- struct{}{}:
		default:
		}
	}})
	require.NoError(t, err)
	_, err = sub.Monitor(ctx, client.MonitorItem{Node: node, Handle: 1, QueueSize: 100, SamplingInterval: client.FastestSampling})
	require.NoError(t, err)
	last := func() (int32, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(vals) == 0 {
			return -1, 0
		}
		return vals[len(vals)-1], len(vals)
	}
	waitFor := func(v int32) {
		t.Helper()
		require.Eventually(t, func() bool { l, _ := last(); return l == v }, 20*time.Second, 5*time.Millisecond, "value %d", v)
	}
	write := func(w *client.Client, from, to int32) {
		for v := from; v <= to; v++ {
			_, err := w.WriteValue(ctx, node, codec.Int32Variant(v))
			require.NoError(t, err)
			time.Sleep(10 * time.Millisecond)
		}
	}
	_, err = wb.WriteValue(ctx, node, codec.Int32Variant(30))
	require.NoError(t, err)
	waitFor(0)
	write(wa, 1, 30) // A and B end on the same value
	waitFor(30)
	sess, subID := cl.SessionID(), sub.ID()

	require.NoError(t, procA.Kill())
	require.Eventually(t, func() bool { return cl.URL() == urlB }, 30*time.Second, 10*time.Millisecond, "moved to B")
	write(wb, 31, 60)
	waitFor(60)

	require.Equal(t, sess, cl.SessionID(), "the same session")
	require.Equal(t, subID, sub.ID(), "the same subscription")
	st := sub.Stats()
	require.Zero(t, st.Recreated)
	require.Zero(t, st.Lost)
	mu.Lock()
	defer mu.Unlock()
	want := make([]int32, 61)
	for i := range want {
		want[i] = int32(i)
	}
	require.Equal(t, want, slices.Compact(slices.Clone(vals)), "every value, in order (seqs %v)", seqs)
	for i := 1; i < len(seqs); i++ {
		require.GreaterOrEqual(t, seqs[i], seqs[i-1], "sequence numbers go on")
	}
}

// TestFailoverAfterNATSRestart: NATS stops under load and comes back. Meanwhile server A
// serves its client on (values keep arriving) and reports itself degraded; once NATS is
// back A writes its whole state again and is healthy; then A is killed, and its client
// carries on at B with the same session, as if NATS had never gone.
func TestFailoverAfterNATSRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	nats, err := natsnode.Start(natsnode.Config{DataDir: filepath.Join(t.TempDir(), "nats")})
	require.NoError(t, err)
	natsCfg := nats.Config()
	t.Cleanup(func() { nats.Shutdown() })
	metricsA := metricsAddress(t)
	set := newChildSet(t, "restart", []string{nats.ClientURL()})
	urlA, procA := set.start("A", "--set", "observability.metricsAddr="+metricsA)
	urlB, _ := set.start("B")
	metric := func(name string) string { return metricOf(metricsA, name) }

	cl, wa, wb := setClients(t, ctx, urlA, urlB)
	node := codec.NewStringNodeId(1, "Demo.Scalar_Int32")
	var (
		mu   sync.Mutex // guards vals
		vals []int32
	)
	sub, err := cl.Subscribe(ctx, client.SubscriptionParams{Interval: 20 * time.Millisecond, Notify: func(n *client.Notification) {
		mu.Lock()
		for _, dc := range n.DataChanges {
			vals = append(vals, int32(dc.Value.Value.Bits()))
		}
		mu.Unlock()
	}})
	require.NoError(t, err)
	_, err = sub.Monitor(ctx, client.MonitorItem{Node: node, Handle: 1, QueueSize: 100, SamplingInterval: client.FastestSampling})
	require.NoError(t, err)
	waitFor := func(v int32) {
		t.Helper()
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(vals) > 0 && vals[len(vals)-1] == v
		}, 20*time.Second, 5*time.Millisecond, "value %d", v)
	}
	write := func(from, to int32, ws ...*client.Client) {
		for v := from; v <= to; v++ {
			for _, w := range ws {
				_, err := w.WriteValue(ctx, node, codec.Int32Variant(v))
				require.NoError(t, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	write(1, 10, wa, wb)
	waitFor(10)
	sess := cl.SessionID()

	nats.Shutdown()
	write(11, 20, wa, wb) // A serves its client on
	waitFor(20)
	require.Eventually(t, func() bool { return metric("uastack_mirror_degraded") == "1" }, 10*time.Second, 20*time.Millisecond, "A reports itself degraded")
	write(21, 30, wa, wb)
	waitFor(30)

	nats, err = natsnode.Start(natsCfg)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return metric("uastack_mirror_degraded") == "0" && metric("uastack_mirror_pending") == "0"
	}, 30*time.Second, 20*time.Millisecond, "A catches up")

	require.NoError(t, procA.Kill())
	require.Eventually(t, func() bool { return cl.URL() == urlB }, 30*time.Second, 10*time.Millisecond, "moved to B")
	write(31, 40, wb)
	waitFor(40)
	require.Equal(t, sess, cl.SessionID(), "the same session")
	require.Zero(t, sub.Stats().Recreated)
	mu.Lock()
	defer mu.Unlock()
	got := slices.Compact(slices.Clone(vals))
	require.Equal(t, int32(40), got[len(got)-1])
	for i := 1; i < len(got); i++ {
		require.Greater(t, got[i], got[i-1], "in order: %v", got)
	}
}

// TestFailoverKeepsQueuedEvents: events A queued for a subscription and had not sent yet
// (its publishing interval is long) when it was killed reach the client from B, each
// exactly once, with the events B raises after the move (at the subscription's next
// publishing cycle).
func TestFailoverKeepsQueuedEvents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	nats, err := natsnode.Start(natsnode.Config{DataDir: filepath.Join(t.TempDir(), "nats")})
	require.NoError(t, err)
	t.Cleanup(nats.Shutdown)
	metricsA := metricsAddress(t)
	set := newChildSet(t, "events", []string{nats.ClientURL()})
	urlA, procA := set.start("A", "--set", "observability.metricsAddr="+metricsA)
	urlB, _ := set.start("B")
	pending := func() string { return metricOf(metricsA, "uastack_mirror_pending") }

	cl, _, _ := setClients(t, ctx, urlA, urlB)
	var (
		mu   sync.Mutex // guards msgs
		msgs []string
	)
	sub, err := cl.Subscribe(ctx, client.SubscriptionParams{Interval: 8 * time.Second, Notify: func(n *client.Notification) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range n.Events {
			if lt, ok := ev.EventFields[0].Value().(codec.LocalizedText); ok && strings.HasPrefix(lt.Text, "queued ") {
				msgs = append(msgs, lt.Text)
			}
		}
	}})
	require.NoError(t, err)
	events := codec.NewStringNodeId(1, "Demo.Events")
	res, err := sub.Monitor(ctx, client.MonitorItem{Node: events, Handle: 9, QueueSize: 100, EventFilter: &ua.EventFilter{
		SelectClauses: []ua.SimpleAttributeOperand{{TypeDefinitionId: codec.NewNumericNodeId(0, 2041),
			BrowsePath: []codec.QualifiedName{{Name: "Message"}}, AttributeId: 13}}}})
	require.NoError(t, err)
	require.True(t, res[0].Status.IsGood(), res[0].Status)
	emit := func(c *client.Client, msg string) {
		resp, err := c.Call(ctx, &ua.CallRequest{MethodsToCall: []ua.CallMethodRequest{{ObjectId: events,
			MethodId: codec.NewStringNodeId(1, "Demo.Events.Emit"), InputArguments: []codec.Variant{codec.UInt16Variant(500), codec.StringVariant(msg)}}}})
		require.NoError(t, err)
		require.True(t, resp.Results[0].StatusCode.IsGood(), resp.Results[0].StatusCode)
	}
	msgsNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(msgs)
	}
	// The subscription's first cycle has passed: the next sends in 8 s, long after the
	// events are queued and A is killed, even on a loaded machine.
	time.Sleep(200 * time.Millisecond)
	for i := range 5 {
		emit(cl, fmt.Sprintf("queued on A %d", i))
	}
	require.Eventually(t, func() bool { return pending() == "0" }, 5*time.Second, 10*time.Millisecond, "A's mirror caught up")
	mu.Lock()
	require.Empty(t, msgs, "not sent yet")
	mu.Unlock()

	require.NoError(t, procA.Kill())
	require.Eventually(t, func() bool { return cl.URL() == urlB }, 30*time.Second, 10*time.Millisecond, "moved to B")
	emit(cl, "queued on B")
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(msgs) >= 6
	}, 30*time.Second, 20*time.Millisecond, "got %v", msgsNow())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"queued on A 0", "queued on A 1", "queued on A 2", "queued on A 3", "queued on A 4", "queued on B"}, msgs)
}
