package uacp

import (
	"fmt"

	"uastack.dev/pkg/status"
)

// ProtocolVersion is the UACP protocol version this package speaks (Part 6 §7.1.2.3).
const ProtocolVersion = 0

// Buffer-size bounds.
const (
	// MinBufferSize is the smallest buffer a peer may offer unless it uses an ECC security
	// policy (Part 6 §7.1.2.3), and the default Limits.MinBufferSize.
	MinBufferSize = 8192
	// MinECCBufferSize is the floor for peers that use an ECC security policy; set
	// Limits.MinBufferSize to it to accept them.
	MinECCBufferSize = 1024
	// MaxBufferSize is the largest chunk buffer this package negotiates: the largest class of
	// the buffer Pool.
	MaxBufferSize = maxClassSize
)

// Limits are one side's own limits, offered in its Hello or Acknowledge. A zero field takes
// the value in DefaultLimits.
type Limits struct {
	// ReceiveBufferSize is the largest chunk this side accepts; the negotiated value is never
	// larger. Between MinBufferSize and MaxBufferSize.
	ReceiveBufferSize uint32
	// SendBufferSize is the largest chunk this side sends; the negotiated value is never
	// larger. Between MinBufferSize and MaxBufferSize.
	SendBufferSize uint32
	// MaxMessageSize is the largest message (unencrypted body) this side accepts. Zero takes
	// the default; the wire value 0, "no limit", is never offered.
	MaxMessageSize uint32
	// MaxChunkCount is the most chunks this side accepts in one message. Zero takes the
	// default.
	MaxChunkCount uint32
	// MinBufferSize is the smallest buffer size accepted from the peer: MinBufferSize unless
	// set, and never below MinECCBufferSize.
	MinBufferSize uint32
}

// DefaultLimits are used for zero fields of Limits.
var DefaultLimits = Limits{
	ReceiveBufferSize: 64 << 10,
	SendBufferSize:    64 << 10,
	MaxMessageSize:    16 << 20,
	MaxChunkCount:     4096,
	MinBufferSize:     MinBufferSize,
}

// withDefaults fills zero fields and checks the result.
func (l Limits) withDefaults() (Limits, error) {
	if l.ReceiveBufferSize == 0 {
		l.ReceiveBufferSize = DefaultLimits.ReceiveBufferSize
	}
	if l.SendBufferSize == 0 {
		l.SendBufferSize = DefaultLimits.SendBufferSize
	}
	if l.MaxMessageSize == 0 {
		l.MaxMessageSize = DefaultLimits.MaxMessageSize
	}
	if l.MaxChunkCount == 0 {
		l.MaxChunkCount = DefaultLimits.MaxChunkCount
	}
	if l.MinBufferSize == 0 {
		l.MinBufferSize = DefaultLimits.MinBufferSize
	}
	if l.MinBufferSize < MinECCBufferSize {
		return l, fmt.Errorf("uacp: MinBufferSize %d below %d", l.MinBufferSize, MinECCBufferSize)
	}
	for _, v := range [...]uint32{l.ReceiveBufferSize, l.SendBufferSize} {
		if v < l.MinBufferSize || v > MaxBufferSize {
			return l, fmt.Errorf("uacp: buffer size %d outside [%d, %d]", v, l.MinBufferSize, MaxBufferSize)
		}
	}
	return l, nil
}

// Negotiated is the outcome of the Hello/Acknowledge exchange, seen from one side. Both the
// server (Accept) and the client (Dial) describe their connection with it; the secure channel
// sizes its chunks and messages by it.
type Negotiated struct {
	// ProtocolVersion is the version both sides use.
	ProtocolVersion uint32
	// ReceiveBufferSize is the largest chunk this side accepts; ReadChunk rejects larger ones
	// with BadTcpMessageTooLarge.
	ReceiveBufferSize uint32
	// SendBufferSize is the largest chunk this side may send.
	SendBufferSize uint32
	// MaxReceiveMessageSize and MaxReceiveChunkCount bound the messages this side accepts
	// (its own limits); 0 means no limit.
	MaxReceiveMessageSize uint32
	MaxReceiveChunkCount  uint32
	// MaxSendMessageSize and MaxSendChunkCount bound the messages this side may send (the
	// peer's limits); 0 means no limit.
	MaxSendMessageSize uint32
	MaxSendChunkCount  uint32
	// EndpointURL is the EndpointUrl of the Hello.
	EndpointURL string
}

