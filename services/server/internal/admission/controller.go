package admission

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
)

// Config is what a Controller is built from: the server's limits.* settings.
type Config struct {
	Profile Profile
	// ConnectionsPerSecond and ConnectionBurst are the token bucket of new connections
	// (limits.connectionsPerSecond, limits.connectionBurst); a rate of 0 admits any
	// rate.
	ConnectionsPerSecond float64
	ConnectionBurst      int
	// MaxChannelCount is the listener's connection cap (limits.maxChannelCount); the
	// connection stage carves its reserves out of it.
	MaxChannelCount int
	// MaxConnectionsPerSource bounds the connections of one source (an IPv4 address or
	// an IPv6 /64); 0 is no bound. Not applied with SharedOnly.
	MaxConnectionsPerSource int
	// MaxConcurrentSessionEstablishment bounds the CreateSession and ActivateSession
	// requests in progress; the stage carves its reserves out of it.
	MaxConcurrentSessionEstablishment int
	// MaxQueuedRequestCount is the shared capacity of the request queue; its reserves
	// come on top.
	MaxQueuedRequestCount int
	// MaxParkedRequestCount is the shared capacity of the requests handed to node
	// managers; its reserves come on top.
	MaxParkedRequestCount int
	// PasswordChecksPerSecond and PasswordCheckBurst meter the UserName logins of one
	// source; a rate of 0 does not meter.
	PasswordChecksPerSecond float64
	PasswordCheckBurst      int
	// MaxTrackedOwners bounds the owners each stage and the password meter track.
	MaxTrackedOwners int
	// Trusted are the trusted owners (TrustedReservations only).
	Trusted []TrustedOwner
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rejected, when set, hears of every refusal. It runs on the refusing goroutine
	// (the accept loop, a channel's), so it must not block.
	Rejected func(Rejection)
}

// TrustedOwner is a configured owner with reserved capacity and a weight
// (limits.trustedOwners). Exactly one of ApplicationURI, Thumbprint and Address names
// it. A certificate names it only once the channel has verified it, so ApplicationURI
// and Thumbprint apply from session establishment on; Address from the connection on.
type TrustedOwner struct {
	Name string
	// ApplicationURI matches the URI in the subjectAltName of the channel's client
	// certificate.
	ApplicationURI string
	// Thumbprint matches the channel's client certificate (SHA-1, hex, any case).
	Thumbprint string
	// Address matches the peer's address.
	Address netip.Prefix
	// Weight is the owner's turns in the request queue against an ordinary owner's
	// one; 0 means 1.
	Weight int
	// Reserved is what the owner has reserved at each stage (connections, session
	// establishments, queued and parked requests); 0 means 1.
	Reserved int
}

// Rejection is one refusal, as Config.Rejected hears of it.
type Rejection struct {
	Stage Stage
	// Reason is why the stage refused; Capacity for a metered refusal.
	Reason Reason
	// Metered says that a rate refused, not the stage's ledger: the connection rate
	// (StageConnection) or the password checks of a source (StageSession).
	Metered bool
	Class   Class
	Owner   Owner
}

// Stats is a snapshot of the admission counters, for a metrics layer.
type Stats struct {
	Profile Profile
	// Stages are the ledgers' snapshots, by Stage.
	Stages [StageCount]StageStats
	// ConnectionsRateLimited counts the connections refused by the connection rate.
	ConnectionsRateLimited uint64
	// PasswordChecksMetered counts the UserName logins refused by the password meter.
	PasswordChecksMetered uint64
	// LiveSources is the number of sources holding an activated session (whose new
	// connections are Reconnect).
	LiveSources int
}

// Controller applies the admission policy of a server at every stage. Its methods are
// safe for concurrent use.
type Controller struct {
	profile  Profile
	now      func() time.Time
	rejected func(Rejection)
	ledgers  [StageCount]*Ledger
	trusted  []TrustedOwner
	// thumbprints says whether some trusted owner is named by thumbprint, so that a
	// channel's certificate is hashed only then.
	thumbprints bool
	passwords   *Meter // nil: not metered

	rateMu sync.Mutex // guards rate, protectedRate, trustedRate
	// rate is the shared bucket of new connections, nil without a rate limit;
	// protectedRate the bootstrap and reconnect buckets and trustedRate one per trusted
	// owner (Balanced, TrustedReservations).
	rate          *Bucket
	protectedRate [classCount]Bucket
	trustedRate   []Bucket

	mu sync.Mutex // guards sessions, live
	// sessions holds the activated sessions by token key, with the source that last
	// activated each; live counts them per source (by Owner.Key).
	sessions map[uint64]Owner
	live     map[uint64]int

	rateLimited, metered atomic.Uint64
}

