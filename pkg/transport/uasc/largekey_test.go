package uasc

import (
	"context"
	"crypto/sha1"
	"crypto/x509"
	"sync"
	"testing"
	"time"

	goua "github.com/gopcua/opcua/ua"
	gouacp "github.com/gopcua/opcua/uacp"
	gouasc "github.com/gopcua/opcua/uasc"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

var (
	bigOnce              sync.Once
	bigServer, bigClient identity
)

// TestLargeKeys uses 3072-bit keys on both ends, so that OpenSecureChannel chunks carry
// the ExtraPaddingSize byte (Part 6 §6.7.2.5), with our client and with gopcua's.
func TestLargeKeys(t *testing.T) {
	t.Parallel()
	bigOnce.Do(func() {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); bigServer = newIdentity(101, 3072) }()
		go func() { defer wg.Done(); bigClient = newIdentity(102, 3072) }()
		wg.Wait()
	})
	c := combo{policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}
	ts := startServer(t, func(cfg *ServerConfig) {
		cfg.Certificate, cfg.Key = bigServer.der, bigServer.key
		cfg.Security = []SecurityConfig{{PolicyURI: c.uri, Mode: c.mode}}
		cfg.ValidateCertificate = func([]*x509.Certificate) error { return nil }
	})
	t.Run("uastack", func(t *testing.T) {
		cfg := clientConfig(c)
		cfg.Certificate, cfg.Key, cfg.ServerCertificate = bigClient.der, bigClient.key, bigServer.der
		cc, err := dialChannel(t, ts.addr, cfg)
		require.NoError(t, err)
		require.True(t, policy.ExtraPadding(cc.asym.CiphertextBlockSize()))
		read(t, cc, 1, "large keys")
	})
	t.Run("gopcua", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		conn, err := gouacp.Dial(ctx, "opc.tcp://"+ts.addr)
		require.NoError(t, err)
		defer conn.Close()
		tp := sha1.Sum(bigServer.der)
		sc, err := gouasc.NewSecureChannel("opc.tcp://"+ts.addr, conn, &gouasc.Config{
			SecurityPolicyURI: c.uri, SecurityMode: goua.MessageSecurityMode(c.mode),
			Certificate: bigClient.der, LocalKey: bigClient.key, RemoteCertificate: bigServer.der, Thumbprint: tp[:],
			Lifetime: 600000, RequestTimeout: 10 * time.Second,
		}, make(chan error, 16))
		require.NoError(t, err)
		require.NoError(t, sc.Open(ctx))
		defer sc.Close()
		req := &goua.ReadRequest{NodesToRead: []*goua.ReadValueID{{NodeID: goua.NewNumericNodeID(0, 2258), AttributeID: 13,
			IndexRange: "gopcua", DataEncoding: &goua.QualifiedName{}}}}
		var got *goua.ReadResponse
		require.NoError(t, sc.SendRequest(ctx, req, nil, func(v goua.Response) error {
			got, _ = v.(*goua.ReadResponse)
			return nil
		}))
		require.NotNil(t, got)
		require.Equal(t, "gopcua", got.Results[0].Value.Value())
	})
}
