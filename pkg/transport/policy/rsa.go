package policy

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"hash"
	"io"

	"uastack.dev/pkg/status"
)

// rsaAlgorithms are the asymmetric algorithms of an RSA policy.
type rsaAlgorithms struct {
	// encHash is the OAEP hash (also the MGF1 hash); 0 selects
	// RSAES-PKCS1-v1_5 encryption (Basic128Rsa15).
	encHash crypto.Hash
	// sigHash is the signature hash; pss selects RSASSA-PSS with a salt as
	// long as the hash, otherwise RSASSA-PKCS1-v1_5.
	sigHash crypto.Hash
	pss     bool
}

// overhead is the encryption padding per block: 11 bytes for PKCS#1 v1.5,
// 2*hLen+2 for OAEP (RFC 8017 §7.1.1, §7.2.1).
func (a rsaAlgorithms) overhead() int {
	if a.encHash == 0 {
		return 11
	}
	return 2*a.encHash.Size() + 2
}

// rsaPolicy is a SecurityPolicy with RSA asymmetric algorithms and an
// AES-CBC + HMAC symmetric suite; the built-in policies are values of it.
type rsaPolicy struct {
	info    Info
	asym    rsaAlgorithms
	newHash func() hash.Hash // HMAC and P_SHA hash
}

func (p *rsaPolicy) Info() Info { return p.info }

func (p *rsaPolicy) NewNonce(r io.Reader) (Nonce, error) {
	b := make([]byte, p.info.NonceLength)
	if _, err := io.ReadFull(r, b); err != nil {
		return Nonce{}, fmt.Errorf("policy: nonce: %w", err)
	}
	return Nonce{Value: b}, nil
}

func (p *rsaPolicy) DeriveKeys(role Role, local Nonce, remote []byte) (send, recv Symmetric, err error) {
	if err := CheckNonce(p, local.Value); err != nil {
		return nil, nil, fmt.Errorf("policy: local nonce: %w", err)
	}
	if err := CheckNonce(p, remote); err != nil {
		return nil, nil, err
	}
	clientNonce, serverNonce := local.Value, remote
	if role == Server {
		clientNonce, serverNonce = remote, local.Value
	} else if role != Client {
		return nil, nil, fmt.Errorf("policy: invalid role %d: %w", role, status.BadInternalError)
	}
	ck, sk := deriveChannelKeys(p.newHash, clientNonce, serverNonce, p.info.Keys)
	c, err := newCBCHMAC(p.newHash, ck)
	if err != nil {
		return nil, nil, err
	}
	s, err := newCBCHMAC(p.newHash, sk)
	if err != nil {
		return nil, nil, err
	}
	if role == Client {
		return c, s, nil
	}
	return s, c, nil
}

func (p *rsaPolicy) NewAsymmetric(local crypto.Signer, remote *x509.Certificate) (Asymmetric, error) {
	a := &rsaAsymmetric{alg: p.asym}
	if local != nil {
		pub, ok := local.Public().(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("policy: %s: local key is %T, not RSA: %w", p.info.Name, local.Public(), status.BadSecurityPolicyRejected)
		}
		if err := p.checkKey("local", pub); err != nil {
			return nil, err
		}
		a.local = local
		a.decrypter, _ = local.(crypto.Decrypter)
		a.localSize = pub.Size()
	}
	if remote != nil {
		pub, ok := remote.PublicKey.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("policy: %s: remote certificate key is %T, not RSA: %w", p.info.Name, remote.PublicKey, status.BadSecurityPolicyRejected)
		}
		if err := p.checkKey("remote", pub); err != nil {
			return nil, err
		}
		a.remote = pub
		a.remoteSize = pub.Size()
	}
	return a, nil
}

func (p *rsaPolicy) checkKey(which string, pub *rsa.PublicKey) error {
	bits := pub.N.BitLen()
	if bits < p.info.MinAsymmetricKeyBits || bits > p.info.MaxAsymmetricKeyBits {
		return fmt.Errorf("policy: %s: %s key has %d bits, want %d to %d: %w",
			p.info.Name, which, bits, p.info.MinAsymmetricKeyBits, p.info.MaxAsymmetricKeyBits, status.BadSecurityPolicyRejected)
	}
	return nil
}

// rsaAsymmetric implements Asymmetric for RSA policies.
type rsaAsymmetric struct {
	alg        rsaAlgorithms
	local      crypto.Signer
	decrypter  crypto.Decrypter // nil when local cannot decrypt
	remote     *rsa.PublicKey
	localSize  int
	remoteSize int
}

func (a *rsaAsymmetric) SignatureSize() int       { return a.localSize }
func (a *rsaAsymmetric) RemoteSignatureSize() int { return a.remoteSize }
func (a *rsaAsymmetric) CiphertextBlockSize() int { return a.remoteSize }
func (a *rsaAsymmetric) PlaintextBlockSize() int  { return max(a.remoteSize-a.alg.overhead(), 0) }

