package session

import (
	"cmp"
	"crypto/rand"
	"crypto/x509"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/owner"
	"uastack.dev/services/server/internal/telemetry"
)

// NonceLength is the length of the server nonces of CreateSession and ActivateSession
// (Part 4 §5.6.2: at least 32 bytes).
const NonceLength = 32

// tokenLength is the length of the opaque authentication tokens the table issues.
const tokenLength = 32

// Session is one session (Part 4 §5.6): its Record and the live machinery around it.
// Its fields are guarded by the table's lock but for the atomics.
type Session struct {
	t   *Table
	rec Record
	// cert is rec.ClientCertificate parsed; nil for None.
	cert *x509.Certificate
	// timeout is rec.Timeout, which never changes: read without the lock.
	timeout time.Duration
	// seen is when a request last named the session, as time since the table's base
	// (Table.since): atomic, so that a channel's requests refresh it without the table's
	// lock (PrincipalAt with a Memory).
	seen atomic.Int64
	// epoch changes, under the table's lock, whenever the session's activation, channel
	// or user changes and when it ends: a channel's Memory of the session holds while the
	// epoch it saw stays.
	epoch atomic.Uint64
	// browse holds the continuation points of Browse, by their bytes.
	browse map[string]*continuation

	// owner is who holds the session's share of the table (owners.go); created is when
	// the session was made, as a seen time. older and newer link the owner's sessions
	// nobody has activated yet, in the order they were created.
	owner        owner.Owner
	created      int64
	older, newer *Session
}

// LastSeen is when a request last named the session (ClientLastContactTime). It is safe
// for concurrent use.
func (s *Session) LastSeen() time.Time { return s.t.base.Add(time.Duration(s.seen.Load())) }

// Table holds the sessions of a server by authentication token. It is safe for
// concurrent use.
type Table struct {
	mu sync.Mutex // guards byToken, observers, the sweep's fields, the shares and every Session's fields
	// byToken holds the sessions by the TokenKey of their authentication tokens.
	byToken   map[uint64]*Session
	max       int
	now       func() time.Time
	observers []func(*Change)

	// The shares (owners.go): perOwner and unactivated are Limits.MaxPerOwner and
	// Limits.UnactivatedTimeout; owners holds what each owner holds.
	perOwner    int
	unactivated time.Duration
	owners      map[owner.Owner]*holding

	// sweep ends idle sessions at their deadline (sweep.go): armed for sweepAt, no later
	// than the earliest deadline; nil before the first session. stopped is set by Stop.
	sweep   *time.Timer
	sweepAt time.Time
	stopped bool
	// base is the origin of the sessions' seen times.
	base time.Time
	// panics is told of an observer or a sweep that panicked (SetPanics).
	panics *telemetry.Panics
}

// New returns a table of at most max sessions on the clock now, without shares: as
// NewLimited with Limits{MaxSessions: max}.
func New(max int, now func() time.Time) *Table {
	return NewLimited(Limits{MaxSessions: max}, now)
}

// NewLimited returns a table bounded by l on the clock now.
func NewLimited(l Limits, now func() time.Time) *Table {
	return &Table{byToken: make(map[uint64]*Session), max: l.MaxSessions, now: now, base: now(),
		perOwner: l.MaxPerOwner, unactivated: l.UnactivatedTimeout, owners: make(map[owner.Owner]*holding)}
}

// SetPanics has the table report to p the panics it recovers from: an observer that
// panics (telemetry.PlaceObserver; the other observers get the change) and a sweep
// (telemetry.PlaceSweeper; the sweep is armed again). Call it before serving.
func (t *Table) SetPanics(p *telemetry.Panics) { t.panics = p }

// since is now as a seen time.
func (t *Table) since(now time.Time) int64 { return int64(now.Sub(t.base)) }

