package uasc

import (
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
)

// Budget is a number of bytes that the channels sharing it may hold in partly reassembled
// messages at any one time. A chunk that would overdraw it ends its channel with
// BadTcpNotEnoughResources. A Budget is safe for concurrent use.
type Budget struct {
	size int64
	left atomic.Int64
	// holders counts the channels holding some of it: one add when a channel's message
	// reserves its first bytes, one when it gives them back.
	holders atomic.Int64
}

// NewBudget returns a Budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{size: n}
	b.left.Store(n)
	return b
}

// Available returns the bytes not currently reserved.
func (b *Budget) Available() int64 { return b.left.Load() }

// Held returns the bytes the channels hold of the budget and the number of channels
// holding some: its use, as a metrics layer reports it. The two are read one after the
// other, not as one snapshot.
func (b *Budget) Held() (bytes, channels int64) {
	return b.size - b.left.Load(), b.holders.Load()
}

// reserve takes n bytes, for a channel that holds none yet when first.
func (b *Budget) reserve(n int, first bool) bool {
	if b == nil {
		return true
	}
	if b.left.Add(-int64(n)) < 0 {
		b.left.Add(int64(n))
		return false
	}
	if first && n > 0 {
		b.holders.Add(1)
	}
	return true
}

// release gives back all n bytes a channel holds.
func (b *Budget) release(n int) {
	if b != nil && n > 0 {
		b.left.Add(int64(n))
		b.holders.Add(-1)
	}
}

// Overdraft is the bound of the reassembly budget that a chunk would have gone beyond,
// ending its channel: ServerConfig.Overdrawn hears of each.
type Overdraft uint8

const (
	// OverShare: the channel would hold more than ServerConfig.MaxRetainedPerChannel of
	// the budget, its share. Serve offers no larger MaxMessageSize, so the peer went
	// beyond that too, and the ERR says BadTcpMessageTooLarge; on a connection accepted
	// elsewhere it says BadTcpNotEnoughResources.
	OverShare Overdraft = iota
	// OverBudget: the Budget that the channels share is spent (BadTcpNotEnoughResources).
	OverBudget
)

// String names the bound.
func (o Overdraft) String() string {
	switch o {
	case OverShare:
		return "share"
	case OverBudget:
		return "budget"
	}
	return "unknown"
}

// assembler reassembles the chunks of one message (Part 6 §6.7.2.2). It checks the chunk
// count, the message size, the channel's share of the budget and the budget before it
// copies a chunk's body.
type assembler struct {
	budget    *Budget
	maxSize   uint32 // 0: no limit
	maxChunks uint32 // 0: no limit
	// maxRetained is the most the channel may reserve of the budget (0: no limit).
	maxRetained int
	// overdrawn, when set, hears of a chunk refused for the share or the budget.
	overdrawn func(Overdraft)
	// deadline is when the message being reassembled must be whole; zero when there is
	// none or no message is begun. The server's read loop sets it and reads by it.
	deadline  time.Time
	active    bool
	requestID uint32
	chunks    uint32
	buf       []byte
	reserved  int
}

// maxKeptBuffer is the largest reassembly buffer kept between messages.
const maxKeptBuffer = 256 << 10

