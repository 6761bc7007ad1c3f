// Package diagnostics keeps the server's diagnostics (Part 5 §6.3.3: ServerDiagnostics,
// the session and subscription diagnostics arrays) and its metrics. It observes the
// session table's change stream and the answers the request pipeline sends, and builds
// the diagnostics values when a client reads them, at most once a second.
package diagnostics

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/session"
	"uastack.dev/services/server/internal/subscription"
)

// interval is how long a diagnostics snapshot answers reads before a read rebuilds it: a
// burst of reads, or of session creates between reads, costs one rebuild.
const interval = time.Second

// Diagnostics keeps the counters behind the Server object's ServerDiagnostics (Part 5
// §6.3.3) and builds its values when they are read (Install). Summary counters are atomics
// bumped where the events happen; sessions are described only when enabled
// (observability.diagnosticsEnabled). The methods are safe for concurrent use.
type Diagnostics struct {
	enabled  bool
	now      func() time.Time
	interval time.Duration
	subs     *subscription.Engine

	currentSessions          atomic.Int64
	cumulatedSessions        atomic.Uint32
	securityRejectedSessions atomic.Uint32
	rejectedSessions         atomic.Uint32
	sessionTimeouts          atomic.Uint32
	sessionAborts            atomic.Uint32 // sessions dropped on an error (a CreateSession that failed after the session was made)
	securityRejectedRequests atomic.Uint32
	rejectedRequests         atomic.Uint32
	connectionsRefused       atomic.Uint64

	// mu guards sessions, byToken, every sessionDiag's unsynchronised fields and snap.
	// It is a leaf but for Engine.Diagnostics: the session table calls in holding its
	// lock, the Space holding its read lock, so nothing here may call either.
	mu       sync.Mutex
	sessions map[codec.NodeId]*sessionDiag
	byToken  map[uint64]*sessionDiag
	snap     *snapshot
}

// sessionDiag describes one session for SessionDiagnosticsArray and
// SessionSecurityDiagnosticsArray (Part 5 §12.10, §12.11).
type sessionDiag struct {
	diag     ua.SessionDiagnosticsDataType         // guarded by Diagnostics.mu
	security ua.SessionSecurityDiagnosticsDataType // guarded by Diagnostics.mu
	token    codec.NodeId                          // the session's authentication token
	live     *session.Session                      // for its last contact time
	counters Counters
}

// snapshot is one build of the diagnostics values, served until expires.
type snapshot struct {
	expires  time.Time
	at       codec.DateTime
	summary  ua.ServerDiagnosticsSummaryDataType
	sessions codec.Variant // SessionDiagnosticsDataType[]
	security codec.Variant // SessionSecurityDiagnosticsDataType[]
	subs     codec.Variant // SubscriptionDiagnosticsDataType[]
}

// New returns the diagnostics of a server whose subscriptions subs holds; enabled
// describes sessions and subscriptions one by one.
func New(enabled bool, now func() time.Time, subs *subscription.Engine) *Diagnostics {
	return &Diagnostics{enabled: enabled, now: now, interval: interval, subs: subs,
		sessions: make(map[codec.NodeId]*sessionDiag), byToken: make(map[uint64]*sessionDiag)}
}

// Enabled reports whether sessions are described (observability.diagnosticsEnabled).
func (d *Diagnostics) Enabled() bool { return d.enabled }

// securityRejection reports whether code refuses a request for a security reason: a
// certificate, signature, nonce, identity or policy that does not pass.
func securityRejection(code status.Code) bool {
	switch code.Sub() {
	case status.BadSecurityChecksFailed, status.BadCertificateInvalid, status.BadCertificateTimeInvalid,
		status.BadCertificateIssuerTimeInvalid, status.BadCertificateHostNameInvalid, status.BadCertificateUriInvalid,
		status.BadCertificateUseNotAllowed, status.BadCertificateIssuerUseNotAllowed, status.BadCertificateUntrusted,
		status.BadCertificateRevocationUnknown, status.BadCertificateIssuerRevocationUnknown, status.BadCertificateRevoked,
		status.BadCertificateIssuerRevoked, status.BadCertificateChainIncomplete, status.BadCertificatePolicyCheckFailed,
		status.BadUserAccessDenied, status.BadIdentityTokenInvalid, status.BadIdentityTokenRejected, status.BadNonceInvalid,
		status.BadSecurityModeRejected, status.BadSecurityPolicyRejected, status.BadUserSignatureInvalid,
		status.BadApplicationSignatureInvalid, status.BadIdentityChangeNotSupported, status.BadSecurityModeInsufficient:
		return true
	}
	return false
}

