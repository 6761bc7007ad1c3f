package policy

import (
	"crypto/sha1"
	"crypto/subtle"
	"crypto/x509"

	"uastack.dev/pkg/status"
)

// ThumbprintSize is the length of a certificate thumbprint (SHA-1).
const ThumbprintSize = sha1.Size

// Thumbprint returns the SHA-1 hash of the certificate's DER encoding, as
// sent in ReceiverCertificateThumbprint (Part 6 §6.7.2.3).
func Thumbprint(cert *x509.Certificate) [ThumbprintSize]byte { return sha1.Sum(cert.Raw) }

// CheckReceiverThumbprint checks the ReceiverCertificateThumbprint of an
// asymmetric security header against the receiver's own certificate (Part 6
// §6.7.2.3). With no own certificate (SecurityPolicy None) the thumbprint
// must be null. A mismatch is status.BadCertificateInvalid.
func CheckReceiverThumbprint(got []byte, own *x509.Certificate) error {
	if own == nil {
		if len(got) != 0 {
			return status.BadCertificateInvalid
		}
		return nil
	}
	want := Thumbprint(own)
	if subtle.ConstantTimeCompare(got, want[:]) != 1 {
		return status.BadCertificateInvalid
	}
	return nil
}

// CheckNonce checks a SecureChannel nonce received for policy p: it must
// be exactly SecureChannelNonceLength bytes long (Part 6 §6.7.4, Part 4
// §5.6.2) and must not be a single repeated byte. Policy None ignores
// nonces. A failure is status.BadNonceInvalid.
func CheckNonce(p Policy, nonce []byte) error {
	n := p.Info().NonceLength
	if n == 0 {
		return nil
	}
	if len(nonce) != n {
		return status.BadNonceInvalid
	}
	same := true
	for _, b := range nonce[1:] {
		if b != nonce[0] {
			same = false
			break
		}
	}
	if same {
		return status.BadNonceInvalid
	}
	return nil
}
