package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/plugins/wire"
)

// stableAfter is how long a guest serves before a break of it replaces it at once again.
const stableAfter = time.Minute

// slot is one guest place: its supervisor connects and replaces the guest, its lanes
// carry operations to it.
type slot struct {
	m     *Manager
	index int

	// conn and up are guarded by m.mu; conn is set before the supervisor starts for
	// the first slot, and by the supervisor afterwards.
	conn Conn
	up   bool

	// inflight counts the calls of each guest, and retired holds the guests a reload
	// replaced: each is closed when its last call ends. Both are guarded by m.mu.
	inflight map[Conn]int
	retired  map[Conn]bool

	broke   chan Conn     // a lane saw the guest break
	dirty   chan struct{} // the watched set changed
	replace chan struct{} // Reload: connect a fresh guest and retire this one
	sent    map[nodemgr.WatchKey]float64
}

// errReplace ends serve for a reload.
var errReplace = errors.New("reload")

// current returns the slot's guest, or nil.
func (s *slot) current() Conn {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.conn
}

// markDirty tells the supervisor the watched set changed.
func (s *slot) markDirty() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

// connect dials a guest and sets it up with the Manager's Setup.
func (s *slot) connect(ctx context.Context) (Conn, *nodemgr.Info, error) {
	conn, err := s.m.dialer.Dial(ctx, s.m.pushed)
	if err != nil {
		return nil, nil, err
	}
	setup := s.m.cfg.Setup
	reply, err := s.lifecycle(ctx, conn, &nodemgr.Frame{Kind: nodemgr.KindInfo, Body: &setup})
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("set-up: %w", err)
	}
	return conn, reply.(*nodemgr.Info), nil
}

// prelude brings a fresh guest to where the Manager is: mounted and started.
func (s *slot) prelude(ctx context.Context) (Conn, error) {
	conn, info, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	m := s.m
	if !slices.Equal(info.Namespaces, m.info.Namespaces) || info.Capabilities != m.info.Capabilities {
		conn.Close()
		return nil, fmt.Errorf("the new guest serves %q (%v), the first served %q (%v)", info.Namespaces, info.Capabilities, m.info.Namespaces, m.info.Capabilities)
	}
	m.mu.Lock()
	mounted, indexes, params := m.mounted, m.indexes, m.params
	m.mu.Unlock()
	if mounted && info.Capabilities&nodemgr.CapMount != 0 {
		if _, err := s.lifecycle(ctx, conn, &nodemgr.Frame{Kind: nodemgr.KindMount, Body: &nodemgr.MountRequest{Indexes: indexes}}); err != nil {
			conn.Close()
			return nil, fmt.Errorf("mount: %w", err)
		}
	}
	if params != nil && info.Capabilities&nodemgr.CapStart != 0 {
		if _, err := s.lifecycle(ctx, conn, &nodemgr.Frame{Kind: nodemgr.KindStart, Body: params}); err != nil {
			conn.Close()
			return nil, fmt.Errorf("start: %w", err)
		}
	}
	return conn, nil
}

// lifecycle makes a call of one request outside the queue and returns its reply's body.
// A Fault, or an Outcome that is not Good, is an error.
func (s *slot) lifecycle(ctx context.Context, conn Conn, req *nodemgr.Frame) (nodemgr.Body, error) {
	var b wire.Batch
	if err := b.Add(req); err != nil {
		return nil, err
	}
	out, err := conn.Call(ctx, b.Bytes())
	if err != nil {
		return nil, err
	}
	var reply nodemgr.Frame
	n, err := wire.Count(out)
	if err == nil && n != 1 {
		err = fmt.Errorf("%d replies to one request: %w", n, status.BadCommunicationError)
	}
	if err == nil {
		_ = wire.Split(out, func(_ int, f []byte) { err = reply.Decode(f, wire.Limits) })
	}
	if err != nil {
		return nil, err
	}
	if reply.Kind == nodemgr.KindFault {
		o := reply.Body.(*nodemgr.Outcome)
		return nil, fmt.Errorf("%s: %w", o.Message, o.Status)
	}
	if reply.Kind != req.Kind|nodemgr.KindReply {
		return nil, fmt.Errorf("a %v answers a %v: %w", reply.Kind, req.Kind, status.BadCommunicationError)
	}
	if o, ok := reply.Body.(*nodemgr.Outcome); ok && !o.Status.IsGood() {
		return nil, fmt.Errorf("%s: %w", o.Message, o.Status)
	}
	return reply.Body, nil
}

