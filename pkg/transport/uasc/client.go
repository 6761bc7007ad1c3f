package uasc

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// ClientConfig configures Dial.
type ClientConfig struct {
	// PolicyURI and Mode choose the security. There is no default: None must be named.
	PolicyURI string
	Mode      ua.MessageSecurityMode
	// Certificate (DER) and Key are the client's; ServerCertificate is the server's (DER),
	// as found in its EndpointDescription. All are required unless PolicyURI is None.
	Certificate       []byte
	Key               crypto.Signer
	ServerCertificate []byte
	// RequestedLifetime is the token lifetime asked for; zero means one hour. The channel
	// renews its token at 75% of the revised lifetime.
	RequestedLifetime time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// ClientChannel is the client end of a secure channel. Request is safe for concurrent use;
// many requests may be in flight.
type ClientChannel struct {
	channel

	mu        sync.Mutex // guards waiters, nextID, err, closing, renewNon, renewID, timer
	closing   bool       // Close has begun
	waiters   map[uint32]chan result
	nextID    uint32
	err       error // why the channel ended
	renewID   uint32
	renewNon  policy.Nonce
	lifetime  time.Duration
	localLeaf *x509.Certificate // parsed Certificate, for the thumbprint check
	done      chan struct{}
	closeOnce sync.Once
	timer     *time.Timer
}

type result struct {
	msg codec.Structure
	err error
}

// Dial opens a secure channel over c (Part 6 §6.7.4): it sends an OpenSecureChannel Issue
// request, checks the response, derives the keys and starts reading. c is closed if Dial
// fails.
func Dial(ctx context.Context, c *uacp.Conn, cfg ClientConfig) (*ClientChannel, error) {
	cc, err := dial(ctx, c, cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	return cc, nil
}

func dial(ctx context.Context, c *uacp.Conn, cfg ClientConfig) (*ClientChannel, error) {
	p, ok := policy.Lookup(cfg.PolicyURI)
	if !ok {
		return nil, fmt.Errorf("uasc: unknown security policy %q: %w", cfg.PolicyURI, status.BadSecurityPolicyRejected)
	}
	none := p.Info().URI == policy.URINone
	if none != (cfg.Mode == ua.MessageSecurityModeNone) || cfg.Mode < ua.MessageSecurityModeNone || cfg.Mode > ua.MessageSecurityModeSignAndEncrypt {
		return nil, fmt.Errorf("uasc: policy %s with mode %v: %w", p.Info().Name, cfg.Mode, status.BadSecurityModeRejected)
	}
	cc := &ClientChannel{waiters: make(map[uint32]chan result), done: make(chan struct{})}
	cc.conn, cc.neg, cc.pool, cc.role, cc.pol, cc.mode = c, c.Negotiated(), uacp.DefaultPool, policy.Client, p, cfg.Mode
	cc.now = cfg.Now
	if cc.now == nil {
		cc.now, cc.realClock = time.Now, true
	}
	cc.asm = assembler{maxSize: cc.neg.MaxReceiveMessageSize, maxChunks: cc.neg.MaxReceiveChunkCount}
	if !none {
		sc, err := x509.ParseCertificate(cfg.ServerCertificate)
		if err != nil {
			return nil, fmt.Errorf("uasc: server certificate: %w", err)
		}
		own, err := x509.ParseCertificate(cfg.Certificate)
		if err != nil {
			return nil, fmt.Errorf("uasc: client certificate: %w", err)
		}
		asym, err := p.NewAsymmetric(cfg.Key, sc)
		if err != nil {
			return nil, err
		}
		cc.localLeaf = own
		cc.asym, cc.remoteCert, cc.remoteRaw, cc.localCert, cc.localKey = asym, sc, cfg.ServerCertificate, cfg.Certificate, cfg.Key
	} else {
		cc.asym, _ = p.NewAsymmetric(nil, nil)
	}
	cc.lifetime = cfg.RequestedLifetime
	if cc.lifetime <= 0 {
		cc.lifetime = time.Hour
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	reqID, nonce, err := cc.sendOpen(ua.SecurityTokenRequestTypeIssue)
	if err != nil {
		return nil, err
	}
	ch, err := c.ReadChunk()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("uasc: %w: %w", status.BadTimeout, ctx.Err())
		}
		return nil, err
	}
	if ch.Header.Type != uacp.TypeOpen {
		ch.Release()
		return nil, fmt.Errorf("uasc: %v in answer to OPN: %w", ch.Header.Type, status.BadTcpMessageTypeInvalid)
	}
	tok, err := cc.openResponse(&ch, reqID, nonce)
	ch.ReleaseZeroed()
	if err != nil {
		return nil, err
	}
	cc.recvToks = append(cc.recvToks, tok)
	cc.smu.Lock()
	cc.sendTok = tok
	cc.setSymmetricSizes(tok)
	cc.smu.Unlock()
	cc.scheduleRenewal(tok)
	go cc.readLoop()
	return cc, nil
}

// ID returns the SecureChannelId the server assigned.
func (cc *ClientChannel) ID() uint32 { return cc.channelID }

func (cc *ClientChannel) allocID() uint32 {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.nextID++
	if cc.nextID == 0 {
		cc.nextID = 1
	}
	return cc.nextID
}

// sendOpen sends an OpenSecureChannel request and returns its request id and nonce.
func (cc *ClientChannel) sendOpen(rt ua.SecurityTokenRequestType) (uint32, policy.Nonce, error) {
	nonce, err := cc.pol.NewNonce(rand.Reader)
	if err != nil {
		return 0, nonce, err
	}
	reqID := cc.allocID()
	req := &ua.OpenSecureChannelRequest{
		RequestHeader:     ua.RequestHeader{Timestamp: codec.Now(), RequestHandle: reqID, TimeoutHint: 10000},
		RequestType:       rt,
		SecurityMode:      cc.mode,
		ClientNonce:       nonce.Value,
		RequestedLifetime: uint32(cc.lifetime / time.Millisecond),
	}
	if req.ClientNonce == nil {
		req.ClientNonce = []byte{}
	}
	cc.mu.Lock()
	cc.renewID, cc.renewNon = reqID, nonce
	cc.mu.Unlock()
	cc.smu.Lock()
	return reqID, nonce, cc.sendOPNUnlock(reqID, req, func() {})
}

// openResponse checks an OPN response and derives the new token.
func (cc *ClientChannel) openResponse(ch *uacp.Chunk, reqID uint32, nonce policy.Nonce) (*token, error) {
	b := ch.Bytes
	h, hdrLen, err := parseAsymmetricHeader(b)
	if err != nil {
		return nil, err
	}
	if h.SecurityPolicyURI != cc.pol.Info().URI {
		return nil, fmt.Errorf("uasc: response with policy %q: %w", h.SecurityPolicyURI, status.BadSecurityPolicyRejected)
	}
	if cc.asymmetric() {
		if err := policy.CheckReceiverThumbprint(h.ReceiverCertificateThumbprint, cc.localLeaf); err != nil {
			return nil, fmt.Errorf("uasc: ReceiverCertificateThumbprint: %w", err)
		}
		if !bytes.HasPrefix(h.SenderCertificate, cc.remoteRaw) {
			return nil, fmt.Errorf("uasc: response signed by another certificate: %w", status.BadCertificateInvalid)
		}
	}
	gotID, body, err := cc.openAsym(b, hdrLen)
	if err != nil {
		return nil, err
	}
	if gotID != reqID {
		return nil, fmt.Errorf("uasc: OPN response for request %d, want %d: %w", gotID, reqID, status.BadSecurityChecksFailed)
	}
	d := codec.NewDecoder(body)
	m := d.Message()
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("uasc: decoding OPN response: %w", err)
	}
	if f, ok := m.(*ua.ServiceFault); ok {
		return nil, fmt.Errorf("uasc: OpenSecureChannel: %w", f.ResponseHeader.ServiceResult)
	}
	resp, ok := m.(*ua.OpenSecureChannelResponse)
	if !ok {
		return nil, fmt.Errorf("uasc: OPN carries %s: %w", m.TypeInfo().Name, status.BadDecodingError)
	}
	if code := resp.ResponseHeader.ServiceResult; code.IsBad() {
		return nil, fmt.Errorf("uasc: OpenSecureChannel: %w", code)
	}
	id := binary32(b[8:])
	if cc.channelID == 0 {
		cc.channelID = resp.SecurityToken.ChannelId
	}
	if id != cc.channelID || resp.SecurityToken.ChannelId != cc.channelID {
		return nil, fmt.Errorf("uasc: OPN response for channel %d: %w", id, status.BadTcpSecureChannelUnknown)
	}
	if err := policy.CheckNonce(cc.pol, resp.ServerNonce); err != nil {
		return nil, fmt.Errorf("uasc: ServerNonce: %w", err)
	}
	send, recv, err := cc.pol.DeriveKeys(policy.Client, nonce, resp.ServerNonce)
	if err != nil {
		return nil, err
	}
	lt := time.Duration(resp.SecurityToken.RevisedLifetime) * time.Millisecond
	if lt <= 0 {
		lt = cc.lifetime
	}
	return newToken(resp.SecurityToken.TokenId, send, recv, cc.now(), lt), nil
}

