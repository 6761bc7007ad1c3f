package server_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

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
	// The exporter sorts the samples of a name by their labels: service before session.
	require.Contains(t, body, "# TYPE uastack_request_queue_length_by_stage gauge\nuastack_request_queue_length_by_stage{stage=\"service\"} 0\nuastack_request_queue_length_by_stage{stage=\"session\"} 0\n",
		"one HELP and TYPE per name, a sample per stage")
	require.Contains(t, body, "uastack_node_manager_pushes_dropped_total 0\n")
	require.Contains(t, body, `opcua_server_isolation_rejections_total{reason="Capacity",stage="session"} 0`+"\n")

	// The latency of Read moves with a Read, as the client saw it answered.
	families := parseMetrics(t, body)
	before := readCount(families)
	_, err = c.Read(cctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, 2259), AttributeID: ua.AttributeIDValue}}})
	require.NoError(t, err)
	_, body = get("/metrics")
	families = parseMetrics(t, body)
	require.Greater(t, readCount(families), before, "the Read counted")
	h := families["opcua_server_service_duration_seconds"]
	require.Equal(t, dto.MetricType_HISTOGRAM, h.GetType())
	for _, m := range h.GetMetric() {
		hist := m.GetHistogram()
		require.Positive(t, hist.GetSampleSum(), "answers take time")
		require.Len(t, hist.GetBucket(), 21, "every bound and +Inf")
	}
	code, body = get("/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.Contains(body, "goroutine"), "the profiler index")

	cancel()
	require.NoError(t, <-done)
	_, err = http.Get("http://" + metricsAddr + "/metrics")
	require.Error(t, err, "the endpoint stops with the server")
}

// parseMetrics parses the Prometheus text format.
func parseMetrics(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return families
}

// readCount is the number of Reads in the latency histogram, 0 before the first.
func readCount(families map[string]*dto.MetricFamily) uint64 {
	for _, m := range families["opcua_server_service_duration_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "service" && l.GetValue() == "Read" {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// TestMetricsOTLP runs the server with observability.otlp.endpoint naming a receiver
// on 127.0.0.1: when the server closes, the metrics are pushed over OTLP/HTTP, the Read
// a gopcua client made among them in the latency histogram, the session in the
// diagnostics summary's counter.
func TestMetricsOTLP(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex // guards got
	got := map[string]*metricspb.Metric{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var msg colmetrics.ExportMetricsServiceRequest
		if err != nil || r.URL.Path != "/v1/metrics" || proto.Unmarshal(b, &msg) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rm := range msg.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					got[m.GetName()] = m
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer recv.Close()

	cfg := config.Default()
	cfg.Endpoint.ListenAddress = "127.0.0.1:0"
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	cfg.Observability.OTLP.Endpoint = recv.URL
	require.NoError(t, cfg.Validate())
	s, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	c := connect(t, cctx, "opc.tcp://"+ln.Addr().String(), ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	_, err = c.Read(cctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, 2259), AttributeID: ua.AttributeIDValue}}})
	require.NoError(t, err)
	require.NoError(t, c.Close(cctx))
	cancel()
	require.NoError(t, <-done)
	mu.Lock()
	require.Empty(t, got, "nothing pushed before the interval (a minute)")
	mu.Unlock()
	require.NoError(t, s.Close(), "the last push")

	mu.Lock()
	defer mu.Unlock()
	d := got["opcua.server.service.duration"]
	require.NotNil(t, d, "pushed: %v", slices.Sorted(maps.Keys(got)))
	var reads uint64
	for _, p := range d.GetHistogram().GetDataPoints() {
		for _, kv := range p.GetAttributes() {
			if kv.GetKey() == "service" && kv.GetValue().GetStringValue() == "Read" {
				reads = p.GetCount()
			}
		}
	}
	require.Positive(t, reads)
	created := got["uastack.sessions.created"]
	require.NotNil(t, created)
	require.EqualValues(t, 1, created.GetSum().GetDataPoints()[0].GetAsInt())
	require.NotNil(t, got["opcua.server.isolation.rejections"])
}
