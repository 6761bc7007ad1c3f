package mirror

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/subscription"
)

// A message of <set>-subs is sealed for its subject and holds a kind byte, the number of
// changes of the subscription it includes (a snapshot) or is (a change), and the record
// or the change.
const (
	msgSnapshot byte = iota + 1
	msgChange
	msgDeleted // a tombstone: the subscription ended
)

// subsStream is the name of the stream <set>-subs of the set cluster.
func subsStream(cluster string) string { return cluster + "-subs" }

// A subscription's messages have subjects of their own, one message each (the stream
// keeps the last message of every subject): its snapshot (or tombstone) under
// <set>.sub.<session hash>.<id>.s, and change n under .c.<n mod changeSlots>. A
// takeover reads the last message of each, which NATS finds in its index of subjects
// instead of walking every subscription's messages for one subject's.
const (
	// changeSlots is twice snapshotEvery: a slot is written over only after a newer
	// snapshot has taken its change in.
	changeSlots = 2 * snapshotEvery
	// maxMultiLast is how many subjects one multi_last direct get may match (the NATS
	// server refuses more).
	maxMultiLast = 1024
)

// subPrefix is the beginning of the subjects of the subscriptions of the session whose
// hash is session.
func (m *Mirror) subPrefix(session string) string {
	return m.cfg.Cluster + ".sub." + session + "."
}

// snapSubject is the subject of the snapshot of subscription id.
func (m *Mirror) snapSubject(session string, id uint32) string {
	return m.subPrefix(session) + strconv.FormatUint(uint64(id), 10) + ".s"
}

// changeSubject is the subject of change n of subscription id.
func (m *Mirror) changeSubject(session string, id uint32, n uint64) string {
	return m.subPrefix(session) + strconv.FormatUint(uint64(id), 10) + ".c." + strconv.FormatUint(n%changeSlots, 10)
}

// subMessage encodes a message body of <set>-subs into a buffer of plainBufs, which the
// writer returns once it has sealed it (release): a NotificationMessage of a thousand
// values encodes in a sixth of the time into a buffer that need not grow.
func subMessage(kind byte, n uint64, body func(*codec.Encoder)) []byte {
	bp := plainBufs.Get().(*[]byte)
	e := codec.NewEncoder(*bp)
	e.Byte(kind)
	e.UInt64(n)
	if body != nil {
		body(e)
	}
	return e.Bytes()
}

// plainBufs are the buffers messages of <set>-subs are encoded into.
var plainBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// release returns a buffer of subMessage to plainBufs; buffers grown past maxPooled go to
// the collector.
func release(b []byte) {
	const maxPooled = 1 << 20
	if cap(b) <= maxPooled {
		b = b[:0]
		plainBufs.Put(&b)
	}
}

// subscriptionChanged follows the engine (called with its lock held, so it only queues):
// a new subscription's record is written as a snapshot, each later change behind it,
// numbered; every snapshotEvery changes a new snapshot takes the changes in.
func (m *Mirror) subscriptionChanged(c subscription.Change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := c.Subscription
	switch c.Kind {
	case subscription.ChangeCreated:
		hash := m.sessionKeyLocked(c.Record.Session)
		if rs, ok := m.restored[id]; ok {
			delete(m.restored, id)
			m.subOf[id], m.deltas[id], m.snapAt[id] = hash, rs.n, rs.at
			return
		}
		m.subOf[id], m.deltas[id] = hash, 0
		m.snapshotLocked(hash, c.Record)
		return
	case subscription.ChangeDeleted:
		hash, ok := m.subOf[id]
		delete(m.subOf, id)
		delete(m.deltas, id)
		delete(m.snaps, id)
		delete(m.acks, id)
		delete(m.snapAt, id)
		if ok && c.Status != status.GoodSubscriptionTransferred { // Forget: it goes on elsewhere
			m.w.put(op{subject: m.snapSubject(hash, id), plain: subMessage(msgDeleted, 0, nil), pooled: true})
		}
		return
	case subscription.ChangeTransferred:
		// Another session (here) took it: it moves to that session's subject, where a
		// snapshot starts it again.
		if hash, ok := m.subOf[id]; ok {
			m.w.put(op{subject: m.snapSubject(hash, id), plain: subMessage(msgDeleted, 0, nil), pooled: true})
		}
		m.subOf[id] = m.sessionKeyLocked(c.Session)
		m.snaps[id] = true
		m.w.kick()
	}
	hash, ok := m.subOf[id]
	if !ok {
		return
	}
	if c.Kind == subscription.ChangeAcknowledged {
		// Rides with the subscription's next change: an acknowledgement a takeover misses
		// only leaves a message the client has to Republish availability of, which the
		// retransmission queue's bound removes; a message of its own would double the
		// writes of a subscription in its steady state (one Sent, one Acknowledged).
		m.acks[id] = append(m.acks[id], c.Sequence)
		return
	}
	acks := m.acks[id]
	delete(m.acks, id)
	m.deltas[id]++
	n := m.deltas[id]
	m.w.put(op{subject: m.changeSubject(hash, id, n), plain: subMessage(msgChange, n, func(e *codec.Encoder) {
		e.ArrayLength(len(acks)+1, false)
		for _, seq := range acks {
			ack := subscription.Change{Kind: subscription.ChangeAcknowledged, Subscription: id, Sequence: seq}
			ack.EncodeBinary(e)
		}
		c.EncodeBinary(e)
	}), pooled: true})
	if n%snapshotEvery == 0 {
		m.snaps[id] = true
	}
}

