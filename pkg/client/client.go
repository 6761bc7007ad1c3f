package client

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// Client is a session on one server endpoint. Its service methods are safe for
// concurrent use: many requests are in flight on the one secure channel at a time, and
// their responses are matched by request id on the channel's single reading goroutine.
//
// When the channel is lost, the next call opens a new one and re-activates the same
// session on it (Part 4 §5.6.3); only if the server no longer knows the session is a new
// one created. Calls that only read (Read, Browse, BrowseNext, TranslateBrowsePaths) are
// sent once more after such a reconnect; the others return the error. A call refused
// with BadSessionIdInvalid (the session timed out) is sent again on a new session. An
// idle session is kept alive by a read of the server state (KeepAlive).
type Client struct {
	url        string
	host       string
	cfg        config
	ep         ua.EndpointDescription
	eps        []ua.EndpointDescription // the discovery answer ep was chosen from
	serverCert *x509.Certificate        // leaf of ep.ServerCertificate; nil if it has none
	handle     atomic.Uint32
	closed     atomic.Bool
	lastUse    atomic.Int64 // UnixNano of the last request sent, for keep-alives

	// keepAlive fires after an idle interval; it is armed by Dial and stopped by Close.
	keepAlive *time.Timer
	idle      time.Duration
	// levelWatch fires every ServiceLevelWatch interval (failover.go); nil without one.
	levelWatch *time.Timer

	// cur is the channel and session token calls use; replaced by reconnects.
	cur atomic.Pointer[link]

	rmu  sync.Mutex // guards sess, spare, keepAlive.Reset, cfg.failover and, during a failover, url, host, ep, eps, serverCert; held for a whole (re)connect so that one runs at a time
	sess session
	// spare is a channel kept open across a retry after the server refused a session on
	// it as busy or full, so that the retry spends no second handshake (its RSA, and the
	// server's, is what a connect storm is short of).
	spare *uasc.ClientChannel

	// sb is the standby (standby.go); no new one is made before sbAfter. sbStop ends
	// the loop that keeps it, which closes sbDone.
	sbmu    sync.Mutex
	sb      *Client
	sbAfter time.Time
	sbStop  chan struct{}
	sbDone  chan struct{}
	sbOnce  sync.Once

	// sessGen counts the sessions created, so that subscriptions notice a new one and
	// move to it (publish.go).
	sessGen    atomic.Uint64
	pubOnce    sync.Once
	pub        atomic.Pointer[publisher] // set by pubOnce on the first Subscribe
	itemHandle atomic.Uint32             // assigned monitored item ClientHandles
}

// link is a channel and the session token valid on it.
type link struct {
	ch    *uasc.ClientChannel
	token codec.NodeId
}

// session is what the client keeps of its session between channels.
type session struct {
	id      codec.NodeId
	token   codec.NodeId
	nonce   []byte // the last ServerNonce, for the next ActivateSession signature
	timeout time.Duration
}

// Dial connects to the server at endpointURL: it fetches the endpoints (or takes them
// from the EndpointCache), chooses one by the Security option, opens a secure channel,
// and creates and activates a session with the configured identity. Busy servers
// (BadServerTooBusy, BadTooManySessions) and network failures are retried with the
// Backoff, never sooner than the server's RetryAfterMs hint.
//
// The host and port of endpointURL are dialled, whatever host the endpoint descriptions
// name; endpointURL is also sent in the Hello and in CreateSession.
func Dial(ctx context.Context, endpointURL string, opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return dial(ctx, endpointURL, cfg)
}

