package remote

import (
	"context"
	"errors"
	"time"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/plugins/wire"
)

// lane carries queued operations to the slot's guest, a batch per call, until Close.
func (s *slot) lane() {
	m := s.m
	defer m.wg.Done()
	var b wire.Batch
	var keep []*pending
	for {
		conn, ps := s.take()
		if ps == nil {
			return
		}
		keep = s.carry(conn, ps, &b, keep[:0])
		clear(keep)
		s.doneWith(conn)
		m.mu.Lock()
		m.outstanding -= len(ps)
		m.mu.Unlock()
	}
}

// take waits until the slot serves and operations are queued, and takes up to MaxBatch
// of them; nil after Close.
func (s *slot) take() (Conn, []*pending) {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	for !m.closed && (!s.up || len(m.queue) == 0) {
		m.wake.Wait()
	}
	if m.closed {
		return nil, nil
	}
	s.inflight[s.conn]++
	n := min(len(m.queue), m.cfg.MaxBatch)
	ps := make([]*pending, n)
	copy(ps, m.queue)
	m.queue = m.queue[n:]
	if len(m.queue) == 0 {
		m.queue = nil // let the backing array go
	}
	return s.conn, ps
}

// carry sends the operations of ps that are not answered yet in one call and answers
// them from the replies. keep is scratch space; carry returns it.
func (s *slot) carry(conn Conn, ps []*pending, b *wire.Batch, keep []*pending) []*pending {
	m := s.m
	b.Reset()
	var deadline time.Time
	unbounded := false
	for _, p := range ps {
		p.encoding.Lock()
		if p.finished.Load() {
			p.encoding.Unlock()
			continue
		}
		p.frame.ID = uint32(len(keep))
		err := b.Add(&p.frame)
		p.encoding.Unlock()
		if err != nil {
			p.end(status.BadEncodingError)
			continue
		}
		keep = append(keep, p)
		if d, ok := p.ctx.Deadline(); !ok {
			unbounded = true
		} else if d.After(deadline) {
			deadline = d
		}
	}
	if len(keep) == 0 {
		return keep
	}
	if unbounded || deadline.IsZero() {
		deadline = time.Now().Add(m.cfg.CallTimeout)
	}
	ctx, cancel := context.WithDeadline(m.ctx, deadline)
	out, err := conn.Call(ctx, b.Bytes())
	cancel()
	m.calls.Add(1)
	m.frames.Add(uint64(len(keep)))
	if err == nil {
		err = answerAll(out, keep)
		if err != nil {
			// A guest that answers what it was not asked cannot be trusted with more.
			err = errors.Join(err, ErrBroken)
		}
	}
	if err != nil {
		code := codeOf(err)
		for _, p := range keep {
			p.end(code)
		}
		if errors.Is(err, ErrBroken) {
			m.cfg.Logger.Warn("plugin: call failed", "slot", s.index, "operations", len(keep), "err", err)
			s.reportBroken(conn)
		}
	}
	return keep
}

// answerAll answers each operation of keep from its reply in out. It fails, answering
// nothing, when out is not one reply per operation.
func answerAll(out []byte, keep []*pending) error {
	n, err := wire.Count(out)
	if err != nil {
		return err
	}
	if n != len(keep) {
		return errors.Join(status.BadCommunicationError, errors.New("the replies do not match the requests"))
	}
	return wire.Split(out, func(i int, fb []byte) {
		p := keep[i]
		var f nodemgr.Frame
		if err := f.Decode(fb, wire.Limits); err != nil {
			p.end(status.BadCommunicationError)
			return
		}
		switch {
		case f.Kind == nodemgr.KindFault:
			p.end(f.Body.(*nodemgr.Outcome).Status)
		case f.Kind != p.frame.Kind|nodemgr.KindReply || f.ID != uint32(i):
			p.end(status.BadCommunicationError)
		default:
			p.answer(f.Body)
		}
	})
}

// pushed takes a frame a guest pushed and hands it to the server's Notifier.
func (m *Manager) pushed(frame []byte) {
	m.mu.Lock()
	host := m.host
	m.mu.Unlock()
	if host == nil {
		return // not started: nobody monitors anything yet
	}
	var f nodemgr.Frame
	if err := f.Decode(frame, wire.Limits); err != nil {
		m.cfg.Logger.Warn("plugin: a malformed push was dropped", "err", err)
		return
	}
	switch body := f.Body.(type) {
	case *nodemgr.DataChanges:
		host.Notifier().Changed(body.Changes)
	case *nodemgr.Events:
		host.Notifier().Emit(body.Events)
	default:
		m.cfg.Logger.Warn("plugin: a push of the wrong kind was dropped", "kind", f.Kind)
	}
}
