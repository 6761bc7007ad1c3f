package server

import (
	"bytes"
	"crypto/subtle"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"time"

	"golang.org/x/crypto/bcrypt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/mirror"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/session"
)

// reviseTimeout clamps the requested session timeout (milliseconds) into the configured
// bounds (Part 4 §5.6.2).
func (s *Server) reviseTimeout(ms float64) time.Duration {
	lo, hi := s.cfg.Limits.MinSessionTimeout, s.cfg.Limits.MaxSessionTimeout
	if ms != ms || ms <= 0 { // NaN or unset
		return hi
	}
	d := time.Duration(ms * float64(time.Millisecond))
	return min(max(d, lo), hi)
}

// createSession answers CreateSession (Part 4 §5.6.2). On a secured channel the client
// nonce must have at least 32 bytes, the client certificate must be the channel's, and
// the response carries the server's signature over ClientCertificate || ClientNonce made
// with the channel's SecurityPolicy.
func (s *Server) createSession(r *pipeline.Request[*conn], m *ua.CreateSessionRequest) (answer codec.Structure) {
	defer func() { s.diag.SessionAnswer(answer) }()
	ch := r.Req.Channel
	secure := ch.SecurityPolicyURI() != policy.URINone
	var clientCert *x509.Certificate
	var pol policy.Policy
	if secure {
		var ok bool
		if pol, ok = policyOf(ch.SecurityPolicyURI()); !ok {
			return r.Fault(status.BadSecurityPolicyRejected)
		}
		if len(m.ClientNonce) < session.NonceLength {
			return r.Fault(status.BadNonceInvalid)
		}
		clientCert = ch.ClientCertificate()
		// ClientCertificate may hold the chain; the leaf comes first.
		if clientCert == nil || !bytes.HasPrefix(m.ClientCertificate, clientCert.Raw) {
			return r.Fault(status.BadCertificateInvalid)
		}
	}
	timeout := s.reviseTimeout(m.RequestedSessionTimeout)
	rec, code := s.sessions.Create(session.Request{
		Name:                   m.SessionName,
		ClientDescription:      m.ClientDescription,
		ServerURI:              m.ServerUri,
		EndpointURL:            m.EndpointUrl,
		MaxResponseMessageSize: m.MaxResponseMessageSize,
		Timeout:                timeout,
		ChannelID:              ch.ID(),
		ClientCertificate:      clientCert,
	})
	if code != status.Good {
		return r.Fault(code)
	}
	resp := &ua.CreateSessionResponse{
		ResponseHeader:        r.ResponseHeader(status.Good),
		SessionId:             rec.SessionID,
		AuthenticationToken:   rec.AuthenticationToken,
		RevisedSessionTimeout: float64(timeout) / float64(time.Millisecond),
		ServerNonce:           rec.ServerNonce,
		ServerCertificate:     s.cert.Raw,
		ServerEndpoints:       s.endpoints,
		MaxRequestMessageSize: maxRequestMessageSize(s.cfg),
	}
	if secure {
		asym, err := pol.NewAsymmetric(s.key, clientCert)
		if err != nil {
			s.sessions.Abort(rec.AuthenticationToken)
			return r.Fault(pipeline.CodeOf(err, status.BadSecurityChecksFailed))
		}
		data := append(append(make([]byte, 0, len(m.ClientCertificate)+len(m.ClientNonce)), m.ClientCertificate...), m.ClientNonce...)
		sig, err := asym.Sign(nil, data)
		if err != nil {
			s.sessions.Abort(rec.AuthenticationToken)
			return r.Fault(status.BadInternalError)
		}
		resp.ServerSignature = ua.SignatureData{Algorithm: pol.Info().AsymmetricSignatureURI, Signature: sig}
	}
	s.log.Debug("session created", "session", rec.SessionID, "name", m.SessionName, "timeout", timeout)
	s.events.system("Session created: " + rec.SessionID.String())
	return resp
}

