package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the logger's and the test's goroutines.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRunStartsAndStops runs the process entry point with flags for port 0 and a temporary
// PKI: it creates the application certificate, logs configuration, PKI and endpoints,
// accepts a TCP connection and returns nil soon after its context is cancelled, having
// closed its listener.
func TestRunStartsAndStops(t *testing.T) {
	t.Parallel()
	pkiDir := filepath.Join(t.TempDir(), "pki")
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--endpoint", "opc.tcp://127.0.0.1:0", "--pki", pkiDir}, nil, &logs,
			func(a net.Addr) { ready <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run returned before ready: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("not ready after 30 s")
	}
	conn, err := net.Dial("tcp", addr.String())
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	entries, err := os.ReadDir(filepath.Join(pkiDir, "own", "certs"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "application certificate created")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10 s of cancel")
	}
	out := logs.String()
	for _, want := range []string{"effective configuration", "msg=PKI", "msg=endpoint", "msg=listening", "server stopped", pkiDir} {
		require.Contains(t, out, want)
	}
	_, port, _ := net.SplitHostPort(addr.String())
	require.Contains(t, out, "opc.tcp://127.0.0.1:"+port, "endpoint URL takes the bound port")
	// Whether the port is closed cannot be checked by dialing it: another test may already
	// have been given the same ephemeral port. "server stopped" is logged after the
	// listener is closed.
}

// TestRunHelp prints the flags and returns nil.
func TestRunHelp(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	require.NoError(t, run(context.Background(), []string{"--help"}, nil, &out, nil))
	require.Contains(t, out.String(), "--listen")
}
