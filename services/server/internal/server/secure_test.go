package server_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// clientIdentity returns a self-signed client application instance certificate (DER)
// for gopcua's default ApplicationUri, and its key.
func clientIdentity(t *testing.T) ([]byte, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return clientCertificate(t, key, "gopcua test client"), key
}

// TestGopcuaBasic256Sha256 connects gopcua over Basic256Sha256 SignAndEncrypt (client
// certificate auto-accepted): anonymous, then UserName with the password encrypted under
// the token policy's Basic256Sha256, then a wrong password, which is refused.
func TestGopcuaBasic256Sha256(t *testing.T) {
	t.Parallel()
	hash, err := cheapHash("s3cret")
	require.NoError(t, err)
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.AutoAcceptUntrusted = true
		c.Security.Users = []config.User{{Name: "alice", PasswordHash: hash}}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	der, key := clientIdentity(t)
	creds := []opcua.Option{opcua.Certificate(der), opcua.PrivateKey(key)}
	pol, mode := ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt

	readState := func(c *opcua.Client) {
		t.Helper()
		resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{readValueID(2259, ua.AttributeIDValue)}})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, resp.Results[0].Status)
		require.EqualValues(t, 0, resp.Results[0].Value.Value())
	}

	t.Run("anonymous", func(t *testing.T) {
		c := connect(t, ctx, ts.URL, pol, mode, ua.UserTokenTypeAnonymous, creds...)
		readState(c)
		require.NoError(t, c.Close(ctx))
	})
	t.Run("username", func(t *testing.T) {
		opts := append([]opcua.Option{opcua.AuthUsername("alice", "s3cret")}, creds...)
		c := connect(t, ctx, ts.URL, pol, mode, ua.UserTokenTypeUserName, opts...)
		readState(c)
		require.NoError(t, c.Close(ctx))
	})
	t.Run("wrong password", func(t *testing.T) {
		eps, err := opcua.GetEndpoints(ctx, ts.URL)
		require.NoError(t, err)
		ep, err := opcua.SelectEndpoint(eps, pol, mode)
		require.NoError(t, err)
		opts := append([]opcua.Option{opcua.AuthUsername("alice", "wrong"), opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeUserName), opcua.AutoReconnect(false)}, creds...)
		c, err := opcua.NewClient(ts.URL, opts...)
		require.NoError(t, err)
		err = c.Connect(ctx)
		require.ErrorIs(t, err, ua.StatusBadUserAccessDenied)
	})
}

// cheapHash hashes a test password at bcrypt's lowest cost: the server checks hashes at the
// cost they carry, and cost 12 under -race on two cores makes logins slower than the
// clients' timeouts.
func cheapHash(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	return string(h), err
}
