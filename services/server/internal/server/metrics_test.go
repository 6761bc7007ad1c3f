package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
)

// TestMetricsAndProfiler runs the server with observability.metricsAddr: /metrics
// counts the session a gopcua client opened, /debug/pprof/ answers, and both stop with
// the server.
func TestMetricsAndProfiler(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	metricsAddr := ln.Addr().String()
	require.NoError(t, ln.Close())

	cfg := config.Default()
	cfg.Endpoint.ListenAddress = "127.0.0.1:0"
	cfg.Endpoint.EndpointURL = "opc.tcp://127.0.0.1:0"
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	cfg.Observability.MetricsAddr = metricsAddr
	require.NoError(t, cfg.Validate())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(a net.Addr) { ready <- a })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
	}

	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	c := connect(t, cctx, cfg.Endpoint.EndpointURL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(cctx)

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + metricsAddr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "# TYPE uastack_sessions gauge\nuastack_sessions 1\n")
	require.Contains(t, body, "uastack_sessions_created_total 1\n")
	require.Contains(t, body, "uastack_request_queue_length ")
	require.Contains(t, body, "# TYPE uastack_request_queue_length_by_stage gauge\nuastack_request_queue_length_by_stage{stage=\"session\"} 0\nuastack_request_queue_length_by_stage{stage=\"service\"} 0\n",
		"one HELP and TYPE per name, a sample per stage")
	require.Contains(t, body, "uastack_node_manager_pushes_dropped_total 0\n")
	code, body = get("/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.Contains(body, "goroutine"), "the profiler index")

	cancel()
	require.NoError(t, <-done)
	_, err = http.Get("http://" + metricsAddr + "/metrics")
	require.Error(t, err, "the endpoint stops with the server")
}