// activateSession answers ActivateSession (Part 4 §5.6.3). On a secured channel the
// client signature over ServerCertificate || the last server nonce is verified with the
// session's client certificate, which must also be the channel's. The identity token is
// then checked (identify); on success the session is bound to the channel and a new
// server nonce returned. A failure leaves the session as it was.
func (s *Server) activateSession(r *pipeline.Request[*conn], m *ua.ActivateSessionRequest) (answer codec.Structure) {
	defer func() { s.diag.SessionAnswer(answer) }()
	ch, h := r.Req.Channel, m.RequestHeader
	rec, clientCert, code := s.sessions.Lookup(h.AuthenticationToken)
	// A session another server of the redundant set holds is taken over here once its
	// activation checks out (Part 4 §6.6.2, HotAndMirrored); until then it is only read.
	// The set's store is asked outside the turn of session establishment (Away): a
	// failover brings many sessions at once, and their waits on the network overlap.
	var claimed *mirror.Claimed
	if code == status.BadSessionIdInvalid && s.mirror != nil {
		r.Away(func() { claimed, clientCert, code = s.claimSession(r.Ctx, h.AuthenticationToken) })
		if code == status.Good {
			rec = claimed.Record
			defer func() {
				if claimed != nil { // not adopted
					s.mirror.Unclaim(h.AuthenticationToken)
				}
			}()
		}
	}
	if code != status.Good {
		return r.Fault(code)
	}
	if !rec.Activated && rec.ChannelID != ch.ID() {
		return r.Fault(status.BadSecureChannelIdInvalid)
	}
	if ch.SecurityPolicyURI() != policy.URINone {
		chCert := ch.ClientCertificate()
		if clientCert == nil || chCert == nil || !chCert.Equal(clientCert) {
			return r.Fault(status.BadApplicationSignatureInvalid)
		}
		pol, ok := policyOf(ch.SecurityPolicyURI())
		if !ok {
			return r.Fault(status.BadSecurityPolicyRejected)
		}
		asym, err := pol.NewAsymmetric(nil, clientCert)
		if err != nil {
			return r.Fault(status.BadApplicationSignatureInvalid)
		}
		if m.ClientSignature.Algorithm != pol.Info().AsymmetricSignatureURI ||
			!s.signedNonce(asym.Verify, h.AuthenticationToken, claimed, rec.ServerNonce, m.ClientSignature.Signature) {
			return r.Fault(status.BadApplicationSignatureInvalid)
		}
	}
	// A locked-out client is refused before its credentials are checked, so a correct
	// password does not tell it apart (Security.MaxFailedAuthenticationAttempts).
	key := lockoutKey(ch)
	if s.failedLogins.Locked(key) {
		s.log.Info("session activation refused: client locked out", "session", rec.SessionID)
		return r.Fault(status.BadUserAccessDenied)
	}
	principal, code := s.identify(ch, m.UserIdentityToken, m.UserTokenSignature, rec.ServerNonce)
	if code != status.Good {
		if s.failedLogins.Fail(key) {
			s.log.Warn("too many failed logins; client locked out", "lockout", s.cfg.Security.FailedAuthenticationLockout)
		}
		s.log.Info("session activation refused", "session", rec.SessionID, "status", code)
		return r.Fault(code)
	}
	s.failedLogins.Succeed(key)
	principal.SessionID = rec.SessionID
	principal.Roles = s.rolesOf(principal)
	if claimed != nil {
		var code status.Code
		r.Away(func() { code = s.adoptSession(r.Ctx, claimed) })
		if code != status.Good {
			return r.Fault(code)
		}
		claimed = nil
	}
	nonce, code := s.sessions.Activate(h.AuthenticationToken, ch.ID(), principal, session.Activation{
		SecurityPolicyURI: ch.SecurityPolicyURI(), SecurityMode: ch.SecurityMode(), LocaleIDs: m.LocaleIds})
	if code != status.Good {
		return r.Fault(code)
	}
	if s.mirror != nil {
		// The new nonce is the set's before the client has it: a replay of this request
		// on any server of the set fails.
		var err error
		r.Away(func() { err = s.mirror.Activated(r.Ctx, h.AuthenticationToken) })
		if errors.Is(err, mirror.ErrTakenOver) {
			return r.Fault(status.BadSessionIdInvalid)
		}
	}
	if key, ok := session.TokenKey(h.AuthenticationToken); ok {
		s.admission.SessionActivated(key, ch.RemoteAddr())
	}
	s.events.system("Session activated: " + rec.SessionID.String())
	return &ua.ActivateSessionResponse{ResponseHeader: r.ResponseHeader(status.Good), ServerNonce: nonce}
}

