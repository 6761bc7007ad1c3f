package mirror

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/subscription"
)

// Restore adds the subscriptions of session sessionID, as the set keeps them, to this
// server's engine, after a Claim of the session: each one's snapshot and the changes
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
	msgs, err := m.sessionMessages(ctx, hash)
	if err != nil {
		return 0, fmt.Errorf("mirror: reading subscriptions of %v: %w", sessionID, err)
	}
	subs := make(map[uint32]*storedSub)
	for _, msg := range msgs {
		id, snap, ok := m.parseSubject(hash, msg.Subject)
		if !ok {
			continue
		}
		s := subs[id]
		if s == nil {
			s = new(storedSub)
			subs[id] = s
		}
		if snap {
			s.snap = &msg
		} else {
			s.changes = append(s.changes, msg)
		}
	}
	scratch := m.cfg.Subs.Scratch()
	since := make(map[uint32]restoredSub) // the last change replayed and the snapshot's time
	for _, id := range slices.Sorted(maps.Keys(subs)) {
		last, err := m.replay(scratch, subs[id])
		if err != nil {
			// A gap (a write lost while the mirror was degraded) or a record this server
			// cannot open: that subscription cannot go on here.
			m.log.Warn("mirror: a subscription of a taken-over session does not replay", "session", sessionID, "subscription", id, "err", err)
			continue
		}
		since[id] = restoredSub{n: last, at: subs[id].snap.Time} // replay refuses no snapshot
	}
	recs := scratch.Snapshot()
	restored := 0
	for i := range recs {
		r := &recs[i]
		rs, ok := since[r.ID]
		if !ok {
			continue
		}
		// The set's copy is this record already: the changes go on from its number,
		// with no new snapshot.
		m.mu.Lock()
		m.restored[r.ID] = rs
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

// storedSub is what <set>-subs holds of one subscription: its snapshot (nil if none) and
// the last message of each of its change slots.
type storedSub struct {
	snap    *storedMsg
	changes []storedMsg
}

// restoredSub is how far Restore replayed a subscription: the number of its last change,
// and when its snapshot was written.
type restoredSub struct {
	n  uint64
	at time.Time
}

// parseSubject returns the subscription of a subject of the session whose hash is
// session, and whether it is the snapshot's.
func (m *Mirror) parseSubject(session, subject string) (id uint32, snap bool, ok bool) {
	rest, ok := strings.CutPrefix(subject, m.subPrefix(session))
	if !ok {
		return 0, false, false
	}
	ids, kind, _ := strings.Cut(rest, ".")
	n, err := strconv.ParseUint(ids, 10, 32)
	if err != nil {
		return 0, false, false
	}
	switch {
	case kind == "s":
		return uint32(n), true, true
	case strings.HasPrefix(kind, "c."):
		return uint32(n), false, true
	}
	return 0, false, false
}

// sessionMessages reads the last message of every subject of the subscriptions of the
// session whose hash is session: with multi_last direct gets, which any replica of the
// stream may answer, taken only if the replica had reached the last message the stream's
// leader has of the session (a replica's messages are a prefix of the leader's, and one
// a write behind would restore a state older than the set's); otherwise from the leader,
// subject by subject. The leader is asked at the same time as the replicas. A failover
// restores many sessions at once; a few requests each keep NATS answering the other
// servers' writes meanwhile.
func (m *Mirror) sessionMessages(ctx context.Context, session string) ([]storedMsg, error) {
	prefix := m.subPrefix(session)
	type leader struct {
		last *storedMsg
		err  error
	}
	lc := make(chan leader, 1)
	go func() {
		last, err := m.leaderGet(ctx, msgGet{LastFor: prefix + ">"})
		lc <- leader{last, err}
	}()
	msgs, upTo, direct := m.directSession(ctx, session)
	l := <-lc
	if errors.Is(l.err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if l.err != nil {
		return nil, l.err
	}
	seq := l.last.Sequence
	if direct && upTo >= seq && slices.ContainsFunc(msgs, func(msg storedMsg) bool { return msg.Sequence == seq }) {
		return msgs, nil
	}
	info, err := m.subs.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, err
	}
	msgs = nil
	for _, subject := range slices.Sorted(maps.Keys(info.State.Subjects)) {
		msg, err := m.leaderGet(ctx, msgGet{LastFor: subject})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // gone since Info
		}
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, *msg)
	}
	return msgs, nil
}

// directSession reads the session's snapshots, and then the change slots of those
// subscriptions, a few subscriptions a request, with multi_last direct gets. upTo is the
// least sequence the answering replicas had reached (math.MaxUint64 when none had
// messages); false when a get failed. A replica that answers "none" for messages the
// leader has is behind too: the caller checks that the leader's last message is among
// them.
func (m *Mirror) directSession(ctx context.Context, session string) (msgs []storedMsg, upTo uint64, ok bool) {
	prefix := m.subPrefix(session)
	upTo = math.MaxUint64
	snaps, at, err := m.directLast(ctx, []string{prefix + "*.s"})
	if err != nil {
		return nil, 0, false
	}
	if len(snaps) > 0 {
		upTo = min(upTo, at)
	}
	msgs = snaps
	for group := range slices.Chunk(snaps, maxMultiLast/changeSlots) {
		filters := make([]string, 0, len(group))
		for _, msg := range group {
			if id, _, ok := m.parseSubject(session, msg.Subject); ok {
				filters = append(filters, prefix+strconv.FormatUint(uint64(id), 10)+".c.*")
			}
		}
		if len(filters) == 0 {
			continue
		}
		changes, at, err := m.directLast(ctx, filters)
		if err != nil {
			return nil, 0, false
		}
		if len(changes) > 0 {
			upTo = min(upTo, at)
		}
		msgs = append(msgs, changes...)
	}
	return msgs, upTo, true
}