// add takes the body of one MSG chunk. For a final chunk it returns the whole message: body
// itself when the message is a single chunk, else the assembler's buffer, valid until the
// next call to add or reset. An abort chunk discards the partial message and returns
// aborted.
func (a *assembler) add(chunkType byte, requestID uint32, body []byte) (msg []byte, done, aborted bool, err error) {
	if a.active && requestID != a.requestID {
		return nil, false, false, fmt.Errorf("uasc: chunk for request %d inside request %d: %w", requestID, a.requestID, status.BadTcpMessageTypeInvalid)
	}
	switch chunkType {
	case uacp.ChunkAbort:
		a.reset()
		return body, false, true, nil
	case uacp.ChunkFinal:
		if !a.active {
			if a.maxSize != 0 && uint64(len(body)) > uint64(a.maxSize) {
				return nil, false, false, a.tooLarge(len(body), 1)
			}
			return body, true, false, nil
		}
	}
	count, size := a.chunks+1, uint64(len(a.buf))+uint64(len(body))
	overShare := a.maxRetained != 0 && a.reserved+len(body) > a.maxRetained
	if (a.maxChunks != 0 && count > a.maxChunks) || (a.maxSize != 0 && size > uint64(a.maxSize)) {
		if overShare {
			// The share bounds the message size Serve offers: beyond one is beyond both.
			a.overdraw(OverShare)
		}
		return nil, false, false, a.tooLarge(int(size), count)
	}
	if overShare {
		a.overdraw(OverShare)
		return nil, false, false, fmt.Errorf("uasc: message of %d+ bytes over the channel's share of the reassembly budget, %d: %w",
			size, a.maxRetained, status.BadTcpNotEnoughResources)
	}
	if !a.budget.reserve(len(body), a.reserved == 0) {
		a.overdraw(OverBudget)
		return nil, false, false, fmt.Errorf("uasc: reassembly budget spent: %w", status.BadTcpNotEnoughResources)
	}
	a.reserved += len(body)
	a.active, a.requestID, a.chunks = true, requestID, count
	a.buf = append(a.buf, body...)
	if chunkType == uacp.ChunkFinal {
		return a.buf, true, false, nil
	}
	return nil, false, false, nil
}

// overdraw tells the overdrawn hook, if any, of a refusal.
func (a *assembler) overdraw(o Overdraft) {
	if a.overdrawn != nil {
		a.overdrawn(o)
	}
}

func (a *assembler) tooLarge(size int, count uint32) error {
	return fmt.Errorf("uasc: message of %d+ bytes in %d chunks over limits %d bytes, %d chunks: %w",
		size, count, a.maxSize, a.maxChunks, status.BadTcpMessageTooLarge)
}

// reset forgets the current message and returns its budget.
func (a *assembler) reset() {
	a.budget.release(a.reserved)
	a.reserved, a.active, a.chunks, a.requestID = 0, false, 0, 0
	a.deadline = time.Time{}
	if cap(a.buf) > maxKeptBuffer {
		a.buf = nil
	}
	clear(a.buf)
	a.buf = a.buf[:0]
}

// openSym checks a symmetric chunk in place (Part 6 §6.7.2, §6.7.6): SecureChannelId,
// TokenId, signature and decryption, padding, sequence number. It returns the request id
// and the body, which aliases b. now is the time the token's lifetime is checked against.
func (c *channel) openSym(b []byte, now time.Time) (requestID uint32, body []byte, tok *token, err error) {
	if len(b) < symBodyOffset {
		return 0, nil, nil, fmt.Errorf("uasc: chunk of %d bytes: %w", len(b), status.BadDecodingError)
	}
	if id := binary.LittleEndian.Uint32(b[8:]); id != c.channelID {
		return 0, nil, nil, fmt.Errorf("uasc: SecureChannelId %d, want %d: %w", id, c.channelID, status.BadTcpSecureChannelUnknown)
	}
	tokenID := binary.LittleEndian.Uint32(b[12:])
	for _, t := range c.recvToks {
		if t.id == tokenID {
			tok = t
		}
	}
	if tok == nil || tok.expired(now) {
		return 0, nil, nil, fmt.Errorf("uasc: TokenId %d unknown or expired: %w", tokenID, status.BadSecureChannelTokenUnknown)
	}
	end := len(b)
	if c.signed() {
		if c.encrypted() && (end-symHeaderLen)%c.symBlock != 0 {
			return 0, nil, nil, fmt.Errorf("uasc: encrypted part not whole blocks: %w", status.BadSecurityChecksFailed)
		}
		if err := tok.recv.Open(b, symHeaderLen, c.encrypted()); err != nil {
			return 0, nil, nil, fmt.Errorf("uasc: chunk signature: %w", status.BadSecurityChecksFailed)
		}
		end -= c.symSig
		if c.encrypted() {
			n, err := policy.StripPadding(b[symHeaderLen:end], false)
			if err != nil {
				return 0, nil, nil, fmt.Errorf("uasc: chunk padding: %w", status.BadSecurityChecksFailed)
			}
			end = symHeaderLen + n
		}
		if end < symBodyOffset {
			return 0, nil, nil, fmt.Errorf("uasc: chunk without sequence header: %w", status.BadSecurityChecksFailed)
		}
	}
	seq := binary.LittleEndian.Uint32(b[symHeaderLen:])
	if err := c.checkSeq(seq); err != nil {
		return 0, nil, nil, err
	}
	return binary.LittleEndian.Uint32(b[symHeaderLen+4:]), b[symBodyOffset:end], tok, nil
}

