package diagnostics

import (
	"fmt"
	"io"
	"runtime"
)

// Metric is one sample in the Prometheus text format: a gauge or a counter.
type Metric struct {
	Name, Kind, Help string
	Value            float64
}

// WriteMetrics writes the server's counters in the Prometheus text format (version
// 0.0.4): the diagnostics summary (read from its throttled snapshot, so a scrape costs
// what a ServerDiagnostics read costs), then more (the request queue's, for one), then the
// Go runtime.
func (d *Diagnostics) WriteMetrics(w io.Writer, more ...Metric) error {
	sum := d.current().summary
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	metrics := []Metric{
		{"uastack_sessions", "gauge", "Sessions open.", float64(sum.CurrentSessionCount)},
		{"uastack_sessions_created_total", "counter", "Sessions created.", float64(sum.CumulatedSessionCount)},
		{"uastack_sessions_rejected_total", "counter", "CreateSession and ActivateSession requests refused.", float64(sum.RejectedSessionCount)},
		{"uastack_sessions_security_rejected_total", "counter", "Sessions refused for a security reason.", float64(sum.SecurityRejectedSessionCount)},
		{"uastack_sessions_timed_out_total", "counter", "Sessions ended by their timeout.", float64(sum.SessionTimeoutCount)},
		{"uastack_subscriptions", "gauge", "Subscriptions alive.", float64(sum.CurrentSubscriptionCount)},
		{"uastack_subscriptions_created_total", "counter", "Subscriptions created.", float64(sum.CumulatedSubscriptionCount)},
		{"uastack_requests_rejected_total", "counter", "Requests answered with a ServiceFault.", float64(sum.RejectedRequestsCount)},
		{"uastack_requests_security_rejected_total", "counter", "Requests refused for a security reason.", float64(sum.SecurityRejectedRequestsCount)},
	}
	metrics = append(metrics, more...)
	metrics = append(metrics,
		Metric{"uastack_go_goroutines", "gauge", "Goroutines.", float64(runtime.NumGoroutine())},
		Metric{"uastack_go_heap_bytes", "gauge", "Bytes of allocated heap objects.", float64(ms.HeapAlloc)},
		Metric{"uastack_go_gc_cycles_total", "counter", "Completed GC cycles.", float64(ms.NumGC)},
	)
	for _, m := range metrics {
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %g\n", m.Name, m.Help, m.Name, m.Kind, m.Name, m.Value); err != nil {
			return err
		}
	}
	return nil
}
