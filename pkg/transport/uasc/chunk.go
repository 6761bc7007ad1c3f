package uasc

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
)

// Fixed sizes of the chunk headers (Part 6 §6.7.2).
const (
	// channelHeaderLen is the message header plus the SecureChannelId.
	channelHeaderLen = uacp.HeaderSize + 4
	// symHeaderLen is channelHeaderLen plus the symmetric security header (TokenId).
	symHeaderLen = channelHeaderLen + 4
	// seqHeaderLen is the sequence header: SequenceNumber and RequestId.
	seqHeaderLen = 8
	// symBodyOffset is where the body of a symmetric chunk starts.
	symBodyOffset = symHeaderLen + seqHeaderLen
)

// Sequence-number wrap-around (Part 6 §6.7.2.4): a sender wraps only after numbers greater
// than seqWrapAfter, and the first number after the wrap is below seqWrapBelow.
const (
	seqWrapAfter = 4294966271 // UInt32 max - 1024
	seqWrapBelow = 1024
)

// asymmetricHeader is the asymmetric algorithm security header of OPN chunks (Part 6
// §6.7.2.3). Nil byte strings are encoded as null.
type asymmetricHeader struct {
	SecurityPolicyURI             string
	SenderCertificate             []byte
	ReceiverCertificateThumbprint []byte
}

// encodedLen is the length of h on the wire.
func (h *asymmetricHeader) encodedLen() int {
	return 4 + len(h.SecurityPolicyURI) + 4 + len(h.SenderCertificate) + 4 + len(h.ReceiverCertificateThumbprint)
}

// appendAsymmetricHeader appends h to b.
func appendAsymmetricHeader(b []byte, h *asymmetricHeader) []byte {
	b = appendBytes(b, []byte(h.SecurityPolicyURI))
	b = appendBytes(b, h.SenderCertificate)
	return appendBytes(b, h.ReceiverCertificateThumbprint)
}

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.LittleEndian.AppendUint32(b, 0xffffffff)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// Limits of the asymmetric security header fields (Part 6 §6.7.2.3, Table 54). The
// SecurityPolicyUri "shall not exceed 255 bytes"; the certificate chain and the thumbprint
// are bounded by the largest receive buffer, since a field larger than a chunk cannot arrive.
const (
	maxSecurityPolicyURILen = 255
	maxAsymHeaderField      = uacp.MaxBufferSize
)

// errAsymmetricHeader is the error of a malformed asymmetric security header.
var errAsymmetricHeader = fmt.Errorf("uasc: asymmetric security header: %w", status.BadDecodingError)

// parseAsymmetricHeader reads the asymmetric security header that starts at
// b[channelHeaderLen:] and returns it with the offset just after it. Malformed headers (a
// b shorter than the channel header, a length past the end or over its limit, a negative
// length other than -1) are BadDecodingError. A null SecurityPolicyUri reads as "", like an
// empty one (Table 54 allows both for "not specified"); null byte strings read as nil and
// empty ones as non-nil empty slices, so that appendAsymmetricHeader writes them back as
// they came. The byte strings are copies: b may be released afterwards.
func parseAsymmetricHeader(b []byte) (asymmetricHeader, int, error) {
	var h asymmetricHeader
	if len(b) < channelHeaderLen {
		return h, 0, errAsymmetricHeader
	}
	uri, pos, ok := asymmetricField(b, channelHeaderLen, maxSecurityPolicyURILen)
	if !ok {
		return h, 0, errAsymmetricHeader
	}
	h.SecurityPolicyURI = string(uri)
	if h.SenderCertificate, pos, ok = asymmetricField(b, pos, maxAsymHeaderField); !ok {
		return h, 0, errAsymmetricHeader
	}
	if h.ReceiverCertificateThumbprint, pos, ok = asymmetricField(b, pos, maxAsymHeaderField); !ok {
		return h, 0, errAsymmetricHeader
	}
	// bytes.Clone keeps nil and empty apart.
	h.SenderCertificate = bytes.Clone(h.SenderCertificate)
	h.ReceiverCertificateThumbprint = bytes.Clone(h.ReceiverCertificateThumbprint)
	return h, pos, nil
}

// asymmetricField reads the Int32 length and the bytes of one header field at b[pos:] and
// returns them (aliasing b; nil for a null field) with the offset after them.
func asymmetricField(b []byte, pos, limit int) ([]byte, int, bool) {
	if len(b)-pos < 4 {
		return nil, 0, false
	}
	n := int32(binary.LittleEndian.Uint32(b[pos:]))
	pos += 4
	switch {
	case n == -1:
		return nil, pos, true
	case n < 0 || int(n) > limit || int(n) > len(b)-pos:
		return nil, 0, false
	}
	return b[pos : pos+int(n) : pos+int(n)], pos + int(n), true
}

// putHeader writes the message header and SecureChannelId into b.
func putHeader(b []byte, t uacp.MessageType, chunkType byte, size int, channelID uint32) {
	b[0], b[1], b[2], b[3] = byte(t), byte(t>>8), byte(t>>16), chunkType
	binary.LittleEndian.PutUint32(b[4:], uint32(size))
	binary.LittleEndian.PutUint32(b[8:], channelID)
}

// putSeqHeader writes a sequence header at b[off:].
func putSeqHeader(b []byte, off int, seq, requestID uint32) {
	binary.LittleEndian.PutUint32(b[off:], seq)
	binary.LittleEndian.PutUint32(b[off+4:], requestID)
}

// nextSeq returns the sequence number that follows seq for a sender (Part 6 §6.7.2.4).
func nextSeq(seq uint32) uint32 {
	if seq >= seqWrapAfter {
		return 1
	}
	return seq + 1
}

// seqFollows reports whether got may follow last for a receiver: exactly last+1, or, once
// last+1 is past seqWrapAfter, any number below seqWrapBelow. Replays, regressions and gaps
// are refused.
func seqFollows(last, got uint32) bool {
	if last < seqWrapAfter {
		return got == last+1
	}
	return got < seqWrapBelow || (last != ^uint32(0) && got == last+1)
}
