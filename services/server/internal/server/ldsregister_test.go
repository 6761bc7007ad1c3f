package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/pki"
	"uastack.dev/services/discovery/lds"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
)

// discoveryService runs the real discovery service on addr (127.0.0.1:0 for a new port)
// with the PKI at dir, until stop is called.
type discoveryService struct {
	svc  *lds.Service
	url  string
	addr string
	stop func()
}

func runDiscovery(t *testing.T, addr, dir string) *discoveryService {
	t.Helper()
	var ln net.Listener
	require.Eventually(t, func() bool { // a restarted service takes its port back
		var err error
		ln, err = net.Listen("tcp", addr)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	url := "opc.tcp://" + ln.Addr().String()
	svc, err := lds.New(lds.Config{
		ApplicationURI: "urn:test:lds", ApplicationName: "test discovery", EndpointURL: url,
		Hostnames: []string{"127.0.0.1"}, PKIDir: dir,
		RegistrationTimeout: time.Minute, RefreshInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	d := &discoveryService{svc: svc, url: url, addr: ln.Addr().String()}
	var stopped bool
	d.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(d.stop)
	return d
}

func trustCert(t *testing.T, pkiDir string, der []byte, name string) {
	t.Helper()
	dir := filepath.Join(pkiDir, "trusted", "certs")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".der"), der, 0o600))
}

// findServerURIs asks the discovery service through gopcua's client.
func findServerURIs(t *testing.T, url string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	servers, err := opcua.FindServers(ctx, url)
	require.NoError(t, err)
	var out []string
	for _, s := range servers {
		out = append(out, s.ApplicationURI)
	}
	return out
}

// runRegistering starts a uastack server that registers with d every 300 ms, trust set
// up both ways, and returns its configuration (with the bound URL) and stop, which shuts
// it down and returns Run's result; it also runs when the test ends.
func runRegistering(t *testing.T, d *discoveryService, ldsDir string) (*config.Config, func() error) {
	t.Helper()
	// The server's certificate is made before it starts, as an integrator would, so each
	// side can trust the other's.
	cfg := config.Default()
	cfg.Endpoint.ListenAddress = "127.0.0.1:0"
	cfg.Endpoint.EndpointURL = "opc.tcp://127.0.0.1:0"
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:registering"
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	cfg.Discovery.DiscoveryURL = d.url
	cfg.Discovery.RegisterInterval = 300 * time.Millisecond
	require.NoError(t, cfg.Validate())
	p, err := pki.Open(cfg.Security.PKIDir, pki.Options{})
	require.NoError(t, err)
	own, _, err := p.EnsureOwn(cfg.Application.ApplicationURI, cfg.Endpoint.Hostnames, pki.OwnOptions{ApplicationName: cfg.Application.ApplicationName})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	trustCert(t, ldsDir, own.Raw, "server")
	require.NoError(t, d.svc.ReloadTrust())
	trustCert(t, cfg.Security.PKIDir, d.svc.Certificate().Raw, "lds")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan net.Addr, 1)
	go func() {
		done <- server.Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(a net.Addr) { ready <- a })
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	}
	stop := sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() { _ = stop() })
	return cfg, stop
}

// TestServerRegistersWithDiscovery runs a uastack server configured with the discovery
// service's URL. With trust set up both ways it registers at start, gopcua's client finds
// it through the discovery service and connects with the endpoints it got there; when the
// discovery service restarts, the server registers again within one period; when the
// server shuts down it unregisters.
func TestServerRegistersWithDiscovery(t *testing.T) {
	t.Parallel()
	ldsDir := t.TempDir()
	d := runDiscovery(t, "127.0.0.1:0", ldsDir)

	cfg, stop := runRegistering(t, d, ldsDir)

	require.Eventually(t, func() bool {
		return len(findServerURIs(t, d.url)) == 2
	}, 10*time.Second, 50*time.Millisecond, "the server registers at start")
	require.Equal(t, []string{"urn:test:lds", cfg.Application.ApplicationURI}, findServerURIs(t, d.url))

	// A client takes the endpoints from the discovery service (which fetched them from
	// the server) and connects with them.
	tctx, tcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer tcancel()
	servers, err := opcua.FindServers(tctx, d.url)
	require.NoError(t, err)
	eps, err := opcua.GetEndpoints(tctx, servers[1].DiscoveryURLs[0])
	require.NoError(t, err)
	c, err := opcua.NewClient(eps[len(eps)-1].EndpointURL, opcua.SecurityMode(eps[len(eps)-1].SecurityMode))
	require.NoError(t, err)
	require.NoError(t, c.Connect(tctx))
	require.NoError(t, c.Close(tctx))

	// The discovery service restarts with an empty registry: the server is back in it
	// within a period or two.
	d.stop()
	d = runDiscovery(t, d.addr, ldsDir)
	require.Equal(t, []string{"urn:test:lds"}, findServerURIs(t, d.url))
	require.Eventually(t, func() bool {
		return len(findServerURIs(t, d.url)) == 2
	}, 5*time.Second, 50*time.Millisecond, "the server registers again")

	// A clean shutdown unregisters.
	require.NoError(t, stop())
	require.Equal(t, []string{"urn:test:lds"}, findServerURIs(t, d.url))
}
