package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
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

// TestRunStartsAndStops runs the command as a user would, with the PKI from the
// environment and the address from a flag, and stops it.
func TestRunStartsAndStops(t *testing.T) {
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-endpoint-url", "opc.tcp://127.0.0.1:4840", "-max-channel-count", "5"},
			[]string{"UASTACK_LDS_PKI=" + t.TempDir()}, &logs, func(a net.Addr) { ready <- a })
	}()
	select {
	case a := <-ready:
		c, err := net.Dial("tcp", a.String())
		require.NoError(t, err)
		require.NoError(t, c.Close())
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	cancel()
	require.NoError(t, <-done)
	out := logs.String()
	require.Contains(t, out, "discovery service stopped")
	require.Regexp(t, `endpoint url=opc.tcp://127.0.0.1:\d+ `, out, "the bound port is advertised")
	require.NotContains(t, out, ":4840 ", "not the configured port")
	require.Contains(t, out, "maxChannelCount=5")

	err := run(context.Background(), []string{"-registration-timeout", "soon"}, nil, &logs, nil)
	require.Error(t, err)
	err = run(context.Background(), nil, []string{"UASTACK_LDS_REFRESH_INTERVAL=often"}, &logs, nil)
	require.ErrorContains(t, err, "UASTACK_LDS_REFRESH_INTERVAL")
	require.True(t, strings.Contains(logs.String(), "registration-timeout"), "the bad flag is named")
}
