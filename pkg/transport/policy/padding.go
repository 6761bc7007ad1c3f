package policy

import (
	"crypto/subtle"

	"uastack.dev/pkg/status"
)

// Padding of encrypted chunks (Part 6 §6.7.2.5). The encrypted part of a
// chunk is
//
//	SequenceHeader | Body | PaddingSize | Padding | [ExtraPaddingSize] | Signature
//
// PaddingSize holds the low byte of the number of Padding bytes; every
// Padding byte has the same value. ExtraPaddingSize, present only when the
// encrypting key is larger than 2048 bits (cipher text blocks over 256
// bytes), holds the high byte. The total is a multiple of the plain text
// block size. Padding is present only when the chunk is encrypted.

// ExtraPadding reports whether chunks encrypted with cipher text blocks of
// cipherBlockSize bytes carry the ExtraPaddingSize byte: true for RSA keys
// over 2048 bits, false for every symmetric cipher.
func ExtraPadding(cipherBlockSize int) bool { return cipherBlockSize > 256 }

// PaddingSize returns the number of Padding bytes (the value of the
// PaddingSize field, high byte in ExtraPaddingSize) for an encrypted part of
// n bytes before the padding (sequence header and body), a signature of
// signatureSize bytes, and plain text blocks of plainBlockSize bytes.
func PaddingSize(n, plainBlockSize, signatureSize int, extra bool) int {
	if plainBlockSize <= 1 {
		return 0
	}
	r := (n + signatureSize + paddingFields(extra)) % plainBlockSize
	if r == 0 {
		return 0
	}
	return plainBlockSize - r
}

// PaddingLen is the number of bytes the padding occupies: the PaddingSize
// byte, paddingSize Padding bytes and the ExtraPaddingSize byte if extra.
func PaddingLen(paddingSize int, extra bool) int { return paddingSize + paddingFields(extra) }

func paddingFields(extra bool) int {
	if extra {
		return 2
	}
	return 1
}

// WritePadding writes the padding into dst, which must be exactly
// PaddingLen(paddingSize, extra) bytes long. paddingSize must be below 256,
// or below 65536 with extra.
func WritePadding(dst []byte, paddingSize int, extra bool) {
	low := byte(paddingSize)
	if extra {
		dst[len(dst)-1] = byte(paddingSize >> 8)
		dst = dst[:len(dst)-1]
	}
	for i := range dst {
		dst[i] = low
	}
}

// StripPadding returns the length of b without its padding, where b is the
// decrypted and verified encrypted part of a chunk without its signature.
// Malformed padding is status.BadSecurityChecksFailed. The bytes are compared
// in constant time for a given padding length; the signature has already
// authenticated them, so the check guards against a faulty peer, not an
// oracle.
func StripPadding(b []byte, extra bool) (int, error) {
	fields := paddingFields(extra)
	if len(b) < fields {
		return 0, status.BadSecurityChecksFailed
	}
	size := int(b[len(b)-fields])
	if extra {
		size |= int(b[len(b)-1]) << 8
	}
	total := size + fields
	if total > len(b) {
		return 0, status.BadSecurityChecksFailed
	}
	low := b[len(b)-fields]
	var diff byte
	for _, c := range b[len(b)-total : len(b)-fields+1] {
		diff |= c ^ low
	}
	if subtle.ConstantTimeByteEq(diff, 0) != 1 {
		return 0, status.BadSecurityChecksFailed
	}
	return len(b) - total, nil
}
