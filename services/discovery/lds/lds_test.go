package lds

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// running is a discovery service serving on 127.0.0.1.
type running struct {
	svc *Service
	url string
	cfg Config
}

// start runs a discovery service with a fresh PKI until the test ends.
func start(t *testing.T, tune func(*Config)) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "opc.tcp://" + ln.Addr().String()
	cfg := Config{
		ApplicationURI: "urn:test:discovery", ApplicationName: "test discovery",
		EndpointURL: url, Hostnames: []string{"127.0.0.1"}, PKIDir: t.TempDir(),
		RegistrationTimeout: time.Minute, RefreshInterval: time.Minute,
		Logger: slog.New(slog.DiscardHandler),
	}
	if tune != nil {
		tune(&cfg)
	}
	svc, err := New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return &running{svc: svc, url: url, cfg: cfg}
}

// identity is a registering server's application certificate and key, made in a PKI of
// its own, as a real server has.
type identity struct {
	uri  string
	cert *x509.Certificate
	key  *rsa.PrivateKey
}

func newIdentity(t *testing.T, uri string) identity {
	t.Helper()
	p, err := pki.Open(t.TempDir(), pki.Options{})
	require.NoError(t, err)
	defer p.Close()
	cert, key, err := p.EnsureOwn(uri, []string{"127.0.0.1"}, pki.OwnOptions{ApplicationName: "registering server"})
	require.NoError(t, err)
	return identity{uri: uri, cert: cert, key: key}
}

// trust puts id's certificate into the service's trusted store.
func (r *running) trust(t *testing.T, id identity) {
	t.Helper()
	dir := filepath.Join(r.cfg.PKIDir, "trusted", "certs")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, pki.Thumbprint(id.cert)+".der"), id.cert.Raw, 0o600))
	require.NoError(t, r.svc.pki.Reload())
}

// channel opens a secure channel to the service: Basic256Sha256 SignAndEncrypt with id,
// or None when id is the zero identity.
func (r *running) channel(t *testing.T, id identity) (*uasc.ClientChannel, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := net.Dial("tcp", r.url[len("opc.tcp://"):])
	require.NoError(t, err)
	conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: r.url})
	require.NoError(t, err)
	cfg := uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone}
	if id.cert != nil {
		cfg = uasc.ClientConfig{
			PolicyURI: policy.URIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt,
			Certificate: id.cert.Raw, Key: id.key, ServerCertificate: r.svc.Certificate().Raw,
		}
	}
	ch, err := uasc.Dial(ctx, conn, cfg)
	if err == nil {
		t.Cleanup(func() { ch.Close() })
	}
	return ch, err
}

func registered(id identity, url string) ua.RegisteredServer {
	return ua.RegisteredServer{
		ServerUri: id.uri, ProductUri: "urn:test:product",
		ServerNames:   []codec.LocalizedText{{Locale: "en", Text: "Line 1"}, {Locale: "de", Text: "Linie 1"}},
		ServerType:    ua.ApplicationTypeServer,
		DiscoveryUrls: []string{url}, IsOnline: true,
	}
}

// register sends RegisterServer2 for srv and returns the service result.
func register(t *testing.T, ch *uasc.ClientChannel, srv ua.RegisteredServer, cfgs ...codec.ExtensionObject) (status.Code, []status.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := ch.Request(ctx, &ua.RegisterServer2Request{
		RequestHeader: ua.RequestHeader{RequestHandle: 42, Timestamp: codec.Now()}, Server: srv, DiscoveryConfiguration: cfgs,
	})
	require.NoError(t, err)
	switch m := resp.(type) {
	case *ua.RegisterServer2Response:
		require.Equal(t, uint32(42), m.ResponseHeader.RequestHandle)
		return m.ResponseHeader.ServiceResult, m.ConfigurationResults
	case *ua.ServiceFault:
		return m.ResponseHeader.ServiceResult, nil
	}
	t.Fatalf("RegisterServer2 answered with %T", resp)
	return 0, nil
}

func findServers(t *testing.T, ch *uasc.ClientChannel, locales ...string) []ua.ApplicationDescription {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := ch.Request(ctx, &ua.FindServersRequest{RequestHeader: ua.RequestHeader{Timestamp: codec.Now()}, LocaleIds: locales})
	require.NoError(t, err)
	fs, ok := resp.(*ua.FindServersResponse)
	require.True(t, ok, "%T", resp)
	return fs.Servers
}

