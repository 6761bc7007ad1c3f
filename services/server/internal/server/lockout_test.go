package server

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
)

// TestFailedLoginLockoutOnNone: over SecurityPolicy None the lockout counts the failures
// of a source address, not of a user name. After 5 wrong passwords for alice from
// 127.0.0.1 even the right one is refused from there, while alice logs in from
// 127.0.0.2: a peer that fails as a user on purpose locks out only itself.
func TestFailedLoginLockoutOnNone(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	require.NoError(t, err)
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Security.Users = []config.User{{Name: "alice", PasswordHash: string(hash)}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	login := func(source, password string) status.Code {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
		nc, err := d.DialContext(ctx, "tcp", ps.url[len("opc.tcp://"):])
		require.NoError(t, err)
		conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: ps.url})
		require.NoError(t, err)
		ch, err := uasc.Dial(ctx, conn, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
		require.NoError(t, err)
		defer ch.Close()
		resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "lockout"})
		require.NoError(t, err)
		cs := resp.(*ua.CreateSessionResponse)
		cert, err := x509.ParseCertificate(cs.ServerCertificate)
		require.NoError(t, err)
		// The default UserName token policy encrypts the password with Basic256Sha256
		// under the server certificate: length || password || server nonce.
		pol, _ := policy.Lookup(policy.URIBasic256Sha256)
		asym, err := pol.NewAsymmetric(nil, cert)
		require.NoError(t, err)
		plain := binary.LittleEndian.AppendUint32(nil, uint32(len(password)+len(cs.ServerNonce)))
		plain = append(append(plain, password...), cs.ServerNonce...)
		secret := make([]byte, asym.EncryptedLen(len(plain)))
		n, err := asym.Encrypt(secret, plain)
		require.NoError(t, err)
		_, err = ch.Request(ctx, &ua.ActivateSessionRequest{
			RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken},
			UserIdentityToken: codec.NewExtensionObject(&ua.UserNameIdentityToken{PolicyId: policyIDUserName, UserName: "alice",
				Password: secret[:n], EncryptionAlgorithm: pol.Info().AsymmetricEncryptionURI}),
		})
		if err == nil {
			return status.Good
		}
		return pipelineCodeOf(t, err)
	}
	require.Equal(t, status.Good, login("127.0.0.1", "s3cret"))
	for i := range 5 {
		require.Equal(t, status.BadUserAccessDenied, login("127.0.0.1", "wrong"), "attempt %d", i+1)
	}
	require.Equal(t, status.BadUserAccessDenied, login("127.0.0.1", "s3cret"), "this source is locked out")
	require.Equal(t, status.Good, login("127.0.0.2", "s3cret"), "the user is not locked out elsewhere")
}

// pipelineCodeOf returns the status code err carries.
func pipelineCodeOf(t *testing.T, err error) status.Code {
	t.Helper()
	var code status.Code
	require.ErrorAs(t, err, &code)
	return code
}
