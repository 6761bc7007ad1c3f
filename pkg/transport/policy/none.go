package policy

import (
	"crypto"
	"crypto/x509"
	"io"

	"uastack.dev/pkg/status"
)

// URINone is SecurityPolicy None: no signing, no encryption.
const URINone = "http://opcfoundation.org/UA/SecurityPolicy#None"

// None is SecurityPolicy None (Part 7, "SecurityPolicy - None"). It must be
// chosen explicitly; servers should log a warning when an endpoint uses it.
var None Policy = nonePolicy{}

type nonePolicy struct{}

func (nonePolicy) Info() Info { return Info{URI: URINone, Name: "None"} }

// NewAsymmetric ignores its arguments: None neither signs nor encrypts.
func (nonePolicy) NewAsymmetric(crypto.Signer, *x509.Certificate) (Asymmetric, error) {
	return noneAsymmetric{}, nil
}

// NewNonce returns an empty nonce: None does not use nonces.
func (nonePolicy) NewNonce(io.Reader) (Nonce, error) { return Nonce{}, nil }

func (nonePolicy) DeriveKeys(Role, Nonce, []byte) (send, recv Symmetric, err error) {
	return noneSymmetric{}, noneSymmetric{}, nil
}

type noneAsymmetric struct{}

func (noneAsymmetric) SignatureSize() int            { return 0 }
func (noneAsymmetric) RemoteSignatureSize() int      { return 0 }
func (noneAsymmetric) PlaintextBlockSize() int       { return 1 }
func (noneAsymmetric) CiphertextBlockSize() int      { return 1 }
func (noneAsymmetric) LocalPlaintextBlockSize() int  { return 1 }
func (noneAsymmetric) LocalCiphertextBlockSize() int { return 1 }
func (noneAsymmetric) Sign(dst, _ []byte) ([]byte, error) {
	return dst, nil
}

func (noneAsymmetric) Verify(_, sig []byte) error {
	if len(sig) != 0 {
		return status.BadSecurityChecksFailed
	}
	return nil
}
func (noneAsymmetric) EncryptedLen(n int) int { return n }
func (noneAsymmetric) Encrypt(dst, plaintext []byte) (int, error) {
	if len(dst) < len(plaintext) {
		return 0, status.BadInternalError
	}
	return copy(dst, plaintext), nil
}

func (noneAsymmetric) Decrypt(dst, ciphertext []byte) (int, error) {
	if len(dst) < len(ciphertext) {
		return 0, status.BadSecurityChecksFailed
	}
	return copy(dst, ciphertext), nil
}

type noneSymmetric struct{}

func (noneSymmetric) BlockSize() int               { return 1 }
func (noneSymmetric) SignatureSize() int           { return 0 }
func (noneSymmetric) Seal([]byte, int, bool) error { return nil }
func (noneSymmetric) Open([]byte, int, bool) error { return nil }
func (noneSymmetric) Sign(dst, _ []byte) []byte    { return dst }
func (noneSymmetric) Verify(_, sig []byte) error {
	if len(sig) != 0 {
		return status.BadSecurityChecksFailed
	}
	return nil
}
func (noneSymmetric) Encrypt([]byte) error { return nil }
func (noneSymmetric) Decrypt([]byte) error { return nil }
