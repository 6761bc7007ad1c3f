package client

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

func selfSigned(t *testing.T) (*x509.Certificate, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "t"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, key
}

// TestEncryptSecret decrypts the password with the server key and checks the legacy
// layout of Part 4 §7.41.2.2: length || password || nonce, length counting both.
func TestEncryptSecret(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	nonce := []byte("0123456789abcdef0123456789abcdef")
	for _, uri := range []string{policy.URIBasic256Sha256, policy.URIAes256Sha256RsaPss, policy.URIBasic128Rsa15} {
		ct, alg, err := encryptSecret(uri, cert, []byte("s3cret"), nonce)
		require.NoError(t, err, uri)
		pol, _ := policy.Lookup(uri)
		require.Equal(t, pol.Info().AsymmetricEncryptionURI, alg)
		asym, err := pol.NewAsymmetric(key, nil)
		require.NoError(t, err)
		buf := make([]byte, len(ct))
		n, err := asym.Decrypt(buf, ct)
		require.NoError(t, err, uri)
		plain := buf[:n]
		require.Equal(t, uint32(6+32), binary.LittleEndian.Uint32(plain))
		require.Equal(t, "s3cret", string(plain[4:10]))
		require.Equal(t, nonce, plain[10:])
	}
	_, _, err := encryptSecret(policy.URINone, cert, []byte("x"), nonce)
	require.ErrorIs(t, err, status.BadSecurityPolicyRejected)
}

// TestIdentityTokens checks which token each identity builds for an endpoint, and the
// refusals: a clear-text password outside SignAndEncrypt, a missing token policy.
func TestIdentityTokens(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	nonce := make([]byte, 32)
	ep := ua.EndpointDescription{
		SecurityPolicyUri: policy.URINone, SecurityMode: ua.MessageSecurityModeNone,
		UserIdentityTokens: []ua.UserTokenPolicy{
			{PolicyId: "a", TokenType: ua.UserTokenTypeAnonymous},
			{PolicyId: "u", TokenType: ua.UserTokenTypeUserName}, // the channel's policy: None
			{PolicyId: "x", TokenType: ua.UserTokenTypeCertificate, SecurityPolicyUri: policy.URIBasic256Sha256},
		},
	}
	anon := identity{kind: ua.UserTokenTypeAnonymous}
	tok, _, err := anon.token(&ep, cert, nonce)
	require.NoError(t, err)
	require.Equal(t, "a", tok.Value.(*ua.AnonymousIdentityToken).PolicyId)

	user := identity{kind: ua.UserTokenTypeUserName, user: "u", password: []byte("p")}
	_, _, err = user.token(&ep, cert, nonce)
	require.ErrorIs(t, err, status.BadIdentityTokenRejected, "no clear-text password over None")
	enc := ep
	enc.SecurityPolicyUri, enc.SecurityMode = policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt
	tok, _, err = user.token(&enc, cert, nonce)
	require.NoError(t, err)
	ut := tok.Value.(*ua.UserNameIdentityToken)
	require.NotEqual(t, []byte("p"), ut.Password, "encrypted under the channel's policy")
	require.NotEmpty(t, ut.EncryptionAlgorithm)

	x := identity{kind: ua.UserTokenTypeCertificate, cert: cert.Raw, key: key}
	tok, sig, err := x.token(&ep, cert, nonce)
	require.NoError(t, err)
	require.Equal(t, cert.Raw, tok.Value.(*ua.X509IdentityToken).CertificateData)
	pol, _ := policy.Lookup(policy.URIBasic256Sha256)
	require.Equal(t, pol.Info().AsymmetricSignatureURI, sig.Algorithm)
	asym, err := pol.NewAsymmetric(nil, cert)
	require.NoError(t, err)
	require.NoError(t, asym.Verify(append(append([]byte{}, cert.Raw...), nonce...), sig.Signature))

	none := ua.EndpointDescription{SecurityPolicyUri: policy.URINone}
	_, _, err = x.token(&none, cert, nonce)
	require.ErrorIs(t, err, status.BadIdentityTokenRejected, "no token policy")
}

func TestSelectEndpoint(t *testing.T) {
	t.Parallel()
	eps := []ua.EndpointDescription{
		{SecurityPolicyUri: policy.URINone, SecurityMode: ua.MessageSecurityModeNone},
		{SecurityPolicyUri: policy.URIBasic256Sha256, SecurityMode: ua.MessageSecurityModeSign, SecurityLevel: 40},
		{SecurityPolicyUri: policy.URIBasic256Sha256, SecurityMode: ua.MessageSecurityModeSignAndEncrypt, SecurityLevel: 45},
		{SecurityPolicyUri: "http://example.com/unknown", SecurityMode: ua.MessageSecurityModeSignAndEncrypt, SecurityLevel: 99},
		{SecurityPolicyUri: policy.URIAes256Sha256RsaPss, SecurityMode: ua.MessageSecurityModeSignAndEncrypt, SecurityLevel: 55,
			TransportProfileUri: "http://opcfoundation.org/UA-Profile/Transport/https-uabinary"},
	}
	ep, err := SelectEndpoint(eps, "", 0)
	require.NoError(t, err)
	require.Equal(t, uint8(45), ep.SecurityLevel, "highest known policy on UA-TCP")
	ep, err = SelectEndpoint(eps, policy.URINone, ua.MessageSecurityModeNone)
	require.NoError(t, err)
	require.Equal(t, policy.URINone, ep.SecurityPolicyUri)
	_, err = SelectEndpoint(eps, policy.URIBasic128Rsa15, ua.MessageSecurityModeSign)
	require.ErrorIs(t, err, status.BadSecurityPolicyRejected)

	require.True(t, sameSecurity(eps, []ua.EndpointDescription{eps[2], eps[1], eps[0], eps[3], eps[2]}))
	require.False(t, sameSecurity(eps, eps[:1]), "a dropped secure endpoint is a downgrade")
}
