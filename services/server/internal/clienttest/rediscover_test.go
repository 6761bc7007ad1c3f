package clienttest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
)

// runAt runs a server on addr (port 0: any) with a PKI of its own (a fresh certificate)
// that trusts the test client, until the returned stop is called; it returns the
// server's certificate folder and its bound address. A port just freed may be taken for
// a moment by another test's outgoing connection: binding is retried for 10 s.
func runAt(t *testing.T, addr string) (ownDir string, stop func(), bound string) {
	t.Helper()
	id := testIdentities(t)
	dir := filepath.Join(t.TempDir(), "pki")
	certs := filepath.Join(dir, "trusted", "certs")
	require.NoError(t, os.MkdirAll(certs, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(certs, "app.der"), id.appDER, 0o600))
	cfg := config.Default()
	cfg.Endpoint.ListenAddress = addr
	cfg.Endpoint.EndpointURL = "opc.tcp://" + addr
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:clienttest"
	cfg.Security.PKIDir = dir
	require.NoError(t, cfg.Validate())
	var (
		ctx    context.Context
		cancel context.CancelFunc
		done   chan error
	)
	for deadline := time.Now().Add(10 * time.Second); ; {
		ctx, cancel = context.WithCancel(context.Background())
		done = make(chan error, 1)
		ready := make(chan net.Addr, 1)
		run := *cfg // Run writes the bound port into its configuration
		go func() {
			done <- server.Run(ctx, &run, slog.New(slog.NewTextHandler(io.Discard, nil)), func(a net.Addr) { ready <- a })
		}()
		var err error
		select {
		case a := <-ready:
			bound = a.String()
		case err = <-done:
			cancel()
		}
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			t.Fatalf("server did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return filepath.Join(dir, "own", "certs"), stop, bound
}

// TestEndpointCacheFollowsANewCertificate: a client that cached a server's endpoints
// connects again after the server came back with a new certificate. The cached
// endpoint's certificate no longer opens a channel; the client asks for the endpoints
// again, checks the new certificate against its trust store and connects. A new
// certificate the client does not trust is refused.
func TestEndpointCacheFollowsANewCertificate(t *testing.T) {
	firstOwn, stopFirst, addr := runAt(t, "127.0.0.1:0")
	trust := clientTrust(t, firstOwn)
	cache := client.NewEndpointCache()
	sec := securities[1] // Basic256Sha256 SignAndEncrypt
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := dialOpts(t, sec, trust, client.WithEndpointCache(cache), client.WithBackoff(client.Backoff{Attempts: 1}))
	c, err := client.Dial(ctx, "opc.tcp://"+addr, opts...)
	require.NoError(t, err)
	first := c.Endpoint().ServerCertificate
	require.NoError(t, c.Close(ctx))
	stopFirst()

	// Back with a new certificate the client does not trust yet: refused, nothing cached.
	secondOwn, _, _ := runAt(t, addr)
	_, err = client.Dial(ctx, "opc.tcp://"+addr, opts...)
	require.Error(t, err)

	// Trusted: the cached endpoints are replaced and the client connects.
	entries, err := os.ReadDir(secondOwn)
	require.NoError(t, err)
	for _, e := range entries {
		der, err := os.ReadFile(filepath.Join(secondOwn, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(trust.Root(), "trusted", "certs", e.Name()), der, 0o600))
	}
	require.NoError(t, trust.Reload())
	c, err = client.Dial(ctx, "opc.tcp://"+addr, opts...)
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NotEqual(t, first, c.Endpoint().ServerCertificate)
	eps, err := cache.Get(ctx, "opc.tcp://"+addr)
	require.NoError(t, err)
	require.Equal(t, c.Endpoint().ServerCertificate, eps[0].ServerCertificate, "the cache holds the new endpoints")
	_, err = c.ReadValue(ctx, n0(id2259))
	require.NoError(t, err)
}
