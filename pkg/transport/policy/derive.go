package policy

import (
	"crypto/hmac"
	"hash"
)

// pHash fills out with P_hash(secret, seed) as defined in RFC 5246 §5 and
// used by Part 6 §6.7.5 (P_SHA1, P_SHA256):
//
//	A(0) = seed, A(i) = HMAC(secret, A(i-1))
//	P_hash = HMAC(secret, A(1) + seed) + HMAC(secret, A(2) + seed) + ...
func pHash(newHash func() hash.Hash, secret, seed, out []byte) {
	mac := hmac.New(newHash, secret)
	size := mac.Size()
	a := make([]byte, 0, size)
	block := make([]byte, 0, size)
	mac.Write(seed)
	a = mac.Sum(a[:0])
	for len(out) > 0 {
		mac.Reset()
		mac.Write(a)
		mac.Write(seed)
		block = mac.Sum(block[:0])
		out = out[copy(out, block):]
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(a[:0])
	}
	clear(a)
	clear(block)
}

// derivedKeys are the keys of one direction (Part 6 §6.7.5, Table 61).
type derivedKeys struct {
	signing, encrypting, iv []byte
}

// deriveKeys computes one direction's keys: P(secret, seed) split into the
// signing key, the encrypting key and the IV, in that order.
func deriveKeys(newHash func() hash.Hash, secret, seed []byte, l KeyLengths) derivedKeys {
	buf := make([]byte, l.Signing+l.Encrypting+l.Block)
	pHash(newHash, secret, seed, buf)
	return derivedKeys{
		signing:    buf[:l.Signing:l.Signing],
		encrypting: buf[l.Signing : l.Signing+l.Encrypting : l.Signing+l.Encrypting],
		iv:         buf[l.Signing+l.Encrypting:],
	}
}

// deriveChannelKeys derives both directions from the nonces (Part 6 §6.7.5):
// the client's keys use the ServerNonce as secret and the ClientNonce as
// seed; the server's keys the other way round.
func deriveChannelKeys(newHash func() hash.Hash, clientNonce, serverNonce []byte, l KeyLengths) (client, server derivedKeys) {
	client = deriveKeys(newHash, serverNonce, clientNonce, l)
	server = deriveKeys(newHash, clientNonce, serverNonce, l)
	return client, server
}