// supervise keeps a guest in the slot until Close: it connects one (the first slot's is
// connected by Open), replays the watched set to it, polls its health, and replaces it
// when it breaks.
func (s *slot) supervise() {
	m := s.m
	defer m.wg.Done()
	var backoff time.Duration
	conn := s.current()
	served := conn != nil // a guest of this slot has served: the next one replaces it
	for {
		if conn == nil {
			select {
			case <-m.ctx.Done():
				return
			case <-time.After(backoff):
			}
			ctx, cancel := context.WithTimeout(m.ctx, m.cfg.CallTimeout)
			c, err := s.prelude(ctx)
			cancel()
			if err != nil {
				if m.ctx.Err() != nil {
					return
				}
				m.cfg.Logger.Warn("plugin: could not connect a guest", "slot", s.index, "err", err, "retry", s.next(&backoff))
				m.noteErr(err)
				continue
			}
			conn = c
			if served {
				m.replaced.Add(1)
			}
			served = true
			m.cfg.Logger.Info("plugin: guest connected", "slot", s.index)
		}
		s.setUp(conn)
		upAt := time.Now()
		err := s.serve(conn)
		for err == errReplace {
			conn = s.reload(conn)
			err = s.serve(conn)
		}
		s.setDown(conn)
		if err == nil { // Close
			return
		}
		conn = nil
		m.noteErr(err)
		if time.Since(upAt) > stableAfter {
			backoff = 0
		}
		m.cfg.Logger.Warn("plugin: guest broke; replacing it", "slot", s.index, "err", err, "after", backoff)
		s.next(&backoff)
	}
}

// next returns the wait before the coming attempt and doubles it for the one after.
func (s *slot) next(backoff *time.Duration) time.Duration {
	wait := *backoff
	switch {
	case *backoff == 0:
		*backoff = s.m.cfg.Backoff
	default:
		*backoff = min(*backoff*2, s.m.cfg.MaxBackoff)
	}
	return wait
}

// serve watches conn until it breaks (the error says how) or the Manager closes (nil).
func (s *slot) serve(conn Conn) error {
	m := s.m
	s.sent = map[nodemgr.WatchKey]float64{}
	if m.info.Capabilities&nodemgr.CapWatch != 0 {
		s.markDirty()
	}
	// Every guest is asked for its health now and then: a guest that does not answer
	// within CallTimeout hangs (a process stuck in a loop or a lock) and is replaced.
	health := time.NewTicker(m.cfg.HealthEvery)
	defer health.Stop()
	if s.index == 0 && m.info.Capabilities&nodemgr.CapHealth != 0 {
		_ = s.pollHealth(conn)
	}
	var retry <-chan time.Time
	for {
		select {
		case <-m.ctx.Done():
			return nil
		case <-conn.Broken():
			return fmt.Errorf("the guest is gone: %w", status.BadCommunicationError)
		case c := <-s.broke:
			if c == conn {
				return fmt.Errorf("a call broke the guest: %w", status.BadCommunicationError)
			}
		case <-s.dirty:
			if err := s.syncWatch(conn); err != nil {
				if errors.Is(err, ErrBroken) {
					return err
				}
				m.cfg.Logger.Warn("plugin: watch failed; retrying", "err", err)
				retry = time.After(time.Second)
			}
		case <-retry:
			s.markDirty()
		case <-s.replace:
			return errReplace
		case <-health.C:
			if err := s.pollHealth(conn); err != nil {
				return err
			}
		}
	}
}

// pollHealth asks the guest for its health and, for the first guest of a
// HealthReporter, keeps the answer. It fails when the guest did not answer at all (it
// broke, or hangs past CallTimeout): the guest must be replaced.
func (s *slot) pollHealth(conn Conn) error {
	m := s.m
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.CallTimeout)
	defer cancel()
	reply, err := s.lifecycle(ctx, conn, &nodemgr.Frame{Kind: nodemgr.KindHealth})
	if m.ctx.Err() != nil {
		return nil // Close
	}
	if err != nil && (errors.Is(err, ErrBroken) || codeOf(err) == status.BadTimeout) {
		return fmt.Errorf("the guest did not answer its health check: %w", errors.Join(err, ErrBroken))
	}
	if s.index != 0 || m.info.Capabilities&nodemgr.CapHealth == 0 {
		return nil
	}
	h := nodemgr.Health{}
	if err != nil {
		h = nodemgr.Health{Status: codeOf(err), Message: err.Error()}
	} else {
		h = *reply.(*nodemgr.Health)
	}
	m.health.Store(&h)
	return nil
}

