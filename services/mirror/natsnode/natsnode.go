// Package natsnode runs a NATS server with JetStream inside this process: the store
// through which the servers of a HotAndMirrored redundant set (Part 4 §6.6.2) mirror
// their sessions and subscriptions. One node serves one machine; nodes joined by routes
// form a NATS cluster whose JetStream replicates the mirror's buckets. The server is the
// nats-server Go module, so a node is the same code whether it runs in a test, in the
// mirror command or beside an existing NATS deployment it joins.
package natsnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Config is one node's configuration. The zero value of each field but DataDir is a
// usable default.
type Config struct {
	// Name is the server's name, unique in a cluster, and the identity JetStream's
	// replication knows the node by: a restarted node must keep it. "" derives it from
	// the address the node is known by, the route's in a cluster and else the client
	// port's ("127.0.0.1-6222"; a wildcard host is replaced by the machine's host
	// name), or, when that port is 0, takes the server's generated identifier.
	// Node.Config reports the name in effect.
	Name string
	// Host is the client listen address; "" = 127.0.0.1.
	Host string
	// Port is the client port; 0 = a free port chosen by the kernel (tests). The
	// mirror command's default is 4222, NATS's own.
	Port int
	// DataDir is the directory of JetStream's file store. Required.
	DataDir string
	// Cluster joins the node to a NATS cluster; the zero value means no cluster.
	Cluster Cluster
	// Token, if set, is the authorization token every client must present.
	Token string
	// TLS, if set, makes the client port TLS only; its ClientAuth decides whether
	// client certificates are verified.
	TLS *tls.Config
	// MaxStore and MaxMemory bound JetStream's file and memory storage in bytes;
	// 0 = NATS's defaults (a share of the disk's free space and of the memory).
	MaxStore, MaxMemory int64
	// Logger, if set, receives NATS's own log: its debug lines at debug (when the
	// handler is enabled for them), notices at info, warnings and errors at warn (a
	// route to a stopped peer is an error to NATS and routine to a redundant set),
	// fatal errors at error.
	Logger *slog.Logger
}

// Cluster is a node's place in a NATS cluster (routes between nodes).
type Cluster struct {
	// Name is the cluster's name, the same on every node. Required in a cluster.
	Name string
	// Host is the route listen address; "" = 127.0.0.1.
	Host string
	// Port is the route port; 0 = a free port chosen by the kernel.
	Port int
	// Routes are the route URLs (nats-route://host:port; "host:port" is read as
	// that) of other nodes. A node learns the rest of the cluster from any one it
	// reaches, so seeds are enough, and a node may name itself (NATS ignores a route
	// to itself), so that every node can be given the same list. At least one is
	// required: JetStream's cluster sizes its first quorum from their number.
	Routes []string
}

// clustered reports whether c asks for a cluster at all.
func (c Cluster) clustered() bool {
	return c.Name != "" || c.Host != "" || c.Port != 0 || len(c.Routes) > 0
}

// readyTimeout bounds the wait for the listeners once the server has started: they are
// bound right after the store is recovered, which Start itself waits for.
const readyTimeout = 10 * time.Second

// Node is a running NATS server with JetStream. Its methods are safe for concurrent use.
type Node struct {
	srv       *server.Server
	cfg       Config // with the bound ports and the name in effect
	clientURL string
	routeURL  string
	stopOnce  sync.Once
}

// Start starts a node and returns once it accepts clients and JetStream is enabled. In
// a cluster JetStream may not have its meta leader yet: see WaitJetStream.
func Start(cfg Config) (*Node, error) {
	opts, err := options(cfg)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsnode: %w", err)
	}
	logs := &natsLogger{log: cfg.Logger}
	srv.SetLoggerV2(logs, logs.enabled(slog.LevelDebug), false, false)
	// Start recovers the store and enables JetStream before it returns; the listeners
	// are bound on goroutines of their own just after.
	srv.Start()
	deadline := time.Now().Add(readyTimeout)
	for !srv.ReadyForConnections(25 * time.Millisecond) {
		if msg := logs.failure(); msg != "" {
			stop(srv)
			return nil, fmt.Errorf("natsnode: %s", msg)
		}
		if time.Now().After(deadline) {
			stop(srv)
			return nil, fmt.Errorf("natsnode: not accepting clients after %s", readyTimeout)
		}
	}
	if msg := logs.failure(); msg != "" || !srv.JetStreamEnabled() {
		stop(srv)
		if msg == "" {
			msg = "JetStream is not enabled"
		}
		return nil, fmt.Errorf("natsnode: %s", msg)
	}

	n := &Node{srv: srv, cfg: cfg}
	n.cfg.Host = opts.Host
	n.cfg.Port = srv.Addr().(*net.TCPAddr).Port
	n.cfg.Name = srv.Name()
	n.cfg.Cluster.Routes = slices.Clone(cfg.Cluster.Routes)
	scheme := "nats"
	if cfg.TLS != nil {
		scheme = "tls"
	}
	n.clientURL = scheme + "://" + net.JoinHostPort(dialHost(opts.Host), strconv.Itoa(n.cfg.Port))
	if ca := srv.ClusterAddr(); ca != nil {
		n.cfg.Cluster.Host = opts.Cluster.Host
		n.cfg.Cluster.Port = ca.Port
		n.routeURL = "nats-route://" + net.JoinHostPort(dialHost(opts.Cluster.Host), strconv.Itoa(ca.Port))
	}
	return n, nil
}

