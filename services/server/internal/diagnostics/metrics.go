package diagnostics

import (
	"fmt"
	"io"
	"runtime"
	"strings"
)

// Metric is one sample in the Prometheus text format: a gauge or a counter. Samples of
// one name with different Labels (`stage="session"`) follow each other.
type Metric struct {
	Name, Kind, Help string
	Labels           string
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
		{Name: "uastack_sessions", Kind: "gauge", Help: "Sessions open.", Value: float64(sum.CurrentSessionCount)},
		{Name: "uastack_sessions_created_total", Kind: "counter", Help: "Sessions created.", Value: float64(sum.CumulatedSessionCount)},
		{Name: "uastack_sessions_rejected_total", Kind: "counter", Help: "CreateSession and ActivateSession requests refused.", Value: float64(sum.RejectedSessionCount)},
		{Name: "uastack_sessions_security_rejected_total", Kind: "counter", Help: "Sessions refused for a security reason.", Value: float64(sum.SecurityRejectedSessionCount)},
		{Name: "uastack_sessions_timed_out_total", Kind: "counter", Help: "Sessions ended by their timeout.", Value: float64(sum.SessionTimeoutCount)},
		{Name: "uastack_subscriptions", Kind: "gauge", Help: "Subscriptions alive.", Value: float64(sum.CurrentSubscriptionCount)},
		{Name: "uastack_subscriptions_created_total", Kind: "counter", Help: "Subscriptions created.", Value: float64(sum.CumulatedSubscriptionCount)},
		{Name: "uastack_requests_rejected_total", Kind: "counter", Help: "Requests answered with a ServiceFault.", Value: float64(sum.RejectedRequestsCount)},
		{Name: "uastack_requests_security_rejected_total", Kind: "counter", Help: "Requests refused for a security reason.", Value: float64(sum.SecurityRejectedRequestsCount)},
	}
	metrics = append(metrics, Metric{Name: "uastack_connections_refused_total", Kind: "counter",
		Help: "Connections turned away before their Hello was read (limits.maxChannelCount, admission).", Value: float64(d.connectionsRefused.Load())})
	metrics = append(metrics, more...)
	metrics = append(metrics,
		Metric{Name: "uastack_go_goroutines", Kind: "gauge", Help: "Goroutines.", Value: float64(runtime.NumGoroutine())},
		Metric{Name: "uastack_go_heap_bytes", Kind: "gauge", Help: "Bytes of allocated heap objects.", Value: float64(ms.HeapAlloc)},
		Metric{Name: "uastack_go_gc_cycles_total", Kind: "counter", Help: "Completed GC cycles.", Value: float64(ms.NumGC)},
	)
	for i, m := range metrics {
		if i == 0 || metrics[i-1].Name != m.Name {
			if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", m.Name, m.Help, m.Name, m.Kind); err != nil {
				return err
			}
		}
		name := m.Name
		if m.Labels != "" {
			name += "{" + m.Labels + "}"
		}
		if _, err := fmt.Fprintf(w, "%s %g\n", name, m.Value); err != nil {
			return err
		}
	}
	return nil
}

// Label returns the label name="value" with value escaped for the text format.
func Label(name, value string) string {
	return name + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(value) + `"`
}
