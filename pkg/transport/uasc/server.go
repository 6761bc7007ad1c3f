package uasc

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// SecurityConfig is one (SecurityPolicy, MessageSecurityMode) pair a server accepts.
type SecurityConfig struct {
	PolicyURI string
	Mode      ua.MessageSecurityMode
}

// Default token lifetimes (Part 4 §5.5.2: the server revises the requested lifetime).
const (
	DefaultMinTokenLifetime = 10 * time.Second
	DefaultMaxTokenLifetime = time.Hour
)

// ServerConfig configures a Server. It is read once by NewServer.
type ServerConfig struct {
	// Certificate is the server's application instance certificate (DER) and Key its
	// private key. Both are required unless Security holds only SecurityPolicy None.
	Certificate []byte
	Key         crypto.Signer
	// Security lists the accepted (policy, mode) pairs. It must not be empty: there is no
	// default, and None is accepted only when listed explicitly with mode None.
	Security []SecurityConfig
	// ValidateCertificate is asked about every client certificate chain (leaf first) before
	// the OPN is decrypted. A non-nil error refuses the channel with the status.Code it
	// wraps, or BadSecurityChecksFailed. It is required unless only None is accepted, and
	// must be safe for concurrent use.
	ValidateCertificate func(chain []*x509.Certificate) error
	// MinTokenLifetime and MaxTokenLifetime bound the revised token lifetime; zero means
	// DefaultMinTokenLifetime and DefaultMaxTokenLifetime.
	MinTokenLifetime, MaxTokenLifetime time.Duration
	// IDs allocates SecureChannelIds; nil gives the Server its own.
	IDs *IDAllocator
	// Budget bounds the bytes held in partly reassembled messages by all channels of the
	// Server; nil means a Budget of DefaultBudget bytes.
	Budget *Budget
	// MaxSendBacklog bounds the bytes of responses a channel holds while its peer does
	// not read them; beyond it the channel is closed (BadTcpNotEnoughResources). Zero
	// means twice the peer's MaxMessageSize, at least 1 MiB.
	MaxSendBacklog int
	// UACP configures the connection protocol for Serve.
	UACP uacp.ServerConfig
	// Decode bounds the strings, byte strings and arrays of a request (Part 6 §5.2.2);
	// zero fields take codec.DefaultLimits. MaxMessageSize is not used: a reassembled
	// message is already within the negotiated size. A request beyond them is answered
	// with a ServiceFault BadEncodingLimitsExceeded.
	Decode codec.Limits
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// DefaultBudget is the reassembly budget of a Server whose config names none.
const DefaultBudget = 256 << 20

// IDAllocator hands out SecureChannelIds that are never 0 and never in use twice. It is
// safe for concurrent use.
type IDAllocator struct {
	mu   sync.Mutex // guards next, live
	next uint32
	live map[uint32]struct{}
}

// NewIDAllocator returns an allocator starting at a random id.
func NewIDAllocator() *IDAllocator {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &IDAllocator{next: uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16, live: make(map[uint32]struct{})}
}

// Allocate returns an id not currently live and marks it live.
func (a *IDAllocator) Allocate() uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		a.next++
		if _, used := a.live[a.next]; a.next != 0 && !used {
			a.live[a.next] = struct{}{}
			return a.next
		}
	}
}

// Free makes id available again.
func (a *IDAllocator) Free(id uint32) {
	a.mu.Lock()
	delete(a.live, id)
	a.mu.Unlock()
}

// Handler receives every complete request of a channel, on the channel's reading
// goroutine: a handler that may block should hand the request to another goroutine and
// return. The Request may be answered from any goroutine, once.
type Handler func(ctx context.Context, req Request)

// Request is one service request received on a ServerChannel.
type Request struct {
	// RequestID is the id the client gave the request in its sequence header.
	RequestID uint32
	// Message is the decoded request.
	Message codec.Structure
	// Channel is the channel the request arrived on.
	Channel *ServerChannel
	// Received is when the request's last chunk was read (the server's configured clock
	// when it has one). A handler that answers at once may use it as the current time
	// and save a clock reading.
	Received time.Time
}

// Recycle hands r.Message back to its channel, which decodes a later request of the same
// type into it (codec.Decoder.MessageInto) instead of allocating one, or hands it out as it
// is for a request that repeats this one but for the RequestHeader's Timestamp and
// RequestHandle. It is for a request answered on the Handler's goroutine: call it there,
// at most once, before the Handler returns, and only when nothing refers to the message
// or to a slice decoded into it any more (after Respond returned) and the message is as it
// was decoded. Strings decoded into it may be kept: they are never overwritten. A request
// answered on another goroutine is not recycled: the channel's spare belongs to its
// reading goroutine, so that taking and returning it costs no lock.
func (r Request) Recycle() { r.Channel.spare.recycle(r.Message, &r.Channel.dec) }

