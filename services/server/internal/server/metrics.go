package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// WriteMetrics writes the server's counters in the Prometheus text format (version
// 0.0.4): the diagnostics summary (read from its throttled snapshot, so a scrape costs
// what a ServerDiagnostics read costs), the request queue and the Go runtime.
func (s *Server) WriteMetrics(w io.Writer) error {
	sum := s.diag.current().summary
	queued, running, busy := s.queue.stats()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	metrics := []struct {
		name, kind, help string
		value            float64
	}{
		{"uastack_sessions", "gauge", "Sessions open.", float64(sum.CurrentSessionCount)},
		{"uastack_sessions_created_total", "counter", "Sessions created.", float64(sum.CumulatedSessionCount)},
		{"uastack_sessions_rejected_total", "counter", "CreateSession and ActivateSession requests refused.", float64(sum.RejectedSessionCount)},
		{"uastack_sessions_security_rejected_total", "counter", "Sessions refused for a security reason.", float64(sum.SecurityRejectedSessionCount)},
		{"uastack_sessions_timed_out_total", "counter", "Sessions ended by their timeout.", float64(sum.SessionTimeoutCount)},
		{"uastack_subscriptions", "gauge", "Subscriptions alive.", float64(sum.CurrentSubscriptionCount)},
		{"uastack_subscriptions_created_total", "counter", "Subscriptions created.", float64(sum.CumulatedSubscriptionCount)},
		{"uastack_requests_rejected_total", "counter", "Requests answered with a ServiceFault.", float64(sum.RejectedRequestsCount)},
		{"uastack_requests_security_rejected_total", "counter", "Requests refused for a security reason.", float64(sum.SecurityRejectedRequestsCount)},
		{"uastack_request_queue_length", "gauge", "Requests waiting for a worker.", float64(queued)},
		{"uastack_request_workers", "gauge", "Request workers started.", float64(running)},
		{"uastack_request_workers_busy", "gauge", "Request workers running a job.", float64(busy)},
		{"uastack_go_goroutines", "gauge", "Goroutines.", float64(runtime.NumGoroutine())},
		{"uastack_go_heap_bytes", "gauge", "Bytes of allocated heap objects.", float64(ms.HeapAlloc)},
		{"uastack_go_gc_cycles_total", "counter", "Completed GC cycles.", float64(ms.NumGC)},
	}
	for _, m := range metrics {
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %g\n", m.name, m.help, m.name, m.kind, m.name, m.value); err != nil {
			return err
		}
	}
	return nil
}

// serveObservability serves /metrics and the Go profiler (/debug/pprof/) on ln until ctx
// ends. The profiler shows the server's internals to whoever reaches the address, so
// the address belongs on loopback or behind a firewall (Run warns otherwise).
func (s *Server) serveObservability(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_ = s.WriteMetrics(w)
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { _ = hs.Close() })
	defer stop()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
