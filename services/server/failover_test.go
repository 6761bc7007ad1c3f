//go:build unix

package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
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

// TestFailoverAfterKill is Part 4 §6.6.2's HotAndMirrored failover with the server
// killed (SIGKILL, nothing written on the way out): a client with a subscription on A
// moves to B with the same session and the same subscription, whose sequence numbers go
// on; nothing A sent is missing (what the client had not received, it Republishes from
// B), and the values written on B after the move arrive.
func TestFailoverAfterKill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	nats, err := natsnode.Start(natsnode.Config{DataDir: filepath.Join(t.TempDir(), "nats")})
	require.NoError(t, err)
	t.Cleanup(nats.Shutdown)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	key := base64.StdEncoding.EncodeToString(k)
	server := func(name string) []string {
		dir := t.TempDir()
		return []string{"--pki", filepath.Join(dir, "pki"),
			"--set", "endpoint.listenAddress=127.0.0.1:0", "--set", "endpoint.endpointUrl=opc.tcp://127.0.0.1:0",
			"--set", "endpoint.hostnames=127.0.0.1",
			"--set", "application.applicationUri=urn:127.0.0.1:uastack:kill:" + name,
			"--set", "mirror.urls=" + nats.ClientURL(), "--set", "mirror.cluster=kill", "--set", "mirror.key=" + key}
	}
	urlA, procA := childServer(t, server("A")...)
	urlB, _ := childServer(t, server("B")...)

	none := client.Security(policy.URINone, ua.MessageSecurityModeNone)
	cl, err := client.Dial(ctx, urlA, none, client.Failover(urlA, urlB),
		client.WithBackoff(client.Backoff{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 3}))
	require.NoError(t, err)
	defer cl.Close(context.Background())
	wa, err := client.Dial(ctx, urlA, none, client.WithBackoff(client.Backoff{Attempts: 1}))
	require.NoError(t, err)
	wb, err := client.Dial(ctx, urlB, none)
	require.NoError(t, err)
	defer wb.Close(context.Background())

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
