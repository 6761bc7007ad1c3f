package server_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// userIdentity returns a self-signed user certificate (DER) for clientAuth with key, or a
// new key when key is nil, and the key. Reusing keys keeps the tests light on a loaded
// machine.
func userIdentity(t *testing.T, name string, key *rsa.PrivateKey) ([]byte, *rsa.PrivateKey) {
	t.Helper()
	if key == nil {
		var err error
		key, err = rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return der, key
}

// clientCertificate returns a self-signed client application instance certificate (DER)
// for key, with gopcua's default ApplicationUri and the common name cn.
func clientCertificate(t *testing.T, key *rsa.PrivateKey, cn string) []byte {
	t.Helper()
	uri, err := url.Parse("urn:gopcua:client")
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		URIs:                  []*url.URL{uri},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return der
}

// trustedPKI returns a PKI folder whose trusted store holds certs.
func trustedPKI(t *testing.T, certs ...[]byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pki")
	certDir := filepath.Join(dir, "trusted", "certs")
	require.NoError(t, os.MkdirAll(certDir, 0o700))
	for i, der := range certs {
		require.NoError(t, os.WriteFile(filepath.Join(certDir, "cert"+string(rune('a'+i))+".der"), der, 0o600))
	}
	return dir
}

// connectErr connects gopcua with opts on the Basic256Sha256 SignAndEncrypt endpoint and
// returns the error of Connect; a client that connected is closed.
func connectErr(t *testing.T, ctx context.Context, url string, tokenType ua.UserTokenType, opts ...opcua.Option) error {
	t.Helper()
	eps, err := opcua.GetEndpoints(ctx, url)
	require.NoError(t, err)
	ep, err := opcua.SelectEndpoint(eps, ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt)
	require.NoError(t, err)
	opts = append([]opcua.Option{opcua.SecurityFromEndpoint(ep, tokenType), opcua.AutoReconnect(false), opcua.RequestTimeout(10 * time.Second)}, opts...)
	c, err := opcua.NewClient(url, opts...)
	require.NoError(t, err)
	if err := c.Connect(ctx); err != nil {
		return err
	}
	require.NoError(t, c.Close(ctx))
	return nil
}

// TestX509Identity logs in with X509IdentityTokens through gopcua over Basic256Sha256
// SignAndEncrypt (Part 4 §5.6.3, §7.41.5): a user certificate in the trusted store with a
// good signature is accepted; an untrusted one is BadIdentityTokenRejected; a trusted
// certificate signed with another key is BadUserSignatureInvalid.
func TestX509Identity(t *testing.T) {
	t.Parallel()
	appDER, appKey := clientIdentity(t)
	userDER, userKey := userIdentity(t, "trusted user", nil)
	// An untrusted certificate with a good signature, and the trusted one signed with
	// another key (the application's).
	strangerDER, strangerKey := userIdentity(t, "untrusted user", userKey)
	otherKey := appKey
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.PKIDir = trustedPKI(t, appDER, userDER)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	app := []opcua.Option{opcua.Certificate(appDER), opcua.PrivateKey(appKey)}

	eps, err := opcua.GetEndpoints(ctx, ts.URL)
	require.NoError(t, err)
	for _, ep := range eps {
		var found bool
		for _, tp := range ep.UserIdentityTokens {
			found = found || tp.TokenType == ua.UserTokenTypeCertificate
		}
		require.True(t, found, "endpoint %s %s offers no certificate token", ep.SecurityPolicyURI, ep.SecurityMode)
	}

	t.Run("trusted", func(t *testing.T) {
		opts := append([]opcua.Option{opcua.AuthCertificate(userDER), opcua.AuthPrivateKey(userKey)}, app...)
		c := connect(t, ctx, ts.URL, ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt, ua.UserTokenTypeCertificate, opts...)
		resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{readValueID(2259, ua.AttributeIDValue)}})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, resp.Results[0].Status)
		require.NoError(t, c.Close(ctx))
	})
	t.Run("untrusted", func(t *testing.T) {
		opts := append([]opcua.Option{opcua.AuthCertificate(strangerDER), opcua.AuthPrivateKey(strangerKey)}, app...)
		err := connectErr(t, ctx, ts.URL, ua.UserTokenTypeCertificate, opts...)
		require.ErrorIs(t, err, ua.StatusBadIdentityTokenRejected)
	})
	t.Run("wrong signature", func(t *testing.T) {
		opts := append([]opcua.Option{opcua.AuthCertificate(userDER), opcua.AuthPrivateKey(otherKey)}, app...)
		err := connectErr(t, ctx, ts.URL, ua.UserTokenTypeCertificate, opts...)
		require.ErrorIs(t, err, ua.StatusBadUserSignatureInvalid)
	})
}

// TestX509IdentityAutoAccept checks that AutoAcceptUntrusted, which is for application
// certificates, never lets an untrusted user certificate in.
func TestX509IdentityAutoAccept(t *testing.T) {
	t.Parallel()
	appDER, appKey := clientIdentity(t)
	userDER, userKey := userIdentity(t, "user", appKey)
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.AutoAcceptUntrusted = true
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	err := connectErr(t, ctx, ts.URL, ua.UserTokenTypeCertificate,
		opcua.AuthCertificate(userDER), opcua.AuthPrivateKey(userKey), opcua.Certificate(appDER), opcua.PrivateKey(appKey))
	require.ErrorIs(t, err, ua.StatusBadIdentityTokenRejected)
}

// TestFailedLoginLockout checks security.maxFailedAuthenticationAttempts through gopcua:
// after 5 wrong passwords from one client application certificate even the right password
// is BadUserAccessDenied, while another client still logs in; with 0 there is no lockout.
// That the lockout lifts after its time is TestLockout's (injected clock).
func TestFailedLoginLockout(t *testing.T) {
	t.Parallel()
	// The lowest bcrypt cost keeps the dozen password checks cheap under -race.
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	require.NoError(t, err)
	der, key := clientIdentity(t)
	for _, max := range []int{5, 0} {
		ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
			c.Security.AutoAcceptUntrusted = true
			c.Security.Users = []config.User{{Name: "alice", PasswordHash: string(hash)}}
			c.Security.MaxFailedAuthenticationAttempts = max
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		login := func(password string, der []byte, key *rsa.PrivateKey) error {
			return connectErr(t, ctx, ts.URL, ua.UserTokenTypeUserName,
				opcua.AuthUsername("alice", password), opcua.Certificate(der), opcua.PrivateKey(key))
		}
		for i := range 5 {
			require.ErrorIs(t, login("wrong", der, key), ua.StatusBadUserAccessDenied, "max %d, attempt %d", max, i+1)
		}
		if max == 0 {
			require.NoError(t, login("s3cret", der, key), "no lockout with 0")
			continue
		}
		require.ErrorIs(t, login("s3cret", der, key), ua.StatusBadUserAccessDenied, "locked out")
		require.NoError(t, login("s3cret", clientCertificate(t, key, "gopcua test client 2"), key), "another client certificate is not locked out")
	}
}
