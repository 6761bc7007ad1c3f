// Command mirror runs the NATS server with JetStream through which the uastack servers
// of a HotAndMirrored redundant set (Part 4 §6.6.2) mirror their sessions and
// subscriptions. Without flags it serves one machine: clients on 127.0.0.1:4222, the
// store under the user's data folder. Given --cluster-port and --routes, the same
// command forms a NATS cluster with other mirror nodes, or joins an existing NATS
// cluster. It runs until SIGINT or SIGTERM and then stops cleanly.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/spf13/pflag"

	"uastack.dev/services/mirror/natsnode"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "uastack mirror:", err)
		os.Exit(1)
	}
}

// run is the whole process: args are the flags (without the program name); the log,
// with the data directory at start and the URLs once clients are accepted, goes to
// stdout. It returns when ctx ends and the node has stopped.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	var (
		cfg                   natsnode.Config
		routes                []string
		certFile, keyFile, ca string
		logLevel              string
	)
	fs := pflag.NewFlagSet("mirror", pflag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.StringVar(&cfg.Host, "host", "127.0.0.1", "client listen address")
	fs.IntVar(&cfg.Port, "port", 4222, "client port (0: a free port)")
	fs.StringVar(&cfg.DataDir, "data", defaultDataDir(), "JetStream store directory")
	fs.StringVar(&cfg.Name, "name", "", "server name, unique in the cluster and kept across restarts (default: host-port of the route, or else of the client port)")
	fs.StringVar(&cfg.Cluster.Name, "cluster-name", "uastack", "cluster name, the same on every node")
	fs.StringVar(&cfg.Cluster.Host, "cluster-host", "127.0.0.1", "route listen address")
	fs.IntVar(&cfg.Cluster.Port, "cluster-port", 0, "route port; with --routes, joins a cluster (0 there: a free port)")
	fs.StringSliceVar(&routes, "routes", nil, "comma-separated nats-route://host:port of other nodes (seeds are enough; a node may name itself)")
	fs.StringVar(&cfg.Token, "token", "", "authorization token every client must present")
	fs.StringVar(&certFile, "tls-cert", "", "PEM certificate of the client port (TLS only when set)")
	fs.StringVar(&keyFile, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&ca, "tls-ca", "", "PEM CA certificates; clients must present a certificate they issued")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: level}))
	cfg.Logger = log

	clusterOn := len(routes) > 0
	for _, f := range []string{"cluster-port", "cluster-name", "cluster-host"} {
		clusterOn = clusterOn || fs.Changed(f)
	}
	if clusterOn {
		if len(routes) == 0 {
			return errors.New("--routes: a cluster needs at least one route (every node may be given the same list, itself included)")
		}
		cfg.Cluster.Routes = routes
		if cfg.Name == "" && cfg.Cluster.Port == 0 {
			log.Warn("without --name or --cluster-port the server name changes at every start, and JetStream takes the node for a new one each time")
		}
	} else {
		cfg.Cluster = natsnode.Cluster{}
	}
	tlsConfig, err := serverTLS(certFile, keyFile, ca)
	if err != nil {
		return err
	}
	cfg.TLS = tlsConfig

	log.Info("data directory", "path", cfg.DataDir)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	node, err := natsnode.Start(cfg)
	if err != nil {
		return err
	}
	attrs := []any{"client", node.ClientURL(), "name", node.Config().Name}
	if node.RouteURL() != "" {
		attrs = append(attrs, "route", node.RouteURL(), "cluster", cfg.Cluster.Name)
	}
	if cfg.Token != "" {
		attrs = append(attrs, "token", "required")
	}
	if cfg.TLS != nil {
		attrs = append(attrs, "clientCertificates", cfg.TLS.ClientAuth == tls.RequireAndVerifyClientCert)
	}
	log.Info("listening", attrs...)

	// In a cluster JetStream is ready once a quorum of nodes is up, which may be after
	// this one's start: say so when it happens, without holding the listener back.
	waitCtx, cancelWait := context.WithCancel(ctx)
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		if err := node.WaitJetStream(waitCtx); err == nil {
			log.Info("JetStream ready")
		}
	}()

	<-ctx.Done()
	cancelWait()
	<-waited
	log.Info("stopping")
	node.Shutdown()
	log.Info("stopped")
	return nil
}

// serverTLS builds the client port's TLS configuration from the flags: none without a
// certificate; with a CA, clients must present a certificate it issued.
func serverTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "" && caFile == "":
		return nil, nil
	case certFile == "":
		return nil, errors.New("--tls-cert: required with --tls-key or --tls-ca")
	case keyFile == "":
		return nil, errors.New("--tls-key: required with --tls-cert")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca: no PEM certificate in %s", caFile)
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// defaultDataDir is uastack/mirror under the user's data folder; "mirror-data" in the
// working directory when that is unknown.
func defaultDataDir() string {
	base, err := userDataDir()
	if err != nil {
		return "mirror-data"
	}
	return filepath.Join(base, "uastack", "mirror")
}

// userDataDir is where a user's programs keep data that must survive, which a cache
// need not: $XDG_DATA_HOME or ~/.local/share on Linux and the BSDs, ~/Library/Application
// Support on macOS, %LocalAppData% on Windows. The standard library names the
// configuration and cache folders only.
func userDataDir() (string, error) {
	switch runtime.GOOS {
	case "windows":
		return os.UserCacheDir() // %LocalAppData%
	case "darwin", "ios":
		return os.UserConfigDir() // ~/Library/Application Support
	}
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "share"), nil
}