// Respond sends msg as the response to r. It is safe for concurrent use. A response over
// the client's MaxMessageSize or MaxChunkCount is replaced by a ServiceFault with
// BadResponseTooLarge. Errors mean the channel is closed.
func (r Request) Respond(msg codec.Structure) error {
	return r.Channel.respond(r.RequestID, msg, false)
}

// RespondNoWait is Respond for a caller that must not wait on the peer: msg is encoded
// and queued before it returns, but when the channel's socket must be written to, a
// goroutine of its own does it. A server that answers many channels from one goroutine
// (published notifications) uses it, so that one peer that stops reading delays no
// other. A peer that leaves more than ServerConfig.MaxSendBacklog unread loses its
// channel.
func (r Request) RespondNoWait(msg codec.Structure) error {
	return r.Channel.respond(r.RequestID, msg, true)
}

// sendBacklog returns the bound on the bytes a channel holds for its peer: configured,
// or twice the largest message the peer accepts (32 MiB when it names no limit), at
// least 1 MiB.
func sendBacklog(configured int, maxMessage uint32) int {
	if configured > 0 {
		return configured
	}
	n := 2 * int(maxMessage)
	if maxMessage == 0 {
		n = 32 << 20
	}
	return max(n, 1<<20)
}

// Server is the server role of the secure channel: it holds the checked configuration, the
// SecureChannelId allocator and the reassembly budget its channels share, and the set of
// live channels that Revalidate re-checks.
type Server struct {
	cfg      ServerConfig
	cert     *x509.Certificate
	handler  Handler
	security map[string][]ua.MessageSecurityMode
	// realClock: cfg.Now was left to time.Now (see channel.timeOf).
	realClock bool

	mu sync.Mutex // guards live, trustGen
	// live holds the open channels with a client certificate, for Revalidate. A channel is
	// added once its certificate passed ValidateCertificate and removed when it ends; the
	// message path never touches it.
	live map[*ServerChannel]struct{}
	// trustGen counts Revalidate calls, so that a channel validated before one but
	// registered after it is validated again (see track).
	trustGen uint64
}

// NewServer checks cfg and returns a Server that hands requests to h.
func NewServer(cfg ServerConfig, h Handler) (*Server, error) {
	if len(cfg.Security) == 0 {
		return nil, errors.New("uasc: ServerConfig.Security is empty")
	}
	if h == nil {
		return nil, errors.New("uasc: nil Handler")
	}
	s := &Server{cfg: cfg, handler: h, security: make(map[string][]ua.MessageSecurityMode), live: make(map[*ServerChannel]struct{})}
	for _, sc := range cfg.Security {
		p, ok := policy.Lookup(sc.PolicyURI)
		if !ok {
			return nil, fmt.Errorf("uasc: unknown security policy %q", sc.PolicyURI)
		}
		none := p.Info().URI == policy.URINone
		if none != (sc.Mode == ua.MessageSecurityModeNone) || (sc.Mode < ua.MessageSecurityModeNone || sc.Mode > ua.MessageSecurityModeSignAndEncrypt) {
			return nil, fmt.Errorf("uasc: policy %s with mode %v", p.Info().Name, sc.Mode)
		}
		if !none {
			if s.cert == nil {
				cert, err := x509.ParseCertificate(cfg.Certificate)
				if err != nil {
					return nil, fmt.Errorf("uasc: server certificate: %w", err)
				}
				s.cert = cert
			}
			if cfg.Key == nil || cfg.ValidateCertificate == nil {
				return nil, errors.New("uasc: secure policies need Key and ValidateCertificate")
			}
			if _, err := p.NewAsymmetric(cfg.Key, s.cert); err != nil {
				return nil, fmt.Errorf("uasc: server key for %s: %w", p.Info().Name, err)
			}
		}
		s.security[sc.PolicyURI] = append(s.security[sc.PolicyURI], sc.Mode)
	}
	if s.cfg.MinTokenLifetime <= 0 {
		s.cfg.MinTokenLifetime = DefaultMinTokenLifetime
	}
	if s.cfg.MaxTokenLifetime <= 0 {
		s.cfg.MaxTokenLifetime = DefaultMaxTokenLifetime
	}
	if s.cfg.MaxTokenLifetime < s.cfg.MinTokenLifetime {
		return nil, errors.New("uasc: MaxTokenLifetime below MinTokenLifetime")
	}
	if s.cfg.IDs == nil {
		s.cfg.IDs = NewIDAllocator()
	}
	if s.cfg.Budget == nil {
		s.cfg.Budget = NewBudget(DefaultBudget)
	}
	if s.cfg.Now == nil {
		s.cfg.Now, s.realClock = time.Now, true
	}
	return s, nil
}