func binary32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// scheduleRenewal arms the renewal of tok at 75% of its lifetime (Part 4 §5.5.2).
func (cc *ClientChannel) scheduleRenewal(tok *token) {
	d := tok.lifetime * 3 / 4
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err != nil {
		return
	}
	cc.timer = time.AfterFunc(d, func() {
		if _, _, err := cc.sendOpen(ua.SecurityTokenRequestTypeRenew); err != nil {
			cc.fail(err)
		}
	})
}

// readLoop reads chunks until the channel ends.
func (cc *ClientChannel) readLoop() {
	for {
		ch, err := cc.conn.ReadChunk()
		if err != nil {
			cc.fail(err)
			return
		}
		switch ch.Header.Type {
		case uacp.TypeOpen:
			cc.mu.Lock()
			id, nonce := cc.renewID, cc.renewNon
			cc.mu.Unlock()
			var tok *token
			tok, err = cc.openResponse(&ch, id, nonce)
			if err == nil {
				cc.pruneTokens()
				cc.recvToks = append(cc.recvToks, tok)
				cc.smu.Lock()
				cc.sendTok = tok
				cc.smu.Unlock()
				cc.scheduleRenewal(tok)
			}
		case uacp.TypeMessage:
			err = cc.message(&ch)
		default:
			err = fmt.Errorf("uasc: %v from server: %w", ch.Header.Type, status.BadTcpMessageTypeInvalid)
		}
		ch.ReleaseZeroed()
		if err != nil {
			cc.fail(err)
			return
		}
	}
}

