// Package servertest starts the full server in-process for tests, on 127.0.0.1 port 0
// with a fresh PKI, in the manner of net/http/httptest.
package servertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
)

// Options configure New.
type Options struct {
	// Configure, if set, changes the configuration after the test defaults are applied
	// (listen on 127.0.0.1:0, a PKI in t.TempDir(), host names 127.0.0.1 and localhost).
	Configure func(*config.Config)
	// Logger receives the server's records; nil discards them.
	Logger *slog.Logger
}

// Server is a running test server.
type Server struct {
	// URL is the endpoint URL, opc.tcp://127.0.0.1:<port>.
	URL string
	// Addr is the bound address.
	Addr net.Addr
	// PKIDir is the folder of the server's certificate stores.
	PKIDir string
	// Config is the configuration the server runs with; do not modify it.
	Config *config.Config
}

// New starts a server, waits until it accepts connections and registers a cleanup that
// stops it and fails the test if it does not stop cleanly within 10 s.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	cfg := config.Default()
	cfg.Endpoint.ListenAddress = "127.0.0.1:0"
	cfg.Endpoint.EndpointURL = "opc.tcp://127.0.0.1:0"
	cfg.Endpoint.Hostnames = []string{"127.0.0.1", "localhost"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:servertest"
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	if opts.Configure != nil {
		opts.Configure(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("servertest: invalid configuration: %v", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg, log, func(a net.Addr) { ready <- a }) }()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("servertest: server did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("servertest: server not ready after 30 s")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("servertest: server stopped with %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("servertest: server did not stop within 10 s")
		}
	})
	return &Server{URL: cfg.Endpoint.EndpointURL, Addr: addr, PKIDir: cfg.Security.PKIDir, Config: cfg}
}