// rejected counts a request answered with a ServiceFault (RejectedRequestsCount, and
// SecurityRejectedRequestsCount for a security reason).
func (d *Diagnostics) rejected(code status.Code) {
	d.rejectedRequests.Add(1)
	if securityRejection(code) {
		d.securityRejectedRequests.Add(1)
	}
}

// SecurityRejected counts a request refused before it became a service request: a
// client certificate the channel layer did not accept.
func (d *Diagnostics) SecurityRejected() {
	d.rejectedRequests.Add(1)
	d.securityRejectedRequests.Add(1)
}

// ConnectionRefused counts a connection the listener turned away before reading it.
func (d *Diagnostics) ConnectionRefused() { d.connectionsRefused.Add(1) }

// SessionAnswer counts a CreateSession or ActivateSession that was refused
// (RejectedSessionCount, SecurityRejectedSessionCount).
func (d *Diagnostics) SessionAnswer(resp codec.Structure) {
	f, ok := resp.(*ua.ServiceFault)
	if !ok {
		return
	}
	d.rejectedSessions.Add(1)
	if securityRejection(f.ResponseHeader.ServiceResult) {
		d.securityRejectedSessions.Add(1)
	}
}

// SessionChanged follows the session table's change stream (session.Table.Observe): it
// counts sessions and, when enabled, describes them. The table calls it holding its lock.
func (d *Diagnostics) SessionChanged(c *session.Change) {
	switch c.Kind {
	case session.Created:
		d.currentSessions.Add(1)
		d.cumulatedSessions.Add(1)
	case session.Ended:
		d.currentSessions.Add(-1)
		switch c.End {
		case session.TimedOut:
			d.sessionTimeouts.Add(1)
		case session.Aborted:
			d.sessionAborts.Add(1)
		}
	}
	if !d.enabled {
		return
	}
	r := &c.Record
	key, _ := session.TokenKey(r.AuthenticationToken)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch c.Kind {
	case session.Created:
		sd := &sessionDiag{token: r.AuthenticationToken, live: c.Session}
		sd.diag = ua.SessionDiagnosticsDataType{
			SessionId: r.SessionID, SessionName: r.Name, ClientDescription: r.ClientDescription,
			ServerUri: r.ServerURI, EndpointUrl: r.EndpointURL, MaxResponseMessageSize: r.MaxResponseMessageSize,
			ActualSessionTimeout: float64(r.Timeout) / float64(time.Millisecond), ClientConnectionTime: r.CreatedAt,
		}
		sd.security = ua.SessionSecurityDiagnosticsDataType{SessionId: r.SessionID, Encoding: "UA Binary",
			TransportProtocol: uacp.TransportProfile, ClientCertificate: r.ClientCertificate}
		d.sessions[r.SessionID] = sd
		d.byToken[key] = sd
	case session.Activated:
		if sd := d.sessions[r.SessionID]; sd != nil {
			sd.activated(r)
		}
	case session.Ended:
		delete(d.sessions, r.SessionID)
		delete(d.byToken, key)
	}
}

// activated records who the session now runs as and over which channel
// (SessionSecurityDiagnosticsDataType, Part 5 §12.11).
func (sd *sessionDiag) activated(r *session.Record) {
	p := &r.Identity
	user, mechanism := "", ua.UserTokenTypeAnonymous
	switch {
	case p.Thumbprint != "":
		user, mechanism = p.Thumbprint, ua.UserTokenTypeCertificate
	case !p.Anonymous:
		user, mechanism = p.UserName, ua.UserTokenTypeUserName
	}
	sd.diag.LocaleIds = r.LocaleIDs
	sec := &sd.security
	if n := len(sec.ClientUserIdHistory); n == 0 || sec.ClientUserIdHistory[n-1] != user {
		sec.ClientUserIdHistory = append(sec.ClientUserIdHistory, user)
	}
	sec.ClientUserIdOfSession = user
	sec.AuthenticationMechanism = mechanism.String()
	sec.SecurityMode = r.SecurityMode
	sec.SecurityPolicyUri = r.SecurityPolicyURI
	if r.ClientCertificate != nil {
		sec.ClientCertificate = r.ClientCertificate
	}
}

