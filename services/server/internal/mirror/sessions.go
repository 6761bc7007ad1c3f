package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/session"
)

// envelope is a session as kept in <set>-sessions: the record, the server that holds it
// and the certificate of the server that created it.
type envelope struct {
	node    uint8
	creator []byte
	rec     session.Record
}

// envelopeVersion is the first byte of an encoded envelope.
const envelopeVersion = 1

func (v *envelope) encode() []byte {
	e := codec.NewEncoder(make([]byte, 0, 1024+len(v.creator)+len(v.rec.ClientCertificate)))
	e.Byte(envelopeVersion)
	e.Byte(v.node)
	e.ByteString(v.creator)
	v.rec.EncodeBinary(e)
	return e.Bytes()
}

func decodeEnvelope(b []byte) (envelope, error) {
	var v envelope
	d := codec.NewDecoder(b)
	if ver := d.Byte(); d.Err() == nil && ver != envelopeVersion {
		return v, fmt.Errorf("mirror: session record version %d: %w", ver, status.BadDecodingError)
	}
	v.node = d.Byte()
	v.creator = d.ByteString()
	v.rec.DecodeBinary(d)
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail(status.BadDecodingError)
	}
	return v, d.Err()
}

// hashOf is the key under which a token or a session id is kept: a hash, so that the
// names NATS shows (keys, subjects) give away no authentication token.
func hashOf(id codec.NodeId) string {
	e := codec.NewEncoder(make([]byte, 0, 64))
	e.NodeId(id)
	return hashHex(e.Bytes())
}

// hashHex is the key of b: the first half of its SHA-256, in hex.
func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// sessionSubject is the subject of the record of key in <set>-sessions.
func (m *Mirror) sessionSubject(key string) string {
	return "$KV." + m.cfg.Cluster + "-sessions." + key
}

// claim is a session this server is taking over: its revision, and the certificate of
// the server that created it.
type claim struct {
	rev     uint64
	creator []byte
}

// sessionChanged follows the session table (called with the table's lock held): a new
// session's record is written; an ended one's removed, unless it moved to another
// server. Activations are written by Activated, which waits for the write.
func (m *Mirror) sessionChanged(c *session.Change) {
	key := hashOf(c.Record.AuthenticationToken)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch c.Kind {
	case session.Created:
		if cl, ok := m.claiming[key]; ok {
			// Taken over (Claim): the record is in the bucket already.
			delete(m.claiming, key)
			m.takeovers.Add(1)
			m.owned[key] = &ownedSession{rec: c.Record, creator: cl.creator, rev: cl.rev, written: time.Now()}
			return
		}
		o := &ownedSession{rec: c.Record, creator: m.cfg.Certificate}
		m.owned[key] = o
		m.sw.put(op{session: key, own: o})
	case session.Activated:
		if o := m.owned[key]; o != nil {
			o.rec = c.Record
		}
	case session.Ended:
		o := m.owned[key]
		delete(m.owned, key)
		if o != nil && c.End == session.Moved {
			m.releases.Add(1)
		}
		if o != nil && c.End != session.Moved {
			m.sw.put(op{session: key, own: o, purge: true})
		}
	}
}

// ErrTakenOver is the error of an activation whose session another server of the set
// took over meanwhile: this server no longer holds it.
var ErrTakenOver = errors.New("mirror: another server took the session over")

// Activated writes the session of token after its activation, as a compare-and-swap on
// the revision this server last wrote or read: the server nonce it carries is then the
// one every server of the set checks the next ActivateSession against, and an
// ActivateSession replayed on any of them fails. ErrTakenOver when another server
// changed the record meanwhile; while the mirror is degraded the write is left to the
// catch-up, and Activated returns at once.
func (m *Mirror) Activated(ctx context.Context, token codec.NodeId) error {
	key := hashOf(token)
	m.mu.Lock()
	o, degraded := m.owned[key], m.degraded
	m.mu.Unlock()
	if o == nil {
		return nil
	}
	done := make(chan error, 1)
	m.sw.put(op{session: key, own: o, result: done})
	if degraded {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return nil // the writer goes on; a failure degrades the mirror
	case <-m.done:
		return errStopped
	}
}

