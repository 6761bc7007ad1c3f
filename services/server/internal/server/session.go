package server

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// nonceLength is the length of the server nonces of CreateSession and ActivateSession
// (Part 4 §5.6.2: at least 32 bytes).
const nonceLength = 32

// session is one session (Part 4 §5.6). Its fields are guarded by sessions.mu.
type session struct {
	id        codec.NodeId
	authToken codec.NodeId
	name      string
	timeout   time.Duration
	// seen is when a request last named the session, as time since the table's base
	// (sessions.since): atomic, so that a channel's requests refresh it without the
	// table's lock (principalAt with a channelSession).
	seen atomic.Int64
	// epoch changes, under the table's lock, whenever the session's activation, channel
	// or user changes and when it ends: a channel's memory of the session (channelSession)
	// holds while the epoch it saw stays.
	epoch atomic.Uint64

	// channelID is the secure channel the session is bound to: the one that created it
	// until activation, then the one that last activated it.
	channelID  uint32
	clientCert *x509.Certificate // from CreateSession; nil for None
	nonce      []byte            // the last server nonce sent
	activated  bool
	principal  nodemgr.Principal

	// browse holds the continuation points of Browse, by their bytes.
	browse map[string]*continuation

	diag *sessionDiag // nil when diagnostics are off (diagnostics.go)
}

// continuation is the rest of a Browse result held for BrowseNext.
type continuation struct {
	refs []ua.ReferenceDescription
	max  int
}

// sessions is the server's session table, keyed by authentication token. It is safe for
// concurrent use.
type sessions struct {
	mu sync.Mutex // guards byToken and every session's fields
	// byToken holds the sessions by tokenKey of their authentication tokens.
	byToken map[uint64]*session
	max     int
	now     func() time.Time
	diag    *diagnostics // counts sessions; nil for a table made alone (tests)

	// failedOnce makes failed on first use, from the server's configuration
	// (Server.failedLogins); the lockout has its own lock.
	failedOnce sync.Once
	failed     *lockout

	// onEnd, when set before the server serves, is told of every session that ends
	// (closed, timed out, dropped) with the table locked: it must not block or call back
	// into the table. deleteSubscriptions is CloseSession's flag; a timeout leaves the
	// subscriptions to their lifetime (Part 4 §5.13.7: they may still be transferred).
	onEnd func(id codec.NodeId, deleteSubscriptions bool)

	// sweep ends idle sessions at their deadline (sweep.go): armed for sweepAt, no later
	// than the earliest deadline; nil before the first session. stopped is set by stop.
	sweep   *time.Timer
	sweepAt time.Time
	stopped bool
	// base is the origin of the sessions' seen times.
	base time.Time
}

func newSessions(max int, now func() time.Time) *sessions {
	return &sessions{byToken: make(map[uint64]*session), max: max, now: now, base: now()}
}

// since is now as a seen time.
func (t *sessions) since(now time.Time) int64 { return int64(now.Sub(t.base)) }

// lastSeen is when a request last named s.
func (t *sessions) lastSeen(s *session) time.Time {
	return t.base.Add(time.Duration(s.seen.Load()))
}

// tokenLength is the length of the opaque authentication tokens the server issues.
const tokenLength = 32

// tokenKey is the table key of an authentication token: its first 8 bytes, which the
// server draws at random and keeps unique. Every request names its session, and a
// 64-bit key hashes several times faster than the 32-byte NodeId; the token is compared
// in full once found. ok is false for a token the server cannot have issued.
func tokenKey(token codec.NodeId) (key uint64, ok bool) {
	if token.Namespace() != 0 || token.Type() != codec.IDOpaque {
		return 0, false
	}
	b := token.OpaqueID() // short enough for the compiler to copy it on the stack
	if len(b) != tokenLength {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

// findLocked returns the session of token, nil when there is none.
func (t *sessions) findLocked(token codec.NodeId) *session {
	k, ok := tokenKey(token)
	if !ok {
		return nil
	}
	if s := t.byToken[k]; s != nil && s.authToken == token {
		return s
	}
	return nil
}

// newTokenLocked draws an authentication token whose key no session has.
func (t *sessions) newTokenLocked() (codec.NodeId, uint64) {
	for {
		token := codec.NewOpaqueNodeId(0, randomBytes(tokenLength))
		k, _ := tokenKey(token)
		if t.byToken[k] == nil {
			return token, k
		}
	}
}

// randomBytes returns n bytes from crypto/rand.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}

// randomGuid returns a random (version 4) Guid.
func randomGuid() codec.Guid {
	b := randomBytes(16)
	var g codec.Guid
	g.Data1 = uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	g.Data2 = uint16(b[4])<<8 | uint16(b[5])
	g.Data3 = uint16(b[6])<<8&0x0fff | uint16(b[7]) | 0x4000
	copy(g.Data4[:], b[8:])
	g.Data4[0] = g.Data4[0]&0x3f | 0x80
	return g
}

// create adds a new, not yet activated session. It fails with BadTooManySessions when
// the table is full (after dropping expired sessions).
func (t *sessions) create(name string, timeout time.Duration, channelID uint32, cert *x509.Certificate) (sessionInfo, status.Code) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byToken) >= t.max {
		t.expireLocked()
		if len(t.byToken) >= t.max {
			return sessionInfo{}, status.BadTooManySessions
		}
	}
	token, key := t.newTokenLocked()
	s := &session{
		id:         codec.NewGuidNodeId(0, randomGuid()),
		authToken:  token,
		name:       name,
		timeout:    timeout,
		channelID:  channelID,
		clientCert: cert,
		nonce:      randomBytes(nonceLength),
		browse:     make(map[string]*continuation),
	}
	now := t.now()
	s.seen.Store(t.since(now))
	t.byToken[key] = s
	t.diag.sessionCreated(s, now)
	t.armLocked(now.Add(s.timeout))
	return s.info(), status.Good
}

