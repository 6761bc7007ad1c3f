package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"

	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
)

// Run listens on cfg.Endpoint.ListenAddress, creates the Server, logs its endpoints and
// PKI, calls ready (if not nil) with the bound address once connections are accepted,
// and serves until ctx ends; then it closes the listener, waits for the channels to end
// and releases the PKI. When the listen address has port 0, the port of
// cfg.Endpoint.EndpointURL is replaced by the bound one (tests). cfg is modified
// accordingly and must not be used concurrently.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, ready func(net.Addr)) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Endpoint.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if _, port, err := net.SplitHostPort(cfg.Endpoint.ListenAddress); err == nil && port == "0" {
		if u, err := url.Parse(cfg.Endpoint.EndpointURL); err == nil {
			_, bound, _ := net.SplitHostPort(ln.Addr().String())
			u.Host = net.JoinHostPort(u.Hostname(), bound)
			cfg.Endpoint.EndpointURL = u.String()
		}
	}
	srv, err := New(cfg, Options{Logger: log})
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer srv.Close()
	log.Info("PKI", "dir", srv.PKIDir(), "certificate", pki.Thumbprint(srv.Certificate()),
		"subject", srv.Certificate().Subject.String(), "notAfter", srv.Certificate().NotAfter)
	for _, ep := range srv.Endpoints() {
		log.Info("endpoint", "url", ep.EndpointUrl, "securityPolicy", ep.SecurityPolicyUri,
			"securityMode", ua.MessageSecurityModeName(int64(ep.SecurityMode)), "securityLevel", ep.SecurityLevel)
	}
	log.Info("listening", "address", ln.Addr().String())
	if ready != nil {
		ready(ln.Addr())
	}
	err = srv.Serve(ctx, ln)
	log.Info("server stopped")
	return err
}
