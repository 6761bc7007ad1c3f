package natsnode

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// startNode starts a node on port 0 with a fresh store and stops it at the end.
func startNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	n, err := Start(cfg)
	require.NoError(t, err)
	t.Cleanup(n.Shutdown)
	return n
}

// connect opens a JetStream client on url, closed at the end of the test.
func connect(t *testing.T, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// eventually retries f until it succeeds or the bound passes, and fails the test with
// f's last error.
func eventually(t *testing.T, bound time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", bound, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestNodeKeyValue uses one node as the mirror uses it: a file-stored bucket, a
// compare-and-swap, a per-key TTL, and the values found again after a restart.
func TestNodeKeyValue(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	n := startNode(t, Config{})
	require.Regexp(t, `^nats://127\.0\.0\.1:\d+$`, n.ClientURL())
	require.Empty(t, n.RouteURL(), "no cluster")
	require.NoError(t, n.WaitJetStream(ctx))

	js := connect(t, n.ClientURL())
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         "sessions",
		Storage:        jetstream.FileStorage,
		History:        2,
		LimitMarkerTTL: time.Second, // allows per-key TTLs (NATS 2.11)
	})
	require.NoError(t, err)

	rev, err := kv.Put(ctx, "s1", []byte("nonce-1"))
	require.NoError(t, err)
	e, err := kv.Get(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, "nonce-1", string(e.Value()))
	require.Equal(t, rev, e.Revision())

	// The nonce swap: the first update with the revision read wins, the second,
	// holding the same now stale revision, fails.
	rev2, err := kv.Update(ctx, "s1", []byte("nonce-2"), rev)
	require.NoError(t, err)
	require.Greater(t, rev2, rev)
	_, err = kv.Update(ctx, "s1", []byte("nonce-replayed"), rev)
	require.ErrorIs(t, err, jetstream.ErrKeyRevisionMismatch)
	_, err = kv.Create(ctx, "s1", []byte("again"))
	require.ErrorIs(t, err, jetstream.ErrKeyExists)

	// A key with a TTL of its own goes; the bucket's other keys stay.
	_, err = kv.Create(ctx, "cp", []byte("continuation point"), jetstream.KeyTTL(time.Second))
	require.NoError(t, err)
	e, err = kv.Get(ctx, "cp")
	require.NoError(t, err)
	require.Equal(t, "continuation point", string(e.Value()))
	eventually(t, 10*time.Second, func() error {
		if _, err := kv.Get(ctx, "cp"); !errors.Is(err, jetstream.ErrKeyNotFound) {
			return errors.New("the key with a TTL is still there")
		}
		return nil
	})

	cfg := n.Config()
	require.NotZero(t, cfg.Port)
	require.NotEmpty(t, cfg.Name)
	n.Shutdown()
	n.Shutdown() // a second time does nothing

	again, err := Start(cfg)
	require.NoError(t, err)
	t.Cleanup(again.Shutdown)
	require.Equal(t, n.ClientURL(), again.ClientURL(), "the same port")
	require.Equal(t, cfg.Name, again.Config().Name)
	js = connect(t, again.ClientURL())
	kv, err = js.KeyValue(ctx, "sessions")
	require.NoError(t, err)
	e, err = kv.Get(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, "nonce-2", string(e.Value()))
	require.Equal(t, rev2, e.Revision())
	_, err = kv.Get(ctx, "cp")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)
}

// TestClusterSurvivesANode runs three nodes and an R3 bucket: with a node stopped the
// other two still take writes, and the stopped node, started again with its Config,
// catches up with what was written while it was down.
func TestClusterSurvivesANode(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	start := time.Now()
	nodes, err := StartCluster(t.TempDir(), 3, "mirror")
	require.NoError(t, err)
	t.Logf("cluster ready in %s", time.Since(start))
	for _, n := range nodes {
		t.Cleanup(n.Shutdown)
		require.Regexp(t, `^nats-route://127\.0\.0\.1:\d+$`, n.RouteURL())
		require.Len(t, n.Config().Cluster.Routes, 3, "every node names every node")
	}
	require.NotEqual(t, nodes[0].RouteURL(), nodes[1].RouteURL())

	js := connect(t, nodes[0].ClientURL())
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:   "subscriptions",
		Storage:  jetstream.FileStorage,
		Replicas: 3,
	})
	require.NoError(t, err)
	rev, err := kv.Put(ctx, "sub", []byte("before"))
	require.NoError(t, err)
	// On a replicated bucket a stale revision is refused too (another error code).
	_, err = kv.Update(ctx, "sub", []byte("first"), rev)
	require.NoError(t, err)
	_, err = kv.Update(ctx, "sub", []byte("stale"), rev)
	require.ErrorIs(t, err, jetstream.ErrKeyRevisionMismatch)

	down := nodes[2]
	cfg := down.Config()
	down.Shutdown()
	// Its leaderships, if any, move to the others; the write goes through once they have.
	eventually(t, 20*time.Second, func() error {
		_, err := kv.Put(ctx, "sub", []byte("while down"))
		return err
	})
	e, err := kv.Get(ctx, "sub")
	require.NoError(t, err)
	require.Equal(t, "while down", string(e.Value()))

	back, err := Start(cfg)
	require.NoError(t, err)
	t.Cleanup(back.Shutdown)
	require.Equal(t, down.RouteURL(), back.RouteURL(), "the same route port")
	require.NoError(t, back.WaitJetStream(ctx))
	kvBack, err := connect(t, back.ClientURL()).KeyValue(ctx, "subscriptions")
	require.NoError(t, err)
	eventually(t, 20*time.Second, func() error {
		if !back.srv.JetStreamIsStreamCurrent("$G", "KV_subscriptions") {
			return errors.New("the restarted node's replica is not current")
		}
		e, err := kvBack.Get(ctx, "sub")
		if err != nil {
			return err
		}
		if string(e.Value()) != "while down" {
			return errors.New("read " + strconv.Quote(string(e.Value())))
		}
		return nil
	})
}