// msgGet is a request of the stream API's MSG.GET and DIRECT.GET.
type msgGet struct {
	LastFor   string   `json:"last_by_subj,omitempty"`
	MultiLast []string `json:"multi_last,omitempty"`
}

// directLast reads the last message of each subject matching filters with one direct
// get: the messages arrive one by one on an inbox, and a status message ends them (204,
// end of batch, which says up to which sequence the replica answered; 404, none). upTo
// is 0 when there was none.
func (m *Mirror) directLast(ctx context.Context, filters []string) (msgs []storedMsg, upTo uint64, err error) {
	req, err := json.Marshal(msgGet{MultiLast: filters})
	if err != nil {
		return nil, 0, err
	}
	inbox := nats.NewInbox()
	sub, err := m.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := m.nc.PublishRequest("$JS.API.DIRECT.GET."+subsStream(m.cfg.Cluster), inbox, req); err != nil {
		return nil, 0, err
	}
	for len(msgs) <= maxMultiLast {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, 0, err
		}
		switch msg.Header.Get("Status") {
		case "":
		case "204":
			upTo, err := strconv.ParseUint(msg.Header.Get("Nats-UpTo-Sequence"), 10, 64)
			if err != nil {
				return nil, 0, fmt.Errorf("mirror: direct get: up to sequence: %w", err)
			}
			return msgs, upTo, nil
		case "404":
			return nil, 0, nil
		default:
			return nil, 0, fmt.Errorf("mirror: direct get: %s %s", msg.Header.Get("Status"), msg.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(msg.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("mirror: direct get: sequence: %w", err)
		}
		at, err := time.Parse(time.RFC3339Nano, msg.Header.Get(jetstream.TimeStampHeaer))
		if err != nil {
			return nil, 0, fmt.Errorf("mirror: direct get: time stamp: %w", err)
		}
		msgs = append(msgs, storedMsg{Subject: msg.Header.Get(jetstream.SubjectHeader), Sequence: seq, Time: at, Data: msg.Data})
	}
	return nil, 0, errors.New("mirror: direct get: more messages than asked for")
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
	Subject  string    `json:"subject"`
	Sequence uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	Data     []byte    `json:"data"`
}

// replay applies a subscription's snapshot and the changes after it to the scratch
// engine, and returns the number of the last change applied. The change slots hold
// changes older than the snapshot too, which it skips; a change missing between the
// snapshot and the newest one is a gap.
func (m *Mirror) replay(scratch *subscription.Engine, s *storedSub) (uint64, error) {
	if s.snap == nil {
		return 0, errors.New("mirror: changes without a snapshot")
	}
	snap, err := m.openSub(s.snap)
	if err != nil {
		return 0, err
	}
	switch snap.kind {
	case msgDeleted:
		return 0, nil // it ended; the scratch engine never has it
	case msgChange:
		return 0, fmt.Errorf("mirror: %s: a change in place of a snapshot", s.snap.Subject)
	}
	if err := scratch.Apply(subscription.Change{Kind: subscription.ChangeCreated, Subscription: snap.rec.ID, Record: snap.rec}); err != nil {
		return 0, err
	}
	changes := make([]subMsg, 0, len(s.changes))
	for i := range s.changes {
		c, err := m.openSub(&s.changes[i])
		if err != nil {
			return 0, err
		}
		if c.kind != msgChange {
			return 0, fmt.Errorf("mirror: %s: a snapshot in place of a change", s.changes[i].Subject)
		}
		if c.n > snap.n {
			changes = append(changes, c)
		}
	}
	slices.SortFunc(changes, func(a, b subMsg) int { return cmp.Compare(a.n, b.n) })
	last := snap.n
	for _, c := range changes {
		if c.n != last+1 {
			return 0, fmt.Errorf("mirror: %s: change %d follows change %d", s.snap.Subject, c.n, last)
		}
		for _, ch := range c.changes {
			if err := scratch.Apply(ch); err != nil {
				return 0, err
			}
		}
		last = c.n
	}
	return last, nil
}

// openSub opens and decodes a message of <set>-subs.
func (m *Mirror) openSub(msg *storedMsg) (subMsg, error) {
	plain, err := m.open("subscription record", msg.Subject, msg.Data)
	if err != nil {
		return subMsg{}, err
	}
	sm, err := decodeSubMessage(plain)
	if err != nil {
		return subMsg{}, fmt.Errorf("mirror: %s: %w", msg.Subject, err)
	}
	return sm, nil
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