// Serve accepts connections on ln until ctx ends or ln fails, runs the UACP handshake and
// ServeConn on each in its own goroutine. It closes ln when ctx ends and waits for its
// connections to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := uacp.Accept(ctx, nc, s.cfg.UACP)
			if err != nil {
				return
			}
			_ = s.ServeConn(ctx, c)
		}()
	}
}

// ServerChannel is one secure channel served by a Server.
type ServerChannel struct {
	channel
	srv   *Server
	token uint32 // last TokenId issued
	// activeID is the TokenId the server sends with. After a renewal the server keeps
	// sending with the old token until the client's first chunk under the new one (Part 6
	// §6.7.6).
	activeID uint32
	done     chan struct{}
	// chain is the client certificate chain (leaf first) that passed validation; nil for
	// None. It is set before the channel is tracked and not changed after.
	chain []*x509.Certificate
	// dropped is set by Revalidate or the expiry timer before the ERR is sent: the reading
	// goroutine then hands no further request to the Handler. dropErr and dropDone are
	// written before it under smu and not changed after.
	dropped  atomic.Bool
	dropErr  error
	dropDone chan struct{} // closed once the ERR is written and the connection closed
	// newest is the token issued last and expiry the timer that ends the channel once
	// newest is past the grace the receive path allows (Part 4 §5.5.2.1: a SecureChannel
	// exists until its last token has expired and the overlap period has elapsed). Both are
	// guarded by smu: every operation on expiry runs under it, so a firing that races a
	// renewal or the end of the channel sees the state that follows.
	newest *token
	expiry *time.Timer
	// dec decodes the reassembled requests; only the reading goroutine uses it. Reusing it
	// saves an allocation per message, and nothing decoded aliases it. Its NodeId cache
	// lets the session's authentication token and the NodeIds a client repeats decode
	// without a copy.
	dec codec.Decoder
	// spare is the last request handed back by Request.Recycle; only the reading
	// goroutine uses it.
	spare recycled
	// local is the Handler's own state of the channel (Local, SetLocal).
	local any
}

// decodeCachedIDs is the size of a channel's cache of decoded NodeId identifiers.
const decodeCachedIDs = 512

// ID returns the SecureChannelId.
func (sc *ServerChannel) ID() uint32 { return sc.channelID }

// Local returns what SetLocal stored, nil before. Local and SetLocal belong to the
// Handler on the channel's reading goroutine, which is the goroutine that calls it for
// the channel's requests: state kept here needs no lock while only that goroutine uses it.
func (sc *ServerChannel) Local() any { return sc.local }

// SetLocal stores v for Local.
func (sc *ServerChannel) SetLocal(v any) { sc.local = v }

// TokenID returns the TokenId of the token the server currently sends with. Safe for
// concurrent use.
func (sc *ServerChannel) TokenID() uint32 {
	sc.smu.Lock()
	defer sc.smu.Unlock()
	return sc.sendTok.id
}

// SecurityPolicyURI returns the channel's SecurityPolicy.
func (sc *ServerChannel) SecurityPolicyURI() string { return sc.pol.Info().URI }

// SecurityMode returns the channel's MessageSecurityMode.
func (sc *ServerChannel) SecurityMode() ua.MessageSecurityMode { return sc.mode }

// ClientCertificate returns the client's certificate, nil for None.
func (sc *ServerChannel) ClientCertificate() *x509.Certificate { return sc.remoteCert }