// sessionInfo is a copy of the fields of a session that a service reads outside the lock.
type sessionInfo struct {
	id, authToken codec.NodeId
	channelID     uint32
	clientCert    *x509.Certificate
	nonce         []byte
	activated     bool
}

func (s *session) info() sessionInfo {
	return sessionInfo{id: s.id, authToken: s.authToken, channelID: s.channelID,
		clientCert: s.clientCert, nonce: s.nonce, activated: s.activated}
}

// snapshot returns a copy of the session of token, refreshing its timeout.
func (t *sessions) snapshot(token codec.NodeId) (sessionInfo, status.Code) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, code := t.lookupLocked(token)
	if code != status.Good {
		return sessionInfo{}, code
	}
	return s.info(), status.Good
}

// activate marks the session of token activated on channelID for principal and returns
// the new server nonce. An activated session moves to another channel only with the
// same user (BadIdentityChangeNotSupported otherwise).
func (t *sessions) activate(token codec.NodeId, channelID uint32, p nodemgr.Principal) ([]byte, status.Code) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, code := t.lookupLocked(token)
	if code != status.Good {
		return nil, code
	}
	// Moving an activated session to another channel keeps its user (Part 4 §5.6.3.1).
	if s.activated && s.channelID != channelID && (s.principal.Anonymous != p.Anonymous || s.principal.UserName != p.UserName || s.principal.Thumbprint != p.Thumbprint) {
		return nil, status.BadIdentityChangeNotSupported
	}
	s.activated = true
	s.channelID = channelID
	s.principal = p
	s.epoch.Add(1)
	s.nonce = randomBytes(nonceLength) // a fresh slice: earlier snapshots keep the old one
	return s.nonce, status.Good
}

// drop deletes the session of token without checks.
func (t *sessions) drop(token codec.NodeId) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.findLocked(token); s != nil {
		t.deleteLocked(s)
		t.diag.sessionEnded(s, endAborted)
		if t.onEnd != nil {
			t.onEnd(s.id, true)
		}
	}
}

// endLocked removes s from the table and tells onEnd.
func (t *sessions) endLocked(s *session, deleteSubscriptions bool) {
	t.deleteLocked(s)
	why := endClosed
	if !t.now().Before(t.lastSeen(s).Add(s.timeout)) {
		why = endTimedOut
	}
	t.diag.sessionEnded(s, why)
	if t.onEnd != nil {
		t.onEnd(s.id, deleteSubscriptions)
	}
}

// deleteLocked removes s from the table.
func (t *sessions) deleteLocked(s *session) {
	k, _ := tokenKey(s.authToken)
	delete(t.byToken, k)
	s.epoch.Add(1)
}

func (t *sessions) expireLocked() {
	now := t.now()
	for _, s := range t.byToken {
		if now.Sub(t.lastSeen(s)) > s.timeout {
			t.endLocked(s, false)
		}
	}
}

// lookupLocked finds the session of token and refreshes its timeout. An unknown or
// expired token is BadSessionIdInvalid.
func (t *sessions) lookupLocked(token codec.NodeId) (*session, status.Code) {
	return t.lookupAtLocked(token, t.now())
}

// lookupAtLocked is lookupLocked at time now.
func (t *sessions) lookupAtLocked(token codec.NodeId, now time.Time) (*session, status.Code) {
	s := t.findLocked(token)
	if s == nil {
		return nil, status.BadSessionIdInvalid
	}
	if now.Sub(t.lastSeen(s)) > s.timeout {
		t.endLocked(s, false)
		return nil, status.BadSessionIdInvalid
	}
	s.touch(now, t.since(now))
	return s, status.Good
}