func TestRegisterServer2ListsTheServer(t *testing.T) {
	t.Parallel()
	lds := start(t, nil)
	id := newIdentity(t, "urn:test:line1")

	// Untrusted: the channel itself is refused, and the certificate lands in rejected/.
	_, err := lds.channel(t, id)
	require.ErrorIs(t, err, status.BadSecurityChecksFailed)
	lds.trust(t, id)

	ch, err := lds.channel(t, id)
	require.NoError(t, err)
	code, results := register(t, ch, registered(id, "opc.tcp://127.0.0.1:1/line1"),
		codec.NewExtensionObject(&ua.MdnsDiscoveryConfiguration{MdnsServerName: "line1"}),
		codec.NewExtensionObject(&ua.ReadRequest{}))
	require.Equal(t, status.Good, code)
	require.Equal(t, []status.Code{status.Good, status.BadNotSupported}, results)

	servers := findServers(t, ch, "de")
	require.Len(t, servers, 2)
	require.Equal(t, "urn:test:discovery", servers[0].ApplicationUri)
	require.Equal(t, ua.ApplicationTypeDiscoveryServer, servers[0].ApplicationType)
	require.Equal(t, "urn:test:line1", servers[1].ApplicationUri)
	require.Equal(t, "Linie 1", servers[1].ApplicationName.Text)
	require.Equal(t, []string{"opc.tcp://127.0.0.1:1/line1"}, servers[1].DiscoveryUrls)

	// IsOnline=false unregisters.
	off := registered(id, "opc.tcp://127.0.0.1:1/line1")
	off.IsOnline = false
	code, _ = register(t, ch, off)
	require.Equal(t, status.Good, code)
	require.Len(t, findServers(t, ch), 1)
}

func TestRegisterChecks(t *testing.T) {
	t.Parallel()
	lds := start(t, nil)
	id := newIdentity(t, "urn:test:line2")
	lds.trust(t, id)
	ch, err := lds.channel(t, id)
	require.NoError(t, err)
	url := "opc.tcp://127.0.0.1:1"
	for _, tc := range []struct {
		name string
		edit func(*ua.RegisteredServer)
		want status.Code
	}{
		{"no server uri", func(r *ua.RegisteredServer) { r.ServerUri = "" }, status.BadServerUriInvalid},
		{"another server's uri", func(r *ua.RegisteredServer) { r.ServerUri = "urn:someone:else" }, status.BadServerUriInvalid},
		{"no names", func(r *ua.RegisteredServer) { r.ServerNames = nil }, status.BadServerNameMissing},
		{"no discovery url", func(r *ua.RegisteredServer) { r.DiscoveryUrls = nil }, status.BadDiscoveryUrlMissing},
		{"a client", func(r *ua.RegisteredServer) { r.ServerType = ua.ApplicationTypeClient }, status.BadInvalidArgument},
		{"missing semaphore file", func(r *ua.RegisteredServer) { r.SemaphoreFilePath = filepath.Join(t.TempDir(), "nope") }, status.BadSempahoreFileMissing},
	} {
		r := registered(id, url)
		tc.edit(&r)
		code, _ := register(t, ch, r)
		require.Equal(t, tc.want, code, tc.name)
	}
	require.Len(t, findServers(t, ch), 1, "nothing was registered")

	// Without client authentication nobody may register.
	none, err := lds.channel(t, identity{})
	require.NoError(t, err)
	code, _ := register(t, none, registered(id, url))
	require.Equal(t, status.BadSecurityChecksFailed, code)

	// Other services have no place in a discovery server.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = none.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{RequestHandle: 9}})
	require.ErrorIs(t, err, status.BadServiceUnsupported)
}

