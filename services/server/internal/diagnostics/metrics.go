package diagnostics

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// Instrument registers the diagnostics summary on m as observable instruments, read from
// its throttled snapshot when metrics are collected (a scrape costs what a
// ServerDiagnostics read costs). In Prometheus they are uastack_sessions,
// uastack_sessions_created_total and the others below: a counter gets its _total from
// the exporter.
func (d *Diagnostics) Instrument(m metric.Meter) error {
	type source struct {
		name, help string
		counter    bool
		value      func(*snapshot) int64
	}
	sources := []source{
		{"uastack.sessions", "Sessions open.", false,
			func(s *snapshot) int64 { return int64(s.summary.CurrentSessionCount) }},
		{"uastack.sessions.created", "Sessions created.", true,
			func(s *snapshot) int64 { return int64(s.summary.CumulatedSessionCount) }},
		{"uastack.sessions.rejected", "CreateSession and ActivateSession requests refused.", true,
			func(s *snapshot) int64 { return int64(s.summary.RejectedSessionCount) }},
		{"uastack.sessions.security_rejected", "Sessions refused for a security reason.", true,
			func(s *snapshot) int64 { return int64(s.summary.SecurityRejectedSessionCount) }},
		{"uastack.sessions.timed_out", "Sessions ended by their timeout.", true,
			func(s *snapshot) int64 { return int64(s.summary.SessionTimeoutCount) }},
		{"uastack.subscriptions", "Subscriptions alive.", false,
			func(s *snapshot) int64 { return int64(s.summary.CurrentSubscriptionCount) }},
		{"uastack.subscriptions.created", "Subscriptions created.", true,
			func(s *snapshot) int64 { return int64(s.summary.CumulatedSubscriptionCount) }},
		{"uastack.requests.rejected", "Requests answered with a ServiceFault.", true,
			func(s *snapshot) int64 { return int64(s.summary.RejectedRequestsCount) }},
		{"uastack.requests.security_rejected", "Requests refused for a security reason.", true,
			func(s *snapshot) int64 { return int64(s.summary.SecurityRejectedRequestsCount) }},
	}
	instruments := make([]metric.Int64Observable, len(sources))
	registered := make([]metric.Observable, 0, len(sources)+1)
	for i, src := range sources {
		var err error
		if src.counter {
			instruments[i], err = m.Int64ObservableCounter(src.name, metric.WithDescription(src.help))
		} else {
			instruments[i], err = m.Int64ObservableGauge(src.name, metric.WithDescription(src.help))
		}
		if err != nil {
			return err
		}
		registered = append(registered, instruments[i])
	}
	refused, err := m.Int64ObservableCounter("uastack.connections.refused",
		metric.WithDescription("Connections turned away before their Hello was read (limits.maxChannelCount, admission)."))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		snap := d.current()
		for i, src := range sources {
			o.ObserveInt64(instruments[i], src.value(snap))
		}
		o.ObserveInt64(refused, int64(d.connectionsRefused.Load()))
		return nil
	}, append(registered, refused)...)
	return err
}
