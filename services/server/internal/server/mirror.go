package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/services/server/internal/mirror"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/redundancy"
	"uastack.dev/services/server/internal/session"
)

// startMirror starts the NATS mirror of mirror.* (issue 19) when mirror.urls is set: the
// server becomes a member of a HotAndMirrored redundant set. It runs before the server
// serves, since it sets the subscription engine's ID space.
func (s *Server) startMirror() error {
	mc := s.cfg.Mirror
	if !mc.Enabled() {
		return nil
	}
	key, err := mc.ClusterKey()
	if err != nil {
		return err
	}
	var opts []nats.Option
	switch {
	case mc.Credentials != "":
		opts = append(opts, nats.UserCredentials(mc.Credentials))
	case mc.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(mc.NKeySeedFile)
		if err != nil {
			return fmt.Errorf("mirror.nkeySeedFile: %w", err)
		}
		opts = append(opts, opt)
	case mc.Token != "":
		opts = append(opts, nats.Token(mc.Token))
	case mc.User != "":
		opts = append(opts, nats.UserInfo(mc.User, mc.Password))
	}
	if mc.TLSCA != "" {
		opts = append(opts, nats.RootCAs(mc.TLSCA))
	}
	if mc.TLSCert != "" {
		opts = append(opts, nats.ClientCert(mc.TLSCert, mc.TLSKey))
	}
	s.mirror, err = mirror.Start(context.Background(), mirror.Config{
		URLs: mc.URLs, Options: opts, Cluster: mc.Cluster, Key: key,
		ServerURI: s.cfg.Application.ApplicationURI, Certificate: s.cert.Raw,
		Replicas: mc.Replicas, MaxBytes: int64(mc.MaxBytes), MaxAge: mc.MaxAge,
		SendWait: mc.SendWait, Timeout: mc.Timeout, BatchWindow: mc.BatchWindow,
		Sessions: s.sessions, Subs: s.subs, Log: s.log,
		Members: s.redundantSet,
		Values:  s.mirroredValues(),
		Health: func(h mirror.Health) {
			if h == mirror.Degraded {
				s.SetHealth(redundancy.Degraded)
				return
			}
			s.SetHealth(redundancy.Healthy)
		},
	})
	if err != nil {
		return err
	}
	if err := s.instrumentMirror(s.tel.Meter()); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	// The set's other servers follow as the mirror finds them (redundantSet).
	return s.SetRedundancy(ua.RedundancySupportHotAndMirrored, []string{s.cfg.Application.ApplicationURI})
}

// redundantSet is told the ServerUris of the set's servers when they change: they are
// the ServerUriArray clients read.
func (s *Server) redundantSet(uris []string) {
	if !slices.Contains(uris, s.cfg.Application.ApplicationURI) {
		uris = append(slices.Clone(uris), s.cfg.Application.ApplicationURI)
	}
	if err := s.SetRedundancy(ua.RedundancySupportHotAndMirrored, uris); err != nil {
		s.log.Warn("redundant set", "servers", uris, "err", err)
		return
	}
	s.log.Info("redundant set", "servers", uris)
}

// claimSession reads a session another server of the set holds, for an ActivateSession
// on this server (Part 4 §6.6.2, HotAndMirrored): the record and client certificate to
// check the activation against. BadSessionIdInvalid when no server has it.
func (s *Server) claimSession(ctx context.Context, token codec.NodeId) (*mirror.Claimed, *x509.Certificate, status.Code) {
	cl, err := s.mirror.Claim(ctx, token)
	if err != nil {
		if !errors.Is(err, mirror.ErrUnknown) {
			s.log.Warn("taking a session over", "err", err)
		}
		return nil, nil, status.BadSessionIdInvalid
	}
	var cert *x509.Certificate
	if cl.Record.ClientCertificate != nil {
		if cert, err = x509.ParseCertificate(cl.Record.ClientCertificate); err != nil {
			s.mirror.Unclaim(token)
			return nil, nil, status.BadSessionIdInvalid
		}
	}
	return cl, cert, status.Good
}

// adoptSession adds a claimed session, whose activation checked out, to the table and its
// subscriptions to the engine. On failure the session is dropped here and stays the
// set's.
func (s *Server) adoptSession(ctx context.Context, cl *mirror.Claimed) status.Code {
	if err := s.sessions.Apply(&session.Change{Kind: session.Created, Record: cl.Record}); err != nil {
		s.mirror.Unclaim(cl.Record.AuthenticationToken)
		s.log.Warn("taking a session over", "session", cl.Record.SessionID, "err", err)
		return status.BadSessionIdInvalid
	}
	n, err := s.mirror.Restore(ctx, cl.Record.SessionID)
	if err != nil {
		// Without its subscriptions the session would go on with Publishes answered by
		// nobody: it stays the set's, and the client tries again (BadServerTooBusy).
		s.log.Warn("taking a session's subscriptions over", "session", cl.Record.SessionID, "restored", n, "err", err)
		_ = s.sessions.Apply(&session.Change{Kind: session.Ended, End: session.Moved, Record: cl.Record})
		return status.BadServerTooBusy
	}
	s.log.Info("session taken over from another server of the set", "session", cl.Record.SessionID, "subscriptions", n)
	return status.Good
}

