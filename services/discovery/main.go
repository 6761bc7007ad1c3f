// Command discovery is the uastack Local Discovery Server (Part 12 §4.3). Servers
// register with it; clients ask it which servers exist and how to reach them. It runs on
// built-in defaults (opc.tcp port 4840, its own PKI); every flag may also be set as an
// environment variable UASTACK_LDS_<FLAG> with dashes as underscores (not
// UASTACK_DISCOVERY_: that is the server's discovery section).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"uastack.dev/services/discovery/lds"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "uastack discovery:", err)
		os.Exit(1)
	}
}

// run is the whole process; ready (if not nil) gets the bound address once connections
// are accepted.
func run(ctx context.Context, args, environ []string, stderr io.Writer, ready func(net.Addr)) error {
	cfg := lds.Default()
	fs := flag.NewFlagSet("discovery", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.ListenAddress, "listen", cfg.ListenAddress, "TCP address to listen on")
	fs.StringVar(&cfg.EndpointURL, "endpoint-url", cfg.EndpointURL, "endpoint URL advertised to clients")
	fs.StringVar(&cfg.ApplicationURI, "application-uri", cfg.ApplicationURI, "ApplicationUri (also in the certificate)")
	fs.StringVar(&cfg.PKIDir, "pki", cfg.PKIDir, "PKI directory (own, trusted, issuer, rejected)")
	fs.BoolVar(&cfg.AutoAcceptUntrusted, "auto-accept", cfg.AutoAcceptUntrusted, "trust every registering server's certificate (commissioning only)")
	fs.DurationVar(&cfg.RegistrationTimeout, "registration-timeout", cfg.RegistrationTimeout, "drop a registration not renewed within this time")
	fs.DurationVar(&cfg.RefreshInterval, "refresh-interval", cfg.RefreshInterval, "refetch registered servers' endpoints and ServiceLevel this often")
	fs.IntVar(&cfg.MaxChannelCount, "max-channel-count", cfg.MaxChannelCount, "secure channels open at once; a connection beyond it is refused")
	// Environment first, so that flags win.
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		key := "UASTACK_LDS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		for _, kv := range environ {
			if v, ok := strings.CutPrefix(kv, key+"="); ok {
				if err := f.Value.Set(v); err != nil && envErr == nil {
					envErr = fmt.Errorf("%s: %w", key, err)
				}
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg.Logger = log

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if _, port, err := net.SplitHostPort(cfg.ListenAddress); err == nil && port == "0" {
		// Port 0 (tests): advertise the bound port.
		if u, err := url.Parse(cfg.EndpointURL); err == nil {
			_, bound, _ := net.SplitHostPort(ln.Addr().String())
			u.Host = net.JoinHostPort(u.Hostname(), bound)
			cfg.EndpointURL = u.String()
		}
	}
	svc, err := lds.New(cfg)
	if err != nil {
		_ = ln.Close()
		return err
	}
	log.Info("discovery service", "pki", cfg.PKIDir, "registrationTimeout", cfg.RegistrationTimeout, "maxChannelCount", cfg.MaxChannelCount)
	for _, ep := range svc.Endpoints() {
		log.Info("endpoint", "url", ep.EndpointUrl, "securityPolicy", ep.SecurityPolicyUri, "securityMode", int(ep.SecurityMode))
	}
	log.Info("listening", "address", ln.Addr().String())
	if ready != nil {
		ready(ln.Addr())
	}
	err = svc.Serve(ctx, ln)
	log.Info("discovery service stopped")
	return err
}
