package uacp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// MessageType is the three-byte ASCII code at the start of every message header
// (Part 6 §7.1.2.2 and §6.7.2.2), stored little-endian in the low 24 bits so that it can be
// compared with the constants below.
type MessageType uint32

// The message types of the connection protocol (Part 6 §7.1.2.2) and of the secure channel
// (Part 6 §6.7.2.2).
const (
	TypeHello        MessageType = 'H' | 'E'<<8 | 'L'<<16
	TypeAcknowledge  MessageType = 'A' | 'C'<<8 | 'K'<<16
	TypeError        MessageType = 'E' | 'R'<<8 | 'R'<<16
	TypeReverseHello MessageType = 'R' | 'H'<<8 | 'E'<<16
	TypeMessage      MessageType = 'M' | 'S'<<8 | 'G'<<16
	TypeOpen         MessageType = 'O' | 'P'<<8 | 'N'<<16
	TypeClose        MessageType = 'C' | 'L'<<8 | 'O'<<16
)

// String returns the three ASCII letters, or a hex form when they are not printable.
func (t MessageType) String() string {
	b := [3]byte{byte(t), byte(t >> 8), byte(t >> 16)}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("MessageType(0x%06X)", uint32(t))
		}
	}
	return string(b[:])
}

// The chunk type byte that follows the message type (Part 6 §6.7.2.2). Connection-protocol
// messages always carry ChunkFinal.
const (
	ChunkIntermediate byte = 'C'
	ChunkFinal        byte = 'F'
	ChunkAbort        byte = 'A'
)

// Sizes fixed by Part 6 §7.1.2.
const (
	// HeaderSize is the size of the message header: type, chunk type and MessageSize.
	HeaderSize = 8
	// MaxURLLength is the longest EndpointUrl or ServerUri accepted, in encoded bytes.
	MaxURLLength = 4096
	// MaxReasonLength is the longest Error reason kept; longer reasons are ignored on
	// receipt and truncated when sending (Part 6 §7.1.2.5).
	MaxReasonLength = 4096
	// HelloMinSize is the size of a Hello with a null EndpointUrl.
	HelloMinSize = HeaderSize + 5*4 + 4
	// AcknowledgeSize is the size of an Acknowledge.
	AcknowledgeSize = HeaderSize + 5*4
	// MaxHandshakeMessageSize bounds a HEL, ACK, ERR or RHE before its body is read: the
	// smallest receive buffer any peer may offer (Part 6 §7.1.2.3).
	MaxHandshakeMessageSize = 8192
)

// Header is the eight-byte header of every message and chunk (Part 6 §7.1.2.2).
type Header struct {
	Type      MessageType
	ChunkType byte
	// Size is the length of the whole message or chunk, header included.
	Size uint32
}

// AppendHeader appends the encoding of h to b.
func AppendHeader(b []byte, h Header) []byte {
	b = append(b, byte(h.Type), byte(h.Type>>8), byte(h.Type>>16), h.ChunkType)
	return binary.LittleEndian.AppendUint32(b, h.Size)
}

// ParseHeader reads a Header from the first HeaderSize bytes of b. It checks only that
// enough bytes are present; which types and sizes are acceptable depends on the caller.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("uacp: header of %d bytes: %w", len(b), status.BadDecodingError)
	}
	return Header{
		Type:      MessageType(b[0]) | MessageType(b[1])<<8 | MessageType(b[2])<<16,
		ChunkType: b[3],
		Size:      chunkSize(b),
	}, nil
}

// chunkSize returns the MessageSize field of the header that b begins with; b holds at
// least HeaderSize bytes.
func chunkSize(b []byte) uint32 { return binary.LittleEndian.Uint32(b[4:HeaderSize]) }

// Message is one of the connection-protocol messages: *Hello, *Acknowledge, *Error or
// *ReverseHello.
type Message interface {
	// MessageType returns the header type of the message.
	MessageType() MessageType
	// Append appends the whole message, header included, to b.
	Append(b []byte) []byte
}

var (
	_ Message = (*Hello)(nil)
	_ Message = (*Acknowledge)(nil)
	_ Message = (*Error)(nil)
	_ Message = (*ReverseHello)(nil)
)

// Hello is the first message a client sends (Part 6 §7.1.2.3).
type Hello struct {
	ProtocolVersion   uint32
	ReceiveBufferSize uint32 // largest chunk the client can receive
	SendBufferSize    uint32 // largest chunk the client will send
	MaxMessageSize    uint32 // largest response message; 0 = no limit
	MaxChunkCount     uint32 // most chunks in a response; 0 = no limit
	EndpointURL       string // at most MaxURLLength bytes
}