func (a *rsaAsymmetric) LocalCiphertextBlockSize() int { return a.localSize }
func (a *rsaAsymmetric) LocalPlaintextBlockSize() int {
	return max(a.localSize-a.alg.overhead(), 0)
}

func (a *rsaAsymmetric) signOpts() crypto.SignerOpts {
	if a.alg.pss {
		return &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: a.alg.sigHash}
	}
	return a.alg.sigHash
}

func (a *rsaAsymmetric) digest(msg []byte) []byte {
	h := a.alg.sigHash.New()
	h.Write(msg)
	return h.Sum(nil)
}

func (a *rsaAsymmetric) Sign(dst, msg []byte) ([]byte, error) {
	if a.local == nil {
		return dst, fmt.Errorf("policy: sign without a local key: %w", status.BadInternalError)
	}
	sig, err := a.local.Sign(rand.Reader, a.digest(msg), a.signOpts())
	if err != nil {
		return dst, fmt.Errorf("policy: sign: %w: %w", status.BadSecurityChecksFailed, err)
	}
	return append(dst, sig...), nil
}

func (a *rsaAsymmetric) Verify(msg, sig []byte) error {
	if a.remote == nil || len(sig) != a.remoteSize {
		return status.BadSecurityChecksFailed
	}
	var err error
	if a.alg.pss {
		err = rsa.VerifyPSS(a.remote, a.alg.sigHash, a.digest(msg), sig,
			&rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: a.alg.sigHash})
	} else {
		err = rsa.VerifyPKCS1v15(a.remote, a.alg.sigHash, a.digest(msg), sig)
	}
	if err != nil {
		return status.BadSecurityChecksFailed
	}
	return nil
}

func (a *rsaAsymmetric) EncryptedLen(n int) int {
	pt := a.PlaintextBlockSize()
	if pt == 0 {
		return 0
	}
	return (n + pt - 1) / pt * a.remoteSize
}

func (a *rsaAsymmetric) Encrypt(dst, plaintext []byte) (int, error) {
	if a.remote == nil {
		return 0, fmt.Errorf("policy: encrypt without a remote key: %w", status.BadInternalError)
	}
	pt, ct := a.PlaintextBlockSize(), a.remoteSize
	n := a.EncryptedLen(len(plaintext))
	if len(dst) < n {
		return 0, fmt.Errorf("policy: encrypt: destination has %d bytes, need %d: %w", len(dst), n, status.BadInternalError)
	}
	// Last block first: block i's cipher text starts at i*ct >= i*pt, so
	// it only overwrites plaintext that has already been encrypted.
	for i := n/ct - 1; i >= 0; i-- {
		block := plaintext[i*pt : min((i+1)*pt, len(plaintext))]
		c, err := a.encryptBlock(block)
		if err != nil {
			return 0, fmt.Errorf("policy: encrypt: %w: %w", status.BadSecurityChecksFailed, err)
		}
		copy(dst[i*ct:], c)
	}
	return n, nil
}

func (a *rsaAsymmetric) encryptBlock(block []byte) ([]byte, error) {
	if a.alg.encHash == 0 {
		//lint:ignore SA1019 Basic128Rsa15 requires RSAES-PKCS1-v1_5 (Part 7); the policy is deprecated.
		return rsa.EncryptPKCS1v15(rand.Reader, a.remote, block)
	}
	return rsa.EncryptOAEP(a.alg.encHash.New(), rand.Reader, a.remote, block, nil)
}

func (a *rsaAsymmetric) Decrypt(dst, ciphertext []byte) (int, error) {
	if a.decrypter == nil {
		return 0, status.BadSecurityChecksFailed
	}
	ct := a.localSize
	if len(ciphertext)%ct != 0 {
		return 0, status.BadSecurityChecksFailed
	}
	//lint:ignore SA1019 Basic128Rsa15 requires RSAES-PKCS1-v1_5 (Part 7); the policy is deprecated.
	var opts crypto.DecrypterOpts = &rsa.PKCS1v15DecryptOptions{}
	if a.alg.encHash != 0 {
		opts = &rsa.OAEPOptions{Hash: a.alg.encHash, MGFHash: a.alg.encHash}
	}
	n := 0
	// First block first: block i's plaintext lands at n <= i*ct, before
	// any cipher text not yet decrypted.
	for i := 0; i < len(ciphertext); i += ct {
		p, err := a.decrypter.Decrypt(rand.Reader, ciphertext[i:i+ct], opts)
		if err != nil {
			return 0, status.BadSecurityChecksFailed
		}
		if len(dst)-n < len(p) {
			return 0, status.BadSecurityChecksFailed
		}
		n += copy(dst[n:], p)
	}
	return n, nil
}
