// Package policy implements the OPC UA SecurityPolicies (Part 7 §6.6
// "Security Policy" profiles) as the secure channel uses them (Part 6 §6.7):
// the asymmetric algorithms that protect OpenSecureChannel messages, the
// derivation of the symmetric keys from the two SecureChannel nonces, and
// the symmetric algorithms that protect every other message chunk.
//
// Every built-in policy is listed once, in registry.go; Lookup finds a policy
// by its URI. A nil Policy never means SecurityPolicy None: None is the
// explicit value [None].
//
// Buffer ownership and allocation: symmetric operations (Symmetric) work in
// place on the caller's chunk bytes and do not allocate in steady state;
// asymmetric operations (Asymmetric) run once or twice per handshake and
// allocate inside crypto/rsa.
package policy

import (
	"crypto"
	"crypto/x509"
	"io"
)

// Role says which end of a SecureChannel a key set is derived for.
type Role uint8

const (
	// Client is the end that sends OpenSecureChannel requests.
	Client Role = iota + 1
	// Server is the end that answers them.
	Server
)

// KeyLengths are the lengths in bytes of the symmetric keys derived for one
// direction of a channel (Part 6 §6.7.5, Table 61).
type KeyLengths struct {
	Signing    int // SigningKeyLength (DerivedSignatureKeyLength)
	Encrypting int // EncryptingKeyLength
	Block      int // EncryptingBlockSize, the length of the derived IV
}

// Info is the static description of a policy: its URI, its limits from the
// Part 7 profile, and the algorithm URIs that appear on the wire (for
// example in SignatureData.Algorithm, Part 4 §7.37).
type Info struct {
	URI  string // e.g. "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"
	Name string // the URI fragment, e.g. "Basic256Sha256"

	// NonceLength is SecureChannelNonceLength in bytes; 0 for None.
	NonceLength int
	// RSA is true when the asymmetric algorithms use RSA keys and
	// certificates; false for None and for ECC policies.
	RSA bool
	// AEAD is true when the symmetric algorithm is an AEAD (AES-GCM,
	// ChaCha20-Poly1305), where signing and encrypting are one operation.
	AEAD bool
	// MinAsymmetricKeyBits and MaxAsymmetricKeyBits bound the RSA modulus
	// of both certificates (the profile's Min/MaxAsymmetricKeyLength).
	MinAsymmetricKeyBits int
	MaxAsymmetricKeyBits int
	// Keys are the derived symmetric key lengths.
	Keys KeyLengths
	// SymmetricSignatureSize is the length of a symmetric signature in bytes.
	SymmetricSignatureSize int
	// Deprecated marks policies that Part 7 (1.04 and later) deprecates.
	Deprecated bool

	AsymmetricSignatureURI  string
	AsymmetricEncryptionURI string
	SymmetricSignatureURI   string
	SymmetricEncryptionURI  string
	KeyDerivationURI        string
}

// Policy is one SecurityPolicy. Implementations are immutable and safe for
// concurrent use.
type Policy interface {
	// Info returns the static description of the policy.
	Info() Info

	// NewAsymmetric returns the asymmetric algorithms for a channel between
	// the local key and the remote certificate. Either may be nil when only
	// half of the operations is needed (for example verifying a signature
	// with a certificate alone); the operations that need the missing key
	// then fail. A key outside the policy's limits is rejected with an error
	// wrapping status.BadSecurityPolicyRejected. local must implement
	// crypto.Decrypter for Decrypt to work (an *rsa.PrivateKey does).
	NewAsymmetric(local crypto.Signer, remote *x509.Certificate) (Asymmetric, error)

	// NewNonce returns a fresh local SecureChannel nonce read from rand.
	NewNonce(rand io.Reader) (Nonce, error)

	// DeriveKeys derives the symmetric keys of a channel from the local
	// nonce and the remote nonce's bytes (Part 6 §6.7.5). send protects
	// chunks this end sends, recv checks chunks it receives. The two are
	// independent, so one goroutine may send while another receives.
	DeriveKeys(role Role, local Nonce, remote []byte) (send, recv Symmetric, err error)
}

// Nonce is a locally generated SecureChannel nonce. Value is what is sent in
// the OpenSecureChannel message. For RSA policies it is random bytes; for the
// ECC policies to come it is an ephemeral public key, and the private half
// will stay inside the Nonce (an unexported field, added with the first ECC
// policy) so that DeriveKeys can run the key agreement. Nonce is a struct
// rather than []byte so that this needs no change to the Policy interface.
type Nonce struct {
	Value []byte
}

