package mirror

import (
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/crypto/chacha20poly1305"
)

// sealVersion is the first byte of a sealed record: the AEAD and its layout
// (XChaCha20-Poly1305, a random 24-byte nonce, then the ciphertext and its tag).
const sealVersion = 1

// KeySize is the length of the cluster key (mirror.key).
const KeySize = chacha20poly1305.KeySize

// ErrSeal is the error of a record that does not open with this server's cluster key: it
// was sealed with another key, or changed on the way.
var ErrSeal = errors.New("mirror: record does not open with this server's cluster key")

// sealer seals and opens records with the cluster key. Each record is bound to where it
// is kept (its KV key or subject, the additional data), so a record moved to another key
// does not open there. Random 24-byte nonces never repeat in practice, whatever the
// number of servers sealing with one key.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("mirror: the cluster key must be %d bytes, got %d", KeySize, len(key))
	}
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// seal returns plain sealed for where.
func (s *sealer) seal(where string, plain []byte) []byte {
	return s.sealTo(nil, where, plain)
}

// sealTo appends plain sealed for where to dst[:0] and returns the result.
func (s *sealer) sealTo(dst []byte, where string, plain []byte) []byte {
	ns := s.aead.NonceSize()
	out := slices.Grow(dst[:0], 1+ns+len(plain)+s.aead.Overhead())[:1+ns]
	out[0] = sealVersion
	_, _ = rand.Read(out[1 : 1+ns]) // crypto/rand.Read never fails (Go 1.24+)
	return s.aead.Seal(out, out[1:1+ns], plain, []byte(where))
}

// open returns the plain text of sealed, kept at where.
func (s *sealer) open(where string, sealed []byte) ([]byte, error) {
	ns := s.aead.NonceSize()
	if len(sealed) < 1+ns+s.aead.Overhead() || sealed[0] != sealVersion {
		return nil, fmt.Errorf("%w (%s: not a sealed record)", ErrSeal, where)
	}
	plain, err := s.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], []byte(where))
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", ErrSeal, where)
	}
	return plain, nil
}

// open opens a record of the set kept at where, a what ("session record"); one that does
// not open is logged, saying what to check: records that do not open are a
// configuration error, not noise.
func (m *Mirror) open(what, where string, sealed []byte) ([]byte, error) {
	plain, err := m.seal.open(where, sealed)
	if err != nil {
		m.log.Error("a "+what+" of the set does not open: is mirror.key the same on every server?", "where", where, "err", err)
	}
	return plain, err
}