func TestRegistrationsEnd(t *testing.T) {
	t.Parallel()
	lds := start(t, func(c *Config) {
		c.RegistrationTimeout = 400 * time.Millisecond
		c.RefreshInterval = 50 * time.Millisecond
	})
	id := newIdentity(t, "urn:test:line3")
	lds.trust(t, id)
	ch, err := lds.channel(t, id)
	require.NoError(t, err)

	// Not renewed: gone after the timeout; renewed: stays.
	require.Equal(t, status.Good, must(register(t, ch, registered(id, "opc.tcp://127.0.0.1:1/a"))))
	require.Len(t, findServers(t, ch), 2)
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		register(t, ch, registered(id, "opc.tcp://127.0.0.1:1/b"))
		time.Sleep(50 * time.Millisecond)
	}
	servers := findServers(t, ch)
	require.Len(t, servers, 2)
	require.Equal(t, []string{"opc.tcp://127.0.0.1:1/b"}, servers[1].DiscoveryUrls)

	// A semaphore file: the registration lasts as long as the file.
	sem := filepath.Join(t.TempDir(), "line3.sem")
	require.NoError(t, os.WriteFile(sem, nil, 0o600))
	r := registered(id, "opc.tcp://127.0.0.1:1/c")
	r.SemaphoreFilePath = sem
	require.Equal(t, status.Good, must(register(t, ch, r)))
	require.Len(t, findServers(t, ch), 3)
	require.NoError(t, os.Remove(sem))
	require.Eventually(t, func() bool { return len(findServers(t, ch)) == 2 }, 2*time.Second, 20*time.Millisecond)
}

func must(code status.Code, _ []status.Code) status.Code { return code }

// TestGetEndpointsOfARegisteredServer registers a second discovery service as if it were
// a server: the first fetches its endpoints and answers GetEndpoints for its URL with
// them, and for its own URL with its own.
func TestGetEndpointsOfARegisteredServer(t *testing.T) {
	t.Parallel()
	lds := start(t, nil)
	other := start(t, func(c *Config) { c.ApplicationURI = "urn:test:other" })
	id := newIdentity(t, "urn:test:other")
	lds.trust(t, id)
	ch, err := lds.channel(t, id)
	require.NoError(t, err)
	require.Equal(t, status.Good, must(register(t, ch, registered(id, other.url))))

	get := func(url string) []ua.EndpointDescription {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := ch.Request(ctx, &ua.GetEndpointsRequest{EndpointUrl: url})
		require.NoError(t, err)
		ge, ok := resp.(*ua.GetEndpointsResponse)
		require.True(t, ok, "%T", resp)
		return ge.Endpoints
	}
	require.Eventually(t, func() bool {
		eps := get(other.url)
		return len(eps) > 0 && string(eps[0].ServerCertificate) == string(other.svc.Certificate().Raw)
	}, 5*time.Second, 20*time.Millisecond)
	own := get(lds.url)
	require.Len(t, own, 5)
	require.Equal(t, lds.svc.Certificate().Raw, own[0].ServerCertificate)
	require.Equal(t, ua.MessageSecurityModeSignAndEncrypt, own[0].SecurityMode)
	require.Equal(t, ua.MessageSecurityModeNone, own[4].SecurityMode)
}

// TestMaxChannelCount fills Config.MaxChannelCount: a connection beyond it gets an ERR
// BadTcpNotEnoughResources in answer to its Hello and is logged, the open channel keeps
// working, and once it closes a new one is served.
func TestMaxChannelCount(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	lds := start(t, func(c *Config) {
		c.MaxChannelCount = 1
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	first, err := lds.channel(t, identity{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := net.Dial("tcp", lds.url[len("opc.tcp://"):])
	require.NoError(t, err)
	_, err = uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: lds.url})
	var e *uacp.Error
	require.ErrorAs(t, err, &e, "refused with an ERR")
	require.Equal(t, status.BadTcpNotEnoughResources, e.Code)
	require.Contains(t, logs.String(), "connection refused: maxChannelCount reached")
	require.Len(t, findServers(t, first), 1, "the open channel is served")

	require.NoError(t, first.Close())
	require.Eventually(t, func() bool {
		nc, err := net.Dial("tcp", lds.url[len("opc.tcp://"):])
		require.NoError(t, err)
		conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: lds.url})
		if err != nil {
			return false
		}
		ch, err := uasc.Dial(ctx, conn, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
		require.NoError(t, err)
		defer ch.Close()
		return len(findServers(t, ch)) == 1
	}, 10*time.Second, 20*time.Millisecond, "a slot is free again after the first channel closed")
}

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
