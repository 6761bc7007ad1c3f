package server

import (
	"context"
	"log/slog"
	"net"
	"time"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/services/server/internal/admission"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/session"
	"uastack.dev/services/server/internal/telemetry"
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
	s.handshakes = admission.NewLane(s.cfg.Limits.MaxConcurrentHandshakes, s.cfg.Limits.MaxQueuedHandshakes)
	s.rejections = telemetry.NewLogLimiter(s.log, rejectionLog)
	tel := s.tel.Admission()
	s.sessions.Observe(func(c *session.Change) {
		if c.Kind == session.Ended {
			if key, ok := session.TokenKey(c.Record.AuthenticationToken); ok {
				ctl.SessionEnded(key)
			}
			if c.End == session.TimedOut {
				// Not activated within limits.unactivatedSessionTimeout, or idle past its
				// session timeout.
				tel.DeadlineExpired(telemetry.DeadlineSession)
			}
		}
	})
	return nil
}

// newQueue returns the request queue: under an isolation profile other than SharedOnly
// its owners take turns and session establishment takes no more workers than the lane of
// asymmetric cryptography has turns (limits.maxConcurrentHandshakes): a worker beyond
// them would only wait there, while requests of established sessions wait for it.
func (s *Server) newQueue() *pipeline.Queue {
	l := s.cfg.Limits
	fair := s.admission.Profile() != admission.SharedOnly
	cfg := pipeline.QueueConfig{
		Min: l.MinRequestThreadCount, Max: l.MaxRequestThreadCount, Now: s.now,
		Ledger:          s.admission.Ledger(admission.StageQueue),
		SessionCapacity: l.MaxConcurrentSessionEstablishment,
		Fair:            fair,
		Weight:          s.admission.Weight,
		Panics:          s.tel.Panics(),
		Handshakes:      s.handshakes,
	}
	if fair {
		cfg.SessionWorkers = l.MaxConcurrentHandshakes
	}
	return pipeline.NewQueueWith(cfg)
}

// rejectionLog bounds the log lines of admission refusals: one per owner per ten
// seconds, each telling how many it stands for, and the owners beyond the first 64 of a
// flood share one such budget.
var rejectionLog = telemetry.LogLimit{Lines: 1, Interval: 10 * time.Second, MaxOwners: 64}

// The admission's stages and reasons as the telemetry names them.
var (
	telStages = [admission.StageCount]telemetry.Stage{
		admission.StageConnection: telemetry.StageConnection,
		admission.StageSession:    telemetry.StageSession,
		admission.StageQueue:      telemetry.StageRequest,
		admission.StageParked:     telemetry.StageParked,
	}
	telReasons = [admission.ReasonCount]telemetry.Reason{
		admission.Capacity:       telemetry.ReasonCapacity,
		admission.OwnerLimit:     telemetry.ReasonOwnerLimit,
		admission.OwnerTableFull: telemetry.ReasonOwnerTableFull,
		admission.InvalidOwner:   telemetry.ReasonInvalidOwner,
	}
)

// admissionRejected counts and logs a refusal of the admission. It runs on the refusing
// goroutine and does not block.
func (s *Server) admissionRejected(r admission.Rejection) {
	tel := s.tel.Admission()
	tel.Rejected(telStages[r.Stage], telReasons[r.Reason])
	if r.Stage == admission.StageConnection {
		switch {
		case r.Metered:
			tel.ConnectionRefused(telemetry.RefusedRate)
		case r.Reason == admission.OwnerLimit:
			tel.ConnectionRefused(telemetry.RefusedSourceLimit)
		default:
			tel.ConnectionRefused(telemetry.RefusedIsolation)
		}
	}
	s.rejections.Log(context.Background(), slog.LevelWarn, r.Owner.String(), "admission refused",
		"stage", r.Stage.String(), "reason", r.Reason.String(), "metered", r.Metered, "class", r.Class.String())
}

// observeAdmission has the telemetry read each stage's use and owners from the admission
// when metrics are collected, and the retained bytes' from the reassembly budget: the
// bytes the channels hold of it and the channels holding some (a channel is the owner
// at that stage).
func (s *Server) observeAdmission() {
	for stage := range admission.StageCount {
		ledger := s.admission.Ledger(stage)
		s.tel.Admission().ObserveStage(telStages[stage], func() telemetry.StageUsage {
			ss := ledger.Stats()
			return telemetry.StageUsage{Used: int64(ss.Used), Owners: int64(ss.Owners)}
		})
	}
	s.tel.Admission().ObserveStage(telemetry.StageRetained, func() telemetry.StageUsage {
		held, channels := s.retained.Held()
		return telemetry.StageUsage{Used: held, Owners: channels}
	})
}

// telDeadlines are the transport's deadlines as the telemetry names them.
var telDeadlines = [...]telemetry.Deadline{
	uasc.DeadlineHello:    telemetry.DeadlineHello,
	uasc.DeadlineOpen:     telemetry.DeadlineOpen,
	uasc.DeadlineChunk:    telemetry.DeadlineChunk,
	uasc.DeadlineAssembly: telemetry.DeadlineAssembly,
	uasc.DeadlineWrite:    telemetry.DeadlineWrite,
}

// transportExpired counts a connection the transport ended because a deadline passed
// (uasc.ServerConfig.Expired). It runs on the connection's goroutine.
func (s *Server) transportExpired(d uasc.Deadline) {
	if int(d) < len(telDeadlines) {
		s.tel.Admission().DeadlineExpired(telDeadlines[d])
	}
}

// reassemblyRefused counts a channel the transport ended because a chunk would have
// overdrawn the reassembly budget (uasc.ServerConfig.Overdrawn): beyond the channel's
// share is OwnerLimit, the shared budget spent Capacity.
func (s *Server) reassemblyRefused(o uasc.Overdraft) {
	reason := telemetry.ReasonCapacity
	if o == uasc.OverShare {
		reason = telemetry.ReasonOwnerLimit
	}
	s.tel.Admission().Rejected(telemetry.StageRetained, reason)
}

// handshakeGate gives the OpenSecureChannel requests their turns of the server's lane of
// asymmetric cryptography (uasc.ServerConfig.Handshakes): a renewal completes an open
// channel and goes first, a new channel's OPN is refused past the lane's queue, counted.
type handshakeGate struct{ s *Server }

func (g handshakeGate) Enter(ctx context.Context, renew bool) (func(), bool) {
	p := admission.Begin
	if renew {
		p = admission.Finish
	}
	leave, ok := g.s.handshakes.Enter(ctx, p)
	if !ok && ctx.Err() == nil {
		g.s.tel.Admission().ConnectionRefused(telemetry.RefusedHandshakes)
	}
	return leave, ok
}

// admitConnection is the listener's admission (uasc.ServerConfig.Admit), counted.
func (s *Server) admitConnection(remote net.Addr) (func(), status.Code) {
	release, code := s.admission.AdmitConnection(remote)
	if code == status.Good {
		s.tel.Admission().ConnectionAccepted()
	}
	return release, code
}