// ServeConn runs one secure channel over c until the client closes it, an error ends it or
// ctx ends. The first chunk must be an OpenSecureChannel Issue request; every failure of a
// security check is answered with an ERR message carrying its status before c is closed,
// and returned. A channel whose newest token is 25% past its lifetime without a renewal is
// closed with BadSecureChannelTokenUnknown (Part 4 §5.5.2.1). A CloseSecureChannel ends it
// with a nil error. c is closed on return.
func (s *Server) ServeConn(ctx context.Context, c *uacp.Conn) error {
	sc := &ServerChannel{srv: s, done: make(chan struct{})}
	sc.conn, sc.neg, sc.role, sc.now, sc.realClock = c, c.Negotiated(), policy.Server, s.cfg.Now, s.realClock
	sc.pool = uacp.DefaultPool
	if s.cfg.UACP.Pool != nil {
		sc.pool = s.cfg.UACP.Pool
	}
	sc.asm = assembler{budget: s.cfg.Budget, maxSize: sc.neg.MaxReceiveMessageSize, maxChunks: sc.neg.MaxReceiveChunkCount}
	sc.maxBacklog = sendBacklog(s.cfg.MaxSendBacklog, sc.neg.MaxSendMessageSize)
	sc.dec.CacheNodeIds(decodeCachedIDs)
	// serve is done with each chunk before it reads the next: the assembler copies the
	// parts of a message, and nothing decoded aliases the chunk.
	c.LendChunks()
	// The assembler bounds a message's size already (MaxReceiveMessageSize).
	lim := s.cfg.Decode
	lim.MaxMessageSize = math.MaxInt
	sc.dec.SetLimits(lim)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer func() {
		stop()
		close(sc.done)
		sc.asm.reset()
		sc.failSend(errClosed)
		s.untrack(sc)
		if sc.channelID != 0 {
			s.cfg.IDs.Free(sc.channelID)
		}
		c.Close()
	}()
	err := sc.serve(ctx)
	sc.stopExpiry()
	if sc.dropped.Load() {
		// drop (Revalidate or the expiry timer) sends the ERR and closes c; whatever the read
		// loop saw is a consequence.
		<-sc.dropDone
		return sc.dropErr
	}
	if err != nil && !isPeerGone(err) {
		code := statusOf(err)
		_ = c.SendError(code, errReason(code))
	}
	return err
}

// errReason is the Reason of an ERR the server sends: the status and its description.
// The error's own text stays in the server's log: it may name files and internals (a
// certificate refusal says where the rejected copy lies) that are not the peer's business.
func errReason(code status.Code) string {
	return code.Name() + ": " + code.Description()
}

// isPeerGone reports errors after which no ERR is sent: the connection is gone, the peer
// sent ERR, or uacp already answered.
func isPeerGone(err error) bool {
	var ue *uacp.Error
	var re *readError
	return errors.As(err, &ue) || errors.As(err, &re)
}

// readError wraps a ReadChunk failure: uacp has already answered it.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

func (sc *ServerChannel) serve(ctx context.Context) error {
	ch, err := sc.conn.ReadChunk()
	if err != nil {
		return &readError{err}
	}
	if ch.Header.Type != uacp.TypeOpen {
		ch.Release()
		return fmt.Errorf("uasc: %v before OpenSecureChannel: %w", ch.Header.Type, status.BadTcpSecureChannelUnknown)
	}
	err = sc.open(&ch)
	ch.ReleaseZeroed()
	if err != nil {
		return err
	}
	held := false // whether this loop holds the send half (see hold)
	for {
		ch, err := sc.conn.ReadChunk()
		if err != nil {
			if statusOf(err) == status.BadConnectionClosed {
				return nil
			}
			return &readError{err}
		}
		if sc.dropped.Load() {
			// Revalidate ended the channel while this chunk was on its way: the peer is no
			// longer trusted, so nothing more of its is processed.
			ch.ReleaseZeroed()
			return nil
		}
		// Hold the responses while the next request is already here; write them together
		// after the last one, before the read that may wait.
		more := sc.conn.ChunkBuffered()
		if more && !held {
			sc.hold(true)
			held = true
		}
		var closed bool
		switch ch.Header.Type {
		case uacp.TypeOpen:
			err = sc.renew(&ch)
		case uacp.TypeClose:
			_, _, _, err = sc.openSym(ch.Bytes, sc.timeOf(&ch))
			closed = err == nil
		default:
			err = sc.message(ctx, &ch)
		}
		ch.ReleaseZeroed()
		if held && !more && err == nil && !closed {
			// The last read may have left the rest of a burst in the socket.
			more = sc.conn.ReadArrived()
		}
		if held && (!more || err != nil || closed) {
			sc.hold(false)
			held = false
		}
		if err != nil || closed {
			return err
		}
	}
}