// CountersOf returns the service counters of the session of token, or nil when there is
// no such session or sessions are not described.
func (d *Diagnostics) CountersOf(token codec.NodeId) *Counters {
	if !d.enabled {
		return nil
	}
	key, ok := session.TokenKey(token)
	if !ok {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if sd := d.byToken[key]; sd != nil && sd.token == token {
		return &sd.counters
	}
	return nil
}

// current returns the snapshot to answer a read with, rebuilding it when it is older
// than the interval.
func (d *Diagnostics) current() *snapshot {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.snap != nil && now.Before(d.snap.expires) {
		return d.snap
	}
	d.snap = d.buildLocked(now)
	return d.snap
}

// buildLocked gathers the counters, the sessions' descriptions and the engine's
// subscription diagnostics. Disabled, the arrays are empty and the engine is asked only
// for its counts.
func (d *Diagnostics) buildLocked(now time.Time) *snapshot {
	var e subscription.Diagnostics
	if d.subs != nil {
		e = d.subs.Diagnostics(d.enabled)
	}
	snap := &snapshot{
		expires: now.Add(d.interval),
		at:      codec.DateTimeOf(now),
		summary: ua.ServerDiagnosticsSummaryDataType{
			CurrentSessionCount:           uint32(max(d.currentSessions.Load(), 0)),
			CumulatedSessionCount:         d.cumulatedSessions.Load(),
			SecurityRejectedSessionCount:  d.securityRejectedSessions.Load(),
			RejectedSessionCount:          d.rejectedSessions.Load(),
			SessionTimeoutCount:           d.sessionTimeouts.Load(),
			SessionAbortCount:             d.sessionAborts.Load(),
			CurrentSubscriptionCount:      e.CurrentSubscriptions,
			CumulatedSubscriptionCount:    e.CumulatedSubscriptions,
			PublishingIntervalCount:       e.PublishingIntervals,
			SecurityRejectedRequestsCount: d.securityRejectedRequests.Load(),
			RejectedRequestsCount:         d.rejectedRequests.Load(),
		},
	}
	sessions := make([]codec.ExtensionObject, 0, len(d.sessions))
	security := make([]codec.ExtensionObject, 0, len(d.sessions))
	if d.enabled {
		all := make([]*sessionDiag, 0, len(d.sessions))
		for _, sd := range d.sessions {
			all = append(all, sd)
		}
		// Creation order, so that a client sees a stable array.
		slices.SortFunc(all, func(a, b *sessionDiag) int {
			return cmp.Compare(a.diag.ClientConnectionTime, b.diag.ClientConnectionTime)
		})
		for _, sd := range all {
			sdd := sd.diag
			c := e.Sessions[sdd.SessionId]
			sdd.ClientLastContactTime = codec.DateTimeOf(sd.live.LastSeen())
			sdd.CurrentSubscriptionsCount = c.Subscriptions
			sdd.CurrentMonitoredItemsCount = c.MonitoredItems
			sdd.CurrentPublishRequestsInQueue = c.QueuedPublish
			sd.counters.fill(&sdd)
			sec := sd.security
			sessions = append(sessions, codec.NewExtensionObject(&sdd))
			security = append(security, codec.NewExtensionObject(&sec))
		}
	}
	subs := make([]codec.ExtensionObject, len(e.Subscriptions))
	for i := range e.Subscriptions {
		subs[i] = codec.NewExtensionObject(&e.Subscriptions[i])
	}
	snap.sessions = codec.MustVariant(sessions)
	snap.security = codec.MustVariant(security)
	snap.subs = codec.MustVariant(subs)
	return snap
}

// Summary returns the ServerDiagnosticsSummary of the current snapshot.
func (d *Diagnostics) Summary() ua.ServerDiagnosticsSummaryDataType { return d.current().summary }