// signedNonce checks the client's signature over the server certificate and the last
// server nonce (Part 4 §5.6.3): this server's certificate, or, for a session another
// server of the set created, that server's, which the client may go on signing.
func (s *Server) signedNonce(verify func(data, sig []byte) error, token codec.NodeId, claimed *mirror.Claimed, nonce, sig []byte) bool {
	signed := func(cert []byte) bool {
		data := append(append(make([]byte, 0, len(cert)+len(nonce)), cert...), nonce...)
		return verify(data, sig) == nil
	}
	if signed(s.cert.Raw) {
		return true
	}
	var creator []byte
	switch {
	case claimed != nil:
		creator = claimed.Creator
	case s.mirror != nil:
		creator = s.mirror.Creator(token)
	}
	return creator != nil && string(creator) != string(s.cert.Raw) && signed(creator)
}

// tokenPolicy finds the offered user token policy with id and type.
func (s *Server) tokenPolicy(policyID string, typ ua.UserTokenType) (ua.UserTokenPolicy, bool) {
	for _, p := range s.tokens {
		if p.PolicyId == policyID && p.TokenType == typ {
			return p, true
		}
	}
	return ua.UserTokenPolicy{}, false
}

// identify checks a user identity token (Part 4 §7.41): a null token or an
// AnonymousIdentityToken when anonymous logins are offered, a UserNameIdentityToken
// whose password matches a configured user, or an X509IdentityToken with its
// userTokenSignature sig (identifyX509). The password is decrypted with the server
// key under the token policy's SecurityPolicy (the channel's when the policy names none);
// a plain password (policy None) is accepted only on a SignAndEncrypt channel.
func (s *Server) identify(ch *uasc.ServerChannel, tok codec.ExtensionObject, sig ua.SignatureData, nonce []byte) (nodemgr.Principal, status.Code) {
	switch t := tok.Value.(type) {
	case nil:
		if !tok.IsNull() {
			return nodemgr.Principal{}, status.BadIdentityTokenInvalid
		}
		for _, p := range s.tokens {
			if p.TokenType == ua.UserTokenTypeAnonymous {
				return nodemgr.Principal{Anonymous: true}, status.Good
			}
		}
		return nodemgr.Principal{}, status.BadIdentityTokenRejected
	case *ua.AnonymousIdentityToken:
		if _, ok := s.tokenPolicy(t.PolicyId, ua.UserTokenTypeAnonymous); !ok {
			return nodemgr.Principal{}, status.BadIdentityTokenInvalid
		}
		return nodemgr.Principal{Anonymous: true}, status.Good
	case *ua.UserNameIdentityToken:
		p, ok := s.tokenPolicy(t.PolicyId, ua.UserTokenTypeUserName)
		if !ok {
			return nodemgr.Principal{}, status.BadIdentityTokenInvalid
		}
		uri := p.SecurityPolicyUri
		if uri == "" {
			uri = ch.SecurityPolicyURI()
		}
		password, code := s.userPassword(uri, ch.SecurityMode(), t, nonce)
		if code != status.Good {
			return nodemgr.Principal{}, code
		}
		defer clear(password)
		for _, u := range s.cfg.Security.Users {
			if u.Name == t.UserName {
				if config.CheckPassword(u.PasswordHash, string(password)) != nil {
					return nodemgr.Principal{}, status.BadUserAccessDenied
				}
				return nodemgr.Principal{UserName: u.Name}, status.Good
			}
		}
		// An unknown user costs a hash check too, so timing does not tell names apart.
		_ = config.CheckPassword(s.dummyHash(), string(password))
		return nodemgr.Principal{}, status.BadUserAccessDenied
	case *ua.X509IdentityToken:
		return s.identifyX509(ch, t, sig, nonce)
	}
	return nodemgr.Principal{}, status.BadIdentityTokenInvalid
}