// open handles the first OPN (Part 6 §6.7.4, Part 4 §5.5.2).
func (sc *ServerChannel) open(ch *uacp.Chunk) error {
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
	return sc.sendOPN(reqID, resp)
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

// certificateStatus is the status sent for a refused client certificate: the one err
// carries, except that an untrusted certificate is reported as BadSecurityChecksFailed
// (Part 6 §6.7.6, 1.05), so that a probe learns nothing about the trust list.
func certificateStatus(err error) status.Code {
	code := statusOf(err)
	if code == status.BadCertificateUntrusted {
		code = status.BadSecurityChecksFailed
	}
	return code
}

// generation returns the number of Revalidate calls so far.
func (s *Server) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trustGen
}

// track adds sc to the live channels unless a Revalidate happened since generation gen.
func (s *Server) track(sc *ServerChannel, gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.trustGen != gen {
		return false
	}
	s.live[sc] = struct{}{}
	return true
}

// untrack removes sc from the live channels; it is a no-op for a channel never tracked.
func (s *Server) untrack(sc *ServerChannel) {
	s.mu.Lock()
	delete(s.live, sc)
	s.mu.Unlock()
}

// Revalidate asks check about the client certificate chain (leaf first) of every open
// channel and closes each channel whose chain it refuses, keeping the others. It is meant
// for the trust-list change hook (Part 12 §7.8.2: when the TrustList changes, SecureChannels
// with an untrusted or revoked certificate shall be closed), typically
//
//	cancel := p.OnTrustChange(func() { srv.Revalidate(validate) })
//
// with the same function as ServerConfig.ValidateCertificate. A refused channel gets an ERR
// with the status an OpenSecureChannel from that certificate would get now (the status check
// wraps, BadCertificateUntrusted reported as BadSecurityChecksFailed; see RATIONALE.md), no
// further request of it reaches the Handler, and its ServeConn returns the refusal. Channels
// that are being opened while Revalidate runs are validated again with
// ServerConfig.ValidateCertificate. Channels with SecurityPolicy None have no certificate
// and are kept.
//
// Revalidate calls check on the calling goroutine, without holding a lock, and returns
// once the ERRs are queued; the closing itself (which waits briefly for the peer to hang
// up) runs in the background. It is safe for concurrent use. It returns the number of
// channels closed.
func (s *Server) Revalidate(check func(chain []*x509.Certificate) error) int {
	s.mu.Lock()
	s.trustGen++
	chans := make([]*ServerChannel, 0, len(s.live))
	for sc := range s.live {
		chans = append(chans, sc)
	}
	s.mu.Unlock()
	n := 0
	for _, sc := range chans {
		err := check(sc.chain)
		if err == nil {
			continue
		}
		code := certificateStatus(err)
		sc.drop(code, fmt.Errorf("uasc: client certificate no longer accepted: %w: %w", code, err))
		n++
	}
	return n
}

// drop ends the channel from outside its reading goroutine: no further response is sent,
// no further request is handled, the client gets an ERR with code, and the connection is
// closed, which ends the read loop.
func (sc *ServerChannel) drop(code status.Code, err error) {
	sc.smu.Lock()
	sc.dropLocked(code, err)
}

// dropLocked is drop for a caller that holds smu; it returns with smu released.
func (sc *ServerChannel) dropLocked(code status.Code, err error) {
	if sc.dropped.Load() {
		sc.smu.Unlock()
		return
	}
	sc.dropErr = err
	sc.dropDone = make(chan struct{})
	sc.dropped.Store(true)
	if sc.sendErr == nil {
		sc.sendErr = err
	}
	sc.smu.Unlock()
	s := sc.srv
	s.untrack(sc)
	go func() {
		defer close(sc.dropDone)
		_ = sc.conn.SendError(code, errReason(code))
	}()
}

// armExpiryLocked makes tok the channel's newest token and (re)arms the expiry timer for
// tok's deadline: one timer per channel, created at the first OPN and reset by every
// renewal. It must run under smu.
func (sc *ServerChannel) armExpiryLocked(tok *token) {
	sc.newest = tok
	d := max(tok.deadline.Sub(sc.now()), time.Millisecond)
	if sc.expiry == nil {
		sc.expiry = time.AfterFunc(d, sc.expire)
		return
	}
	sc.expiry.Reset(d)
}

