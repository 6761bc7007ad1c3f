package server

import (
	"cmp"
	"crypto/x509"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/subscription"
)

// diagnosticsInterval is how long a diagnostics snapshot answers reads before a read
// rebuilds it: a burst of reads, or of session creates between reads, costs one rebuild.
const diagnosticsInterval = time.Second

// diagnostics keeps the counters behind the Server object's ServerDiagnostics (Part 5
// §6.3.3) and builds its values when they are read (initDiagnostics). Summary counters
// are atomics bumped where the events happen; sessions are described only when enabled
// (observability.diagnosticsEnabled). The methods are safe for concurrent use and do
// nothing on a nil *diagnostics (a session table made without a server).
type diagnostics struct {
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

	// mu guards sessions, every sessionDiag's unsynchronised fields and snap. It is a
	// leaf but for Engine.Diagnostics: the session table calls in holding its lock, the
	// Space holding its read lock, so nothing here may call either.
	mu       sync.Mutex
	sessions map[codec.NodeId]*sessionDiag
	snap     *diagSnapshot
}

// sessionDiag describes one session for SessionDiagnosticsArray and
// SessionSecurityDiagnosticsArray (Part 5 §12.10, §12.11).
type sessionDiag struct {
	diag     ua.SessionDiagnosticsDataType         // the fields known at CreateSession; guarded by diagnostics.mu
	security ua.SessionSecurityDiagnosticsDataType // guarded by diagnostics.mu

	lastContact atomic.Int64 // codec.DateTime of the last request naming the session
	counters    serviceCounters
}

// diagSnapshot is one build of the diagnostics values, served until expires.
type diagSnapshot struct {
	expires  time.Time
	at       codec.DateTime
	summary  ua.ServerDiagnosticsSummaryDataType
	sessions codec.Variant // SessionDiagnosticsDataType[]
	security codec.Variant // SessionSecurityDiagnosticsDataType[]
	subs     codec.Variant // SubscriptionDiagnosticsDataType[]
}

func newDiagnostics(enabled bool, now func() time.Time) *diagnostics {
	return &diagnostics{enabled: enabled, now: now, interval: diagnosticsInterval,
		sessions: make(map[codec.NodeId]*sessionDiag)}
}

// sessionEnd is why a session ended, for SessionTimeoutCount and SessionAbortCount
// (Part 5 §12.9: "closed due to timeout", "closed due to errors").
type sessionEnd uint8

const (
	endClosed sessionEnd = iota
	endTimedOut
	endAborted
)

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
func (d *diagnostics) rejected(code status.Code) {
	if d == nil {
		return
	}
	d.rejectedRequests.Add(1)
	if securityRejection(code) {
		d.securityRejectedRequests.Add(1)
	}
}

// securityRejected counts a request refused before it became a service request: a
// client certificate the channel layer did not accept.
func (d *diagnostics) securityRejected() {
	if d == nil {
		return
	}
	d.rejectedRequests.Add(1)
	d.securityRejectedRequests.Add(1)
}

// sessionAnswer counts a CreateSession or ActivateSession that was refused
// (RejectedSessionCount, SecurityRejectedSessionCount).
func (d *diagnostics) sessionAnswer(resp codec.Structure) {
	f, ok := resp.(*ua.ServiceFault)
	if d == nil || !ok {
		return
	}
	d.rejectedSessions.Add(1)
	if securityRejection(f.ResponseHeader.ServiceResult) {
		d.securityRejectedSessions.Add(1)
	}
}

// sessionCreated counts s and, when enabled, starts its description; the session table
// calls it holding its lock.
func (d *diagnostics) sessionCreated(s *session, now time.Time) {
	if d == nil {
		return
	}
	d.currentSessions.Add(1)
	d.cumulatedSessions.Add(1)
	if !d.enabled {
		return
	}
	at := codec.DateTimeOf(now)
	sd := &sessionDiag{
		diag: ua.SessionDiagnosticsDataType{SessionId: s.id, SessionName: s.name,
			ActualSessionTimeout: float64(s.timeout) / float64(time.Millisecond), ClientConnectionTime: at},
		security: ua.SessionSecurityDiagnosticsDataType{SessionId: s.id, Encoding: "UA Binary",
			TransportProtocol: TransportProfileUATCP},
	}
	if s.clientCert != nil {
		sd.security.ClientCertificate = s.clientCert.Raw
	}
	sd.lastContact.Store(int64(at))
	s.diag = sd
	d.mu.Lock()
	d.sessions[s.id] = sd
	d.mu.Unlock()
}

// sessionEnded counts the end of s (SessionTimeoutCount when it timed out); the session
// table calls it holding its lock.
func (d *diagnostics) sessionEnded(s *session, why sessionEnd) {
	if d == nil {
		return
	}
	d.currentSessions.Add(-1)
	switch why {
	case endTimedOut:
		d.sessionTimeouts.Add(1)
	case endAborted:
		d.sessionAborts.Add(1)
	}
	if s.diag != nil {
		d.mu.Lock()
		delete(d.sessions, s.id)
		d.mu.Unlock()
	}
}

// serviceCounters returns the counters of the session sd describes, nil for nil.
func (sd *sessionDiag) serviceCounters() *serviceCounters {
	if sd == nil {
		return nil
	}
	return &sd.counters
}

// touched records the time of a request naming the session that sd describes (nil
// when disabled).
func (sd *sessionDiag) touched(now time.Time) {
	if sd != nil {
		sd.lastContact.Store(int64(codec.DateTimeOf(now)))
	}
}

// on reports whether sessions are described (observability.diagnosticsEnabled).
func (d *diagnostics) on() bool { return d != nil && d.enabled }