// pruneTokens forgets expired receive tokens.
func (c *channel) pruneTokens() {
	now := c.now()
	keep := c.recvToks[:0]
	for _, t := range c.recvToks {
		if !t.expired(now) {
			keep = append(keep, t)
		}
	}
	clear(c.recvToks[len(keep):])
	c.recvToks = keep
}

// checkSeq checks and records a received sequence number (Part 6 §6.7.2.4).
func (c *channel) checkSeq(seq uint32) error {
	if c.recvSeqSet && !seqFollows(c.recvSeq, seq) {
		return fmt.Errorf("uasc: sequence number %d after %d: %w", seq, c.recvSeq, status.BadSequenceNumberInvalid)
	}
	c.recvSeq, c.recvSeqSet = seq, true
	return nil
}

// openAsym checks an OPN chunk whose header h has already been parsed and ends at hdrLen:
// it decrypts in place with the local key, verifies the signature with the sender's key
// (c.asym must be set up for them), strips the padding and checks the sequence number.
func (c *channel) openAsym(b []byte, hdrLen int) (requestID uint32, body []byte, err error) {
	end := len(b)
	if c.asymmetric() {
		ct := b[hdrLen:]
		if len(ct)%c.asym.LocalCiphertextBlockSize() != 0 {
			return 0, nil, fmt.Errorf("uasc: OPN cipher text of %d bytes: %w", len(ct), status.BadSecurityChecksFailed)
		}
		n, err := c.asym.Decrypt(ct, ct)
		if err != nil {
			return 0, nil, fmt.Errorf("uasc: OPN decryption: %w", status.BadSecurityChecksFailed)
		}
		sig := c.asym.RemoteSignatureSize()
		if n < sig+seqHeaderLen {
			return 0, nil, fmt.Errorf("uasc: OPN too short: %w", status.BadSecurityChecksFailed)
		}
		end = hdrLen + n - sig
		if err := c.asym.Verify(b[:end], b[end:hdrLen+n]); err != nil {
			return 0, nil, fmt.Errorf("uasc: OPN signature: %w", status.BadSecurityChecksFailed)
		}
		m, err := policy.StripPadding(b[hdrLen:end], policy.ExtraPadding(c.asym.LocalCiphertextBlockSize()))
		if err != nil {
			return 0, nil, fmt.Errorf("uasc: OPN padding: %w", status.BadSecurityChecksFailed)
		}
		end = hdrLen + m
	}
	if end-hdrLen < seqHeaderLen {
		return 0, nil, fmt.Errorf("uasc: OPN without sequence header: %w", status.BadDecodingError)
	}
	if err := c.checkSeq(binary.LittleEndian.Uint32(b[hdrLen:])); err != nil {
		return 0, nil, err
	}
	return binary.LittleEndian.Uint32(b[hdrLen+4:]), b[hdrLen+seqHeaderLen : end], nil
}

// parseChain parses a SenderCertificate, which may hold a chain of DER certificates, leaf
// first. Failure is BadCertificateInvalid.
func parseChain(der []byte) ([]*x509.Certificate, error) {
	if len(der) == 0 {
		return nil, fmt.Errorf("uasc: no SenderCertificate: %w", status.BadCertificateInvalid)
	}
	certs, err := x509.ParseCertificates(der)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("uasc: SenderCertificate: %w", status.BadCertificateInvalid)
	}
	return certs, nil
}
