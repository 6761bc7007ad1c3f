package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is an output that a test may read while uacli writes it.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// background runs uacli in a goroutine; wait returns its result.
func background(t *testing.T, args ...string) (out *syncBuffer, wait func() result) {
	t.Helper()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(args, out, errOut) }()
	return out, func() result {
		select {
		case code := <-done:
			t.Logf("uacli %s -> %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
			return result{code, out.String(), errOut.String()}
		case <-time.After(30 * time.Second):
			t.Fatalf("uacli %s still running; output so far:\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
			return result{}
		}
	}
}

// waitOutput waits until out has n lines.
func waitOutput(t *testing.T, out *syncBuffer, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Count(out.String(), "\n") >= n }, 20*time.Second, 10*time.Millisecond,
		"waiting for %d lines of output", n)
}

func TestSubscribe(t *testing.T) {
	srv := startServer(t)
	g := noneArgs(srv, t.TempDir())
	const node = "ns=1;s=Demo.Scalar_Int32"

	out, wait := background(t, append(g, "subscribe", "--interval", "100ms", "--count", "3", node)...)
	waitOutput(t, out, 1) // the current value
	for i, v := range []string{"11", "12"} {
		r := uacli(t, append(g, "write", node, v)...)
		require.Equal(t, 0, r.code, r.stderr)
		waitOutput(t, out, i+2)
	}
	r := wait()
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 3)
	require.Regexp(t, `^\S+Z  ns=1;s=Demo.Scalar_Int32  -?\d+  Int32  Good$`, lines[0])
	require.Regexp(t, `^\S+Z  ns=1;s=Demo.Scalar_Int32  11  Int32  Good$`, lines[1])
	require.Regexp(t, `^\S+Z  ns=1;s=Demo.Scalar_Int32  12  Int32  Good$`, lines[2])
	require.Contains(t, r.stderr, "subscribed to 1 of 1 nodes every 100ms")
}

func TestSubscribeJSON(t *testing.T) {
	srv := startServer(t)
	g := noneArgs(srv, t.TempDir())
	const node = "ns=1;s=Demo.Scalar_Int32"

	out, wait := background(t, append(g, "--json", "subscribe", "--interval", "50ms", "--count", "2",
		"--trigger", "StatusValueTimestamp", node)...)
	waitOutput(t, out, 1)
	r := uacli(t, append(g, "write", node, "7")...)
	require.Equal(t, 0, r.code, r.stderr)
	r = wait()
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2)
	var seqs []uint32
	var c changeJSON
	for _, l := range lines {
		require.NoError(t, json.Unmarshal([]byte(l), &c), l)
		require.Equal(t, node, c.NodeID)
		require.Equal(t, "Good", c.Status)
		seqs = append(seqs, c.Sequence)
	}
	require.Less(t, seqs[0], seqs[1], "in sequence order")
	var dv struct {
		UaType int
		Value  int32
	}
	require.NoError(t, json.Unmarshal(c.Value, &dv)) // the last line's DataValue
	require.Equal(t, 6, dv.UaType)                   // Int32
	require.EqualValues(t, 7, dv.Value)
}

// TestSubscribeInterrupt runs until SIGINT, as a person stops it with Ctrl-C.
func TestSubscribeInterrupt(t *testing.T) {
	srv := startServer(t)
	g := noneArgs(srv, t.TempDir())
	out, wait := background(t, append(g, "subscribe", "--interval", "50ms", "i=2258")...)
	waitOutput(t, out, 2) // CurrentTime changes: the subscription is live
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	r := wait()
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^\S+Z  i=2258  \S+  DateTime  Good$`, r.stdout)
}

func TestSubscribeErrors(t *testing.T) {
	srv := startServer(t)
	g := noneArgs(srv, t.TempDir())

	r := uacli(t, append(g, "subscribe")...)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "at least one node")

	r = uacli(t, append(g, "subscribe", "--deadband", "rel:3", "i=2258")...)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "--deadband")

	r = uacli(t, append(g, "subscribe", "--trigger", "Value", "i=2258")...)
	require.Equal(t, exitUsage, r.code)

	// Every node refused: the per-item status is reported and nothing is waited for.
	r = uacli(t, append(g, "subscribe", "--duration", "10s", "ns=1;s=NoSuchNode")...)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "ns=1;s=NoSuchNode: BadNodeIdUnknown")

	// --duration ends a subscription that sees nothing; a deadband larger than any
	// change suppresses them after the first value.
	start := time.Now()
	r = uacli(t, append(g, "subscribe", "--interval", "50ms", "--duration", "500ms", "--deadband", "abs:1000000", "ns=1;s=Demo.Scalar_Int32")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond)
	require.LessOrEqual(t, strings.Count(r.stdout, "\n"), 1)
}