// TokenKey is the table key of an authentication token: its first 8 bytes, which the
// table draws at random and keeps unique. Every request names its session, and a 64-bit
// key hashes several times faster than the 32-byte NodeId; the token is compared in full
// once found. ok is false for a token the table cannot have issued.
func TokenKey(token codec.NodeId) (key uint64, ok bool) {
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
func (t *Table) findLocked(token codec.NodeId) *Session {
	k, ok := TokenKey(token)
	if !ok {
		return nil
	}
	if s := t.byToken[k]; s != nil && s.rec.AuthenticationToken == token {
		return s
	}
	return nil
}

// newTokenLocked draws an authentication token whose key no session has.
func (t *Table) newTokenLocked() (codec.NodeId, uint64) {
	for {
		token := codec.NewOpaqueNodeId(0, RandomBytes(tokenLength))
		k, _ := TokenKey(token)
		if t.byToken[k] == nil {
			return token, k
		}
	}
}

// RandomBytes returns n bytes from crypto/rand.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}

// randomGuid returns a random (version 4) Guid.
func randomGuid() codec.Guid {
	b := RandomBytes(16)
	var g codec.Guid
	g.Data1 = uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	g.Data2 = uint16(b[4])<<8 | uint16(b[5])
	g.Data3 = uint16(b[6])<<8&0x0fff | uint16(b[7]) | 0x4000
	copy(g.Data4[:], b[8:])
	g.Data4[0] = g.Data4[0]&0x3f | 0x80
	return g
}

// Request is what CreateSession asks for, as the server revised it.
type Request struct {
	Name                   string
	ClientDescription      ua.ApplicationDescription
	ServerURI              string
	EndpointURL            string
	MaxResponseMessageSize uint32
	Timeout                time.Duration
	ChannelID              uint32
	// ClientCertificate is the channel's client certificate, validated when the channel
	// opened; nil for None.
	ClientCertificate *x509.Certificate
	// Owner holds the session's share of the table; the zero Owner is the application of
	// ClientCertificate when it names one, the channel otherwise (owners.go).
	Owner owner.Owner
}

// Create adds a new, not yet activated session. It fails with BadTooManySessions when
// the owner holds its share of the table, or when the table is full of sessions that
// are activated or within their timeout: a full table first gives up the oldest session
// nobody has activated (admitLocked).
func (t *Table) Create(r Request) (Record, status.Code) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := r.Owner
	if o.IsZero() {
		o = ownerOf(r.ChannelID, false, r.ClientCertificate, codec.NodeId{})
	}
	if code := t.admitLocked(o); code != status.Good {
		return Record{}, code
	}
	token, key := t.newTokenLocked()
	now := t.now()
	rec := Record{
		SessionID:              codec.NewGuidNodeId(0, randomGuid()),
		AuthenticationToken:    token,
		Name:                   r.Name,
		ClientDescription:      r.ClientDescription,
		ServerURI:              r.ServerURI,
		EndpointURL:            r.EndpointURL,
		MaxResponseMessageSize: r.MaxResponseMessageSize,
		Timeout:                r.Timeout,
		ServerNonce:            RandomBytes(NonceLength),
		ChannelID:              r.ChannelID,
		CreatedAt:              codec.DateTimeOf(now),
	}
	if r.ClientCertificate != nil {
		rec.ClientCertificate = r.ClientCertificate.Raw
	}
	s := t.newSessionLocked(rec, r.ClientCertificate)
	t.byToken[key] = s
	t.holdLocked(s, o)
	t.armLocked(t.deadlineLocked(s))
	t.changedLocked(s, Created, 0, false)
	return s.rec, status.Good
}

// newSessionLocked returns a session of rec, seen now; cert, when not nil, is
// rec.ClientCertificate parsed already.
func (t *Table) newSessionLocked(rec Record, cert *x509.Certificate) *Session {
	s := &Session{t: t, cert: cert, timeout: rec.Timeout, browse: make(map[string]*continuation)}
	s.setRecordLocked(rec)
	s.created = t.since(t.now())
	s.seen.Store(s.created)
	return s
}

// setRecordLocked makes rec the session's record, parsing its certificate when it
// changed. The timeout stays the one the session was created with.
func (s *Session) setRecordLocked(rec Record) {
	rec.Timeout = s.timeout
	if s.cert == nil || string(s.cert.Raw) != string(rec.ClientCertificate) {
		s.cert = nil
		if rec.ClientCertificate != nil {
			s.cert, _ = x509.ParseCertificate(rec.ClientCertificate)
		}
	}
	s.rec = rec
}

// Lookup returns a copy of the session of token and its parsed client certificate,
// refreshing its timeout.
func (t *Table) Lookup(token codec.NodeId) (Record, *x509.Certificate, status.Code) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, code := t.lookupLocked(token)
	if code != status.Good {
		return Record{}, nil, code
	}
	return s.rec, s.cert, status.Good
}

// Activation is what an ActivateSession sets besides the user.
type Activation struct {
	SecurityPolicyURI string
	SecurityMode      ua.MessageSecurityMode
	LocaleIDs         []string
}

// Activate marks the session of token activated on channelID for p and returns the new
// server nonce. An activated session moves to another channel only with the same user
// (BadIdentityChangeNotSupported otherwise, Part 4 §5.6.3.1).
func (t *Table) Activate(token codec.NodeId, channelID uint32, p nodemgr.Principal, a Activation) ([]byte, status.Code) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, code := t.lookupLocked(token)
	if code != status.Good {
		return nil, code
	}
	r := &s.rec
	if r.Activated && r.ChannelID != channelID && (r.Identity.Anonymous != p.Anonymous || r.Identity.UserName != p.UserName || r.Identity.Thumbprint != p.Thumbprint) {
		return nil, status.BadIdentityChangeNotSupported
	}
	if !r.Activated {
		r.Activated = true
		t.activatedLocked(s)
	}
	r.ChannelID = channelID
	r.Identity = p
	r.SecurityPolicyURI, r.SecurityMode = a.SecurityPolicyURI, a.SecurityMode
	r.LocaleIDs = slices.Clone(a.LocaleIDs)
	r.ServerNonce = RandomBytes(NonceLength) // a fresh slice: earlier copies keep the old one
	s.epoch.Add(1)
	t.changedLocked(s, Activated, 0, false)
	return r.ServerNonce, status.Good
}