// touch records that a request named s at now (at: now as the table's seen time), which
// restarts its timeout. Within a millisecond of the last refresh it leaves the times as
// they are: a store is a locked instruction, every request makes one, and a timeout of
// seconds needs no finer time.
func (s *session) touch(now time.Time, at int64) {
	if at-s.seen.Load() >= int64(time.Millisecond) {
		s.refresh(now, at)
	}
}

// refresh is touch's store, out of line so that touch inlines into every request's path.
func (s *session) refresh(now time.Time, at int64) {
	s.seen.Store(at)
	s.diag.touched(now)
}

// active runs fn under the table's lock with the activated session of token when it is
// bound to channelID, and returns fn's status. It fails with BadSessionIdInvalid for an
// unknown token, BadSessionNotActivated before ActivateSession and
// BadSecureChannelIdInvalid on another channel (Part 4 §5.6.3).
func (t *sessions) active(token codec.NodeId, channelID uint32, fn func(*session) status.Code) status.Code {
	return t.activeAt(token, channelID, t.now(), fn)
}

// activeAt is active at time now.
func (t *sessions) activeAt(token codec.NodeId, channelID uint32, now time.Time, fn func(*session) status.Code) status.Code {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, code := t.lookupAtLocked(token, now)
	if code != status.Good {
		return code
	}
	if !s.activated {
		return status.BadSessionNotActivated
	}
	if s.channelID != channelID {
		return status.BadSecureChannelIdInvalid
	}
	return fn(s)
}

// countersOf returns the service counters of the session of token, or nil when there is
// no such session or it is not described (diagnostics off).
func (t *sessions) countersOf(token codec.NodeId) *serviceCounters {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.findLocked(token); s != nil {
		return s.diag.serviceCounters()
	}
	return nil
}

// principalAt sets *p to who the activated session of token is, at time now, and
// returns the session's service counters (nil when diagnostics are off): one lookup for
// both, and the Principal copied once, into the caller's operation. cs, when not nil, is
// the memory of the channel the request was read on: a request naming the session it
// remembers is answered from there, and any other refills it.
func (t *sessions) principalAt(token codec.NodeId, channelID uint32, now time.Time, p *nodemgr.Principal, cs *channelSession) (*serviceCounters, status.Code) {
	if s := cs.remembered(token); s != nil {
		// The timeout checked in seen's own units: this runs for every Read.
		if at := t.since(now); time.Duration(at-s.seen.Load()) <= s.timeout {
			s.touch(now, at)
			*p = cs.principal
			return cs.counters, status.Good
		}
	}
	var c *serviceCounters
	code := t.activeAt(token, channelID, now, func(s *session) status.Code {
		*p, c = s.principal, s.diag.serviceCounters()
		if cs != nil {
			*cs = channelSession{token: token, s: s, epoch: s.epoch.Load(), principal: s.principal, counters: c}
		}
		return status.Good
	})
	if code != status.Good && cs != nil {
		*cs = channelSession{}
	}
	return c, code
}

// channelSession is a channel's memory of the session its requests named last, kept on
// the channel for its reading goroutine (uasc.ServerChannel.Local). While the session's
// epoch stays, the next request naming it is answered from here: no table lock, which
// every channel's goroutines would otherwise take for every request, and no map.
type channelSession struct {
	token     codec.NodeId
	s         *session
	epoch     uint64
	principal nodemgr.Principal
	counters  *serviceCounters
}

// remembered returns the session cs holds for token while its epoch stays, else nil; cs
// may be nil.
func (cs *channelSession) remembered(token codec.NodeId) *session {
	if cs == nil || cs.s == nil || cs.s.epoch.Load() != cs.epoch || token != cs.token {
		return nil
	}
	return cs.s
}

// principal returns who the activated session of token is.
func (t *sessions) principal(token codec.NodeId, channelID uint32) (nodemgr.Principal, status.Code) {
	var p nodemgr.Principal
	_, code := t.principalAt(token, channelID, t.now(), &p, nil)
	return p, code
}

// saveContinuationLocked holds refs for BrowseNext and returns the continuation point,
// or BadNoContinuationPoints when the session already holds max of them.
func (s *session) saveContinuationLocked(refs []ua.ReferenceDescription, perNode, max int) ([]byte, status.Code) {
	if len(s.browse) >= max {
		return nil, status.BadNoContinuationPoints
	}
	cp := randomBytes(16)
	s.browse[string(cp)] = &continuation{refs: refs, max: perNode}
	return cp, status.Good
}

// remove deletes the session of token, and its subscriptions when deleteSubscriptions.
func (t *sessions) remove(token codec.NodeId, channelID uint32, deleteSubscriptions bool) status.Code {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, code := t.lookupLocked(token)
	if code != status.Good {
		return code
	}
	if s.channelID != channelID {
		return status.BadSecureChannelIdInvalid
	}
	t.endLocked(s, deleteSubscriptions)
	return status.Good
}
