package policy

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/subtle"
	"hash"

	"uastack.dev/pkg/status"
)

// cbcHMAC is the symmetric suite of every RSA policy: AES-CBC with the
// derived IV for every chunk (Part 6 §6.7.2.3) and an HMAC signature.
type cbcHMAC struct {
	mac   hash.Hash
	block cipher.Block
	iv    [aes.BlockSize]byte
	// enc and dec are CBC modes whose IV is reset per chunk (SetIV), so
	// that no BlockMode is allocated per call; nil if crypto/cipher ever
	// stops offering SetIV, and then CBC runs over block directly.
	enc, dec cbcMode
	sigSize  int
	// sum receives the computed signature in Verify.
	sum [64]byte
}

// cbcMode is what crypto/cipher's AES CBC modes implement (crypto/tls uses
// the same assertion).
type cbcMode interface {
	cipher.BlockMode
	SetIV([]byte)
}

func newCBCHMAC(newHash func() hash.Hash, k derivedKeys) (*cbcHMAC, error) {
	block, err := aes.NewCipher(k.encrypting)
	if err != nil {
		return nil, err
	}
	s := &cbcHMAC{
		mac:   hmac.New(newHash, k.signing),
		block: block,
	}
	s.sigSize = s.mac.Size()
	copy(s.iv[:], k.iv)
	if e, ok := cipher.NewCBCEncrypter(block, s.iv[:]).(cbcMode); ok {
		s.enc = e
	}
	if d, ok := cipher.NewCBCDecrypter(block, s.iv[:]).(cbcMode); ok {
		s.dec = d
	}
	return s, nil
}

func (s *cbcHMAC) BlockSize() int     { return aes.BlockSize }
func (s *cbcHMAC) SignatureSize() int { return s.sigSize }

func (s *cbcHMAC) Sign(dst, msg []byte) []byte {
	s.mac.Reset()
	s.mac.Write(msg)
	return s.mac.Sum(dst)
}

func (s *cbcHMAC) Verify(msg, sig []byte) error {
	sum := s.Sign(s.sum[:0], msg)
	if subtle.ConstantTimeCompare(sum, sig) != 1 {
		return status.BadSecurityChecksFailed
	}
	return nil
}

// Encrypt encrypts buf in place with the per-chunk IV. It does not
// allocate: cipher.NewCBCEncrypter would allocate per call, so the mode is
// kept and its IV reset.
func (s *cbcHMAC) Encrypt(buf []byte) error {
	if len(buf)%aes.BlockSize != 0 {
		return status.BadInternalError
	}
	if s.enc != nil {
		s.enc.SetIV(s.iv[:])
		s.enc.CryptBlocks(buf, buf)
		return nil
	}
	prev := s.iv[:]
	for i := 0; i < len(buf); i += aes.BlockSize {
		b := buf[i : i+aes.BlockSize : i+aes.BlockSize]
		subtle.XORBytes(b, b, prev)
		s.block.Encrypt(b, b)
		prev = b
	}
	return nil
}

func (s *cbcHMAC) Decrypt(buf []byte) error {
	if len(buf)%aes.BlockSize != 0 {
		return status.BadSecurityChecksFailed
	}
	if s.dec == nil {
		cipher.NewCBCDecrypter(s.block, s.iv[:]).CryptBlocks(buf, buf)
		return nil
	}
	s.dec.SetIV(s.iv[:])
	s.dec.CryptBlocks(buf, buf)
	return nil
}

func (s *cbcHMAC) Seal(chunk []byte, encryptFrom int, encrypt bool) error {
	n := len(chunk) - s.sigSize
	if n < 0 || encryptFrom < 0 || encryptFrom > n {
		return status.BadInternalError
	}
	s.Sign(chunk[n:n], chunk[:n])
	if !encrypt {
		return nil
	}
	return s.Encrypt(chunk[encryptFrom:])
}

func (s *cbcHMAC) Open(chunk []byte, encryptFrom int, encrypted bool) error {
	n := len(chunk) - s.sigSize
	if n < 0 || encryptFrom < 0 || encryptFrom > n {
		return status.BadSecurityChecksFailed
	}
	if encrypted {
		if err := s.Decrypt(chunk[encryptFrom:]); err != nil {
			return err
		}
	}
	return s.Verify(chunk[:n], chunk[n:])
}