// Abort ends the session of token without checks, as when CreateSession failed after
// making it.
func (t *Table) Abort(token codec.NodeId) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.findLocked(token); s != nil {
		t.deleteLocked(s)
		t.changedLocked(s, Ended, Aborted, true)
	}
}

// endLocked removes s from the table and tells the observers.
func (t *Table) endLocked(s *Session, deleteSubscriptions bool) {
	t.deleteLocked(s)
	why := Closed
	if !t.now().Before(t.deadlineLocked(s)) {
		why = TimedOut
	}
	t.changedLocked(s, Ended, why, deleteSubscriptions)
}

// deleteLocked removes s from the table.
func (t *Table) deleteLocked(s *Session) {
	k, _ := TokenKey(s.rec.AuthenticationToken)
	delete(t.byToken, k)
	t.releaseLocked(s)
	s.epoch.Add(1)
}

// deadlineLocked is when s ends unless a request names it first: its timeout after the
// last request, and for a session not activated yet no later than
// Limits.UnactivatedTimeout after its creation, which requests do not move.
func (t *Table) deadlineLocked(s *Session) time.Time {
	d := s.LastSeen().Add(s.timeout)
	if !s.rec.Activated && t.unactivated > 0 {
		if u := t.base.Add(time.Duration(s.created) + t.unactivated); u.Before(d) {
			return u
		}
	}
	return d
}

// expireLocked ends every session past its deadline.
func (t *Table) expireLocked() {
	now := t.now()
	for _, s := range t.byToken {
		if now.After(t.deadlineLocked(s)) {
			t.endLocked(s, false)
		}
	}
}

// lookupLocked finds the session of token and refreshes its timeout. An unknown or
// expired token is BadSessionIdInvalid.
func (t *Table) lookupLocked(token codec.NodeId) (*Session, status.Code) {
	return t.lookupAtLocked(token, t.now())
}

// lookupAtLocked is lookupLocked at time now.
func (t *Table) lookupAtLocked(token codec.NodeId, now time.Time) (*Session, status.Code) {
	s := t.findLocked(token)
	if s == nil {
		return nil, status.BadSessionIdInvalid
	}
	if now.After(t.deadlineLocked(s)) {
		t.endLocked(s, false)
		return nil, status.BadSessionIdInvalid
	}
	s.touch(t.since(now))
	return s, status.Good
}

// touch records that a request named s at the seen time at, which restarts its timeout.
// Within a millisecond of the last refresh it leaves the time as it is: a store is a
// locked instruction, every request makes one, and a timeout of seconds needs no finer
// time.
func (s *Session) touch(at int64) {
	if at-s.seen.Load() >= int64(time.Millisecond) {
		s.seen.Store(at)
	}
}

// Active runs fn under the table's lock with the activated session of token when it is
// bound to channelID, and returns fn's status. It fails with BadSessionIdInvalid for an
// unknown token, BadSessionNotActivated before ActivateSession and
// BadSecureChannelIdInvalid on another channel (Part 4 §5.6.3). fn must not call the
// table.
func (t *Table) Active(token codec.NodeId, channelID uint32, fn func(*Session) status.Code) status.Code {
	return t.activeAt(token, channelID, t.now(), fn)
}

// activeAt is Active at time now.
func (t *Table) activeAt(token codec.NodeId, channelID uint32, now time.Time, fn func(*Session) status.Code) status.Code {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, code := t.lookupAtLocked(token, now)
	if code != status.Good {
		return code
	}
	if !s.rec.Activated {
		return status.BadSessionNotActivated
	}
	if s.rec.ChannelID != channelID {
		return status.BadSecureChannelIdInvalid
	}
	return fn(s)
}

// Principal returns who the activated session of token is, with the checks of Active.
func (t *Table) Principal(token codec.NodeId, channelID uint32) (nodemgr.Principal, status.Code) {
	var m Memory
	p, code := t.PrincipalAt(token, channelID, t.now(), &m)
	if code != status.Good {
		return nodemgr.Principal{}, code
	}
	return *p, status.Good
}

// Close ends the session of token (CloseSession), and its subscriptions when
// deleteSubscriptions. The session must be bound to channelID.
func (t *Table) Close(token codec.NodeId, channelID uint32, deleteSubscriptions bool) status.Code {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, code := t.lookupLocked(token)
	if code != status.Good {
		return code
	}
	if s.rec.ChannelID != channelID {
		return status.BadSecureChannelIdInvalid
	}
	t.endLocked(s, deleteSubscriptions)
	return status.Good
}

// Count returns the number of sessions in the table.
func (t *Table) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byToken)
}

// Records returns a copy of every session's record, oldest first (then by SessionID):
// the table's state, as a replay of its changes rebuilds it.
func (t *Table) Records() []Record {
	t.mu.Lock()
	out := make([]Record, 0, len(t.byToken))
	for _, s := range t.byToken {
		out = append(out, s.rec)
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Record) int {
		if c := cmp.Compare(a.CreatedAt, b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.SessionID.String(), b.SessionID.String())
	})
	return out
}