// carve is the reserve of each protected class carved out of a stage of total units
// (the connections, the session establishments): a sixteenth, none below 8 units.
func carve(total int) int {
	if total < 8 {
		return 0
	}
	return max(total/16, 1)
}

// onTop is the bootstrap reserve added on top of a stage whose configured capacity is
// what one client may use alone (the queued and the parked requests): a sixteenth, at
// least 1. The fair-share headroom comes on top as well.
func onTop(capacity int) int { return max(capacity/16, 1) }

// New checks cfg and returns its Controller. An error names the setting to change.
func New(cfg Config) (*Controller, error) {
	c := &Controller{
		profile:  cfg.Profile,
		now:      cfg.Now,
		rejected: cfg.Rejected,
		sessions: make(map[uint64]Owner),
		live:     make(map[uint64]int),
	}
	if c.now == nil {
		c.now = time.Now
	}
	if cfg.Profile > TrustedReservations {
		return nil, fmt.Errorf("limits.isolationProfile: unknown profile %d", cfg.Profile)
	}
	switch {
	case cfg.Profile == TrustedReservations && len(cfg.Trusted) == 0:
		return nil, errors.New("limits.trustedOwners: profile TrustedReservations needs at least one trusted owner")
	case cfg.Profile != TrustedReservations && len(cfg.Trusted) > 0:
		return nil, errors.New("limits.trustedOwners: trusted owners need profile TrustedReservations")
	}
	reserved := make([]int, len(cfg.Trusted))
	for i, t := range cfg.Trusted {
		t.Thumbprint = strings.ToUpper(t.Thumbprint)
		t.Weight, t.Reserved = max(t.Weight, 1), max(t.Reserved, 1)
		c.trusted = append(c.trusted, t)
		c.thumbprints = c.thumbprints || t.Thumbprint != ""
		reserved[i] = t.Reserved
	}
	sumReserved := 0
	for _, r := range reserved {
		sumReserved += r
	}
	owners := cfg.Profile.owners()
	carved := func(stage Stage, key string, total, ownerLimit int) error {
		lc := LedgerConfig{Stage: stage, Shared: total, Owners: owners, OwnerLimit: ownerLimit,
			MaxOwners: cfg.MaxTrackedOwners, Trusted: reserved, Now: c.now, Rejected: c.rejected}
		if cfg.Profile.reserves() {
			lc.Bootstrap, lc.Reconnect = carve(total), carve(total)
			lc.Shared = total - lc.Bootstrap - lc.Reconnect - sumReserved
		}
		if lc.Shared < 1 {
			return fmt.Errorf("%s: %d leaves no shared capacity beside the reserves of profile %s (%d bootstrap, %d reconnect, %d trusted)",
				key, total, cfg.Profile, lc.Bootstrap, lc.Reconnect, sumReserved)
		}
		c.ledgers[stage] = NewLedger(lc)
		return nil
	}
	onTopOf := func(stage Stage, capacity int) {
		lc := LedgerConfig{Stage: stage, Shared: capacity, Owners: owners,
			MaxOwners: cfg.MaxTrackedOwners, Trusted: reserved, Now: c.now, Rejected: c.rejected}
		if owners {
			// The fair-share headroom comes on top too: one owner alone still has
			// the configured capacity.
			lc.Headroom = headroomOf(capacity)
			lc.Shared += lc.Headroom
		}
		if cfg.Profile.reserves() {
			lc.Bootstrap = onTop(capacity)
		}
		c.ledgers[stage] = NewLedger(lc)
	}
	if err := carved(StageConnection, "limits.maxChannelCount", cfg.MaxChannelCount, cfg.MaxConnectionsPerSource); err != nil {
		return nil, err
	}
	if err := carved(StageSession, "limits.maxConcurrentSessionEstablishment", cfg.MaxConcurrentSessionEstablishment, 0); err != nil {
		return nil, err
	}
	onTopOf(StageQueue, cfg.MaxQueuedRequestCount)
	onTopOf(StageParked, cfg.MaxParkedRequestCount)
	if err := c.buildRate(cfg); err != nil {
		return nil, err
	}
	if cfg.PasswordChecksPerSecond > 0 {
		c.passwords = NewMeter(cfg.PasswordChecksPerSecond, max(cfg.PasswordCheckBurst, 1), cfg.MaxTrackedOwners, c.now)
	}
	return c, nil
}

