package uasc

import (
	"crypto"
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

// token is one SecurityToken of a channel: its id, the symmetric keys derived for it and
// its lifetime (Part 6 §6.7.6, Part 4 §5.5.2).
type token struct {
	id       uint32
	send     policy.Symmetric // used only under channel.smu
	recv     policy.Symmetric // used only by the reading goroutine
	lifetime time.Duration
	// deadline is the instant after which a message secured with the token is no longer
	// accepted: a receiver accepts a token for 25% of its lifetime past its expiry (Part 6
	// §6.7.6). It is worked out once, since every chunk is checked against it.
	deadline time.Time
}

// newToken returns the token id made at created for lifetime.
func newToken(id uint32, send, recv policy.Symmetric, created time.Time, lifetime time.Duration) *token {
	return &token{id: id, send: send, recv: recv, lifetime: lifetime,
		deadline: created.Add(lifetime + lifetime/4)}
}

// expired reports whether a message secured with t may no longer be accepted at now.
func (t *token) expired(now time.Time) bool { return now.After(t.deadline) }

// channel is the state both roles share: the connection, the security configuration and
// the send and receive halves.
//
// The send half (smu) is used from any goroutine; the receive half only from the one
// goroutine that reads chunks.
type channel struct {
	conn *uacp.Conn
	neg  uacp.Negotiated
	pool *uacp.Pool
	role policy.Role

	pol        policy.Policy
	mode       ua.MessageSecurityMode
	localCert  []byte // DER, sent as SenderCertificate; nil for None
	localKey   crypto.Signer
	remoteCert *x509.Certificate // nil for None
	remoteRaw  []byte            // the remote SenderCertificate bytes as received or configured
	asym       policy.Asymmetric
	channelID  uint32
	symSig     int // symmetric signature size
	symBlock   int // symmetric block size

	smu      sync.Mutex // guards sendSeq, sendTok, pending, flushing, holding, sendErr
	sendSeq  uint32     // last sequence number sent
	sendTok  *token
	pending  [][]byte // buffers of sealed chunks waiting to be written, in order
	writing  [][]byte // the batch being written by the flusher
	flushing bool     // a goroutine is writing; others only queue
	// holding is set by the reading goroutine while more requests wait in the read-ahead
	// buffer: chunks only queue, and it writes them together once none waits (hold).
	holding bool
	sendErr error // first write failure; the channel is dead after it
	// enc and src encode the messages sent, straight into the queue (encodeLocked).
	enc codec.Encoder
	src chunkSource
	// backlog counts the bytes queued or being written; beyond maxBacklog (0: no bound)
	// the peer is not reading its responses and the channel is closed.
	backlog    int
	maxBacklog int

	// receive half: only the reading goroutine touches these.
	recvSeq    uint32
	recvSeqSet bool
	recvToks   []*token // accepted tokens, oldest first
	asm        assembler
	now        func() time.Time
	realClock  bool // now is time.Now, so a chunk's Received time may stand for it
}

func (c *channel) signed() bool {
	return c.mode == ua.MessageSecurityModeSign || c.mode == ua.MessageSecurityModeSignAndEncrypt
}
func (c *channel) encrypted() bool { return c.mode == ua.MessageSecurityModeSignAndEncrypt }

// asymmetric reports whether OPN chunks are signed and encrypted: always, unless the policy
// is None (Part 6 §6.7.4).
func (c *channel) asymmetric() bool { return c.pol.Info().URI != policy.URINone }

// setSymmetricSizes records the signature and block sizes of the policy's symmetric suite.
func (c *channel) setSymmetricSizes(t *token) {
	c.symSig, c.symBlock = 0, 1
	if c.signed() {
		c.symSig = t.send.SignatureSize()
	}
	if c.encrypted() {
		c.symBlock = t.send.BlockSize()
	}
}

// maxSymBody is the largest body a symmetric chunk of at most size bytes carries (Part 6
// §6.7.2.2); it is negative when not even the headers fit.
func (c *channel) maxSymBody(size int) int {
	avail := size - symHeaderLen
	if c.encrypted() {
		avail = avail/c.symBlock*c.symBlock - 1 // at least the PaddingSize byte
	}
	return avail - seqHeaderLen - c.symSig
}

// symChunkLen is the length of a sealed symmetric chunk with a body of n bytes, and the
// padding size to write.
func (c *channel) symChunkLen(n int) (total, padSize, padLen int) {
	plain := seqHeaderLen + n
	if c.encrypted() {
		padSize = policy.PaddingSize(plain, c.symBlock, c.symSig, false)
		padLen = policy.PaddingLen(padSize, false)
	}
	return symHeaderLen + plain + padLen + c.symSig, padSize, padLen
}

// sealSym turns b, which holds a body of n bytes at symBodyOffset, into a sealed chunk and
// returns its length. It must run under smu: it takes the next sequence number.
func (c *channel) sealSym(b []byte, t uacp.MessageType, chunkType byte, requestID uint32, n int) (int, error) {
	total, padSize, padLen := c.symChunkLen(n)
	if total > len(b) {
		return 0, fmt.Errorf("uasc: chunk of %d bytes in a %d-byte buffer: %w", total, len(b), status.BadInternalError)
	}
	if padLen > 0 {
		policy.WritePadding(b[symBodyOffset+n:symBodyOffset+n+padLen], padSize, false)
	}
	tok := c.sendTok
	putHeader(b, t, chunkType, total, c.channelID)
	b[12], b[13], b[14], b[15] = byte(tok.id), byte(tok.id>>8), byte(tok.id>>16), byte(tok.id>>24)
	c.sendSeq = nextSeq(c.sendSeq)
	putSeqHeader(b, symHeaderLen, c.sendSeq, requestID)
	if c.signed() {
		if err := tok.send.Seal(b[:total], symHeaderLen, c.encrypted()); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// sealAsym builds an OPN chunk around body and returns it. It must run under smu.
// OPN messages are never split (Part 6 §6.7.2.2: chunk type F only).
func (c *channel) sealAsym(requestID uint32, body []byte) ([]byte, error) {
	h := asymmetricHeader{SecurityPolicyURI: c.pol.Info().URI}
	if c.asymmetric() {
		h.SenderCertificate = c.localCert
		tp := policy.Thumbprint(c.remoteCert)
		h.ReceiverCertificateThumbprint = tp[:]
	}
	hdrLen := channelHeaderLen + h.encodedLen()
	plain := seqHeaderLen + len(body)
	var padSize, padLen, sigLen, total int
	extra := false
	if c.asymmetric() {
		extra = policy.ExtraPadding(c.asym.CiphertextBlockSize())
		sigLen = c.asym.SignatureSize()
		padSize = policy.PaddingSize(plain, c.asym.PlaintextBlockSize(), sigLen, extra)
		padLen = policy.PaddingLen(padSize, extra)
		total = hdrLen + c.asym.EncryptedLen(plain+padLen+sigLen)
	} else {
		total = hdrLen + plain
	}
	if total > int(c.neg.SendBufferSize) {
		return nil, fmt.Errorf("uasc: OPN of %d bytes over send buffer of %d: %w", total, c.neg.SendBufferSize, status.BadTcpMessageTooLarge)
	}
	b := make([]byte, channelHeaderLen, max(total, hdrLen+plain+padLen+sigLen))
	putHeader(b, uacp.TypeOpen, uacp.ChunkFinal, total, c.channelID)
	b = appendAsymmetricHeader(b, &h)
	c.sendSeq = nextSeq(c.sendSeq)
	b = b[:hdrLen+seqHeaderLen]
	putSeqHeader(b, hdrLen, c.sendSeq, requestID)
	b = append(b, body...)
	if !c.asymmetric() {
		return b, nil
	}
	b = b[:len(b)+padLen]
	policy.WritePadding(b[len(b)-padLen:], padSize, extra)
	b, err := c.asym.Sign(b, b)
	if err != nil {
		return nil, err
	}
	if _, err := c.asym.Encrypt(b[hdrLen:total], b[hdrLen:]); err != nil {
		return nil, err
	}
	return b[:total], nil
}

// queueUnlock appends sealed chunks to the pending list and, unless another goroutine is
// already writing, writes them and whatever others queue meanwhile (nats-server
// flushOutbound): writes are coalesced, no lock is held during I/O, and chunks leave in the
// order they were sealed. It must be called with smu held and returns with smu released.
// The chunks are owned by the queue from then on: each goes back to the pool once written
// (Pool.Put ignores buffers that are not pool-sized).
func (c *channel) queueUnlock(chunks ...[]byte) error { return c.enqueueUnlock(false, chunks) }

// enqueueUnlock is queueUnlock; with async, a write that is due starts on a goroutine of
// its own, so that the caller never waits on the peer's socket.
func (c *channel) enqueueUnlock(async bool, chunks [][]byte) error {
	if c.sendErr != nil {
		c.smu.Unlock()
		for _, b := range chunks {
			c.pool.Put(b)
		}
		return c.sendErr
	}
	for _, b := range chunks {
		c.backlog += len(b)
	}
	c.pending = append(c.pending, chunks...)
	return c.pushUnlock(async)
}

// pushUnlock enforces the backlog bound and writes what is queued unless a writer is
// active or the reading goroutine holds; it returns with smu released.
func (c *channel) pushUnlock(async bool) error {
	if c.maxBacklog > 0 && c.backlog > c.maxBacklog {
		// A peer that leaves this much unread would hold it for ever: end the channel
		// rather than the server's memory. Closing the connection also frees a writer
		// blocked on it.
		err := fmt.Errorf("uasc: %d bytes wait for a peer that does not read them: %w", c.backlog, status.BadTcpNotEnoughResources)
		c.sendErr = err
		c.dropPendingLocked()
		c.smu.Unlock()
		c.conn.Close()
		return err
	}
	if c.flushing || c.holding || len(c.pending) == 0 {
		c.smu.Unlock()
		return nil
	}
	c.flushing = true
	if async {
		c.smu.Unlock()
		go func() {
			c.smu.Lock()
			_ = c.flushUnlock()
		}()
		return nil
	}
	return c.flushUnlock()
}

// flushUnlock writes the pending chunks, batch after batch, until none are left. It
// must be called with smu held and flushing set; it returns with smu released and the
// result of the first batch.
func (c *channel) flushUnlock() error {
	var first error // the result of the batch that holds the caller's chunks
	for batch := 0; len(c.pending) > 0; batch++ {
		c.pending, c.writing = c.writing[:0], c.pending
		c.smu.Unlock()
		err := c.conn.WriteChunks(c.writing...)
		if batch == 0 {
			first = err
		}
		written := 0
		for i, b := range c.writing {
			written += len(b)
			c.pool.Put(b)
			c.writing[i] = nil
		}
		c.smu.Lock()
		c.backlog -= written
		if err != nil && c.sendErr == nil {
			c.sendErr = err
		}
		if c.sendErr != nil {
			c.dropPendingLocked()
		}
	}
	c.flushing = false
	c.smu.Unlock()
	return first
}

// dropPendingLocked frees the chunks that will not be written.
func (c *channel) dropPendingLocked() {
	for i, b := range c.pending {
		c.backlog -= len(b)
		c.pool.Put(b)
		c.pending[i] = nil
	}
	c.pending = c.pending[:0]
}

// hold makes the send half queue without writing while on is true; turning it off
// writes what queued meanwhile, unless a writer is active (which then writes it). The
// reading goroutine holds while the next request is already read (uacp.Conn.ChunkBuffered)
// or has arrived (ReadArrived), so that the responses to pipelined requests leave in one
// write, and never while it may wait for input, so that a lone response is not delayed.
func (c *channel) hold(on bool) {
	c.smu.Lock()
	if c.holding == on {
		c.smu.Unlock()
		return
	}
	c.holding = on
	if on {
		c.smu.Unlock()
		return
	}
	_ = c.queueUnlock() // the error, if any, is the send half's; each sender saw its own
}

// failSend marks the send half dead.
func (c *channel) failSend(err error) {
	c.smu.Lock()
	if c.sendErr == nil {
		c.sendErr = err
	}
	c.smu.Unlock()
}

// errClosed is the send error of a channel closed locally.
var errClosed = fmt.Errorf("uasc: channel closed: %w", status.BadSecureChannelClosed)

// statusOf returns the status an error carries, BadSecurityChecksFailed when it carries none
// (the safe answer for a failed check), and Good for nil.
func statusOf(err error) status.Code {
	if err == nil {
		return status.Good
	}
	var c status.Code
	if errors.As(err, &c) && !c.IsGood() {
		return c
	}
	var ue *uacp.Error
	if errors.As(err, &ue) {
		return ue.Code
	}
	return status.BadSecurityChecksFailed
}

// timeOf returns the time to check ch against: when it was read, which costs no clock
// reading of its own, unless the channel runs on a configured clock.
func (c *channel) timeOf(ch *uacp.Chunk) time.Time {
	if c.realClock && !ch.Received.IsZero() {
		return ch.Received
	}
	return c.now()
}
