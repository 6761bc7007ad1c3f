package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/services/server/internal/config"
)

// startOnce runs the server from cfg until it is ready to accept connections (Run's
// ready callback) and returns that time and a function that stops it.
func startOnce(tb testing.TB, base *config.Config) (time.Duration, func()) {
	tb.Helper()
	cfg := *base // Run rewrites EndpointURL
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- Run(ctx, &cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(net.Addr) { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		tb.Fatalf("server did not start: %v", err)
	}
	elapsed := time.Since(start)
	return elapsed, func() {
		cancel()
		if err := <-done; err != nil {
			tb.Fatalf("server stopped with %v", err)
		}
	}
}

// BenchmarkStart measures the start of the server from a checked configuration to a
// listening socket ready to serve, with the PKI of an earlier start (the issue asks for
// under 300 ms): opening the PKI and its key, namespace 0 and the demo namespace, the
// Server object, the secure channel server. The first start, which also generates the
// RSA application instance key, is timed once and reported as first-start-ms.
func BenchmarkStart(b *testing.B) {
	cfg := config.Default()
	cfg.Endpoint.ListenAddress = "127.0.0.1:0"
	cfg.Endpoint.EndpointURL = "opc.tcp://127.0.0.1:0"
	cfg.Endpoint.Hostnames = []string{"127.0.0.1", "localhost"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:startbench"
	cfg.Security.PKIDir = filepath.Join(b.TempDir(), "pki")
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	first, stop := startOnce(b, cfg)
	stop()
	b.ReportAllocs()
	b.ResetTimer()
	var total time.Duration
	for range b.N {
		d, stop := startOnce(b, cfg)
		total += d
		b.StopTimer()
		stop()
		b.StartTimer()
	}
	b.ReportMetric(float64(first.Microseconds())/1000, "first-start-ms")
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "start-ms")
}

// TestStartToListening measures the time from calling Run to a completed UACP Hello /
// Acknowledge on the bound address, with the PKI (and so the application instance key)
// created by an earlier start: the median of 5 starts must be under 300 ms. The first
// start, which generates the RSA key, is logged but not asserted.
func TestStartToListening(t *testing.T) {
	pkiDir := filepath.Join(t.TempDir(), "pki")
	startOnce := func() time.Duration {
		cfg := benchConfig(t, pkiDir)
		begin := time.Now()
		addr, stop := runServer(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr.String())
		require.NoError(t, err)
		uc, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: cfg.Endpoint.EndpointURL})
		require.NoError(t, err)
		took := time.Since(begin)
		uc.Close()
		require.NoError(t, stop())
		return took
	}
	first := startOnce()
	var starts []time.Duration
	for range 5 {
		starts = append(starts, startOnce())
	}
	slices.Sort(starts)
	median := starts[len(starts)/2]
	t.Logf("first start (creates the PKI and key): %v; later starts: %v; median %v", first, starts, median)
	require.Less(t, median, 300*time.Millisecond, "start to listening, median of %v", starts)
}
