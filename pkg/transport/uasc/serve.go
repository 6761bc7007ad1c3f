package uasc

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

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
	// goroutine then hands no further request to the handler. dropErr and dropDone are
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
	// handler gets the channel's requests; it is made once the channel is open
	// (startHandler) and used only by the reading goroutine.
	handler ChannelHandler
}

// decodeCachedIDs is the size of a channel's cache of decoded NodeId identifiers.
const decodeCachedIDs = 512

// ID returns the SecureChannelId.
func (sc *ServerChannel) ID() uint32 { return sc.channelID }

// RemoteAddr returns the network address of the peer.
func (sc *ServerChannel) RemoteAddr() net.Addr { return sc.conn.RemoteAddr() }

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
// ctx ends. The first chunk must be an OpenSecureChannel Issue request, read whole within
// ServerConfig.OpenTimeout; every failure of a security check is answered with an ERR
// message carrying its status before c is closed, and returned. A message of several
// chunks must be whole within ServerConfig.AssemblyTimeout of its first, and hold no more
// than ServerConfig.MaxRetainedPerChannel; a deadline that passes is an ERR BadTimeout,
// and a write that times out ends the channel with BadTimeout. A channel whose newest
// token is 25% past its lifetime without a renewal is closed with
// BadSecureChannelTokenUnknown (Part 4 §5.5.2.1). A CloseSecureChannel ends it with a nil
// error. c is closed on return; then the channel's handler, if it is a ChannelEnder,
// learns the error.
func (s *Server) ServeConn(ctx context.Context, c *uacp.Conn) (err error) {
	var openBy time.Time // the deadline of the first OPN
	if s.cfg.OpenTimeout > 0 {
		openBy = time.Now().Add(s.cfg.OpenTimeout)
	}
	sc := &ServerChannel{srv: s, done: make(chan struct{})}
	sc.conn, sc.neg, sc.role, sc.now, sc.realClock = c, c.Negotiated(), policy.Server, s.cfg.Now, s.realClock
	sc.pool = uacp.DefaultPool
	if s.cfg.UACP.Pool != nil {
		sc.pool = s.cfg.UACP.Pool
	}
	sc.asm = assembler{budget: s.cfg.Budget, maxSize: sc.neg.MaxReceiveMessageSize, maxChunks: sc.neg.MaxReceiveChunkCount,
		maxRetained: s.cfg.MaxRetainedPerChannel, overdrawn: s.cfg.Overdrawn}
	sc.maxBacklog = sendBacklog(s.cfg.MaxSendBacklog, sc.neg.MaxSendMessageSize)
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
		if e, ok := sc.handler.(ChannelEnder); ok {
			e.ChannelEnded(err)
		}
	}()
	err = sc.serve(ctx, openBy)
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

// writeTimedOut returns the send half's error, wrapped as a readError (the connection is
// closed), when it is a write that timed out; else nil.
func (c *channel) writeTimedOut() error {
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.sendErr != nil && statusOf(c.sendErr) == status.BadTimeout {
		return &readError{c.sendErr}
	}
	return nil
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

// serve reads and handles the channel's chunks: the first OpenSecureChannel, read whole by
// openBy (zero: no bound), then the requests, each message of several chunks whole by its
// assembly deadline. uacp answers an expired deadline with an ERR BadTimeout.
func (sc *ServerChannel) serve(ctx context.Context, openBy time.Time) error {
	ch, err := sc.conn.ReadChunkBefore(openBy)
	if err != nil {
		switch {
		case statusOf(err) != status.BadTimeout:
		case errors.Is(err, uacp.ErrChunkTimeout):
			sc.srv.expired(DeadlineChunk)
		case !openBy.IsZero() && !time.Now().Before(openBy):
			sc.srv.expired(DeadlineOpen)
			err = fmt.Errorf("uasc: no OpenSecureChannel within %v: %w", sc.srv.cfg.OpenTimeout, err)
		}
		return &readError{err}
	}
	if ch.Header.Type != uacp.TypeOpen {
		ch.Release()
		return fmt.Errorf("uasc: %v before OpenSecureChannel: %w", ch.Header.Type, status.BadTcpSecureChannelUnknown)
	}
	openCtx := ctx
	if !openBy.IsZero() {
		// A turn for the OPN's cryptography is awaited no longer than the OPN itself.
		var cancel context.CancelFunc
		openCtx, cancel = context.WithDeadline(ctx, openBy)
		defer cancel()
	}
	err = sc.open(openCtx, &ch)
	ch.ReleaseZeroed()
	if err != nil {
		return err
	}
	// Only an open channel decodes requests: a connection that never gets this far (a
	// storm's) costs no cache.
	sc.dec.CacheNodeIds(decodeCachedIDs)
	if err := sc.startHandler(); err != nil {
		return err
	}
	held := false // whether this loop holds the send half (see hold)
	for {
		ch, err := sc.conn.ReadChunkBefore(sc.asm.deadline)
		if err != nil {
			switch statusOf(err) {
			case status.BadConnectionClosed:
				// A write that timed out closed the connection: that is the end's cause.
				werr := sc.writeTimedOut()
				if werr != nil {
					sc.srv.expired(DeadlineWrite)
				}
				return werr
			case status.BadTimeout:
				if errors.Is(err, uacp.ErrChunkTimeout) {
					sc.srv.expired(DeadlineChunk)
				} else if dl := sc.asm.deadline; !dl.IsZero() && !time.Now().Before(dl) {
					sc.srv.expired(DeadlineAssembly)
					err = fmt.Errorf("uasc: message of %d chunks not whole within %v of its first: %w",
						sc.asm.chunks, sc.srv.cfg.AssemblyTimeout, err)
				}
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
			err = sc.renew(ctx, &ch)
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