// MessageType returns TypeHello.
func (*Hello) MessageType() MessageType { return TypeHello }

// Append appends the encoded Hello to b. An EndpointURL longer than MaxURLLength is written
// as it is, so that tests can build invalid messages; Dial refuses to send one.
func (m *Hello) Append(b []byte) []byte {
	return appendMessage(b, TypeHello, func(e *codec.Encoder) {
		e.UInt32(m.ProtocolVersion)
		e.UInt32(m.ReceiveBufferSize)
		e.UInt32(m.SendBufferSize)
		e.UInt32(m.MaxMessageSize)
		e.UInt32(m.MaxChunkCount)
		e.String(m.EndpointURL)
	})
}

// Acknowledge is the server's answer to a Hello (Part 6 §7.1.2.4).
type Acknowledge struct {
	ProtocolVersion   uint32
	ReceiveBufferSize uint32 // largest chunk the server can receive
	SendBufferSize    uint32 // largest chunk the server will send
	MaxMessageSize    uint32 // largest request message; 0 = no limit
	MaxChunkCount     uint32 // most chunks in a request; 0 = no limit
}

// MessageType returns TypeAcknowledge.
func (*Acknowledge) MessageType() MessageType { return TypeAcknowledge }

// Append appends the encoded Acknowledge to b.
func (m *Acknowledge) Append(b []byte) []byte {
	b = AppendHeader(b, Header{Type: TypeAcknowledge, ChunkType: ChunkFinal, Size: AcknowledgeSize})
	b = binary.LittleEndian.AppendUint32(b, m.ProtocolVersion)
	b = binary.LittleEndian.AppendUint32(b, m.ReceiveBufferSize)
	b = binary.LittleEndian.AppendUint32(b, m.SendBufferSize)
	b = binary.LittleEndian.AppendUint32(b, m.MaxMessageSize)
	return binary.LittleEndian.AppendUint32(b, m.MaxChunkCount)
}

// Error is the Error message (ERR, Part 6 §7.1.2.5) and also the error value that reports
// one: Dial and Conn.ReadChunk return an *Error when the peer sends ERR. errors.Is(err,
// code) and StatusOf see its Code.
type Error struct {
	Code   status.Code
	Reason string // at most MaxReasonLength bytes
}

// MessageType returns TypeError.
func (*Error) MessageType() MessageType { return TypeError }

// Error returns the status and the reason.
func (m *Error) Error() string {
	if m.Reason == "" {
		return "uacp: peer error " + m.Code.Error()
	}
	return "uacp: peer error " + m.Code.Error() + ": " + m.Reason
}

// Unwrap returns the status code.
func (m *Error) Unwrap() error { return m.Code }

// Append appends the encoded Error to b; a Reason longer than MaxReasonLength is cut at a
// UTF-8 boundary.
func (m *Error) Append(b []byte) []byte {
	return appendMessage(b, TypeError, func(e *codec.Encoder) {
		e.StatusCode(m.Code)
		e.String(truncateUTF8(m.Reason, MaxReasonLength))
	})
}

// ReverseHello is the first message of a server that connects to a client
// (Part 6 §7.1.2.6).
type ReverseHello struct {
	ServerURI   string // the server's ApplicationUri, at most MaxURLLength bytes
	EndpointURL string // to be sent back in the Hello, at most MaxURLLength bytes
}

// MessageType returns TypeReverseHello.
func (*ReverseHello) MessageType() MessageType { return TypeReverseHello }

// Append appends the encoded ReverseHello to b.
func (m *ReverseHello) Append(b []byte) []byte {
	return appendMessage(b, TypeReverseHello, func(e *codec.Encoder) {
		e.String(m.ServerURI)
		e.String(m.EndpointURL)
	})
}

// appendMessage writes a header with a placeholder size, the body, then patches the size.
func appendMessage(b []byte, t MessageType, body func(*codec.Encoder)) []byte {
	start := len(b)
	b = AppendHeader(b, Header{Type: t, ChunkType: ChunkFinal})
	e := codec.NewEncoder(b[len(b):])
	body(e)
	b = append(b, e.Bytes()...)
	binary.LittleEndian.PutUint32(b[start+4:], uint32(len(b)-start))
	return b
}

// truncateUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// DecodeMessage decodes one whole HEL, ACK, ERR or RHE message, header included. The
// header's chunk type must be 'F' and its size must equal len(b). Failures carry the status
// Part 6 §7.1.5 names: BadTcpMessageTypeInvalid for any other type or chunk type,
// BadTcpEndpointUrlInvalid for an EndpointUrl or ServerUri over MaxURLLength, and
// BadDecodingError for a malformed body. An Error reason over MaxReasonLength is dropped, as
// the specification requires of clients. Trailing bytes are rejected for protocol version 0
// and ignored for later versions, which may add fields.
func DecodeMessage(b []byte) (Message, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	switch h.Type {
	case TypeHello, TypeAcknowledge, TypeError, TypeReverseHello:
	default:
		return nil, fmt.Errorf("uacp: message type %v: %w", h.Type, status.BadTcpMessageTypeInvalid)
	}
	if h.ChunkType != ChunkFinal {
		return nil, fmt.Errorf("uacp: %v with chunk type %q: %w", h.Type, h.ChunkType, status.BadTcpMessageTypeInvalid)
	}
	if int64(h.Size) != int64(len(b)) {
		return nil, fmt.Errorf("uacp: %v header says %d bytes, have %d: %w", h.Type, h.Size, len(b), status.BadDecodingError)
	}
	d := codec.NewDecoderLimits(b[HeaderSize:], codec.Limits{MaxStringLength: MaxHandshakeMessageSize})
	var m Message
	version := uint32(0)
	switch h.Type {
	case TypeHello:
		hel := &Hello{
			ProtocolVersion:   d.UInt32(),
			ReceiveBufferSize: d.UInt32(),
			SendBufferSize:    d.UInt32(),
			MaxMessageSize:    d.UInt32(),
			MaxChunkCount:     d.UInt32(),
			EndpointURL:       d.String(),
		}
		version = hel.ProtocolVersion
		if d.Err() == nil && len(hel.EndpointURL) > MaxURLLength {
			return nil, fmt.Errorf("uacp: EndpointUrl of %d bytes: %w", len(hel.EndpointURL), status.BadTcpEndpointUrlInvalid)
		}
		m = hel
	case TypeAcknowledge:
		ack := &Acknowledge{
			ProtocolVersion:   d.UInt32(),
			ReceiveBufferSize: d.UInt32(),
			SendBufferSize:    d.UInt32(),
			MaxMessageSize:    d.UInt32(),
			MaxChunkCount:     d.UInt32(),
		}
		version = ack.ProtocolVersion
		m = ack
	case TypeError:
		e := &Error{Code: d.StatusCode(), Reason: d.String()}
		if len(e.Reason) > MaxReasonLength {
			e.Reason = ""
		}
		m = e
	case TypeReverseHello:
		rhe := &ReverseHello{ServerURI: d.String(), EndpointURL: d.String()}
		if d.Err() == nil && (len(rhe.ServerURI) > MaxURLLength || len(rhe.EndpointURL) > MaxURLLength) {
			return nil, fmt.Errorf("uacp: ReverseHello URI of %d/%d bytes: %w", len(rhe.ServerURI), len(rhe.EndpointURL), status.BadTcpEndpointUrlInvalid)
		}
		m = rhe
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("uacp: decoding %v: %w", h.Type, status.BadDecodingError)
	}
	if d.Remaining() != 0 && version == 0 {
		return nil, fmt.Errorf("uacp: %d bytes after %v: %w", d.Remaining(), h.Type, status.BadDecodingError)
	}
	return m, nil
}

// DecodeHello decodes a whole Hello message, header included; see DecodeMessage. Any other
// message type fails with BadTcpMessageTypeInvalid.
func DecodeHello(b []byte) (*Hello, error) {
	m, err := DecodeMessage(b)
	if err != nil {
		return nil, err
	}
	hel, ok := m.(*Hello)
	if !ok {
		return nil, fmt.Errorf("uacp: %v where HEL expected: %w", m.MessageType(), status.BadTcpMessageTypeInvalid)
	}
	return hel, nil
}

// StatusOf returns the status code an error carries: the Code of an *Error, a status.Code
// wrapped anywhere in its chain, Good for nil, and BadTcpInternalError for anything else (a Good code wrapped in an error
// included).
func StatusOf(err error) status.Code {
	if err == nil {
		return status.Good
	}
	var c status.Code
	if errors.As(err, &c) && !c.IsGood() {
		return c
	}
	return status.BadTcpInternalError
}
