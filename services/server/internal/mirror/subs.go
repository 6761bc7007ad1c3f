package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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

// subSubject is the subject of subscription id of the session whose hash is session.
func (m *Mirror) subSubject(session string, id uint32) string {
	return fmt.Sprintf("%s.sub.%s.%d", m.cfg.Cluster, session, id)
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

// rollup is the header of a message that replaces every earlier one of its subject.
func rollup() nats.Header {
	h := nats.Header{}
	h.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	return h
}

// subscriptionChanged follows the engine (called with its lock held, so it only queues):
// a new subscription's record is written as a snapshot, each later change behind it,
// numbered; every snapshotEvery changes a new snapshot rolls the subject up.
func (m *Mirror) subscriptionChanged(c subscription.Change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := c.Subscription
	switch c.Kind {
	case subscription.ChangeCreated:
		hash := m.sessionKeyLocked(c.Record.Session)
		if n, ok := m.restored[id]; ok {
			delete(m.restored, id)
			m.subOf[id], m.deltas[id] = hash, n
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
		if ok && c.Status != status.GoodSubscriptionTransferred { // Forget: it goes on elsewhere
			m.w.put(op{subject: m.subSubject(hash, id), plain: subMessage(msgDeleted, 0, nil), hdr: rollup(), pooled: true})
		}
		return
	case subscription.ChangeTransferred:
		// Another session (here) took it: it moves to that session's subject, where a
		// snapshot starts it again.
		if hash, ok := m.subOf[id]; ok {
			m.w.put(op{subject: m.subSubject(hash, id), plain: subMessage(msgDeleted, 0, nil), hdr: rollup(), pooled: true})
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
	m.w.put(op{subject: m.subSubject(hash, id), plain: subMessage(msgChange, n, func(e *codec.Encoder) {
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
	m.w.put(op{subject: m.subSubject(hash, rec.ID), plain: subMessage(msgSnapshot, n, rec.EncodeBinary), hdr: rollup(), pooled: true})
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

// Restore adds the subscriptions of session sessionID, as the set keeps them, to this
// server's engine, after a Claim of the session: each subject's snapshot and the changes
// after it are replayed into a scratch engine, and the records it ends with are applied
// to the engine, which carries them on (their sequence numbers, their retransmission
// queues, their items sampled again). It returns how many it restored.
func (m *Mirror) Restore(ctx context.Context, sessionID codec.NodeId) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	select {
	case m.restoring <- struct{}{}:
		defer func() { <-m.restoring }()
	case <-ctx.Done():
		return 0, fmt.Errorf("mirror: subscriptions of %v: %w", sessionID, ctx.Err())
	}
	hash := hashOf(sessionID)
	filter := fmt.Sprintf("%s.sub.%s.*", m.cfg.Cluster, hash)
	info, err := m.subs.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, fmt.Errorf("mirror: subscriptions of %v: %w", sessionID, err)
	}
	if len(info.State.Subjects) == 0 {
		return 0, nil
	}
	subjects := slices.Sorted(maps.Keys(info.State.Subjects))
	scratch := m.cfg.Subs.Scratch()
	since := make(map[string]uint64) // per subject: the changes replayed so far
	broken := make(map[uint32]bool)  // subscriptions whose stream does not replay
	for _, subject := range subjects {
		id, ok := subID(subject)
		if !ok {
			continue
		}
		// Bounded by what the subject held at Info, and a rollup's worth more.
		msgs, err := m.subjectMessages(ctx, subject, int(info.State.Subjects[subject])+snapshotEvery+1)
		if err != nil {
			return 0, fmt.Errorf("mirror: reading subscriptions of %v: %w", sessionID, err)
		}
		for _, msg := range msgs {
			if err := m.replay(scratch, subject, msg.Data, since); err != nil {
				// A gap (a write lost while the mirror was degraded) or a record this
				// server cannot open: that subscription cannot go on here.
				m.log.Warn("mirror: a subscription of a taken-over session does not replay", "session", sessionID, "subscription", id, "err", err)
				broken[id] = true
				break
			}
		}
	}
	recs := scratch.Snapshot()
	restored := 0
	for i := range recs {
		r := &recs[i]
		if broken[r.ID] {
			continue
		}
		// The set's copy is this record already: the changes go on from its number,
		// with no new snapshot (a rollup, which NATS pays for with a purge, times every
		// subscription a failover moves).
		m.mu.Lock()
		m.restored[r.ID] = since[m.subSubject(hash, r.ID)]
		m.mu.Unlock()
		err := m.cfg.Subs.Apply(subscription.Change{Kind: subscription.ChangeCreated, Subscription: r.ID, Record: r})
		m.mu.Lock()
		delete(m.restored, r.ID) // when the engine did not take it
		m.mu.Unlock()
		if err != nil {
			return restored, fmt.Errorf("mirror: restoring subscription %d: %w", r.ID, err)
		}
		restored++
	}
	return restored, nil
}

// subjectMessages reads the messages of subject in <set>-subs, at most bound of them. It
// asks for all of them at once with a direct get, which any replica of the stream may
// answer, and takes the answer only if it reaches the last message the stream's leader
// has of the subject: a replica's messages are a prefix of the leader's, and one a write
// behind would restore a state older than the set's. Otherwise it reads them from the
// leader one by one. A failover restores many subscriptions at once; one request each
// instead of one per message keeps NATS answering the other servers' writes meanwhile.
func (m *Mirror) subjectMessages(ctx context.Context, subject string, bound int) ([]storedMsg, error) {
	last, err := m.leaderGet(ctx, msgGet{LastFor: subject})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if msgs, err := m.directBatch(ctx, subject, bound); err == nil && len(msgs) > 0 && msgs[len(msgs)-1].Sequence >= last.Sequence {
		return msgs, nil
	}
	var msgs []storedMsg
	for seq := uint64(1); len(msgs) < bound; {
		msg, err := m.leaderGet(ctx, msgGet{Seq: seq, NextFor: subject})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, *msg)
		seq = msg.Sequence + 1
	}
	return msgs, nil
}

// msgGet is a request of the stream API's MSG.GET and DIRECT.GET.
type msgGet struct {
	Seq     uint64 `json:"seq,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	Batch   int    `json:"batch,omitempty"`
}

// directBatch reads up to batch messages of subject with one direct get: the messages
// arrive one by one on an inbox, and a status message (204, end of batch; 404, none)
// ends them.
func (m *Mirror) directBatch(ctx context.Context, subject string, batch int) ([]storedMsg, error) {
	req, err := json.Marshal(msgGet{Seq: 1, NextFor: subject, Batch: batch})
	if err != nil {
		return nil, err
	}
	inbox := nats.NewInbox()
	sub, err := m.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := m.nc.PublishRequest("$JS.API.DIRECT.GET."+subsStream(m.cfg.Cluster), inbox, req); err != nil {
		return nil, err
	}
	var msgs []storedMsg
	for len(msgs) <= batch {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, err
		}
		switch msg.Header.Get("Status") {
		case "":
		case "204", "404":
			return msgs, nil
		default:
			return nil, fmt.Errorf("mirror: direct get: %s %s", msg.Header.Get("Status"), msg.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(msg.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("mirror: direct get: sequence: %w", err)
		}
		msgs = append(msgs, storedMsg{Sequence: seq, Data: msg.Data})
	}
	return nil, errors.New("mirror: direct get: more messages than asked for")
}

// leaderGet asks the leader of <set>-subs for one message (the stream's MSG.GET;
// jetstream's GetMsg takes the direct get, which every replica answers, when the stream
// allows it).
func (m *Mirror) leaderGet(ctx context.Context, get msgGet) (*storedMsg, error) {
	req, err := json.Marshal(get)
	if err != nil {
		return nil, err
	}
	reply, err := m.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+subsStream(m.cfg.Cluster), req)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Message *storedMsg          `json:"message"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, err
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, jetstream.ErrMsgNotFound
	case resp.Error != nil:
		return nil, resp.Error
	case resp.Message == nil:
		return nil, jetstream.ErrInvalidJetStreamResponse
	}
	return resp.Message, nil
}

// storedMsg is a message of a stream as MSG.GET returns it; Data arrives in base64.
type storedMsg struct {
	Sequence uint64 `json:"seq"`
	Data     []byte `json:"data"`
}

// subID is the subscription ID at the end of a subject of <set>-subs.
func subID(subject string) (uint32, bool) {
	i := strings.LastIndexByte(subject, '.')
	n, err := strconv.ParseUint(subject[i+1:], 10, 32)
	return uint32(n), err == nil
}

// replay applies one message of <set>-subs to the scratch engine.
func (m *Mirror) replay(scratch *subscription.Engine, subject string, data []byte, since map[string]uint64) error {
	plain, err := m.open("subscription record", subject, data)
	if err != nil {
		return err
	}
	sm, err := decodeSubMessage(plain)
	if err != nil {
		return fmt.Errorf("mirror: %s: %w", subject, err)
	}
	switch sm.kind {
	case msgSnapshot:
		since[subject] = sm.n
		return scratch.Apply(subscription.Change{Kind: subscription.ChangeCreated, Subscription: sm.rec.ID, Record: sm.rec})
	case msgChange:
		last := since[subject]
		if sm.n <= last {
			return nil // in the snapshot already
		}
		if sm.n != last+1 {
			return fmt.Errorf("mirror: %s: change %d follows change %d", subject, sm.n, last)
		}
		for _, c := range sm.changes {
			if err := scratch.Apply(c); err != nil {
				return err
			}
		}
		since[subject] = sm.n
	}
	return nil // a tombstone
}

// subMsg is a decoded message of <set>-subs: a snapshot's record or changes.
type subMsg struct {
	kind    byte
	n       uint64
	rec     *subscription.SubscriptionRecord
	changes []subscription.Change
}

// minChange is the smallest encoded Change: format, kind, subscription.
const minChange = 6

// decodeSubMessage decodes the plain text of a message of <set>-subs.
func decodeSubMessage(plain []byte) (subMsg, error) {
	d := codec.NewDecoder(plain)
	sm := subMsg{kind: d.Byte(), n: d.UInt64()}
	switch sm.kind {
	case msgSnapshot:
		sm.rec = new(subscription.SubscriptionRecord)
		sm.rec.DecodeBinary(d)
	case msgChange:
		k := d.ArrayLength(minChange)
		if d.Err() == nil && k <= 0 {
			d.Fail(status.BadDecodingError)
		}
		if k > 0 {
			sm.changes = make([]subscription.Change, k)
			for i := range sm.changes {
				sm.changes[i].DecodeBinary(d)
			}
		}
	case msgDeleted:
	default:
		d.Fail(status.BadDecodingError)
	}
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail(status.BadDecodingError)
	}
	return sm, d.Err()
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