// syncWatch sends the guest what changed in the watched set since it last heard.
func (s *slot) syncWatch(conn Conn) error {
	m := s.m
	m.watchMu.Lock()
	want := make(map[nodemgr.WatchKey]float64, len(m.watched))
	for k, v := range m.watched {
		want[k] = v
	}
	m.watchMu.Unlock()
	var set nodemgr.WatchSet
	for k, v := range want {
		if old, ok := s.sent[k]; !ok || old != v {
			set.Add = append(set.Add, nodemgr.WatchItem{NodeId: k.NodeId, AttributeId: k.AttributeId, SamplingInterval: v})
		}
	}
	for k := range s.sent {
		if _, ok := want[k]; !ok {
			set.Remove = append(set.Remove, k)
		}
	}
	if len(set.Add) == 0 && len(set.Remove) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.CallTimeout)
	defer cancel()
	if _, err := s.lifecycle(ctx, conn, &nodemgr.Frame{Kind: nodemgr.KindWatch, Body: &set}); err != nil {
		return err
	}
	s.sent = want
	return nil
}

// reload connects a fresh guest and puts it in old's place, and returns it; the lanes'
// calls on old finish there, then old is closed. When the fresh guest cannot be set up,
// old serves on.
func (s *slot) reload(old Conn) Conn {
	m := s.m
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.CallTimeout)
	next, err := s.prelude(ctx)
	cancel()
	if err != nil {
		m.cfg.Logger.Error("plugin: reload failed; the running guest serves on", "slot", s.index, "err", err)
		return old
	}
	m.mu.Lock()
	s.conn = next
	closeNow := s.inflight[old] == 0
	if !closeNow {
		s.retired[old] = true
	}
	m.mu.Unlock()
	if closeNow {
		old.Close()
	}
	m.cfg.Logger.Info("plugin: guest reloaded", "slot", s.index)
	return next
}

// doneWith ends a lane's call on conn, and closes conn when a reload retired it and this
// was its last call.
func (s *slot) doneWith(conn Conn) {
	m := s.m
	m.mu.Lock()
	s.inflight[conn]--
	last := s.inflight[conn] == 0
	if last {
		delete(s.inflight, conn)
	}
	retired := last && s.retired[conn]
	if retired {
		delete(s.retired, conn)
	}
	m.mu.Unlock()
	if retired {
		conn.Close()
	}
}

// setUp makes conn the slot's serving guest; again for the same guest, it does nothing
// more (Start sets up the first guest before its supervisor runs).
func (s *slot) setUp(conn Conn) {
	m := s.m
	m.mu.Lock()
	if !s.up {
		m.ready++
	}
	s.conn, s.up = conn, true
	m.wake.Broadcast()
	m.mu.Unlock()
}

// setDown takes conn out of service and closes it. When it was the last guest serving,
// the queued operations are answered BadNotConnected.
func (s *slot) setDown(conn Conn) {
	m := s.m
	s.takeOut(conn)
	m.mu.Lock()
	closing := m.closed
	if !closing {
		s.conn = nil
	}
	m.mu.Unlock()
	if !closing {
		conn.Close() // Close closes the guests after it told them to Close
	}
}

// takeOut stops the lanes from taking operations to conn, once: it is broken (a lane
// saw it) or being replaced. When it was the last guest serving, the queued operations
// are answered BadNotConnected, and a Watcher's watched pairs told so.
func (s *slot) takeOut(conn Conn) {
	m := s.m
	m.mu.Lock()
	if !s.up || s.conn != conn {
		m.mu.Unlock()
		return
	}
	s.up = false
	m.ready--
	var queued []*pending
	lost := m.ready == 0 && !m.closed
	if lost {
		queued, m.queue = m.queue, nil
		m.outstanding -= len(queued)
	}
	host := m.host
	m.mu.Unlock()
	for _, p := range queued {
		p.end(status.BadNotConnected)
	}
	if lost && host != nil {
		m.reportLost(host)
	}
}

// drop closes the slot's guest, at Close.
func (s *slot) drop() {
	s.m.mu.Lock()
	conn := s.conn
	s.conn = nil
	s.m.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// reportBroken takes conn out of the lanes' reach at once and tells the supervisor that
// it broke.
func (s *slot) reportBroken(conn Conn) {
	s.takeOut(conn)
	select {
	case s.broke <- conn:
	default:
	}
}

// noteErr keeps the last error of a guest, for Health.
func (m *Manager) noteErr(err error) {
	m.mu.Lock()
	m.lastErr = err
	m.mu.Unlock()
}

// codeOf returns the StatusCode err wraps, or BadCommunicationError.
func codeOf(err error) status.Code {
	var c status.Code
	if errors.As(err, &c) {
		return c
	}
	return status.BadCommunicationError
}
