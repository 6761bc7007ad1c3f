package uasc

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// identity is a key and its self-signed application certificate.
type identity struct {
	key  *rsa.PrivateKey
	der  []byte
	cert *x509.Certificate
}

// Keys are generated once per test binary: generation dominates test time otherwise.
var (
	idsOnce                        sync.Once
	serverID, clientID, strangerID identity
)

func ids(t testing.TB) {
	t.Helper()
	idsOnce.Do(func() {
		var wg sync.WaitGroup
		for i, dst := range []*identity{&serverID, &clientID, &strangerID} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				*dst = newIdentity(int64(i+1), 2048)
			}()
		}
		wg.Wait()
	})
}

func newIdentity(serial int64, bits int) identity {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	u, _ := url.Parse("urn:uastack:test:" + big.NewInt(serial).String())
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "uasc test " + big.NewInt(serial).String()},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageContentCommitment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		URIs:                  []*url.URL{u},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		panic(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return identity{key: k, der: der, cert: cert}
}

// combo is one policy × mode pair.
type combo struct {
	uri  string
	mode ua.MessageSecurityMode
}

func (c combo) name() string {
	p, _ := policy.Lookup(c.uri)
	return p.Info().Name + "_" + c.mode.String()
}

// allCombos lists every built-in policy with every mode it allows.
func allCombos() []combo {
	out := []combo{{policy.URINone, ua.MessageSecurityModeNone}}
	for _, p := range policy.All() {
		if p.Info().URI == policy.URINone {
			continue
		}
		out = append(out, combo{p.Info().URI, ua.MessageSecurityModeSign}, combo{p.Info().URI, ua.MessageSecurityModeSignAndEncrypt})
	}
	return out
}

func allSecurity() []SecurityConfig {
	var out []SecurityConfig
	for _, c := range allCombos() {
		out = append(out, SecurityConfig{PolicyURI: c.uri, Mode: c.mode})
	}
	return out
}

// echoHandler answers a ReadRequest with a ReadResponse that echoes the request handle and,
// per node, the IndexRange as a String value; it answers from another goroutine, as a
// server worker would. Anything else gets a ServiceFault.
func echoHandler(_ context.Context, r Request) {
	go func() {
		switch m := r.Message.(type) {
		case *ua.ReadRequest:
			resp := &ua.ReadResponse{ResponseHeader: ua.ResponseHeader{Timestamp: codec.Now(), RequestHandle: m.RequestHeader.RequestHandle}}
			for _, n := range m.NodesToRead {
				resp.Results = append(resp.Results, codec.DataValue{Value: codec.StringVariant(n.IndexRange)})
			}
			_ = r.Respond(resp)
		default:
			_ = r.Respond(&ua.ServiceFault{ResponseHeader: ua.ResponseHeader{ServiceResult: status.BadServiceUnsupported}})
		}
	}()
}

// testServer is a Server listening on 127.0.0.1:0.
type testServer struct {
	*Server
	addr string
}

// startServer starts a server accepting every combo unless edit changes the config.
func startServer(t testing.TB, edit func(*ServerConfig)) *testServer {
	t.Helper()
	return startServerWith(t, edit, echoHandler)
}

// startServerWith is startServer with a handler of the test's choice.
func startServerWith(t testing.TB, edit func(*ServerConfig), h HandlerFunc) *testServer {
	t.Helper()
	return startServerFor(t, edit, h)
}

// startServerFor is startServer with a Handler that makes a handler per channel.
func startServerFor(t testing.TB, edit func(*ServerConfig), h Handler) *testServer {
	t.Helper()
	ids(t)
	cfg := ServerConfig{
		Certificate:         serverID.der,
		Key:                 serverID.key,
		Security:            allSecurity(),
		ValidateCertificate: func([]*x509.Certificate) error { return nil },
		MinTokenLifetime:    time.Second,
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := NewServer(cfg, h)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &testServer{Server: srv, addr: ln.Addr().String()}
}

// dialUACP connects to addr and runs the UACP handshake; it also returns the raw net.Conn.
func dialUACP(t testing.TB, addr string, lim uacp.Limits) (*uacp.Conn, net.Conn) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	c, err := uacp.Dial(context.Background(), nc, uacp.ClientConfig{Limits: lim, EndpointURL: "opc.tcp://" + addr})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, nc
}

func clientConfig(c combo) ClientConfig {
	cfg := ClientConfig{PolicyURI: c.uri, Mode: c.mode, RequestedLifetime: 2 * time.Second}
	if c.uri != policy.URINone {
		cfg.Certificate, cfg.Key, cfg.ServerCertificate = clientID.der, clientID.key, serverID.der
	}
	return cfg
}

func dialChannel(t testing.TB, addr string, cfg ClientConfig) (*ClientChannel, error) {
	t.Helper()
	c, _ := dialUACP(t, addr, uacp.Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, err := Dial(ctx, c, cfg)
	if err == nil {
		t.Cleanup(func() { cc.Close() })
	}
	return cc, err
}

// read sends a ReadRequest with one node per IndexRange and checks the echo.
func read(t testing.TB, cc *ClientChannel, handle uint32, ranges ...string) {
	t.Helper()
	req := &ua.ReadRequest{RequestHeader: ua.RequestHeader{Timestamp: codec.Now(), RequestHandle: handle}}
	for _, r := range ranges {
		req.NodesToRead = append(req.NodesToRead, ua.ReadValueId{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13, IndexRange: r})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := cc.Request(ctx, req)
	require.NoError(t, err)
	resp, ok := m.(*ua.ReadResponse)
	require.True(t, ok, "got %T", m)
	require.Equal(t, handle, resp.ResponseHeader.RequestHandle)
	require.Len(t, resp.Results, len(ranges))
	for i, r := range ranges {
		v := resp.Results[i].Value
		require.Equal(t, codec.StringVariant(r), v)
	}
}

// requireServing checks that a fresh client can still use the server.
func requireServing(t testing.TB, ts *testServer) {
	t.Helper()
	cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}))
	require.NoError(t, err)
	read(t, cc, 7, "fresh")
}