// TestTokenRefusesOthers: a client without the token is not let in.
func TestTokenRefusesOthers(t *testing.T) {
	t.Parallel()
	n := startNode(t, Config{Token: "s3cret"})
	_, err := nats.Connect(n.ClientURL(), nats.NoReconnect())
	require.ErrorIs(t, err, nats.ErrAuthorization)
	_, err = nats.Connect(n.ClientURL(), nats.Token("wrong"), nats.NoReconnect())
	require.ErrorIs(t, err, nats.ErrAuthorization)
	nc, err := nats.Connect(n.ClientURL(), nats.Token("s3cret"))
	require.NoError(t, err)
	nc.Close()
}

// TestStartRefuses checks what Start refuses before or while starting, without waiting
// out a timeout.
func TestStartRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no store", Config{}, "data directory"},
		{"negative port", Config{DataDir: dir, Port: -1}, "port -1"},
		{"unnamed cluster", Config{DataDir: dir, Cluster: Cluster{Routes: []string{"127.0.0.1:1"}}}, "cluster needs a name"},
		{"no routes", Config{DataDir: dir, Cluster: Cluster{Name: "c", Port: 1}}, "at least one route"},
		{"bad route", Config{DataDir: dir, Cluster: Cluster{Name: "c", Routes: []string{"nats-route://host-without-port"}}}, "host-without-port"},
		{"space in name", Config{DataDir: dir, Name: "a b"}, "white space"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}

	t.Run("port in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		begin := time.Now()
		_, err = Start(Config{DataDir: t.TempDir(), Port: port})
		require.ErrorContains(t, err, strconv.Itoa(port), "NATS's own report, which names the port")
		require.Less(t, time.Since(begin), readyTimeout, "reported, not timed out")
	})

	t.Run("store is a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(file, nil, 0o600))
		_, err := Start(Config{DataDir: file})
		require.ErrorContains(t, err, "JetStream")
	})

	_, err := StartCluster(t.TempDir(), 1, "c")
	require.ErrorContains(t, err, "cluster of 1")
}

// TestLoggerCarriesNATS: NATS's notices reach the configured logger at info, its
// debug lines only when the handler wants them.
func TestLoggerCarriesNATS(t *testing.T) {
	t.Parallel()
	var info, debug syncBuffer
	startNode(t, Config{Logger: slog.New(slog.NewTextHandler(&info, nil))})
	startNode(t, Config{Logger: slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.Contains(t, info.String(), "level=INFO msg=\"Server is ready\" component=nats")
	require.NotContains(t, info.String(), "level=DEBUG")
	require.Contains(t, debug.String(), "level=DEBUG")
}

// TestStartClusterLosesAPort: another process takes a reserved route port before its
// node binds it; StartCluster starts again on fresh ports, and the cluster works.
func TestStartClusterLosesAPort(t *testing.T) { // not parallel: it sets released
	var stolen net.Listener
	var ports []int
	released = func(port int) {
		ports = append(ports, port)
		if stolen == nil && len(ports) == 2 {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			require.NoError(t, err)
			stolen = ln
		}
	}
	t.Cleanup(func() { released = nil })
	nodes, err := StartCluster(t.TempDir(), 2, "retry")
	require.NoError(t, err)
	for _, n := range nodes {
		t.Cleanup(n.Shutdown)
	}
	require.NotNil(t, stolen)
	defer stolen.Close()
	require.Len(t, ports, 4, "two ports on the first attempt, two on the second")
	stolenURL := "nats-route://" + stolen.Addr().String()
	for _, n := range nodes {
		require.NotEqual(t, stolenURL, n.RouteURL())
		require.NotContains(t, n.Config().Cluster.Routes, stolenURL)
	}
	ctx := testContext(t)
	kv, err := connect(t, nodes[1].ClientURL()).CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "r2", Replicas: 2})
	require.NoError(t, err)
	_, err = kv.Put(ctx, "k", []byte("v"))
	require.NoError(t, err)
}

// TestPortTaken is how StartCluster tells a lost reservation from another failure.
func TestPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.True(t, portTaken(port))
	require.NoError(t, ln.Close())
	require.False(t, portTaken(port))
}

// syncBuffer is a bytes.Buffer that NATS's goroutines and the test may share.
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

// TestDerivedName: a node without a name is named after the address it is known by,
// which stays the same across restarts and differs between machines.
func TestDerivedName(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	require.NoError(t, err)
	routes := []string{"127.0.0.1:6222"}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Port: 4222}, "127.0.0.1-4222"},
		{Config{Host: "10.0.0.7", Port: 4222}, "10.0.0.7-4222"},
		{Config{Host: "0.0.0.0", Port: 4222}, host + "-4222"},
		{Config{Host: "::", Port: 4222}, host + "-4222"},
		{Config{Port: 0}, ""},
		{Config{Name: "given", Port: 4222}, "given"},
		{Config{Port: 4222, Cluster: Cluster{Name: "c", Port: 6222, Routes: routes}}, "127.0.0.1-6222"},
		{Config{Port: 4222, Cluster: Cluster{Name: "c", Host: "0.0.0.0", Port: 6222, Routes: routes}}, host + "-6222"},
		{Config{Port: 4222, Cluster: Cluster{Name: "c", Routes: routes}}, ""},
	} {
		tc.cfg.DataDir = "store"
		opts, err := options(tc.cfg)
		require.NoError(t, err)
		require.Equal(t, tc.want, opts.ServerName, "%+v", tc.cfg)
	}
}
