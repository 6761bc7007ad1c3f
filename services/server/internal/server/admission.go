package server

import (
	"log/slog"
	"runtime"
	"sync"
	"time"

	"uastack.dev/services/server/internal/admission"
	"uastack.dev/services/server/internal/diagnostics"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/session"
)

// buildAdmission builds the admission policy of limits.* (issue 18) and has it follow
// the session table: a session that ends no longer makes its source's connections and
// its ActivateSession requests Reconnect. Activations are reported by activateSession,
// which knows the peer's address.
func (s *Server) buildAdmission() error {
	ac := s.cfg.AdmissionConfig(s.now)
	ac.Rejected = s.admissionRejected
	ctl, err := admission.New(ac)
	if err != nil {
		return err
	}
	s.admission = ctl
	s.sessions.Observe(func(c *session.Change) {
		if c.Kind == session.Ended {
			if key, ok := session.TokenKey(c.Record.AuthenticationToken); ok {
				ctl.SessionEnded(key)
			}
		}
	})
	return nil
}

// newQueue returns the request queue: under an isolation profile other than SharedOnly
// its owners take turns and session establishment runs on at most GOMAXPROCS workers at
// once, so that a connect storm's RSA work leaves the established sessions' requests
// processors to run on.
func (s *Server) newQueue() *pipeline.Queue {
	l := s.cfg.Limits
	fair := s.admission.Profile() != admission.SharedOnly
	cfg := pipeline.QueueConfig{
		Min: l.MinRequestThreadCount, Max: l.MaxRequestThreadCount, Now: s.now,
		Ledger:          s.admission.Ledger(admission.StageQueue),
		SessionCapacity: l.MaxConcurrentSessionEstablishment,
		Fair:            fair,
		Weight:          s.admission.Weight,
	}
	if fair {
		cfg.SessionWorkers = runtime.GOMAXPROCS(0)
	}
	return pipeline.NewQueueWith(cfg)
}

// rejectionLogInterval is the least time between two log lines of refusals of one stage.
const rejectionLogInterval = time.Second

// rejectionLog rate-limits the log lines of admission refusals: one per stage per
// interval, naming the last owner refused and how many refusals it stands for.
type rejectionLog struct {
	mu         sync.Mutex // guards last, suppressed
	last       [admission.StageCount]time.Time
	suppressed [admission.StageCount]int
}

// admissionRejected logs a refusal of the admission, at most once per stage per
// rejectionLogInterval. It runs on the refusing goroutine and does not block.
func (s *Server) admissionRejected(r admission.Rejection) {
	lg := &s.rejections
	now := s.now()
	lg.mu.Lock()
	if now.Sub(lg.last[r.Stage]) < rejectionLogInterval {
		lg.suppressed[r.Stage]++
		lg.mu.Unlock()
		return
	}
	lg.last[r.Stage] = now
	more := lg.suppressed[r.Stage]
	lg.suppressed[r.Stage] = 0
	lg.mu.Unlock()
	s.log.Warn("admission refused", "stage", r.Stage.String(), "reason", r.Reason.String(), "metered", r.Metered,
		"class", r.Class.String(), "owner", r.Owner.String(), slog.Int("alsoRefused", more))
}

// admissionMetrics are the admission's counters, in the Prometheus text format of
// WriteMetrics: refusals by stage and reason, use and owners by stage, the connections
// the rate refused and the logins the password meter refused.
func (s *Server) admissionMetrics() []diagnostics.Metric {
	st := s.admission.Stats()
	var ms []diagnostics.Metric
	for stage := range admission.StageCount {
		ss := st.Stages[stage]
		label := diagnostics.Label("stage", stage.String())
		for reason := range admission.ReasonCount {
			ms = append(ms, diagnostics.Metric{Name: "uastack_isolation_rejections_total", Kind: "counter",
				Help:   "Refusals of the admission, by stage and reason.",
				Labels: label + "," + diagnostics.Label("reason", reason.String()), Value: float64(ss.Rejections[reason])})
		}
		ms = append(ms,
			diagnostics.Metric{Name: "uastack_isolation_usage", Kind: "gauge", Help: "Units held at each admission stage.", Labels: label, Value: float64(ss.Used)},
			diagnostics.Metric{Name: "uastack_isolation_capacity", Kind: "gauge", Help: "Units of each admission stage, reserves included.", Labels: label, Value: float64(ss.Capacity)},
			diagnostics.Metric{Name: "uastack_isolation_owners", Kind: "gauge", Help: "Owners holding units at each admission stage.", Labels: label, Value: float64(ss.Owners)})
	}
	return append(ms,
		diagnostics.Metric{Name: "uastack_connections_rate_limited_total", Kind: "counter",
			Help: "Connections refused by limits.connectionsPerSecond.", Value: float64(st.ConnectionsRateLimited)},
		diagnostics.Metric{Name: "uastack_username_logins_metered_total", Kind: "counter",
			Help: "UserName logins refused by limits.userNameLoginsPerMinute before the password was checked.", Value: float64(st.PasswordChecksMetered)})
}