// buildRate builds the connection buckets: with reserves, a twentieth of the rate and
// of the burst (at least one token each) goes to the bootstrap and the reconnect
// bucket and to each trusted owner's, the rest to the shared bucket.
func (c *Controller) buildRate(cfg Config) error {
	if cfg.ConnectionsPerSecond <= 0 {
		return nil
	}
	now := c.now()
	rate, burst := cfg.ConnectionsPerSecond, max(cfg.ConnectionBurst, 1)
	if cfg.Profile.reserves() {
		pr, pb := max(rate/20, 1), max(burst/20, 1)
		buckets := float64(2 + len(c.trusted))
		if rate-buckets*pr < 1 || burst-int(buckets)*pb < 1 {
			return fmt.Errorf("limits.connectionsPerSecond and limits.connectionBurst: %g and %d leave no shared rate beside the %d reserved buckets of profile %s (each %g/s, burst %d); raise them or set the rate to 0 (no limit)",
				rate, burst, int(buckets), cfg.Profile, pr, pb)
		}
		c.protectedRate[Bootstrap] = NewBucket(pr, pb, now)
		c.protectedRate[Reconnect] = NewBucket(pr, pb, now)
		for range c.trusted {
			c.trustedRate = append(c.trustedRate, NewBucket(pr, pb, now))
		}
		rate -= buckets * pr
		burst -= int(buckets) * pb
	}
	b := NewBucket(rate, burst, now)
	c.rate = &b
	return nil
}

// Profile returns the isolation profile.
func (c *Controller) Profile() Profile { return c.profile }

// Ledger returns the ledger of stage s.
func (c *Controller) Ledger(s Stage) *Ledger { return c.ledgers[s] }

// AdmitConnection decides on a connection the listener accepted from remote, before
// anything is read from it (uasc.ServerConfig.Admit): the connection stage's ledger
// (the per-source cap, the reserves), then the connection rate. A source that holds an
// activated session reconnects; one without a connection bootstraps. It returns
// BadTcpNotEnoughResources when the ledger refuses and BadTcpServerTooBusy when the
// rate does (Part 6 §7.1.5), and release for the end of an admitted connection.
func (c *Controller) AdmitConnection(remote net.Addr) (release func(), code status.Code) {
	src := SourceOf(remote)
	o := src
	if i, ok := c.trustedAddress(remote); ok {
		o = Owner{Kind: OwnerTrusted, ID: uint64(i)}
	}
	class := Ordinary
	if c.profile.reserves() && c.holdsLiveSession(src) {
		class = Reconnect
	}
	l := c.ledgers[StageConnection]
	ch, _, ok := l.Acquire(o, class, 1)
	if !ok {
		return nil, status.BadTcpNotEnoughResources
	}
	if !c.takeConnectionToken(o, ch.Class()) {
		l.Release(ch)
		c.rateLimited.Add(1)
		if c.rejected != nil {
			c.rejected(Rejection{Stage: StageConnection, Reason: Capacity, Metered: true, Class: ch.Class(), Owner: o})
		}
		return nil, status.BadTcpServerTooBusy
	}
	return func() { l.Release(ch) }, status.Good
}

// takeConnectionToken takes a token of the connection rate: from the shared bucket, or
// when it is empty from the bucket of the connection's class or trusted owner.
func (c *Controller) takeConnectionToken(o Owner, class Class) bool {
	if c.rate == nil {
		return true
	}
	c.rateMu.Lock()
	defer c.rateMu.Unlock()
	now := c.now()
	if c.rate.Take(now) {
		return true
	}
	if !c.profile.reserves() {
		return false
	}
	if o.Kind == OwnerTrusted && c.trustedRate[o.ID].Take(now) {
		return true
	}
	return (class == Bootstrap || class == Reconnect) && c.protectedRate[class].Take(now)
}

// trustedAddress returns the index of the first trusted owner named by an address that
// holds remote's.
func (c *Controller) trustedAddress(remote net.Addr) (int, bool) {
	if len(c.trusted) == 0 {
		return 0, false
	}
	ip, ok := ipOf(remote)
	if !ok {
		return 0, false
	}
	for i, t := range c.trusted {
		if t.Address.IsValid() && t.Address.Contains(ip) {
			return i, true
		}
	}
	return 0, false
}

