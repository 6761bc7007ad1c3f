package uasc

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// open handles the first OPN (Part 6 §6.7.4, Part 4 §5.5.2), its cryptography within a
// turn of ServerConfig.Handshakes that waits until ctx ends at the latest.
func (sc *ServerChannel) open(ctx context.Context, ch *uacp.Chunk) error {
	b := ch.Bytes
	h, hdrLen, err := parseAsymmetricHeader(b)
	if err != nil {
		return err
	}
	modes, ok := sc.srv.security[h.SecurityPolicyURI]
	if !ok {
		return fmt.Errorf("uasc: security policy %q: %w", h.SecurityPolicyURI, status.BadSecurityPolicyRejected)
	}
	sc.pol, _ = policy.Lookup(h.SecurityPolicyURI)
	leave, err := sc.enterHandshake(ctx, false)
	if err != nil {
		return err
	}
	defer leave()
	if err := sc.setupAsym(&h); err != nil {
		return err
	}
	reqID, body, err := sc.openAsym(b, hdrLen)
	if err != nil {
		return err
	}
	req, err := decodeOPN(body)
	if err != nil {
		return err
	}
	if req.RequestType != ua.SecurityTokenRequestTypeIssue {
		return fmt.Errorf("uasc: first OpenSecureChannel is %v: %w", req.RequestType, status.BadRequestTypeInvalid)
	}
	modeOK := false
	for _, m := range modes {
		modeOK = modeOK || m == req.SecurityMode
	}
	if !modeOK {
		return fmt.Errorf("uasc: security mode %v with %s: %w", req.SecurityMode, sc.pol.Info().Name, status.BadSecurityModeRejected)
	}
	sc.mode = req.SecurityMode
	sc.channelID = sc.srv.cfg.IDs.Allocate()
	tok, resp, err := sc.issue(req)
	if err != nil {
		return err
	}
	sc.recvToks = append(sc.recvToks, tok)
	sc.activeID = tok.id
	sc.smu.Lock()
	sc.sendTok = tok
	sc.setSymmetricSizes(tok)
	sc.armExpiryLocked(tok)
	return sc.sendOPNUnlock(reqID, resp, leave)
}

// enterHandshake takes a turn of ServerConfig.Handshakes for the asymmetric work of an
// OPN, waiting until ctx ends at the latest; the returned leave may be called more than
// once. A channel of policy None does no such work and takes no turn.
func (sc *ServerChannel) enterHandshake(ctx context.Context, renew bool) (leave func(), err error) {
	g := sc.srv.cfg.Handshakes
	if g == nil || !sc.asymmetric() {
		return func() {}, nil
	}
	end, ok := g.Enter(ctx, renew)
	if !ok {
		return nil, fmt.Errorf("uasc: no turn for the OpenSecureChannel's cryptography: %w", status.BadTcpServerTooBusy)
	}
	return sync.OnceFunc(end), nil
}

// setupAsym checks the sender certificate and receiver thumbprint of an OPN and prepares
// the asymmetric algorithms.
func (sc *ServerChannel) setupAsym(h *asymmetricHeader) error {
	if sc.pol.Info().URI == policy.URINone {
		sc.asym, _ = sc.pol.NewAsymmetric(nil, nil)
		return nil
	}
	if err := policy.CheckReceiverThumbprint(h.ReceiverCertificateThumbprint, sc.srv.cert); err != nil {
		return fmt.Errorf("uasc: ReceiverCertificateThumbprint: %w", err)
	}
	chain, err := parseChain(h.SenderCertificate)
	if err != nil {
		return err
	}
	// Validate, then track the channel for Revalidate. A Revalidate between the two would
	// miss the channel, so track refuses when one happened and the chain is validated again
	// against the new trust list.
	sc.chain = chain
	for tracked := false; !tracked; {
		gen := sc.srv.generation()
		if err := sc.srv.cfg.ValidateCertificate(chain); err != nil {
			return fmt.Errorf("uasc: client certificate refused: %w: %w", certificateStatus(err), err)
		}
		tracked = sc.srv.track(sc, gen)
	}
	asym, err := sc.pol.NewAsymmetric(sc.srv.cfg.Key, chain[0])
	if err != nil {
		return err
	}
	sc.asym, sc.remoteCert, sc.remoteRaw = asym, chain[0], h.SenderCertificate
	sc.localCert = sc.srv.cfg.Certificate
	return nil
}