// userPassword returns the password of t (Part 4 §7.41.3): for a SecurityPolicy other
// than None the decrypted secret is length (UInt32) || password || server nonce, and the
// nonce must be the last one the server sent. The caller zeroes the result.
func (s *Server) userPassword(uri string, mode ua.MessageSecurityMode, t *ua.UserNameIdentityToken, nonce []byte) ([]byte, status.Code) {
	if uri == policy.URINone {
		if mode != ua.MessageSecurityModeSignAndEncrypt {
			return nil, status.BadIdentityTokenRejected
		}
		return bytes.Clone(t.Password), status.Good
	}
	pol, ok := policy.Lookup(uri)
	if !ok {
		return nil, status.BadIdentityTokenRejected
	}
	if t.EncryptionAlgorithm != pol.Info().AsymmetricEncryptionURI {
		return nil, status.BadIdentityTokenInvalid
	}
	asym, err := pol.NewAsymmetric(s.key, nil)
	if err != nil {
		return nil, status.BadIdentityTokenInvalid
	}
	buf := make([]byte, len(t.Password))
	defer clear(buf)
	n, err := asym.Decrypt(buf, t.Password)
	if err != nil || n < 4 {
		return nil, status.BadIdentityTokenInvalid
	}
	plain := buf[:n]
	l := int(binary.LittleEndian.Uint32(plain))
	if l < len(nonce) || l > len(plain)-4 {
		return nil, status.BadIdentityTokenInvalid
	}
	secret := plain[4 : 4+l]
	pw, got := secret[:l-len(nonce)], secret[l-len(nonce):]
	if subtle.ConstantTimeCompare(got, nonce) != 1 {
		return nil, status.BadIdentityTokenInvalid
	}
	return bytes.Clone(pw), status.Good
}

// closeSession answers CloseSession (Part 4 §5.6.4): the session and its continuation
// points are dropped, and its subscriptions when DeleteSubscriptions is set.
func (s *Server) closeSession(r *pipeline.Request[*conn], m *ua.CloseSessionRequest) codec.Structure {
	if code := s.sessions.Close(m.RequestHeader.AuthenticationToken, r.Req.Channel.ID(), m.DeleteSubscriptions); code != status.Good {
		return r.Fault(code)
	}
	return &ua.CloseSessionResponse{ResponseHeader: r.ResponseHeader(status.Good)}
}

// dummyHash returns a password hash made once, on first use, for unknown user names. It
// has the bcrypt cost of the configured users' hashes, so that refusing an unknown name
// takes as long as refusing a wrong password.
func (s *Server) dummyHash() string {
	s.dummyOnce.Do(func() {
		cost := config.PasswordCost
		for _, u := range s.cfg.Security.Users {
			if c, err := bcrypt.Cost([]byte(u.PasswordHash)); err == nil {
				cost = c
				break
			}
		}
		if h, err := bcrypt.GenerateFromPassword(session.RandomBytes(16), cost); err == nil {
			s.dummy = string(h)
		}
	})
	return s.dummy
}

// policyOf returns the SecurityPolicy of uri; None when uri is empty.
func policyOf(uri string) (policy.Policy, bool) {
	if uri == "" {
		uri = policy.URINone
	}
	return policy.Lookup(uri)
}