// writeSessions writes the session ops of q in rounds: each round writes the first
// queued op of every record at once, pipelined, and the next op of a record waits for
// the next round, since each write is a compare-and-swap on the revision the last write
// of the record left. A failover brings many activations at once, each waiting for its
// write.
func (m *Mirror) writeSessions(q []op) {
	for len(q) > 0 {
		var round, later []op
		seen := make(map[string]bool, len(q))
		for _, o := range q {
			if seen[o.session] {
				later = append(later, o)
				continue
			}
			seen[o.session] = true
			round = append(round, o)
		}
		if !m.writeRound(round) {
			return
		}
		q = later
	}
	if m.nc.IsConnected() {
		m.caughtUp()
	}
}

// writeRound writes ops of distinct records at once and handles their outcomes; false
// when the mirror stopped meanwhile.
func (m *Mirror) writeRound(round []op) bool {
	futures := make([]jetstream.PubAckFuture, len(round))
	errs := make([]error, len(round))
	for i := range round {
		msg, opts := m.sessionMsg(&round[i])
		futures[i], errs[i] = m.js.PublishMsgAsync(msg, opts...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Timeout)
	defer cancel()
	for i := range round {
		o := &round[i]
		err := errs[i]
		if err == nil {
			var ack *jetstream.PubAck
			if ack, err = m.acked(ctx, futures[i]); errors.Is(err, errStopped) {
				return false
			}
			err = m.recordWritten(o, ack, err)
		}
		if o.result != nil {
			o.result <- err
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrTakenOver):
			m.release(o.own)
		default:
			m.errs.Add(1)
			m.setDegraded(err)
		}
	}
	return true
}

// sessionMsg is the message that writes (or purges) the record of o, a compare-and-swap
// on the revision this server last wrote or read.
func (m *Mirror) sessionMsg(o *op) (*nats.Msg, []jetstream.PublishOpt) {
	m.mu.Lock()
	rev, rec, creator := o.own.rev, o.own.rec, o.own.creator
	m.mu.Unlock()
	msg := &nats.Msg{Subject: m.sessionSubject(o.session)}
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(rev)}
	if o.purge {
		msg.Header = purgeHeader()
	} else {
		env := envelope{node: m.node, creator: creator, rec: rec}
		msg.Data = m.seal.seal(o.session, env.encode())
		opts = append(opts, jetstream.WithMsgTTL(rec.Timeout+sessionGrace))
	}
	return msg, opts
}

// recordWritten takes the outcome of o's write: its acknowledgement, or err.
func (m *Mirror) recordWritten(o *op, ack *jetstream.PubAck, err error) error {
	if err != nil {
		var api *jetstream.APIError
		if errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			if o.purge {
				return nil // someone else holds it now: theirs to end
			}
			return fmt.Errorf("%w: %v", ErrTakenOver, err)
		}
		return fmt.Errorf("mirror: writing session %s: %w", o.session, err)
	}
	m.mu.Lock()
	o.own.rev, o.own.written = ack.Sequence, time.Now()
	m.mu.Unlock()
	return nil
}

// release lets a session go that another server took over: the table ends it as Moved,
// and the engine forgets its subscriptions without ending them for the set.
func (m *Mirror) release(o *ownedSession) {
	m.mu.Lock()
	rec := o.rec
	m.mu.Unlock()
	m.log.Info("session taken over by another server of the set", "session", rec.SessionID)
	// Apply fails when the session is gone already: nothing left to release.
	_ = m.cfg.Sessions.Apply(&session.Change{Kind: session.Ended, End: session.Moved, Record: rec})
}

// Claimed is a session of the set read for a takeover.
type Claimed struct {
	Record session.Record
	// Creator is the certificate of the server that created the session: the client
	// may have signed the server nonce with it (Part 4 §5.6.3).
	Creator []byte
}

