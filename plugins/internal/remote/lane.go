package remote

import (
	"context"
	"errors"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/plugins/wire"
)

// laneState is the memory of one lane, kept from call to call.
type laneState struct {
	b      wire.Batch
	groups []readGroup // the Reads of the call by asker, while they are grouped
	frames []sentFrame
	keep   []*pending // the operations of the call, frame by frame; nil for one answered meanwhile
	at     []int      // for each of keep in a merged Read: where its items start
	reads  []nodemgr.ReadOp
	d      *codec.Decoder
	reply  nodemgr.Frame
	dones  []func() // of the operations answered from the call's replies
}

// readGroup is the Reads of one asker in a call: they travel as one Read.
type readGroup struct {
	op    *nodemgr.ReadOp // the first: its Principal, MaxAge and timestamps stand for all
	frame int
}

// sentFrame is one request frame of a call: the operations keep[first:first+n], which
// are n Reads of one asker merged into reads[merged] (their items back to back) when
// n > 1.
type sentFrame struct {
	first, n int
	merged   int // index in reads; -1 when not merged
}

// lane carries queued operations to the slot's guest, a batch per call, until Close.
func (s *slot) lane() {
	m := s.m
	defer m.wg.Done()
	ls := &laneState{d: codec.NewDecoderLimits(nil, wire.Limits)}
	ls.d.CacheNodeIds(nodeIdCache)
	for {
		conn, ps := s.take()
		if ps == nil {
			return
		}
		s.carry(conn, ps, ls)
		clear(ls.keep)
		clear(ls.groups)
		s.doneWith(conn)
		m.mu.Lock()
		m.outstanding -= len(ps)
		m.mu.Unlock()
	}
}

// nodeIdCache is the size of a lane's cache of decoded string NodeIds.
const nodeIdCache = 1024

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
// them from the replies. Reads of one asker (the same Principal, MaxAge and timestamps)
// travel as one Read of all their items: a guest answers frame by frame, and most of
// what a one-item Read costs a guest is its frame.
func (s *slot) carry(conn Conn, ps []*pending, ls *laneState) {
	m := s.m
	var deadline time.Time
	unbounded := false
	// Group: each operation gets a frame, a Read that of its asker.
	ls.groups, ls.frames = ls.groups[:0], ls.frames[:0]
	slot := make([]int, len(ps)) // the frame of each of ps; -1 for one answered already
	for i, p := range ps {
		p.encoding.Lock()
		if p.finished.Load() {
			p.encoding.Unlock()
			slot[i] = -1
			continue
		}
		if d, ok := p.ctx.Deadline(); !ok {
			unbounded = true
		} else if d.After(deadline) {
			deadline = d
		}
		slot[i] = ls.frameOf(p)
		p.encoding.Unlock()
	}
	// Lay the operations out frame by frame.
	at := 0
	for i := range ls.frames {
		ls.frames[i].first, at = at, at+ls.frames[i].n
		ls.frames[i].n = 0
	}
	ls.keep = append(ls.keep[:0], make([]*pending, at)...)
	ls.at = append(ls.at[:0], make([]int, at)...)
	for i, p := range ps {
		if f := slot[i]; f >= 0 {
			fr := &ls.frames[f]
			ls.keep[fr.first+fr.n] = p
			fr.n++
		}
	}
	// Encode, frame by frame: a merged Read is copied into the lane's memory, the
	// others are read under their operation's lock. An operation answered meanwhile
	// (its deadline passed) is left out, and a frame left empty is not sent.
	ls.b.Reset()
	ls.reads = ls.reads[:0]
	sent := ls.frames[:0]
	for _, f := range ls.frames {
		id := uint32(len(sent))
		var err error
		if f.n > 1 {
			f.merged, err = len(ls.reads), ls.merge(f, id)
			if f.merged == len(ls.reads) {
				continue // every Read of the group was answered meanwhile
			}
		} else {
			p := ls.keep[f.first]
			p.encoding.Lock()
			if p.finished.Load() {
				p.encoding.Unlock()
				ls.keep[f.first] = nil
				continue
			}
			p.frame.ID = id
			err = ls.b.Add(&p.frame)
			p.encoding.Unlock()
		}
		if err != nil {
			endAll(ls.keep[f.first:f.first+f.n], status.BadEncodingError)
			continue
		}
		sent = append(sent, f)
	}
	ls.frames = sent
	if len(sent) == 0 {
		return
	}
	if unbounded || deadline.IsZero() {
		deadline = time.Now().Add(m.cfg.CallTimeout)
	}
	ctx, cancel := context.WithDeadline(m.ctx, deadline)
	out, err := conn.Call(ctx, ls.b.Bytes())
	cancel()
	m.calls.Add(1)
	m.frames.Add(uint64(len(ls.keep)))
	if err == nil {
		ls.dones = ls.dones[:0]
		if err = ls.answerAll(out); err != nil {
			// A guest that answers what it was not asked cannot be trusted with more.
			err = errors.Join(err, ErrBroken)
		}
		// The answers go out on a goroutine of their own: sending them costs the server
		// a write per response, and the lane's next call need not wait for that.
		if len(ls.dones) > 0 {
			go doneAll(append([]func(){}, ls.dones...))
			clear(ls.dones)
		}
	}
	if err != nil {
		if errors.Is(err, ErrBroken) {
			// Out of the lanes' reach before anyone hears of it: a client's next Read
			// must not go to the guest that just broke.
			s.reportBroken(conn)
			m.cfg.Logger.Warn("plugin: call failed", "slot", s.index, "operations", len(ls.keep), "err", err)
		}
		endAll(ls.keep, codeOf(err))
	}
}