// instrumentMirror puts the mirror's figures on /metrics.
func (s *Server) instrumentMirror(m metric.Meter) error {
	gauge := func(name, help string) (metric.Int64ObservableGauge, error) {
		return m.Int64ObservableGauge(name, metric.WithDescription(help))
	}
	counter := func(name, help string) (metric.Int64ObservableCounter, error) {
		return m.Int64ObservableCounter(name, metric.WithDescription(help))
	}
	pending, err := gauge("uastack.mirror.pending", "Records queued for the redundant set's JetStream and not yet kept there: the mirror's lag.")
	if err != nil {
		return err
	}
	degraded, err := gauge("uastack.mirror.degraded", "1 while NATS is unreachable or the last write to it failed; the server serves its own clients and catches up.")
	if err != nil {
		return err
	}
	held, err := gauge("uastack.mirror.records", "Sessions and subscriptions this server holds in the redundant set, by kind.")
	if err != nil {
		return err
	}
	errs, err := counter("uastack.mirror.errors", "Writes to the redundant set's JetStream that NATS refused or that failed.")
	if err != nil {
		return err
	}
	moved, err := counter("uastack.mirror.sessions.moved", "Sessions taken over from another server of the set (direction=in) or by one (direction=out).")
	if err != nil {
		return err
	}
	kindSession := metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", "session")))
	kindSub := metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", "subscription")))
	in := metric.WithAttributeSet(attribute.NewSet(attribute.String("direction", "in")))
	out := metric.WithAttributeSet(attribute.NewSet(attribute.String("direction", "out")))
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := s.mirror.Stats()
		o.ObserveInt64(pending, int64(st.Pending))
		var d int64
		if st.Degraded {
			d = 1
		}
		o.ObserveInt64(degraded, d)
		o.ObserveInt64(held, int64(st.Sessions), kindSession)
		o.ObserveInt64(held, int64(st.Subscriptions), kindSub)
		o.ObserveInt64(errs, int64(st.Errors))
		o.ObserveInt64(moved, int64(st.Takeovers), in)
		o.ObserveInt64(moved, int64(st.Releases), out)
		return nil
	}, pending, degraded, held, errs, moved)
	return err
}

// kept answers with fn and, in a redundant set, once what fn changed is kept in the set
// (mirror.Sync): a client told its monitored items exist finds them on any server that
// takes its subscription over.
func kept[M any](s *Server, fn func(*pipeline.Request[*conn], M) codec.Structure) func(*pipeline.Request[*conn], M) codec.Structure {
	return func(r *pipeline.Request[*conn], m M) codec.Structure {
		answer := fn(r, m)
		if s.mirror != nil {
			s.mirror.Sync()
		}
		return answer
	}
}

// mirroredValues are the hooks of mirror.namespaces; nil when none is set.
func (s *Server) mirroredValues() *mirror.Values {
	uris := s.cfg.Mirror.Namespaces
	if len(uris) == 0 {
		return nil
	}
	mirrored := func(uri string) bool { return slices.Contains(uris, uri) }
	return &mirror.Values{
		URI: func(ns uint16) string {
			if !s.mirrorsNamespace(ns) {
				return ""
			}
			return s.space.Namespaces()[ns]
		},
		Index: func(uri string) (uint16, bool) {
			if !mirrored(uri) {
				return 0, false
			}
			i := slices.Index(s.space.Namespaces(), uri)
			return uint16(i), i > 0
		},
		Apply: func(node codec.NodeId, dv codec.DataValue) {
			if !s.space.SetValue(node, dv) {
				s.log.Warn("mirror: a value written on another server of the set has no variable here", "node", node)
			}
		},
	}
}

// mirrorWrites passes the values written by op to the servers of the set, when the
// namespaces are mirrored, and returns once they are kept there: each node's whole value
// as it stands after the Write (an IndexRange write too).
func (s *Server) mirrorWrites(ctx context.Context, op *nodemgr.WriteOp) {
	var rvs []ua.ReadValueId
	for i := range op.Items {
		w := &op.Items[i]
		if op.Results[i] == status.Good && w.AttributeId == uint32(attr.Value) && s.mirrorsNamespace(w.NodeId.Namespace()) {
			rvs = append(rvs, ua.ReadValueId{NodeId: w.NodeId, AttributeId: uint32(attr.Value)})
		}
	}
	if len(rvs) == 0 {
		return
	}
	read := &nodemgr.ReadOp{Principal: op.Principal, Timestamps: ua.TimestampsToReturnBoth, Items: rvs, Results: make([]codec.DataValue, len(rvs))}
	s.space.Read(ctx, read, func() {})
	for i := range rvs {
		if read.Results[i].Status.IsGood() {
			s.mirror.ValueWritten(rvs[i].NodeId, read.Results[i])
		}
	}
	s.mirror.Sync()
}

// mirrorsNamespace reports whether namespace index ns is in mirror.namespaces.
func (s *Server) mirrorsNamespace(ns uint16) bool {
	all := s.space.Namespaces()
	return int(ns) < len(all) && slices.Contains(s.cfg.Mirror.Namespaces, all[ns])
}