// expire runs when the expiry timer fires. If the newest token is past its deadline by
// the same test the receive path applies (token.expired with ServerConfig.Now), the channel
// is dropped with BadSecureChannelTokenUnknown, which frees its SecureChannelId and
// reassembly budget once the read loop ends (see RATIONALE.md). A firing that lost the race
// with a renewal finds a fresh token and does nothing (the renewal re-armed the timer); one
// that finds the token not yet expired by ServerConfig.Now re-arms for the rest. A channel
// already ending is left alone.
func (sc *ServerChannel) expire() {
	sc.smu.Lock()
	if sc.sendErr != nil {
		sc.smu.Unlock()
		return
	}
	tok, now := sc.newest, sc.now()
	if !tok.expired(now) {
		sc.expiry.Reset(max(tok.deadline.Sub(now), time.Millisecond))
		sc.smu.Unlock()
		return
	}
	sc.dropLocked(status.BadSecureChannelTokenUnknown, fmt.Errorf(
		"uasc: TokenId %d expired at %v without renewal: %w", tok.id, tok.deadline, status.BadSecureChannelTokenUnknown))
}

// stopExpiry stops the expiry timer and marks the send half closed, under smu, so that a
// firing that is already running sees the channel ending and neither drops nor re-arms.
func (sc *ServerChannel) stopExpiry() {
	sc.smu.Lock()
	if sc.sendErr == nil {
		sc.sendErr = errClosed
	}
	if sc.expiry != nil {
		sc.expiry.Stop()
	}
	sc.smu.Unlock()
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

// sendOPN encodes and sends an OPN response; it is called with smu held and releases it.
func (c *channel) sendOPN(requestID uint32, msg codec.Structure) error {
	e := codec.NewEncoder(nil)
	e.Message(msg)
	if err := e.Err(); err != nil {
		c.smu.Unlock()
		return err
	}
	b, err := c.sealAsym(requestID, e.Bytes())
	if err != nil {
		c.smu.Unlock()
		return err
	}
	return c.queueLocked(b)
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

// renew handles an OPN Renew on an open channel (Part 6 §6.7.6).
func (sc *ServerChannel) renew(ch *uacp.Chunk) error {
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
	return sc.sendOPN(reqID, resp)
}

// message handles one MSG chunk.
func (sc *ServerChannel) message(ctx context.Context, ch *uacp.Chunk) error {
	at := sc.timeOf(ch)
	reqID, body, tok, err := sc.openSym(ch.Bytes, at)
	if err != nil {
		return err
	}
	if tok.id > sc.activeID {
		sc.activate(tok)
	}
	msg, done, aborted, err := sc.asm.add(ch.Header.ChunkType, reqID, body)
	if err != nil || aborted || !done {
		return err
	}
	// A message of one chunk is the chunk's body, valid until the Handler returns; one
	// of several is the assembler's, which reset clears.
	kept := msg
	if sc.asm.active {
		kept = nil
	}
	m, repeated, err := sc.spare.decode(msg, &sc.dec)
	sc.asm.reset()
	if err != nil {
		code := statusOf(err)
		if code != status.BadServiceUnsupported && code != status.BadEncodingLimitsExceeded {
			code = status.BadDecodingError
		}
		return sc.fault(reqID, 0, code)
	}
	sc.spare.handling(kept, m, repeated)
	sc.srv.handler(ctx, Request{RequestID: reqID, Message: m, Channel: sc, Received: at})
	sc.spare.handled()
	return nil
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

// fault answers requestID with a ServiceFault.
func (sc *ServerChannel) fault(requestID, handle uint32, code status.Code) error {
	f := &ua.ServiceFault{ResponseHeader: ua.ResponseHeader{Timestamp: codec.Now(), RequestHandle: handle, ServiceResult: code}}
	return sc.channel.sendMessage(uacp.TypeMessage, requestID, f)
}

func (sc *ServerChannel) respond(requestID uint32, msg codec.Structure, async bool) error {
	err := sc.channel.send(uacp.TypeMessage, requestID, msg, async)
	if err == nil {
		// Return before errors.As, whose target would escape and allocate per response.
		return nil
	}
	var tl *errTooLarge
	if errors.As(err, &tl) {
		return sc.fault(requestID, responseHandle(msg), status.BadResponseTooLarge)
	}
	return err
}

// responseHandle returns the RequestHandle of a response: the second field of the
// ResponseHeader that every response starts with.
func responseHandle(msg codec.Structure) uint32 {
	if r, ok := msg.(ua.Response); ok {
		return r.Header().RequestHandle
	}
	e := codec.NewEncoder(make([]byte, 0, 64))
	msg.EncodeBinary(e)
	b := e.Bytes()
	if len(b) < 12 {
		return 0
	}
	return uint32(b[8]) | uint32(b[9])<<8 | uint32(b[10])<<16 | uint32(b[11])<<24
}