// issue revises the lifetime, makes the server nonce, derives the keys of a new token and
// builds the response.
func (sc *ServerChannel) issue(req *ua.OpenSecureChannelRequest) (*token, *ua.OpenSecureChannelResponse, error) {
	if err := policy.CheckNonce(sc.pol, req.ClientNonce); err != nil {
		return nil, nil, fmt.Errorf("uasc: ClientNonce: %w", err)
	}
	lifetime := min(max(time.Duration(req.RequestedLifetime)*time.Millisecond, sc.srv.cfg.MinTokenLifetime), sc.srv.cfg.MaxTokenLifetime)
	nonce, err := sc.pol.NewNonce(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", err, status.BadInternalError)
	}
	send, recv, err := sc.pol.DeriveKeys(policy.Server, nonce, req.ClientNonce)
	if err != nil {
		return nil, nil, fmt.Errorf("uasc: deriving keys: %w", err)
	}
	sc.token++
	if sc.token == 0 {
		sc.token = 1
	}
	now := sc.now()
	tok := newToken(sc.token, send, recv, now, lifetime)
	resp := &ua.OpenSecureChannelResponse{
		ResponseHeader: ua.ResponseHeader{Timestamp: codec.DateTimeOf(now), RequestHandle: req.RequestHeader.RequestHandle},
		SecurityToken: ua.ChannelSecurityToken{
			ChannelId: sc.channelID, TokenId: tok.id, CreatedAt: codec.DateTimeOf(now),
			RevisedLifetime: uint32(lifetime / time.Millisecond),
		},
		ServerNonce: nonce.Value,
	}
	if resp.ServerNonce == nil {
		resp.ServerNonce = []byte{}
	}
	return tok, resp, nil
}

// sendOPNUnlock encodes and sends an OPN response; it is called with smu held and releases
// it. sealed runs once the response is sealed, before it is written: the end of the
// handshake's turn, which a peer slow to read must not hold.
func (c *channel) sendOPNUnlock(requestID uint32, msg codec.Structure, sealed func()) error {
	e := codec.NewEncoder(nil)
	e.Message(msg)
	if err := e.Err(); err != nil {
		c.smu.Unlock()
		return err
	}
	b, err := c.sealAsym(requestID, e.Bytes())
	sealed()
	if err != nil {
		c.smu.Unlock()
		return err
	}
	return c.queueUnlock(b)
}

func decodeOPN(body []byte) (*ua.OpenSecureChannelRequest, error) {
	d := codec.NewDecoder(body)
	m := d.Message()
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("uasc: decoding OpenSecureChannelRequest: %w", status.BadDecodingError)
	}
	req, ok := m.(*ua.OpenSecureChannelRequest)
	if !ok {
		return nil, fmt.Errorf("uasc: OPN carries %s: %w", m.TypeInfo().Name, status.BadDecodingError)
	}
	return req, nil
}

// renew handles an OPN Renew on an open channel (Part 6 §6.7.6), its cryptography within a
// turn of ServerConfig.Handshakes.
func (sc *ServerChannel) renew(ctx context.Context, ch *uacp.Chunk) error {
	b := ch.Bytes
	h, hdrLen, err := parseAsymmetricHeader(b)
	if err != nil {
		return err
	}
	if id := uint32(b[8]) | uint32(b[9])<<8 | uint32(b[10])<<16 | uint32(b[11])<<24; id != sc.channelID {
		return fmt.Errorf("uasc: OPN for SecureChannelId %d: %w", id, status.BadTcpSecureChannelUnknown)
	}
	if h.SecurityPolicyURI != sc.pol.Info().URI {
		return fmt.Errorf("uasc: renewal with policy %q: %w", h.SecurityPolicyURI, status.BadSecurityPolicyRejected)
	}
	if sc.asymmetric() {
		if err := policy.CheckReceiverThumbprint(h.ReceiverCertificateThumbprint, sc.srv.cert); err != nil {
			return fmt.Errorf("uasc: ReceiverCertificateThumbprint: %w", err)
		}
		if !bytes.Equal(h.SenderCertificate, sc.remoteRaw) {
			return fmt.Errorf("uasc: renewal from another certificate: %w", status.BadSecurityChecksFailed)
		}
	}
	leave, err := sc.enterHandshake(ctx, true)
	if err != nil {
		return err
	}
	defer leave()
	reqID, body, err := sc.openAsym(b, hdrLen)
	if err != nil {
		return err
	}
	req, err := decodeOPN(body)
	if err != nil {
		return err
	}
	if req.RequestType != ua.SecurityTokenRequestTypeRenew {
		return fmt.Errorf("uasc: OpenSecureChannel %v on an open channel: %w", req.RequestType, status.BadRequestTypeInvalid)
	}
	if req.SecurityMode != sc.mode {
		return fmt.Errorf("uasc: renewal with mode %v: %w", req.SecurityMode, status.BadSecurityModeRejected)
	}
	tok, resp, err := sc.issue(req)
	if err != nil {
		return err
	}
	sc.pruneTokens()
	sc.recvToks = append(sc.recvToks, tok)
	sc.smu.Lock()
	sc.armExpiryLocked(tok)
	return sc.sendOPNUnlock(reqID, resp, leave)
}

// activate makes a renewed token the send token once the client has used it (Part 6
// §6.7.6), and forgets expired tokens.
func (sc *ServerChannel) activate(tok *token) {
	sc.activeID = tok.id
	sc.smu.Lock()
	sc.sendTok = tok
	sc.smu.Unlock()
	sc.pruneTokens()
}