// dial is Dial with the options applied.
func dial(ctx context.Context, endpointURL string, cfg config) (*Client, error) {
	c := &Client{url: endpointURL, cfg: cfg}
	if c.cfg.cache == nil {
		c.cfg.cache = NewEndpointCache()
	}
	_, host, err := dialAddress(endpointURL)
	if err != nil {
		return nil, err
	}
	c.host = host
	err = retry(ctx, c.cfg.backoff, c.cfg.onRetry, func() error {
		eps, err := c.cfg.cache.Get(ctx, endpointURL)
		if err != nil {
			return err
		}
		c.eps = eps
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c.ep, err = SelectEndpoint(c.eps, c.cfg.policyURI, c.cfg.mode); err != nil {
		return nil, err
	}
	if err := c.checkServer(); err != nil {
		c.cfg.cache.Forget(endpointURL)
		return nil, err
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	err = retry(ctx, c.cfg.backoff, c.cfg.onRetry, func() error { return c.connect(ctx, false) })
	c.dropSpare()
	if err != nil {
		return nil, err
	}
	c.startKeepAlive()
	c.startLevelWatch()
	c.startStandby()
	return c, nil
}

// startKeepAlive arms the keep-alive timer: one timer per client, no goroutine while
// it waits (Part 4 §5.6.2: a session without requests for its timeout is closed).
func (c *Client) startKeepAlive() {
	c.idle = c.cfg.keepAlive
	if c.idle == 0 {
		c.idle = c.sess.timeout / 2
	}
	if c.idle <= 0 {
		return
	}
	c.lastUse.Store(time.Now().UnixNano())
	c.keepAlive = time.AfterFunc(c.idle, c.keepAliveFired)
}

// keepAliveFired reads the server state if the session was idle for the interval, and
// re-arms for the rest of it. A failed read is left to the next call to report.
func (c *Client) keepAliveFired() {
	if c.closed.Load() {
		return
	}
	wait := c.idle - time.Since(time.Unix(0, c.lastUse.Load()))
	if wait <= 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.requestTimeout)
		_, _ = c.ReadValue(ctx, codec.NewNumericNodeId(0, serverStatusState))
		cancel()
		wait = c.idle
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if !c.closed.Load() {
		c.keepAlive.Reset(wait)
	}
}

// serverStatusState is the NodeId (ns=0) of Server_ServerStatus_State.
const serverStatusState = id.Server_ServerStatus_State

// checkServer parses and, on a secured endpoint, validates the server certificate.
func (c *Client) checkServer() error {
	secure := c.ep.SecurityPolicyUri != policy.URINone
	if len(c.ep.ServerCertificate) > 0 {
		chain, err := x509.ParseCertificates(c.ep.ServerCertificate)
		if err != nil || len(chain) == 0 {
			if secure {
				return fmt.Errorf("client: server certificate: %w", status.BadCertificateInvalid)
			}
		} else {
			c.serverCert = chain[0]
			// The certificate is trusted with the channel's keys, and with the user's
			// password or signature even over None.
			needTrust := secure || c.cfg.identity.kind != ua.UserTokenTypeAnonymous
			if needTrust && !c.cfg.insecure {
				if c.cfg.trust == nil {
					return fmt.Errorf("client: no trust store to check the server certificate (use TrustStore or InsecureSkipVerify): %w", status.BadCertificateUntrusted)
				}
				opts := pki.ValidateOptions{ApplicationURI: c.ep.Server.ApplicationUri, Hostname: c.host, Usage: pki.UsageServer}
				if pol, _ := policy.Lookup(c.ep.SecurityPolicyUri); secure {
					opts.MinKeyBits, opts.AllowSHA1 = pol.Info().MinAsymmetricKeyBits, pol.Info().Deprecated
				}
				err := c.cfg.trust.ValidateChain(chain, opts)
				if err != nil {
					return fmt.Errorf("client: server certificate: %w", err)
				}
			}
		}
	}
	if secure {
		if c.serverCert == nil {
			return fmt.Errorf("client: secured endpoint without a certificate: %w", status.BadCertificateInvalid)
		}
		if len(c.cfg.cert) == 0 || c.cfg.key == nil {
			return fmt.Errorf("%w: %w", errNoCertificate, status.BadCertificateInvalid)
		}
	}
	return nil
}

// openChannel opens a secure channel to the chosen endpoint.
func (c *Client) openChannel(ctx context.Context) (*uasc.ClientChannel, error) {
	cfg := uasc.ClientConfig{PolicyURI: c.ep.SecurityPolicyUri, Mode: c.ep.SecurityMode, RequestedLifetime: c.cfg.lifetime}
	if c.ep.SecurityPolicyUri != policy.URINone {
		cfg.Certificate, cfg.Key, cfg.ServerCertificate = c.cfg.cert, c.cfg.key, c.serverCert.Raw
	}
	return openChannel(ctx, c.url, cfg)
}

// identityMayHaveChanged reports whether a refused channel may mean that the server's
// certificate is no longer the one its cached endpoint carries: a server cannot read or
// verify what was sealed for a certificate it no longer has.
func identityMayHaveChanged(err error) bool {
	return errors.Is(err, status.BadSecurityChecksFailed) || errors.Is(err, status.BadCertificateInvalid)
}

// rediscover forgets the cached endpoints, asks the server for them again and selects
// the endpoint anew. It reports whether the server certificate changed; a new one must
// pass the trust store like the first. The caller holds rmu.
func (c *Client) rediscover(ctx context.Context) (changed bool, err error) {
	c.cfg.cache.Forget(c.url)
	eps, err := c.cfg.cache.Get(ctx, c.url)
	if err != nil {
		return false, err
	}
	ep, err := SelectEndpoint(eps, c.cfg.policyURI, c.cfg.mode)
	if err != nil {
		return false, err
	}
	if bytes.Equal(ep.ServerCertificate, c.ep.ServerCertificate) {
		return false, nil
	}
	prevEps, prevEp, prevCert := c.eps, c.ep, c.serverCert
	c.eps, c.ep, c.serverCert = eps, ep, nil
	if err := c.checkServer(); err != nil {
		c.eps, c.ep, c.serverCert = prevEps, prevEp, prevCert
		c.cfg.cache.Forget(c.url)
		return false, err
	}
	return true, nil
}

// connect opens a channel and brings a session up on it: when reuse is set it first
// re-activates the current session (Part 4 §5.6.3), and creates a new session only if
// the server refuses that. The caller holds rmu.
func (c *Client) connect(ctx context.Context, reuse bool) error {
	if ch := c.takeSpare(); ch != nil {
		return c.bringUp(ctx, ch, reuse)
	}
	ch, err := c.openChannel(ctx)
	if err != nil && c.ep.SecurityPolicyUri != policy.URINone && identityMayHaveChanged(err) {
		// The server may have a new certificate since its endpoints were cached: ask
		// again, and retry at once when the certificate did change (and is trusted).
		changed, derr := c.rediscover(ctx)
		if derr != nil {
			return derr
		}
		if changed {
			ch, err = c.openChannel(ctx)
		}
	}
	if err != nil {
		return err
	}
	return c.bringUp(ctx, ch, reuse)
}

// bringUp brings a session up on the open channel ch, as connect says. When the server
// refuses the session as busy or full and ch is still open, ch is kept as the spare for
// the next attempt; otherwise a failure closes it.
func (c *Client) bringUp(ctx context.Context, ch *uasc.ClientChannel, reuse bool) error {
	if reuse && !c.sess.token.IsNull() {
		err := c.activate(ctx, ch)
		if err == nil {
			c.cur.Store(&link{ch: ch, token: c.sess.token})
			return nil
		}
		if ch.Err() != nil || retryable(err) {
			c.keepOrClose(ch, err)
			return err
		}
		// The server no longer knows the session (or refuses to move it): start over.
	}
	if err := c.newSession(ctx, ch); err != nil {
		c.keepOrClose(ch, err)
		return err
	}
	return nil
}

// keepOrClose keeps ch as the spare when err is a refusal of the session by a busy or
// full server and ch is still open, and closes it otherwise.
func (c *Client) keepOrClose(ch *uasc.ClientChannel, err error) {
	var lost *lostSession
	busy := errors.Is(err, status.BadServerTooBusy) || errors.Is(err, status.BadTooManySessions) || errors.As(err, &lost)
	if busy && ch.Err() == nil && !c.closed.Load() {
		c.dropSpare()
		c.spare = ch
		return
	}
	ch.Close()
}

// takeSpare returns the spare channel if it is still open, and forgets it.
func (c *Client) takeSpare() *uasc.ClientChannel {
	ch := c.spare
	c.spare = nil
	if ch != nil && ch.Err() != nil {
		ch.Close()
		return nil
	}
	return ch
}

// dropSpare closes the spare channel, if any: once the retries are over.
func (c *Client) dropSpare() {
	if c.spare != nil {
		c.spare.Close()
		c.spare = nil
	}
}

// newSession creates and activates a session on ch and makes it current. The caller
// holds rmu.
func (c *Client) newSession(ctx context.Context, ch *uasc.ClientChannel) error {
	prev := c.sess
	if err := c.createSession(ctx, ch); err != nil {
		return err
	}
	if err := c.activate(ctx, ch); err != nil {
		// A session that was never activated would hold a server slot until it times
		// out, and the next attempt creates another: close it now.
		c.closeSession(ctx, ch, c.sess.token)
		c.sess = prev
		if errors.Is(err, status.BadSessionIdInvalid) || errors.Is(err, status.BadSessionClosed) {
			// The server gave the session up before it was activated, as a full
			// session table may under a connect storm: a fresh one is worth another try.
			return &lostSession{err}
		}
		return err
	}
	c.cur.Store(&link{ch: ch, token: c.sess.token})
	c.sessGen.Add(1)
	return nil
}

// renewSession replaces the session of old, which the server no longer knows (it timed
// out), by a new one on the same channel, unless another call did so.
func (c *Client) renewSession(ctx context.Context, old *link) error {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.closed.Load() {
		return &StatusError{Service: "CreateSession", Code: status.BadSessionClosed}
	}
	if c.cur.Load() != old {
		return nil
	}
	return c.newSession(ctx, old.ch)
}

// closeSession sends CloseSession for token on ch, ignoring the answer.
func (c *Client) closeSession(ctx context.Context, ch *uasc.ClientChannel, token codec.NodeId) {
	if ch.Err() != nil {
		return
	}
	_, _ = c.request(ctx, ch, &ua.CloseSessionRequest{RequestHeader: c.header(ctx, token), DeleteSubscriptions: true})
}

// reconnect replaces the link old, whose channel failed, unless another call did so.
func (c *Client) reconnect(ctx context.Context, old *link) error {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.closed.Load() {
		return &StatusError{Service: "Reconnect", Code: status.BadSessionClosed}
	}
	if c.cur.Load() != old {
		return nil
	}
	old.ch.Close()
	err := retry(ctx, c.cfg.backoff, c.cfg.onRetry, func() error { return c.connect(ctx, true) })
	c.dropSpare()
	if err != nil && len(c.cfg.failover) > 0 && ctx.Err() == nil {
		return c.failover(ctx, err)
	}
	return err
}

// createSession runs CreateSession on ch (Part 4 §5.6.2) and, on a secured channel,
// checks the server's certificate, nonce, signature and endpoint list.
func (c *Client) createSession(ctx context.Context, ch *uasc.ClientChannel) error {
	nonce, err := newNonce()
	if err != nil {
		return err
	}
	req := &ua.CreateSessionRequest{
		RequestHeader: c.header(ctx, codec.NodeId{}),
		ClientDescription: ua.ApplicationDescription{
			ApplicationUri:  c.cfg.appURI,
			ApplicationName: codec.LocalizedText{Text: c.cfg.appName},
			ApplicationType: ua.ApplicationTypeClient,
		},
		ServerUri:               c.ep.Server.ApplicationUri,
		EndpointUrl:             c.url,
		SessionName:             c.cfg.sessionName,
		ClientNonce:             nonce,
		RequestedSessionTimeout: float64(c.cfg.sessionTimeout) / float64(time.Millisecond),
	}
	secure := c.ep.SecurityPolicyUri != policy.URINone
	if secure {
		req.ClientCertificate = c.cfg.cert
	}
	resp, err := c.request(ctx, ch, req)
	if err != nil {
		return statusError("CreateSession", resp, err)
	}
	r, ok := resp.(*ua.CreateSessionResponse)
	if !ok {
		return &StatusError{Service: "CreateSession", Code: status.BadUnknownResponse}
	}
	if r.ResponseHeader.ServiceResult.IsBad() {
		return &StatusError{Service: "CreateSession", Code: r.ResponseHeader.ServiceResult, RetryAfter: retryAfter(&r.ResponseHeader)}
	}
	if secure {
		if err := c.checkCreateSession(r, nonce); err != nil {
			return err
		}
	}
	c.sess = session{id: r.SessionId, token: r.AuthenticationToken, nonce: r.ServerNonce,
		timeout: time.Duration(r.RevisedSessionTimeout * float64(time.Millisecond))}
	return nil
}

// checkCreateSession checks a CreateSession answer on a secured channel: the server
// certificate is the endpoint's, the nonce has at least 32 bytes, the signature over
// ClientCertificate || ClientNonce verifies under the channel's policy, and the server
// endpoints offer what discovery said (Part 4 §5.6.2).
func (c *Client) checkCreateSession(r *ua.CreateSessionResponse, nonce []byte) error {
	fail := func(what string, code status.Code) error {
		return &StatusError{Service: "CreateSession", Code: code, Err: errors.New(what)}
	}
	if !bytes.HasPrefix(r.ServerCertificate, c.serverCert.Raw) {
		return fail("the server certificate differs from the endpoint's", status.BadCertificateInvalid)
	}
	if len(r.ServerNonce) < 32 {
		return fail("server nonce shorter than 32 bytes", status.BadNonceInvalid)
	}
	pol, _ := policy.Lookup(c.ep.SecurityPolicyUri)
	asym, err := pol.NewAsymmetric(nil, c.serverCert)
	if err != nil {
		return err
	}
	data := append(append(make([]byte, 0, len(c.cfg.cert)+len(nonce)), c.cfg.cert...), nonce...)
	if r.ServerSignature.Algorithm != pol.Info().AsymmetricSignatureURI || asym.Verify(data, r.ServerSignature.Signature) != nil {
		return fail("the server signature does not verify", status.BadApplicationSignatureInvalid)
	}
	if !sameSecurity(c.eps, r.ServerEndpoints) {
		c.cfg.cache.Forget(c.url)
		return fail("the session's endpoints differ from the discovered ones", status.BadSecurityChecksFailed)
	}
	return nil
}

// activate runs ActivateSession for c.sess on ch (Part 4 §5.6.3), signing with the
// application key on a secured channel and proving the identity.
func (c *Client) activate(ctx context.Context, ch *uasc.ClientChannel) error {
	req := &ua.ActivateSessionRequest{RequestHeader: c.header(ctx, c.sess.token)}
	if c.ep.SecurityPolicyUri != policy.URINone {
		sig, err := sign(c.ep.SecurityPolicyUri, c.cfg.key, c.serverCert.Raw, c.sess.nonce)
		if err != nil {
			return err
		}
		req.ClientSignature = sig
	}
	if c.cfg.identity.kind != ua.UserTokenTypeAnonymous && c.serverCert == nil {
		return fmt.Errorf("client: the endpoint has no certificate to protect the identity token with: %w", status.BadIdentityTokenRejected)
	}
	tok, sig, err := c.cfg.identity.token(&c.ep, c.serverCert, c.sess.nonce)
	if err != nil {
		return err
	}
	req.UserIdentityToken, req.UserTokenSignature = tok, sig
	resp, err := c.request(ctx, ch, req)
	if err != nil {
		return statusError("ActivateSession", resp, err)
	}
	r, ok := resp.(*ua.ActivateSessionResponse)
	if !ok {
		return &StatusError{Service: "ActivateSession", Code: status.BadUnknownResponse}
	}
	if r.ResponseHeader.ServiceResult.IsBad() {
		return &StatusError{Service: "ActivateSession", Code: r.ResponseHeader.ServiceResult}
	}
	c.sess.nonce = r.ServerNonce
	return nil
}

// header returns a RequestHeader for token with the next handle and ctx's deadline, or
// the RequestTimeout, as TimeoutHint.
func (c *Client) header(ctx context.Context, token codec.NodeId) ua.RequestHeader {
	return ua.RequestHeader{
		AuthenticationToken: token,
		Timestamp:           codec.Now(),
		RequestHandle:       c.handle.Add(1),
		TimeoutHint:         timeoutHint(ctx, c.cfg.requestTimeout),
	}
}

// timeoutHint is the time left before ctx's deadline in milliseconds, or def.
func timeoutHint(ctx context.Context, def time.Duration) uint32 {
	d := def
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	return uint32(min(max(d, time.Millisecond), time.Duration(1<<31)*time.Millisecond) / time.Millisecond)
}

// request sends req on ch and waits for the answer, at most the request timeout when ctx
// has no deadline of its own.
func (c *Client) request(ctx context.Context, ch *uasc.ClientChannel, req codec.Structure) (codec.Structure, error) {
	var wait time.Duration
	if _, ok := ctx.Deadline(); !ok {
		wait = c.cfg.requestTimeout
	}
	return ch.RequestWithin(ctx, req, wait)
}

// send fills h and sends req on the current channel. If the channel has failed it
// reconnects first; when idempotent is set, a request cut off by the channel's failure
// is sent once more after a reconnect.
func (c *Client) send(ctx context.Context, service string, h *ua.RequestHeader, req codec.Structure, idempotent bool) (codec.Structure, error) {
	if c.closed.Load() {
		return nil, &StatusError{Service: service, Code: status.BadSessionClosed}
	}
	// The request timeout applies when ctx has no deadline. A plain request waits for it
	// on a pooled timer (RequestWithin); the rare paths that reconnect or send again get
	// ctx bound to the same deadline.
	var deadline time.Time
	if _, ok := ctx.Deadline(); !ok && c.cfg.requestTimeout > 0 {
		deadline = time.Now().Add(c.cfg.requestTimeout)
	}
	var cancel context.CancelFunc
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()
	bound := func() {
		if !deadline.IsZero() && cancel == nil {
			ctx, cancel = context.WithDeadline(ctx, deadline)
		}
	}
	for try := 0; ; try++ {
		l := c.cur.Load()
		if !idempotent && try == 0 && l.ch.Err() != nil {
			// Found dead before sending: reconnecting first is safe for any service.
			bound()
			if err := c.reconnect(ctx, l); err != nil {
				return nil, statusError(service, nil, err)
			}
			l = c.cur.Load()
		}
		now := time.Now()
		c.lastUse.Store(now.UnixNano())
		h.AuthenticationToken = l.token
		h.Timestamp = codec.DateTimeOf(now)
		h.RequestHandle = c.handle.Add(1)
		h.TimeoutHint = timeoutHint(ctx, c.cfg.requestTimeout)
		var wait time.Duration
		if !deadline.IsZero() && cancel == nil {
			wait = max(deadline.Sub(now), time.Nanosecond)
		}
		resp, err := l.ch.RequestWithin(ctx, req, wait)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil || c.closed.Load() || try > 0 || !deadline.IsZero() && !time.Now().Before(deadline) {
			return nil, statusError(service, resp, err)
		}
		bound()
		if l.ch.Err() == nil && !connectionLost(err) {
			// The server lost the session (it timed out): the request was refused before
			// it ran, so any service may be sent again on a new session.
			if f, ok := resp.(*ua.ServiceFault); ok && f.ResponseHeader.ServiceResult == status.BadSessionIdInvalid {
				if rerr := c.renewSession(ctx, l); rerr != nil {
					return nil, statusError(service, nil, errors.Join(err, rerr))
				}
				continue
			}
			return nil, statusError(service, resp, err)
		}
		// The channel is gone: bring the session up on a new one, so that the next call
		// works; only a call that reads is sent again, since another may have taken
		// effect before the channel failed.
		if rerr := c.reconnect(ctx, l); rerr != nil {
			return nil, statusError(service, nil, errors.Join(err, rerr))
		}
		if !idempotent {
			return nil, statusError(service, resp, err)
		}
	}
}

// SessionID returns the SessionId of the current session.
func (c *Client) SessionID() codec.NodeId {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.sess.id
}

// Connected reports whether the current secure channel is open. A client whose channel
// was lost reconnects on its next call.
func (c *Client) Connected() bool {
	l := c.cur.Load()
	return !c.closed.Load() && l.ch.Err() == nil
}

// Endpoint returns the endpoint the client is connected to; it changes on failover.
func (c *Client) Endpoint() ua.EndpointDescription {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.ep
}

// Close closes the session (deleting its subscriptions) and the channel. Calls in
// flight fail with BadSecureChannelClosed. Closing twice is harmless.
func (c *Client) Close(ctx context.Context) error {
	if p := c.pub.Load(); p != nil {
		p.close()
	}
	c.stopStandby(ctx)
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.closed.Swap(true) {
		return nil
	}
	if c.levelWatch != nil {
		c.levelWatch.Stop()
	}
	if c.keepAlive != nil {
		c.keepAlive.Stop()
	}
	l := c.cur.Load()
	req := &ua.CloseSessionRequest{RequestHeader: c.header(ctx, l.token), DeleteSubscriptions: true}
	resp, err := c.request(ctx, l.ch, req)
	cerr := l.ch.Close()
	if err != nil {
		return statusError("CloseSession", resp, err)
	}
	return cerr
}
