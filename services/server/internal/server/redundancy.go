package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/redundancy"
	"uastack.dev/services/server/internal/session"
)

// smoothingIntervals is the time constant of the load's smoothing, in
// redundancy.serviceLevelInterval: one busy interval among idle ones costs a Healthy
// server at most 9 levels of 55 (package redundancy, RATIONALE.md).
const smoothingIntervals = 5

// presence is the server's place in a redundant set (Part 4 §6.6.2) and what its
// ServiceLevel is computed from.
type presence struct {
	mu       sync.Mutex // guards support, uris, health, draining, load, level, ended
	support  ua.RedundancySupport
	uris     []string
	health   redundancy.Health
	draining bool    // Drain was called: Maintenance from then on
	load     float64 // the sampler's last load
	level    byte    // the ServiceLevel last published
	// ended is closed at the next end of a session, for the drains that wait; nil when
	// none waits.
	ended chan struct{}

	// sampler is used by the ServiceLevel loop's goroutine only.
	sampler *redundancy.Sampler
}

// initRedundancy readies the ServiceLevel, which initCapabilities set to 255, and has
// the drains follow the ends of sessions. Call it from New.
func (s *Server) initRedundancy() {
	s.red.level = maxServiceLevel
	s.red.sampler = redundancy.NewSampler(smoothingIntervals*s.cfg.Redundancy.ServiceLevelInterval, redundancy.ProcessCPU)
	s.sessions.Observe(func(c *session.Change) {
		if c.Kind != session.Ended {
			return
		}
		// Called with the session table locked: only wakes the drains, which count the
		// sessions on their own goroutines.
		s.red.mu.Lock()
		if s.red.ended != nil {
			close(s.red.ended)
			s.red.ended = nil
		}
		s.red.mu.Unlock()
	})
}

// nonTransparent reports whether support is one of the modes of a NonTransparentRedundancyType
// (Part 5 §6.3.9): Cold, Warm, Hot and HotAndMirrored.
func nonTransparent(support ua.RedundancySupport) bool {
	switch support {
	case ua.RedundancySupportCold, ua.RedundancySupportWarm, ua.RedundancySupportHot, ua.RedundancySupportHotAndMirrored:
		return true
	}
	return false
}

// SetRedundancy publishes the server's place in a redundant set: RedundancySupport and,
// for the non-transparent modes (Cold, Warm, Hot, HotAndMirrored), the ServerRedundancy
// object as a NonTransparentRedundancyType with its ServerUriArray (Part 5 §6.3.7,
// §6.3.9; Part 4 §6.6.2). serverURIs are the ApplicationUris of the servers of the set;
// they must include this server's own (Part 5 §6.3.9) and be neither empty nor
// repeated. None takes no URIs and turns the object back into a ServerRedundancyType;
// Transparent is refused, as this server has no TransparentRedundancyType's
// CurrentServerId or RedundantServerArray to show.
//
// Callable again when the set changes (a node joins or leaves); safe for concurrent use.
// The address space changes in steps that a concurrent Browse may see half done: the
// ServerUriArray's value first, its HasProperty reference, the TypeDefinition, and
// RedundancySupport last. While RedundancySupport is not None, the server drains before
// it stops (redundancy.drainTimeout).
func (s *Server) SetRedundancy(support ua.RedundancySupport, serverURIs []string) error {
	switch {
	case support == ua.RedundancySupportNone:
		if len(serverURIs) > 0 {
			return fmt.Errorf("redundancy: RedundancySupport None takes no server URIs, got %d", len(serverURIs))
		}
	case support == ua.RedundancySupportTransparent:
		return fmt.Errorf("redundancy: RedundancySupport %v is not supported", support)
	case !nonTransparent(support):
		return fmt.Errorf("redundancy: unknown RedundancySupport %d", int32(support))
	default:
		for i, u := range serverURIs {
			if u == "" {
				return fmt.Errorf("redundancy: server URI %d is empty", i)
			}
			if j := slices.Index(serverURIs[:i], u); j >= 0 {
				return fmt.Errorf("redundancy: server URI %q is listed twice (%d and %d)", u, j, i)
			}
		}
		if self := s.cfg.Application.ApplicationURI; !slices.Contains(serverURIs, self) {
			return fmt.Errorf("redundancy: the server URIs must include this server's own ApplicationUri %q", self)
		}
	}
	s.red.mu.Lock()
	defer s.red.mu.Unlock()
	uris := slices.Clone(serverURIs)
	if uris == nil {
		uris = []string{}
	}
	if err := s.space.SetTypedValue(ns0Node(id.Server_ServerRedundancy_ServerUriArray), codec.MustVariant(uris)); err != nil {
		return fmt.Errorf("redundancy: %w", err)
	}
	if was, now := nonTransparent(s.red.support), nonTransparent(support); was != now {
		if err := s.reshapeServerRedundancy(now); err != nil {
			return fmt.Errorf("redundancy: %w", err)
		}
	}
	if err := s.space.SetTypedValue(ns0Node(id.Server_ServerRedundancy_RedundancySupport), codec.Int32Variant(int32(support))); err != nil {
		return fmt.Errorf("redundancy: %w", err)
	}
	if s.red.support != support || !slices.Equal(s.red.uris, uris) {
		s.log.Info("redundant set", "redundancySupport", support.String(), "serverUris", uris)
	}
	s.red.support, s.red.uris = support, uris
	return nil
}