// NegotiateServer revises a client's Hello against the server's limits (Part 6 §7.1.2.4):
// the server receives chunks no larger than the client sends and sends chunks no larger than
// the client receives, each within the server's own limits. A client buffer below
// l.MinBufferSize fails with BadTcpNotEnoughResources (see RATIONALE.md); an EndpointUrl over
// MaxURLLength with BadTcpEndpointUrlInvalid. Any ProtocolVersion is accepted: the server
// answers with ProtocolVersion, which is the lowest there is.
func NegotiateServer(l Limits, hel *Hello) (*Acknowledge, Negotiated, error) {
	l, err := l.withDefaults()
	if err != nil {
		return nil, Negotiated{}, fmt.Errorf("%w: %w", err, status.BadTcpInternalError)
	}
	if len(hel.EndpointURL) > MaxURLLength {
		return nil, Negotiated{}, fmt.Errorf("uacp: EndpointUrl of %d bytes: %w", len(hel.EndpointURL), status.BadTcpEndpointUrlInvalid)
	}
	if hel.ReceiveBufferSize < l.MinBufferSize || hel.SendBufferSize < l.MinBufferSize {
		return nil, Negotiated{}, fmt.Errorf("uacp: client buffers %d/%d below %d: %w",
			hel.ReceiveBufferSize, hel.SendBufferSize, l.MinBufferSize, status.BadTcpNotEnoughResources)
	}
	ack := &Acknowledge{
		ProtocolVersion:   ProtocolVersion,
		ReceiveBufferSize: min(l.ReceiveBufferSize, hel.SendBufferSize),
		SendBufferSize:    min(l.SendBufferSize, hel.ReceiveBufferSize),
		MaxMessageSize:    l.MaxMessageSize,
		MaxChunkCount:     l.MaxChunkCount,
	}
	n := Negotiated{
		ProtocolVersion:       ack.ProtocolVersion,
		ReceiveBufferSize:     ack.ReceiveBufferSize,
		SendBufferSize:        ack.SendBufferSize,
		MaxReceiveMessageSize: l.MaxMessageSize,
		MaxReceiveChunkCount:  l.MaxChunkCount,
		MaxSendMessageSize:    hel.MaxMessageSize,
		MaxSendChunkCount:     hel.MaxChunkCount,
		EndpointURL:           hel.EndpointURL,
	}
	return ack, n, nil
}

// NegotiateClient checks a server's Acknowledge against the Hello the client sent and returns
// the client's view. An ACK with a higher ProtocolVersion than requested fails with
// BadProtocolVersionUnsupported; buffers below the floor Part 6 §7.1.2.4 sets (8192, or 1024
// when the Hello offered less) or below l.MinBufferSize fail with BadTcpNotEnoughResources. A
// server that grants more than was asked is held to what was asked.
func NegotiateClient(l Limits, hel *Hello, ack *Acknowledge) (Negotiated, error) {
	l, err := l.withDefaults()
	if err != nil {
		return Negotiated{}, fmt.Errorf("%w: %w", err, status.BadTcpInternalError)
	}
	if ack.ProtocolVersion > hel.ProtocolVersion {
		return Negotiated{}, fmt.Errorf("uacp: server answered protocol version %d to %d: %w",
			ack.ProtocolVersion, hel.ProtocolVersion, status.BadProtocolVersionUnsupported)
	}
	if ack.ReceiveBufferSize < l.MinBufferSize || ack.SendBufferSize < l.MinBufferSize {
		return Negotiated{}, fmt.Errorf("uacp: server buffers %d/%d below %d: %w",
			ack.ReceiveBufferSize, ack.SendBufferSize, l.MinBufferSize, status.BadTcpNotEnoughResources)
	}
	return Negotiated{
		ProtocolVersion:       ack.ProtocolVersion,
		ReceiveBufferSize:     min(ack.SendBufferSize, hel.ReceiveBufferSize),
		SendBufferSize:        min(ack.ReceiveBufferSize, hel.SendBufferSize),
		MaxReceiveMessageSize: hel.MaxMessageSize,
		MaxReceiveChunkCount:  hel.MaxChunkCount,
		MaxSendMessageSize:    ack.MaxMessageSize,
		MaxSendChunkCount:     ack.MaxChunkCount,
		EndpointURL:           hel.EndpointURL,
	}, nil
}

// helloFor builds the Hello a client with limits l sends.
func helloFor(l Limits, endpointURL string) *Hello {
	return &Hello{
		ProtocolVersion:   ProtocolVersion,
		ReceiveBufferSize: l.ReceiveBufferSize,
		SendBufferSize:    l.SendBufferSize,
		MaxMessageSize:    l.MaxMessageSize,
		MaxChunkCount:     l.MaxChunkCount,
		EndpointURL:       endpointURL,
	}
}