// maxGroups bounds the askers whose Reads a call groups; the Reads of further askers
// travel one frame each.
const maxGroups = 32

// frameOf returns the frame p goes in: its asker's for a Read, a new one otherwise. It
// runs under p's encoding lock.
func (ls *laneState) frameOf(p *pending) int {
	if op, ok := p.frame.Body.(*nodemgr.ReadOp); ok {
		for _, g := range ls.groups {
			if samePrincipal(&g.op.Principal, &op.Principal) && g.op.MaxAge == op.MaxAge && g.op.Timestamps == op.Timestamps {
				ls.frames[g.frame].n++
				return g.frame
			}
		}
		if len(ls.groups) < maxGroups {
			ls.groups = append(ls.groups, readGroup{op: op, frame: len(ls.frames)})
		}
	}
	ls.frames = append(ls.frames, sentFrame{n: 1, merged: -1})
	return len(ls.frames) - 1
}

// merge adds the Reads of frame f as one Read with id to the batch; the Reads answered
// meanwhile are left out. The merged Read is appended to reads unless none is left.
func (ls *laneState) merge(f sentFrame, id uint32) error {
	if cap(ls.reads) > len(ls.reads) {
		ls.reads = ls.reads[:len(ls.reads)+1]
	} else {
		ls.reads = append(ls.reads, nodemgr.ReadOp{})
	}
	r := &ls.reads[len(ls.reads)-1]
	r.Items, r.Now = r.Items[:0], 0
	live := 0
	for k := f.first; k < f.first+f.n; k++ {
		p := ls.keep[k]
		p.encoding.Lock()
		if p.finished.Load() {
			p.encoding.Unlock()
			ls.keep[k] = nil
			continue
		}
		op := p.frame.Body.(*nodemgr.ReadOp)
		if live == 0 {
			r.Principal, r.MaxAge, r.Timestamps = op.Principal, op.MaxAge, op.Timestamps
		}
		ls.at[k] = len(r.Items)
		r.Items = append(r.Items, op.Items...)
		r.Now = max(r.Now, op.Now)
		p.encoding.Unlock()
		live++
	}
	if live == 0 {
		ls.reads = ls.reads[:len(ls.reads)-1]
		return nil
	}
	r.Results = nil // a request's encoding has no results
	return ls.b.Add(&nodemgr.Frame{Kind: nodemgr.KindRead, ID: id, Body: r})
}

// answerAll answers the operations of the call from their replies in out. It fails,
// answering nothing, when out is not one reply per frame.
func (ls *laneState) answerAll(out []byte) error {
	n, err := wire.Count(out)
	if err != nil {
		return err
	}
	if n != len(ls.frames) {
		return errors.Join(status.BadCommunicationError, errors.New("the replies do not match the requests"))
	}
	return wire.Split(out, func(i int, fb []byte) {
		f := ls.frames[i]
		ps := ls.keep[f.first : f.first+f.n]
		d := ls.d
		d.Reset(fb)
		ls.reply.DecodeBinary(d)
		if d.Err() == nil && d.Remaining() != 0 {
			d.Fail(status.BadDecodingError)
		}
		want := ps[0].frame.Kind | nodemgr.KindReply
		switch {
		case d.Err() != nil:
			ls.reply.Body = nil
			endAll(ps, status.BadCommunicationError)
		case ls.reply.Kind == nodemgr.KindFault:
			endAll(ps, ls.reply.Body.(*nodemgr.Outcome).Status)
		case ls.reply.Kind != want || ls.reply.ID != uint32(i):
			endAll(ps, status.BadCommunicationError)
		case f.merged >= 0:
			// The merged Read's results, split back by where each Read's items start.
			rr := ls.reply.Body.(*nodemgr.ReadResults)
			items := ls.reads[f.merged].Items
			if len(rr.Results) != len(items) {
				endAll(ps, status.BadCommunicationError)
				break
			}
			for k, p := range ps {
				if p == nil {
					continue
				}
				start := ls.at[f.first+k]
				end := len(items)
				for j := k + 1; j < len(ps); j++ {
					if ps[j] != nil {
						end = ls.at[f.first+j]
						break
					}
				}
				part := nodemgr.ReadResults{Results: rr.Results[start:end]}
				if p.answer(&part) {
					ls.dones = append(ls.dones, p.done)
				}
			}
			clear(rr.Results) // answered by copy: the next decode must not share their memory
		default:
			if ps[0] != nil && ps[0].answer(ls.reply.Body) {
				ls.dones = append(ls.dones, ps[0].done)
			}
			clearResults(ls.reply.Body)
		}
	})
}

// doneAll calls each of dones.
func doneAll(dones []func()) {
	for _, done := range dones {
		done()
	}
}

// endAll answers every item of ps with code; nil entries are skipped.
func endAll(ps []*pending, code status.Code) {
	for _, p := range ps {
		if p != nil {
			p.end(code)
		}
	}
}

// clearResults zeroes the results of a decoded reply once they are copied out, so that
// the next decode into it allocates what the operations keep.
func clearResults(b nodemgr.Body) {
	switch r := b.(type) {
	case *nodemgr.ReadResults:
		clear(r.Results)
	case *nodemgr.WriteResults:
		clear(r.Results)
	case *nodemgr.BrowseResults:
		clear(r.Results)
	case *nodemgr.CallResults:
		clear(r.Results)
	case *nodemgr.HistoryRawResults:
		clear(r.Results)
	case *nodemgr.HistoryItemResults:
		clear(r.Results)
	case *nodemgr.HistoryEventResults:
		clear(r.Results)
	}
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
