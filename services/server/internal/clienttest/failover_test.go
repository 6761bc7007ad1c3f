package clienttest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/redundancy"
	"uastack.dev/services/server/internal/server"
)

// redundantServer starts a server of a redundant set, named name, in the given health,
// and returns its URL. servertest does not hand out the Server, whose SetHealth this
// needs.
func redundantServer(t *testing.T, name string, health redundancy.Health) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := config.Default()
	cfg.Endpoint.ListenAddress = ln.Addr().String()
	cfg.Endpoint.EndpointURL = "opc.tcp://" + ln.Addr().String()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1", "localhost"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:failover:" + name
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	require.NoError(t, cfg.Validate())
	srv, err := server.New(cfg, server.Options{})
	require.NoError(t, err)
	srv.SetHealth(health)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
		_ = srv.Close()
	})
	return cfg.Endpoint.EndpointURL
}

// TestFailover loses the server (A, behind a proxy that goes away) under a live
// subscription: the client reads the ServiceLevel of the redundant set, moves to the
// healthiest server (C, Healthy at 200 or more, not B, Degraded at 199 or less) and
// creates its subscription there again, with the same client handle.
func TestFailover(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var a, b, c string
	a = redundantServer(t, "A", redundancy.Healthy)
	b = redundantServer(t, "B", redundancy.Degraded)
	c = redundantServer(t, "C", redundancy.Healthy)
	pa := newProxy(t, a[len("opc.tcp://"):])
	opts := []client.Option{
		client.Security(policy.URINone, ua.MessageSecurityModeNone),
		client.WithBackoff(client.Backoff{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 3}),
	}
	cl := dial(t, ctx, pa.URL(), append(opts, client.Failover(pa.URL(), b, c))...)
	wc := dial(t, ctx, c, opts...)
	sub, rec := subscribeDemo(t, ctx, cl, cl, client.SubscriptionParams{Interval: 50 * time.Millisecond})

	pa.ln.Close() // A is gone: its address refuses connections
	pa.Drop()
	require.Eventually(t, func() bool { return cl.URL() == c }, 20*time.Second, 20*time.Millisecond, "moved to C")
	require.Eventually(t, func() bool { return sub.Stats().Recreated == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Zero(t, sub.Stats().Transferred, "subscription ids are per server")

	_, err := wc.WriteValue(ctx, demoInt32, codec.Int32Variant(5))
	require.NoError(t, err)
	rec.waitFor(t, 5, 10*time.Second)
	dv, err := cl.ReadValue(ctx, demoInt32)
	require.NoError(t, err)
	require.Equal(t, "5", fmt.Sprint(dv.Value.Value()))
}

// TestFailoverNoServer reports the reconnect's failure when no server of the set answers.
func TestFailoverNoServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := redundantServer(t, "A", redundancy.Healthy)
	pa := newProxy(t, a[len("opc.tcp://"):])
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadURL := "opc.tcp://" + dead.Addr().String()
	dead.Close()
	cl := dial(t, ctx, pa.URL(), client.Security(policy.URINone, ua.MessageSecurityModeNone),
		client.WithBackoff(client.Backoff{Initial: 10 * time.Millisecond, Attempts: 2}), client.Failover(deadURL))
	pa.ln.Close()
	pa.Drop()
	_, err = cl.ReadValue(ctx, demoInt32)
	require.Error(t, err)
	require.Contains(t, err.Error(), "failover")
	require.Equal(t, pa.URL(), cl.URL())

	// A server without redundancy offers an empty ServerUriArray.
	wa := dial(t, ctx, a, client.Security(policy.URINone, ua.MessageSecurityModeNone))
	urls, err := wa.RedundantServers(ctx)
	require.NoError(t, err)
	require.Empty(t, urls)
}
