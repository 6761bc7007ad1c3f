package client

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/binary"
	"fmt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// identity is the user a session logs in as (Part 4 §7.41).
type identity struct {
	kind     ua.UserTokenType
	user     string
	password []byte
	cert     []byte        // X509: user certificate, DER
	key      crypto.Signer // X509: its key
}

// tokenPolicy returns the endpoint's user token policy for the identity's type.
func (id *identity) tokenPolicy(ep *ua.EndpointDescription) (ua.UserTokenPolicy, error) {
	for _, p := range ep.UserIdentityTokens {
		if p.TokenType == id.kind {
			return p, nil
		}
	}
	return ua.UserTokenPolicy{}, fmt.Errorf("client: the endpoint offers no %v identity token: %w", id.kind, status.BadIdentityTokenRejected)
}

// token builds the UserIdentityToken and its signature for ActivateSession, given the
// server certificate (leaf) and the last server nonce. The token policy's SecurityPolicy
// applies, the channel's when it names none (Part 4 §7.41.2).
func (id *identity) token(ep *ua.EndpointDescription, serverCert *x509.Certificate, nonce []byte) (codec.ExtensionObject, ua.SignatureData, error) {
	p, err := id.tokenPolicy(ep)
	if err != nil {
		return codec.ExtensionObject{}, ua.SignatureData{}, err
	}
	uri := p.SecurityPolicyUri
	if uri == "" {
		uri = ep.SecurityPolicyUri
	}
	switch id.kind {
	case ua.UserTokenTypeAnonymous:
		return codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: p.PolicyId}), ua.SignatureData{}, nil
	case ua.UserTokenTypeUserName:
		t := &ua.UserNameIdentityToken{PolicyId: p.PolicyId, UserName: id.user}
		if uri == policy.URINone {
			// A password in clear text is sent only inside an encrypted channel.
			if ep.SecurityMode != ua.MessageSecurityModeSignAndEncrypt {
				return codec.ExtensionObject{}, ua.SignatureData{}, fmt.Errorf("client: the user token policy would send the password in clear text over a %v channel: %w", ep.SecurityMode, status.BadIdentityTokenRejected)
			}
			t.Password = id.password
			return codec.NewExtensionObject(t), ua.SignatureData{}, nil
		}
		pw, alg, err := encryptSecret(uri, serverCert, id.password, nonce)
		if err != nil {
			return codec.ExtensionObject{}, ua.SignatureData{}, err
		}
		t.Password, t.EncryptionAlgorithm = pw, alg
		return codec.NewExtensionObject(t), ua.SignatureData{}, nil
	case ua.UserTokenTypeCertificate:
		if uri == policy.URINone {
			return codec.ExtensionObject{}, ua.SignatureData{}, fmt.Errorf("client: an X509 identity needs a SecurityPolicy to sign with: %w", status.BadIdentityTokenRejected)
		}
		sig, err := sign(uri, id.key, serverCert.Raw, nonce)
		if err != nil {
			return codec.ExtensionObject{}, ua.SignatureData{}, err
		}
		return codec.NewExtensionObject(&ua.X509IdentityToken{PolicyId: p.PolicyId, CertificateData: id.cert}), sig, nil
	}
	return codec.ExtensionObject{}, ua.SignatureData{}, fmt.Errorf("client: identity token type %v: %w", id.kind, status.BadIdentityTokenInvalid)
}

// encryptSecret encrypts secret for the server in the legacy token secret format of
// Part 4 §7.41.2.2 (Table 186): length (UInt32, little endian) || secret || server nonce,
// encrypted with the server's public key under policy uri. It returns the cipher text
// and the EncryptionAlgorithm to send. The RSA policies use this format; the
// EncryptedSecret format of §7.41.2.3 is needed by the ECC policies only, which
// pkg/transport/policy does not implement yet.
func encryptSecret(uri string, serverCert *x509.Certificate, secret, nonce []byte) ([]byte, string, error) {
	pol, ok := policy.Lookup(uri)
	if !ok || !pol.Info().RSA {
		return nil, "", fmt.Errorf("client: user token policy %q: %w", uri, status.BadSecurityPolicyRejected)
	}
	asym, err := pol.NewAsymmetric(nil, serverCert)
	if err != nil {
		return nil, "", err
	}
	plain := make([]byte, 4+len(secret)+len(nonce))
	defer clear(plain)
	binary.LittleEndian.PutUint32(plain, uint32(len(secret)+len(nonce)))
	copy(plain[4:], secret)
	copy(plain[4+len(secret):], nonce)
	out := make([]byte, asym.EncryptedLen(len(plain)))
	n, err := asym.Encrypt(out, plain)
	if err != nil {
		return nil, "", err
	}
	return out[:n], pol.Info().AsymmetricEncryptionURI, nil
}

// sign signs a || b with key under policy uri (Part 4 §7.37 SignatureData).
func sign(uri string, key crypto.Signer, a, b []byte) (ua.SignatureData, error) {
	pol, ok := policy.Lookup(uri)
	if !ok {
		return ua.SignatureData{}, fmt.Errorf("client: policy %q: %w", uri, status.BadSecurityPolicyRejected)
	}
	asym, err := pol.NewAsymmetric(key, nil)
	if err != nil {
		return ua.SignatureData{}, err
	}
	data := append(append(make([]byte, 0, len(a)+len(b)), a...), b...)
	sig, err := asym.Sign(nil, data)
	if err != nil {
		return ua.SignatureData{}, err
	}
	return ua.SignatureData{Algorithm: pol.Info().AsymmetricSignatureURI, Signature: sig}, nil
}

// newNonce returns 32 random bytes, the ClientNonce of CreateSession (Part 4 §5.6.2).
func newNonce() ([]byte, error) {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	return b, err
}
