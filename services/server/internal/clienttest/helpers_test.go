package clienttest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// identities are the client's application and user certificates, made once per test
// binary: RSA key generation is slow on a loaded machine.
type identities struct {
	appDER  []byte
	appKey  *rsa.PrivateKey
	userDER []byte
	userKey *rsa.PrivateKey
}

var (
	idOnce sync.Once
	ids    identities
	idErr  error
)

const appURI = "urn:uastack:clienttest"

func testIdentities(t testing.TB) identities {
	t.Helper()
	idOnce.Do(func() {
		dir, err := os.MkdirTemp("", "clienttest-pki")
		if err != nil {
			idErr = err
			return
		}
		defer os.RemoveAll(dir)
		p, err := pki.Open(dir, pki.Options{})
		if err != nil {
			idErr = err
			return
		}
		defer p.Close()
		cert, key, err := p.EnsureOwn(appURI, []string{"localhost"}, pki.OwnOptions{ApplicationName: "clienttest"})
		if err != nil {
			idErr = err
			return
		}
		ids.appDER, ids.appKey = cert.Raw, key
		ids.userKey, idErr = rsa.GenerateKey(rand.Reader, 2048)
		if idErr != nil {
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(time.Now().UnixNano()),
			Subject:               pkix.Name{CommonName: "clienttest user"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(24 * time.Hour),
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			BasicConstraintsValid: true,
		}
		ids.userDER, idErr = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ids.userKey.PublicKey, ids.userKey)
	})
	require.NoError(t, idErr)
	return ids
}

// cheapHash hashes a test password at bcrypt's lowest cost, so logins stay fast under
// -race on two cores.
func cheapHash(t testing.TB, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

// testServer starts a server whose trusted store holds the client's application and
// user certificates, with the user alice/s3cret, and returns it with a client trust
// store that holds the server's certificate.
func testServer(t testing.TB, configure func(*config.Config)) (*servertest.Server, *pki.PKI) {
	t.Helper()
	id := testIdentities(t)
	dir := filepath.Join(t.TempDir(), "server-pki")
	certs := filepath.Join(dir, "trusted", "certs")
	require.NoError(t, os.MkdirAll(certs, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(certs, "app.der"), id.appDER, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(certs, "user.der"), id.userDER, 0o600))
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.PKIDir = dir
		c.Security.Users = []config.User{{Name: "alice", PasswordHash: cheapHash(t, "s3cret")}}
		if configure != nil {
			configure(c)
		}
	}})
	return ts, clientTrust(t, filepath.Join(dir, "own", "certs"))
}

// clientTrust opens a client PKI whose trusted store holds the certificates in ownDir.
func clientTrust(t testing.TB, ownDir string) *pki.PKI {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "client-pki")
	certs := filepath.Join(dir, "trusted", "certs")
	require.NoError(t, os.MkdirAll(certs, 0o700))
	entries, err := os.ReadDir(ownDir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(ownDir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(certs, e.Name()), b, 0o600))
	}
	p, err := pki.Open(dir, pki.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// security is one channel security the tests run under.
type security struct {
	name   string
	policy string
	mode   ua.MessageSecurityMode
}

var securities = []security{
	{"None", policy.URINone, ua.MessageSecurityModeNone},
	{"Basic256Sha256", policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt},
}

// dialOpts returns the options for sec with the client's certificate and trust store.
func dialOpts(t testing.TB, sec security, trust *pki.PKI, extra ...client.Option) []client.Option {
	id := testIdentities(t)
	opts := []client.Option{
		client.Security(sec.policy, sec.mode),
		client.Certificate(id.appDER, id.appKey),
		client.Application(appURI, "clienttest"),
		client.TrustStore(trust),
	}
	return append(opts, extra...)
}

// dial connects and registers a cleanup that closes the client.
func dial(t testing.TB, ctx context.Context, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.Dial(ctx, url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// proxy forwards TCP connections to target until Drop cuts them all, as a server that
// loses its connections would.
type proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex // guards conns, accepted
	conns    []net.Conn
	accepted int
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.Drop() })
	return p
}

// URL is the opc.tcp URL of the proxy.
func (p *proxy) URL() string { return "opc.tcp://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.accepted++
		p.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close(); in.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close(); out.Close() }()
	}
}

// Accepted returns how many connections the proxy has forwarded.
func (p *proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Drop closes every forwarded connection and reports how many pairs there were.
func (p *proxy) Drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	n := len(p.conns) / 2
	p.conns = nil
	return n
}