// sessionKeyLocked is the hash of session id for subjects; a detached subscription
// (null session) keeps the hash it had.
func (m *Mirror) sessionKeyLocked(id codec.NodeId) string {
	if id.IsNull() {
		return "detached"
	}
	return hashOf(id)
}

// snapshotLocked queues rec as the snapshot of its subscription: it includes the changes
// counted so far.
func (m *Mirror) snapshotLocked(hash string, rec *subscription.SubscriptionRecord) {
	delete(m.acks, rec.ID) // in the record already
	n := m.deltas[rec.ID]
	m.snapAt[rec.ID] = time.Now()
	m.w.put(op{subject: m.snapSubject(hash, rec.ID), plain: subMessage(msgSnapshot, n, rec.EncodeBinary), pooled: true})
}

// renewSnapshots asks for a snapshot of every subscription whose last one is half as old
// as the stream keeps messages: a subscription that changes seldom would otherwise lose
// its snapshot to the stream's maxAge and keep only changes no takeover can replay.
func (m *Mirror) renewSnapshots(now time.Time) {
	m.mu.Lock()
	due := false
	for id, at := range m.snapAt {
		if now.Sub(at) >= m.cfg.MaxAge/2 {
			m.snaps[id] = true
			m.snapAt[id] = now // not again before this one is taken
			due = true
		}
	}
	m.mu.Unlock()
	if due {
		m.w.kick()
	}
}

// takeSnapshots queues the snapshots asked for: each is read with the engine's lock held,
// between two changes, so that it sits at its place in the queue.
func (m *Mirror) takeSnapshots() {
	m.mu.Lock()
	ids := make([]uint32, 0, len(m.snaps))
	for id := range m.snaps {
		ids = append(ids, id)
	}
	clear(m.snaps)
	m.mu.Unlock()
	for _, id := range ids {
		m.cfg.Subs.WithRecord(id, func(r *subscription.SubscriptionRecord) {
			if r == nil {
				return
			}
			m.mu.Lock()
			if hash, ok := m.subOf[id]; ok {
				m.snapshotLocked(hash, r)
			}
			m.mu.Unlock()
		})
	}
}

// barrier waits until every change queued so far is kept (the engine calls it before a
// Publish response leaves), or until mirror.sendWait has passed, which degrades the
// mirror. A degraded mirror does not wait: the server serves its own clients.
func (m *Mirror) barrier() {
	if m.Degraded() {
		return
	}
	m.w.mu.Lock()
	n := m.w.enq
	m.w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.SendWait)
	defer cancel()
	if !m.w.waitFor(ctx, n) && ctx.Err() != nil {
		m.setDegraded(errors.New("a NotificationMessage was not kept within mirror.sendWait"))
	}
}

// resyncAll queues the whole state again: every session held here and a snapshot of
// every subscription. It follows a failed write, after which the set's copy may lack
// any part of it.
func (m *Mirror) resyncAll() {
	m.mu.Lock()
	for key, o := range m.owned {
		m.sw.put(op{session: key, own: o})
	}
	for id := range m.subOf {
		m.snaps[id] = true
	}
	m.mu.Unlock()
	m.takeSnapshots()
}

// waitWritten waits until what is queued now is kept, or d has passed.
func (m *Mirror) waitWritten(d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	m.w.mu.Lock()
	n := m.w.enq
	m.w.mu.Unlock()
	m.sw.mu.Lock()
	ns := m.sw.enq
	m.sw.mu.Unlock()
	return m.w.waitFor(ctx, n) && m.sw.waitFor(ctx, ns)
}

// Sync waits until every change queued so far is kept in the set, within
// mirror.sendWait, as the barrier does for Publish responses: the server calls it
// before it answers a service that changed a subscription, so that the answer never
// tells the client of a change a server taking the subscription over would not find. A
// degraded mirror does not wait.
func (m *Mirror) Sync() {
	if m.Degraded() {
		return
	}
	if !m.waitWritten(m.cfg.SendWait) {
		m.setDegraded(errors.New("a change was not kept within mirror.sendWait"))
	}
}