func (cc *ClientChannel) message(ch *uacp.Chunk) error {
	reqID, body, _, err := cc.openSym(ch.Bytes, cc.timeOf(ch))
	if err != nil {
		return err
	}
	msg, done, aborted, err := cc.asm.add(ch.Header.ChunkType, reqID, body)
	if err != nil {
		return err
	}
	if aborted {
		d := codec.NewDecoder(msg)
		code, reason := d.StatusCode(), d.String()
		if code.IsGood() {
			code = status.BadUnexpectedError
		}
		cc.deliver(reqID, result{err: fmt.Errorf("uasc: request aborted: %s: %w", reason, code)})
		return nil
	}
	if !done {
		return nil
	}
	d := codec.NewDecoderLimits(msg, responseLimits)
	m := d.Message()
	cc.asm.reset()
	r := result{msg: m, err: d.Err()}
	if f, ok := m.(*ua.ServiceFault); ok {
		r.err = fmt.Errorf("uasc: service fault: %w", f.ResponseHeader.ServiceResult)
	}
	cc.deliver(reqID, r)
	return nil
}

func (cc *ClientChannel) deliver(reqID uint32, r result) {
	cc.mu.Lock()
	w, ok := cc.waiters[reqID]
	delete(cc.waiters, reqID)
	cc.mu.Unlock()
	if ok {
		w <- r
	}
}