// described adds what CreateSession tells about the client of session sid.
func (d *diagnostics) described(sid codec.NodeId, m *ua.CreateSessionRequest) {
	if d == nil || !d.enabled {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if sd := d.sessions[sid]; sd != nil {
		sd.diag.ClientDescription = m.ClientDescription
		sd.diag.ServerUri = m.ServerUri
		sd.diag.EndpointUrl = m.EndpointUrl
		sd.diag.MaxResponseMessageSize = m.MaxResponseMessageSize
	}
}

// activated records who session sid now runs as and over which channel
// (SessionSecurityDiagnosticsDataType, Part 5 §12.11).
func (d *diagnostics) activated(sid codec.NodeId, ch *uasc.ServerChannel, p nodemgr.Principal, locales []string) {
	if d == nil || !d.enabled {
		return
	}
	user, mechanism := "", ua.UserTokenTypeAnonymous
	switch {
	case p.Thumbprint != "":
		user, mechanism = p.Thumbprint, ua.UserTokenTypeCertificate
	case !p.Anonymous:
		user, mechanism = p.UserName, ua.UserTokenTypeUserName
	}
	var cert *x509.Certificate
	if ch != nil {
		cert = ch.ClientCertificate()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sd := d.sessions[sid]
	if sd == nil {
		return
	}
	sd.diag.LocaleIds = slices.Clone(locales)
	sec := &sd.security
	if n := len(sec.ClientUserIdHistory); n == 0 || sec.ClientUserIdHistory[n-1] != user {
		sec.ClientUserIdHistory = append(sec.ClientUserIdHistory, user)
	}
	sec.ClientUserIdOfSession = user
	sec.AuthenticationMechanism = mechanism.String()
	if ch != nil {
		sec.SecurityMode = ch.SecurityMode()
		sec.SecurityPolicyUri = ch.SecurityPolicyURI()
	}
	if cert != nil {
		sec.ClientCertificate = cert.Raw
	}
}

// current returns the snapshot to answer a read with, rebuilding it when it is older
// than the interval.
func (d *diagnostics) current() *diagSnapshot {
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
func (d *diagnostics) buildLocked(now time.Time) *diagSnapshot {
	var e subscription.Diagnostics
	if d.subs != nil {
		e = d.subs.Diagnostics(d.enabled)
	}
	snap := &diagSnapshot{
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
			sdd.ClientLastContactTime = codec.DateTime(sd.lastContact.Load())
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

// initDiagnostics has the ServerDiagnostics Variables of the Server object computed when
// read (Part 5 §6.3.3): the summary and its components, SessionDiagnosticsArray,
// SessionSecurityDiagnosticsArray, SubscriptionDiagnosticsArray and EnabledFlag (read
// only here: the setting belongs to the configuration). Every value carries the time
// its snapshot was built as SourceTimestamp.
func (s *Server) initDiagnostics() error {
	d := s.diag
	d.subs = s.subs
	summary := func(f func(*ua.ServerDiagnosticsSummaryDataType) uint32) func(*diagSnapshot) codec.Variant {
		return func(snap *diagSnapshot) codec.Variant { return codec.UInt32Variant(f(&snap.summary)) }
	}
	type source struct {
		id  uint32
		val func(*diagSnapshot) codec.Variant
	}
	const p = id.Server_ServerDiagnostics_ServerDiagnosticsSummary
	sources := []source{
		{p, func(snap *diagSnapshot) codec.Variant { return codec.MustVariant(&snap.summary) }},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_ServerViewCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.ServerViewCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.CurrentSessionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSessionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.CumulatedSessionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedSessionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.SecurityRejectedSessionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedSessionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.RejectedSessionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionTimeoutCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.SessionTimeoutCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionAbortCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.SessionAbortCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSubscriptionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.CurrentSubscriptionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSubscriptionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.CumulatedSubscriptionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_PublishingIntervalCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.PublishingIntervalCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedRequestsCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.SecurityRejectedRequestsCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedRequestsCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.RejectedRequestsCount })},
		{id.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray, func(snap *diagSnapshot) codec.Variant { return snap.sessions }},
		{id.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray, func(snap *diagSnapshot) codec.Variant { return snap.security }},
		{id.Server_ServerDiagnostics_SubscriptionDiagnosticsArray, func(snap *diagSnapshot) codec.Variant { return snap.subs }},
	}
	for _, src := range sources {
		val := src.val
		if !s.space.SetValueFunc(codec.NewNumericNodeId(0, src.id), func(now codec.DateTime) codec.DataValue {
			snap := d.current()
			return codec.DataValue{Value: val(snap), SourceTimestamp: snap.at, ServerTimestamp: now}
		}) {
			return errors.New("server diagnostics: set value func: not a variable")
		}
	}
	// Who is logged in, how and with which certificate is for security administrators
	// only (Part 5 §6.3.4: "only visible to authorized users").
	if !s.space.SetReadRoles(codec.NewNumericNodeId(0, id.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray),
		codec.NewNumericNodeId(0, id.WellKnownRole_SecurityAdmin)) {
		return errors.New("server diagnostics: read roles of SessionSecurityDiagnosticsArray: not a variable")
	}
	enabled := codec.BooleanVariant(d.enabled)
	if !s.space.SetValueFunc(codec.NewNumericNodeId(0, id.Server_ServerDiagnostics_EnabledFlag), func(now codec.DateTime) codec.DataValue {
		return codec.DataValue{Value: enabled, SourceTimestamp: now, ServerTimestamp: now}
	}) {
		return errors.New("server diagnostics: set value func of EnabledFlag: not a variable")
	}
	return nil
}