// reshapeServerRedundancy makes the ServerRedundancy object a NonTransparentRedundancyType
// with the ServerUriArray Property (Part 5 §6.3.9), or, when not nonTransparent, the
// ServerRedundancyType of namespace 0 again. The Property is the node
// Server_ServerRedundancy_ServerUriArray of the namespace 0 tables (String[], ValueRank
// 1, ArrayDimensions {0}), which the tables leave unreferenced; it stays readable by
// its id either way. s.red.mu is held.
func (s *Server) reshapeServerRedundancy(nonTransparent bool) error {
	obj := ns0Node(id.Server_ServerRedundancy)
	typeDef := func(t uint32) addrspace.Reference {
		return addrspace.Reference{ReferenceTypeId: ns0Node(id.HasTypeDefinition), TargetId: ns0Node(t), IsForward: true}
	}
	property := addrspace.Reference{ReferenceTypeId: ns0Node(id.HasProperty), TargetId: ns0Node(id.Server_ServerRedundancy_ServerUriArray), IsForward: true}
	from, to := typeDef(id.NonTransparentRedundancyType), typeDef(id.ServerRedundancyType)
	if nonTransparent {
		from, to = to, from
		if err := s.space.AddReference(obj, property); err != nil {
			return err
		}
	} else if err := s.space.RemoveReference(obj, property); err != nil {
		return err
	}
	if err := s.space.RemoveReference(obj, from); err != nil {
		return err
	}
	return s.space.AddReference(obj, to)
}

// ns0Node is the NodeId of namespace 0 with the numeric id i.
func ns0Node(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }

// SetHealth tells the ServiceLevel what the redundancy machinery knows (the mirror
// reports Degraded while NATS is unreachable, NoData while it catches up). The new
// ServiceLevel is published at once, with the last load; after Drain it stays 0. Safe for
// concurrent use.
func (s *Server) SetHealth(h redundancy.Health) {
	s.red.mu.Lock()
	defer s.red.mu.Unlock()
	if h != s.red.health {
		s.log.Info("redundancy health", "health", h.String(), "was", s.red.health.String())
	}
	s.red.health = h
	s.publishLevelLocked()
}

