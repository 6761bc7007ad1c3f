package clientpeer

import (
	"context"
	"crypto/rsa"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gopcua/opcua/server"
	gua "github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// ownCertificate makes an application instance certificate for uri and 127.0.0.1 in a
// fresh PKI under dir and returns it with its key.
func ownCertificate(t *testing.T, dir, uri string) ([]byte, *rsa.PrivateKey) {
	t.Helper()
	p, err := pki.Open(dir, pki.Options{})
	require.NoError(t, err)
	defer p.Close()
	cert, key, err := p.EnsureOwn(uri, []string{"127.0.0.1", "localhost"}, pki.OwnOptions{ApplicationName: uri})
	require.NoError(t, err)
	return cert.Raw, key
}

// trustStore opens a PKI whose trusted store holds der.
func trustStore(t *testing.T, der []byte) *pki.PKI {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "client-trust")
	certs := filepath.Join(dir, "trusted", "certs")
	require.NoError(t, os.MkdirAll(certs, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(certs, "server.der"), der, 0o600))
	p, err := pki.Open(dir, pki.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestGopcuaServer connects our client to gopcua's server and reads and browses, over
// SecurityPolicy None, anonymous. gopcua v0.8.0's server offers Basic256Sha256 but fails
// to decode the first secured message (its own client times out the same way), so only
// the GetEndpoints answer of the secured endpoint is checked.
func TestGopcuaServer(t *testing.T) {
	t.Parallel()
	serverDER, serverKey := ownCertificate(t, filepath.Join(t.TempDir(), "server"), "urn:127.0.0.1:gopcua:server")
	clientDER, clientKey := ownCertificate(t, filepath.Join(t.TempDir(), "client"), "urn:uastack:clientpeer")

	// gopcua's server cannot listen on port 0 and report the port: take a free one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	srv := server.New(
		server.EndPoint("127.0.0.1", port),
		server.Certificate(serverDER),
		server.PrivateKey(serverKey),
		server.EnableSecurity("None", gua.MessageSecurityModeNone),
		server.EnableSecurity("Basic256Sha256", gua.MessageSecurityModeSignAndEncrypt),
		server.EnableAuthMode(gua.UserTokenTypeAnonymous),
		server.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { _ = srv.Close() })
	url := "opc.tcp://127.0.0.1:" + strconv.Itoa(port)
	trust := trustStore(t, serverDER)

	eps, err := client.GetEndpoints(ctx, url)
	require.NoError(t, err)
	ep, err := client.SelectEndpoint(eps, "", 0)
	require.NoError(t, err)
	require.Equal(t, policy.URIBasic256Sha256, ep.SecurityPolicyUri)
	require.Equal(t, serverDER, ep.ServerCertificate)

	for _, sec := range []struct {
		name   string
		policy string
		mode   ua.MessageSecurityMode
	}{
		{"None", policy.URINone, ua.MessageSecurityModeNone},
	} {
		t.Run(sec.name, func(t *testing.T) {
			c, err := client.Dial(ctx, url,
				client.Security(sec.policy, sec.mode),
				client.Certificate(clientDER, clientKey),
				client.Application("urn:uastack:clientpeer", "clientpeer"),
				client.TrustStore(trust))
			require.NoError(t, err)
			defer c.Close(ctx)
			dv, err := c.ReadValue(ctx, codec.NewNumericNodeId(0, id.Server_ServerStatus_State))
			require.NoError(t, err)
			require.Equal(t, status.Good, dv.Status)
			require.EqualValues(t, gua.ServerStateRunning, dv.Value.Value())
			var names []string
			for r, err := range c.References(ctx, ua.BrowseDescription{
				NodeId:          codec.NewNumericNodeId(0, id.ObjectsFolder),
				BrowseDirection: ua.BrowseDirectionForward,
				ReferenceTypeId: codec.NewNumericNodeId(0, id.HierarchicalReferences),
				IncludeSubtypes: true,
				ResultMask:      0x3f,
			}, 1) {
				require.NoError(t, err)
				names = append(names, r.BrowseName.Name)
			}
			require.Contains(t, names, "Server")
			// gopcua v0.8.0 routes RegisterNodes to a stub: the fault's code surfaces.
			_, err = c.RegisterNodes(ctx, []codec.NodeId{codec.NewNumericNodeId(0, id.Server_ServerStatus_State)})
			require.ErrorIs(t, err, status.BadServiceUnsupported)
			require.NoError(t, c.Close(ctx))
		})
	}
}