// fail ends the channel with err: pending and later requests fail with it. Once Close has
// begun, every failure is reported as BadSecureChannelClosed.
func (cc *ClientChannel) fail(err error) {
	cc.closeOnce.Do(func() {
		cc.mu.Lock()
		if cc.closing {
			err = errClosed
		}
		cc.err = err
		if cc.timer != nil {
			cc.timer.Stop()
		}
		cc.mu.Unlock()
		cc.failSend(err)
		cc.conn.Close()
		close(cc.done)
	})
}

// Err returns why the channel ended, or nil while it is open.
func (cc *ClientChannel) Err() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err
}

// Request sends req and waits for its response, until ctx ends or the channel fails. A
// ServiceFault is returned as the response together with an error wrapping its
// ServiceResult. Safe for concurrent use.
func (cc *ClientChannel) Request(ctx context.Context, req codec.Structure) (codec.Structure, error) {
	return cc.RequestWithin(ctx, req, 0)
}

// RequestWithin is Request with a timeout of its own besides ctx: after d it fails with
// BadTimeout (and context.DeadlineExceeded). It waits on a pooled timer, which costs far
// less per request than a context with a deadline. d <= 0 means no timeout but ctx's.
func (cc *ClientChannel) RequestWithin(ctx context.Context, req codec.Structure, d time.Duration) (codec.Structure, error) {
	id := cc.allocID()
	w := make(chan result, 1)
	cc.mu.Lock()
	if cc.err != nil {
		err := cc.err
		cc.mu.Unlock()
		return nil, err
	}
	cc.waiters[id] = w
	cc.mu.Unlock()
	if err := cc.sendMessage(uacp.TypeMessage, id, req); err != nil {
		cc.forget(id)
		var tl *errTooLarge
		if errors.As(err, &tl) {
			return nil, fmt.Errorf("%w: %w", err, status.BadRequestTooLarge)
		}
		return nil, err
	}
	var expired <-chan time.Time
	if d > 0 {
		t := timers.Get().(*time.Timer)
		t.Reset(d)
		defer func() {
			t.Stop() // a stopped timer's channel holds no value (Go 1.23 timers)
			timers.Put(t)
		}()
		expired = t.C
	}
	select {
	case r := <-w:
		return r.msg, r.err
	case <-ctx.Done():
		cc.forget(id)
		return nil, fmt.Errorf("uasc: %w: %w", status.BadTimeout, ctx.Err())
	case <-expired:
		cc.forget(id)
		return nil, fmt.Errorf("uasc: %w: %w", status.BadTimeout, context.DeadlineExceeded)
	case <-cc.done:
		return nil, cc.Err()
	}
}

// timers are the stopped timers RequestWithin waits on.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// forget drops the waiter of request id, which its caller no longer waits for.
func (cc *ClientChannel) forget(id uint32) {
	cc.mu.Lock()
	delete(cc.waiters, id)
	cc.mu.Unlock()
}

// Close sends CloseSecureChannel and closes the connection. Pending requests fail with
// BadSecureChannelClosed.
func (cc *ClientChannel) Close() error {
	cc.mu.Lock()
	done := cc.err != nil || cc.closing
	cc.closing = true
	cc.mu.Unlock()
	if done {
		return nil
	}
	req := &ua.CloseSecureChannelRequest{RequestHeader: ua.RequestHeader{Timestamp: codec.Now()}}
	err := cc.sendMessage(uacp.TypeClose, cc.allocID(), req)
	cc.fail(errClosed)
	return err
}