// options translates cfg into nats-server's options, checking what NATS would only
// report once started.
func options(cfg Config) (*server.Options, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("natsnode: a data directory is required")
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("natsnode: port %d out of range", cfg.Port)
	}
	if cfg.MaxStore < 0 || cfg.MaxMemory < 0 {
		return nil, errors.New("natsnode: negative JetStream limit")
	}
	if strings.ContainsAny(cfg.Name, " \t\r\n") {
		return nil, fmt.Errorf("natsnode: server name %q has white space", cfg.Name)
	}
	opts := &server.Options{
		ServerName: cfg.Name,
		Host:       cfg.Host,
		Port:       cfg.Port,
		// The process owns its signals; a node stops by Shutdown.
		NoSigs:                 true,
		JetStream:              true,
		StoreDir:               cfg.DataDir,
		JetStreamMaxStore:      cfg.MaxStore,
		JetStreamMaxMemory:     cfg.MaxMemory,
		Authorization:          cfg.Token,
		TLSConfig:              cfg.TLS,
		DisableJetStreamBanner: true,
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if cfg.Port == 0 {
		// To NATS, port 0 is its default port and -1 a free one.
		opts.Port = server.RANDOM_PORT
	}
	if cfg.TLS != nil {
		opts.TLSVerify = cfg.TLS.ClientAuth == tls.RequireAndVerifyClientCert
	}
	if !cfg.Cluster.clustered() {
		if opts.ServerName == "" {
			opts.ServerName = derivedName(opts.Host, cfg.Port)
		}
		return opts, nil
	}
	c := cfg.Cluster
	if c.Name == "" {
		return nil, errors.New("natsnode: a cluster needs a name")
	}
	if strings.ContainsAny(c.Name, " \t\r\n") {
		return nil, fmt.Errorf("natsnode: cluster name %q has white space", c.Name)
	}
	if len(c.Routes) == 0 {
		return nil, errors.New("natsnode: a cluster needs at least one route (a node may name itself)")
	}
	if c.Port < 0 || c.Port > 65535 {
		return nil, fmt.Errorf("natsnode: cluster port %d out of range", c.Port)
	}
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: c.Host, Port: c.Port}
	if opts.Cluster.Host == "" {
		opts.Cluster.Host = "127.0.0.1"
	}
	if opts.ServerName == "" {
		opts.ServerName = derivedName(opts.Cluster.Host, c.Port)
	}
	if c.Port == 0 {
		// Port 0 would mean no cluster at all to NATS.
		opts.Cluster.Port = server.RANDOM_PORT
	}
	for _, r := range c.Routes {
		u, err := parseRoute(r)
		if err != nil {
			return nil, err
		}
		opts.Routes = append(opts.Routes, u)
	}
	return opts, nil
}

// derivedName is a server name made of the address a node is known by, or "" (NATS
// then uses its generated identifier) when the port is not known before the start.
func derivedName(host string, port int) string {
	if port == 0 {
		return ""
	}
	if wildcard(host) {
		// Every machine's wildcard address is the same.
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		}
	}
	return host + "-" + strconv.Itoa(port)
}

// parseRoute reads a route URL; a bare host:port is taken as nats-route://host:port.
func parseRoute(r string) (*url.URL, error) {
	s := strings.TrimSpace(r)
	if !strings.Contains(s, "://") {
		s = "nats-route://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("natsnode: route %q: %w", r, err)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return nil, fmt.Errorf("natsnode: route %q: want nats-route://host:port", r)
	}
	return u, nil
}

// dialHost is the host to put in a URL for a listener bound to host: a wildcard
// address is reached through the loopback interface on this machine.
func dialHost(host string) string {
	if wildcard(host) {
		return "127.0.0.1"
	}
	return host
}

// wildcard reports whether a listener on host listens on every interface.
func wildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// ClientURL is the URL clients on this machine connect to: nats://host:port, or
// tls://host:port when the node requires TLS; a wildcard host is given as 127.0.0.1.
func (n *Node) ClientURL() string { return n.clientURL }

// RouteURL is the URL other nodes name in their routes to reach this one
// (nats-route://host:port), or "" when the node is not in a cluster.
func (n *Node) RouteURL() string { return n.routeURL }

// Config returns the node's configuration with the bound ports and the server name in
// effect filled in: started again with it, the node listens where it did and rejoins
// its cluster with its store.
func (n *Node) Config() Config {
	c := n.cfg
	c.Cluster.Routes = slices.Clone(n.cfg.Cluster.Routes)
	return c
}

// Shutdown stops the node and waits until it has stopped: the JetStream leaderships it
// holds are handed to other nodes first, its clients are disconnected and its store is
// flushed. Calling it again does nothing.
func (n *Node) Shutdown() {
	n.stopOnce.Do(func() { stop(n.srv) })
}

func stop(srv *server.Server) {
	srv.Shutdown()
	srv.WaitForShutdown()
}

// WaitJetStream waits until JetStream on this node can serve requests: alone, at once;
// in a cluster, until the JetStream meta leader is known and this node has caught up
// with it (a quorum of the cluster's nodes is up). It returns the last reason for not
// being ready with ctx's error when ctx ends first.
func (n *Node) WaitJetStream(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		h := n.srv.Healthz(&server.HealthzOptions{JSMetaOnly: true})
		if h.StatusCode == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("natsnode: %s: JetStream not ready: %s: %w", n.cfg.Name, h.Error, ctx.Err())
		case <-t.C:
		}
	}
}