// HasTrusted reports whether trusted owners are configured.
func (c *Controller) HasTrusted() bool { return len(c.trusted) > 0 }

// Trusted returns the trusted owner of a channel from remote with the verified client
// certificate cert (nil over None), if one is configured: by thumbprint, then by the
// certificate's ApplicationUri, then by address. The caller keeps the answer for the
// channel: a thumbprint is a hash of the certificate.
func (c *Controller) Trusted(remote net.Addr, cert *x509.Certificate) (Owner, bool) {
	if len(c.trusted) == 0 {
		return Owner{}, false
	}
	if cert != nil {
		var thumb string
		if c.thumbprints {
			thumb = pki.Thumbprint(cert)
		}
		for i, t := range c.trusted {
			if t.Thumbprint != "" && t.Thumbprint == thumb || t.ApplicationURI != "" && hasURI(cert, t.ApplicationURI) {
				return Owner{Kind: OwnerTrusted, ID: uint64(i)}, true
			}
		}
	}
	if i, ok := c.trustedAddress(remote); ok {
		return Owner{Kind: OwnerTrusted, ID: uint64(i)}, true
	}
	return Owner{}, false
}

// hasURI reports whether cert names uri in its subjectAltName.
func hasURI(cert *x509.Certificate, uri string) bool {
	for _, u := range cert.URIs {
		if u.String() == uri {
			return true
		}
	}
	return false
}

// ChannelOwner returns who a channel's requests are charged to before they name an
// activated session: its trusted owner, else the verified client application, else
// the source address.
func (c *Controller) ChannelOwner(remote net.Addr, cert *x509.Certificate) Owner {
	if o, ok := c.Trusted(remote, cert); ok {
		return o
	}
	if cert != nil {
		return ApplicationOf(cert)
	}
	return SourceOf(remote)
}

// Weight returns the turns of owner o in the request queue against an ordinary owner's
// one.
func (c *Controller) Weight(o Owner) int {
	if o.Kind == OwnerTrusted && o.ID < uint64(len(c.trusted)) {
		return c.trusted[o.ID].Weight
	}
	return 1
}

// SessionActivated records that the session whose token has the table key key was
// activated by a peer at remote: the session's ActivateSession requests, and the
// source's connections, are Reconnect from now on.
func (c *Controller) SessionActivated(key uint64, remote net.Addr) {
	src := SourceOf(remote)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.sessions[key]; ok {
		if old == src {
			return
		}
		c.dropLiveLocked(old)
	}
	c.sessions[key] = src
	c.live[src.Key()]++
}

// SessionEnded forgets the session of table key key.
func (c *Controller) SessionEnded(key uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if src, ok := c.sessions[key]; ok {
		delete(c.sessions, key)
		c.dropLiveLocked(src)
	}
}

func (c *Controller) dropLiveLocked(src Owner) {
	if k := src.Key(); c.live[k] <= 1 {
		delete(c.live, k)
	} else {
		c.live[k]--
	}
}

// Reconnecting reports whether the session of table key key was activated: an
// ActivateSession naming it is a client coming back to it (Part 4 §5.6.3: a session
// moves to a new channel by activation).
func (c *Controller) Reconnecting(key uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.sessions[key]
	return ok
}

// holdsLiveSession reports whether source src holds an activated session.
func (c *Controller) holdsLiveSession(src Owner) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live[src.Key()] > 0
}

// MeterPassword takes a token of the password checks of the source at remote, before a
// UserName identity token is decrypted and its password hashed. When there is none it
// returns how long until there is one (the RetryAfterMs hint).
func (c *Controller) MeterPassword(remote net.Addr) (retryAfter time.Duration, ok bool) {
	if c.passwords == nil {
		return 0, true
	}
	src := SourceOf(remote)
	wait, reason, ok := c.passwords.Take(src)
	if ok {
		return 0, true
	}
	c.metered.Add(1)
	if c.rejected != nil {
		c.rejected(Rejection{Stage: StageSession, Reason: reason, Metered: true, Owner: src})
	}
	return clampRetryAfter(wait), false
}

// Stats returns a snapshot of the counters.
func (c *Controller) Stats() Stats {
	s := Stats{Profile: c.profile, ConnectionsRateLimited: c.rateLimited.Load(), PasswordChecksMetered: c.metered.Load()}
	for i, l := range c.ledgers {
		s.Stages[i] = l.Stats()
	}
	c.mu.Lock()
	s.LiveSources = len(c.live)
	c.mu.Unlock()
	return s
}