// ErrUnknown is the error of a Claim for a token no server of the set has.
var ErrUnknown = errors.New("mirror: no session of the set has this token")

// Claim reads the session of token from the set, for an ActivateSession on this server
// of a session another server made. The caller checks the activation against the record,
// adds the session to its table (session.Table.Apply, Created) and restores its
// subscriptions (Restore); its activation (Activated) then takes the record over, a
// compare-and-swap against the revision read here. ErrUnknown when no server has it.
func (m *Mirror) Claim(ctx context.Context, token codec.NodeId) (*Claimed, error) {
	if m.stopped.Load() {
		return nil, errStopped
	}
	key := hashOf(token)
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	entry, err := m.sessions.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, ErrUnknown
	}
	if err != nil {
		return nil, fmt.Errorf("mirror: reading session %s: %w", key, err)
	}
	plain, err := m.open("session record", key, entry.Value())
	if err != nil {
		return nil, err
	}
	env, err := decodeEnvelope(plain)
	if err != nil {
		return nil, err
	}
	if env.rec.AuthenticationToken != token {
		return nil, ErrUnknown
	}
	m.mu.Lock()
	m.claiming[key] = claim{rev: entry.Revision(), creator: env.creator}
	m.mu.Unlock()
	return &Claimed{Record: env.rec, Creator: env.creator}, nil
}

// Unclaim forgets a Claim that was not followed by the session's addition to the table.
func (m *Mirror) Unclaim(token codec.NodeId) {
	m.mu.Lock()
	delete(m.claiming, hashOf(token))
	m.mu.Unlock()
}

// watchSessions follows <set>-sessions: when another server writes a session this
// server holds, it took the session over, and this server lets it go.
func (m *Mirror) watchSessions() error {
	// The watch lives as long as the mirror, not as Start's context.
	ctx, cancel := context.WithCancel(context.Background())
	w, err := m.sessions.WatchAll(ctx, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		cancel()
		return fmt.Errorf("mirror: watching sessions: %w", err)
	}
	m.stops = append(m.stops, func() { _ = w.Stop(); cancel() })
	m.loops.Go(func() {
		for {
			select {
			case <-m.done:
				return
			case entry, ok := <-w.Updates():
				if !ok {
					return
				}
				if entry != nil {
					m.sessionWritten(entry)
				}
			}
		}
	})
	return nil
}

// sessionWritten handles one write of <set>-sessions.
func (m *Mirror) sessionWritten(entry jetstream.KeyValueEntry) {
	m.mu.Lock()
	o := m.owned[entry.Key()]
	m.mu.Unlock()
	if o == nil {
		return
	}
	plain, err := m.open("session record", entry.Key(), entry.Value())
	if err != nil {
		return
	}
	env, err := decodeEnvelope(plain)
	if err != nil || env.node == m.node {
		return
	}
	m.release(o)
}

// touch writes the records of the sessions held here whose TTL has run half its course
// again, so that a session lives in the set as long as it lives here.
func (m *Mirror) touch(now time.Time) {
	m.mu.Lock()
	var due []string
	for key, o := range m.owned {
		if o.rev != 0 && now.Sub(o.written) >= (o.rec.Timeout+sessionGrace)/2 {
			due = append(due, key)
			o.written = now // not again before this write is done
		}
	}
	owned := make([]*ownedSession, len(due))
	for i, key := range due {
		owned[i] = m.owned[key]
	}
	m.mu.Unlock()
	for i, key := range due {
		m.sw.put(op{session: key, own: owned[i]})
	}
}

// Creator returns the certificate of the server that created the session of token, when
// this server holds the session and another server created it; nil otherwise.
func (m *Mirror) Creator(token codec.NodeId) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o := m.owned[hashOf(token)]; o != nil && string(o.creator) != string(m.cfg.Certificate) {
		return o.creator
	}
	return nil
}