// Drain sets ServiceLevel 0 (Maintenance) and waits until no session is left on this
// server or ctx ends; clients of a redundant set move to another server meanwhile
// (Part 4 §6.6.2.4.2: in Maintenance, connected clients disconnect and new ones stay
// away). It returns nil once the session table is empty, or ctx's error, wrapped with
// the sessions left. The server stays in Maintenance after Drain returns: it is meant to
// stop next. Safe for concurrent use.
func (s *Server) Drain(ctx context.Context) error {
	s.red.mu.Lock()
	if !s.red.draining {
		s.log.Info("draining: ServiceLevel 0 (Maintenance)", "sessions", s.servedSessions())
	}
	s.red.draining = true
	s.publishLevelLocked()
	s.red.mu.Unlock()
	for {
		ended := s.nextSessionEnd() // before the count, so that no end is missed
		n := s.servedSessions()
		if n == 0 {
			return nil
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return fmt.Errorf("drain: sessions left: %d: %w", n, ctx.Err())
		}
	}
}

// servedSessions is the number of sessions this server serves, which its load counts
// and a drain waits for: the whole session table. A mirror that keeps other servers'
// sessions in the table (session.Table.Apply) counts them out here.
func (s *Server) servedSessions() int { return s.sessions.Count() }

// nextSessionEnd returns a channel closed at the next end of a session.
func (s *Server) nextSessionEnd() <-chan struct{} {
	s.red.mu.Lock()
	defer s.red.mu.Unlock()
	if s.red.ended == nil {
		s.red.ended = make(chan struct{})
	}
	return s.red.ended
}

// publishLevelLocked computes the ServiceLevel from the health and the load and sets
// it when it changed, which reaches the monitored items of Server_ServiceLevel. It is
// set with s.red.mu held, so that two publishers cannot overtake each other.
func (s *Server) publishLevelLocked() {
	h := s.red.health
	if s.red.draining {
		h = redundancy.Maintenance
	}
	level := redundancy.Level(h, s.red.load)
	if level == s.red.level {
		return
	}
	s.red.level = level
	s.space.SetValue(ns0Node(id.Server_ServiceLevel), codec.DataValue{Value: codec.ByteVariant(level)})
}

// runServiceLevel samples the load every redundancy.serviceLevelInterval and publishes
// the ServiceLevel until ctx ends; with the interval 0 it returns at once and the
// ServiceLevel follows the health alone.
func (s *Server) runServiceLevel(ctx context.Context) {
	interval := s.cfg.Redundancy.ServiceLevelInterval
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		load := s.red.sampler.Sample(s.usage(), time.Now())
		s.red.mu.Lock()
		s.red.load = load
		s.publishLevelLocked()
		s.red.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// usage is the server's use of its limits now.
func (s *Server) usage() redundancy.Usage {
	l := s.cfg.Limits
	subs, items := s.subs.Counts()
	queued, _, _ := s.pipe.Queue().Stats()
	return redundancy.Usage{
		Sessions: s.servedSessions(), MaxSessions: l.MaxSessionCount,
		Subscriptions: subs, MaxSubscriptions: l.MaxSubscriptionCount,
		MonitoredItems: items, MaxMonitoredItems: l.MaxMonitoredItemCount,
		QueuedRequests: queued, MaxQueuedRequests: l.MaxQueuedRequestCount,
	}
}

// drainBeforeStop returns the context to serve with: one that ends when ctx does, or,
// while the server is in a redundant set (RedundancySupport not None), once it has
// drained for at most redundancy.drainTimeout after ctx ended. release frees it when
// Serve returns.
func (s *Server) drainBeforeStop(ctx context.Context) (serve context.Context, release func()) {
	timeout := s.cfg.Redundancy.DrainTimeout
	if timeout <= 0 {
		return ctx, func() {}
	}
	serve, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopWatch := context.AfterFunc(ctx, func() {
		defer cancel()
		s.red.mu.Lock()
		support := s.red.support
		s.red.mu.Unlock()
		if support == ua.RedundancySupportNone {
			return
		}
		dctx, dcancel := context.WithTimeout(serve, timeout)
		defer dcancel()
		s.log.Info("stopping: the sessions leave first", "timeout", timeout)
		switch err := s.Drain(dctx); {
		case err == nil:
			s.log.Info("drained: no session left")
		case errors.Is(err, context.DeadlineExceeded):
			s.log.Warn("redundancy.drainTimeout reached; stopping", "err", err)
		}
	})
	return serve, func() {
		stopWatch()
		cancel()
	}
}