// NonceFromBytes wraps bytes received or chosen elsewhere as a local nonce.
// It is enough for RSA policies, whose derivation needs only the bytes.
func NonceFromBytes(b []byte) Nonce { return Nonce{Value: b} }

// Asymmetric holds the asymmetric algorithms of one channel end: it signs
// and decrypts with the local private key, verifies and encrypts with the
// remote public key (Part 6 §6.7.4). It is safe for concurrent use.
//
// Its operations allocate (crypto/rsa does); they run only for
// OpenSecureChannel and session signatures.
type Asymmetric interface {
	// SignatureSize is the length of a local signature (the local key size).
	SignatureSize() int
	// RemoteSignatureSize is the length of a remote signature.
	RemoteSignatureSize() int
	// PlaintextBlockSize is the largest plaintext per block encrypted for the
	// remote key.
	PlaintextBlockSize() int
	// CiphertextBlockSize is the size of a block encrypted for the remote key
	// (the remote key size). More than 256 means ExtraPaddingSize is present.
	CiphertextBlockSize() int
	// LocalPlaintextBlockSize and LocalCiphertextBlockSize are the same for
	// blocks encrypted for the local key, which is what Decrypt receives.
	LocalPlaintextBlockSize() int
	LocalCiphertextBlockSize() int

	// Sign appends the signature of msg to dst and returns the result.
	Sign(dst, msg []byte) ([]byte, error)
	// Verify checks a remote signature of msg; a mismatch is
	// status.BadSecurityChecksFailed.
	Verify(msg, sig []byte) error
	// EncryptedLen returns the length of the cipher text for n plaintext bytes.
	EncryptedLen(n int) int
	// Encrypt encrypts plaintext block by block into dst and returns the
	// number of bytes written, EncryptedLen(len(plaintext)). dst must either
	// not overlap plaintext or start at the same address (in place).
	Encrypt(dst, plaintext []byte) (int, error)
	// Decrypt decrypts ciphertext, a whole number of LocalCiphertextBlockSize
	// blocks, into dst and returns the number of plaintext bytes. dst must
	// either not overlap ciphertext or start at the same address (in place).
	// Failure is status.BadSecurityChecksFailed.
	Decrypt(dst, ciphertext []byte) (int, error)
}

// Symmetric holds the symmetric keys and algorithms of one direction of a
// channel. It works in place on chunk bytes and does not allocate after
// DeriveKeys. It is not safe for concurrent use: a channel uses its send
// Symmetric from the sending goroutine and its recv Symmetric from the
// receiving one.
type Symmetric interface {
	// BlockSize is the cipher block size that padding aligns to; 1 when no
	// padding is needed (None, AEAD).
	BlockSize() int
	// SignatureSize is the length of the signature (or AEAD tag).
	SignatureSize() int

	// Seal protects a chunk in place (Part 6 §6.7.2). chunk holds the whole
	// chunk with its last SignatureSize bytes reserved for the signature:
	// Seal signs chunk[:len(chunk)-SignatureSize()], writes the signature at
	// the end, and if encrypt is true encrypts chunk[encryptFrom:], whose
	// length must be a multiple of BlockSize. AEAD policies fuse the two
	// steps and authenticate chunk[:encryptFrom] as associated data.
	Seal(chunk []byte, encryptFrom int, encrypt bool) error
	// Open reverses Seal in place: it decrypts chunk[encryptFrom:] if
	// encrypted, then verifies the signature at the end. Any failure is
	// status.BadSecurityChecksFailed. The caller then strips padding.
	Open(chunk []byte, encryptFrom int, encrypted bool) error

	// Sign appends the signature of msg to dst; with enough capacity in dst
	// it does not allocate.
	Sign(dst, msg []byte) []byte
	// Verify checks sig against msg in constant time.
	Verify(msg, sig []byte) error
	// Encrypt and Decrypt transform buf in place; len(buf) must be a
	// multiple of BlockSize. Not meaningful for AEAD policies, whose
	// encryption is Seal/Open only; they return status.BadNotSupported.
	Encrypt(buf []byte) error
	Decrypt(buf []byte) error
}
