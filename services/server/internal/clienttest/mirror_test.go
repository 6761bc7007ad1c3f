package clienttest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/mirror/natsnode"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
	"uastack.dev/services/server/internal/servertest"
)

// natsServer starts one NATS server with JetStream for the test.
func natsServer(t testing.TB) *natsnode.Node {
	t.Helper()
	n, err := natsnode.Start(natsnode.Config{DataDir: filepath.Join(t.TempDir(), "nats")})
	require.NoError(t, err)
	t.Cleanup(n.Shutdown)
	return n
}

// clusterKey returns a fresh cluster key in base64, as mirror.key takes it.
func clusterKey(t testing.TB) string {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(k)
}

// mirroredServer starts a server of the redundant set cluster, mirrored through natsURL
// with key; name makes its ApplicationUri.
func mirroredServer(t testing.TB, natsURL, cluster, key, name string, configure ...func(*config.Config)) *servertest.Server {
	t.Helper()
	ts, _ := testServer(t, func(c *config.Config) {
		for _, f := range configure {
			f(c)
		}
		c.Application.ApplicationURI = "urn:127.0.0.1:uastack:mirror:" + name
		c.Mirror.URLs = []string{natsURL}
		c.Mirror.Cluster = cluster
		c.Mirror.Key = key
		c.Redundancy.DrainTimeout = time.Second
	})
	return ts
}

// mirroredPair starts a NATS server and servers A and B of the redundant set cluster
// mirrored through it, and a client PKI that trusts both.
func mirroredPair(t testing.TB, cluster string, configure ...func(*config.Config)) (a, b *servertest.Server, trust *pki.PKI) {
	t.Helper()
	nats := natsServer(t)
	key := clusterKey(t)
	a = mirroredServer(t, nats.ClientURL(), cluster, key, "A", configure...)
	b = mirroredServer(t, nats.ClientURL(), cluster, key, "B", configure...)
	return a, b, trustAll(t, a, b)
}

// trustAll opens a client PKI that trusts every server of servers.
func trustAll(t testing.TB, servers ...*servertest.Server) *pki.PKI {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "client-pki-set")
	certs := filepath.Join(dir, "trusted", "certs")
	require.NoError(t, os.MkdirAll(certs, 0o700))
	for i, s := range servers {
		own := filepath.Join(s.PKIDir, "own", "certs")
		entries, err := os.ReadDir(own)
		require.NoError(t, err)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(own, e.Name()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(certs, string(rune('a'+i))+"-"+e.Name()), b, 0o600))
		}
	}
	p, err := pki.Open(dir, pki.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestMirrorFailover is Part 4 §6.6.2's HotAndMirrored failover: a client with a live
// subscription on A loses A (its connections cut and its address gone, A itself still
// running, as in a partition); it moves to B and activates the same session there. B
// takes the session over with its subscription, which goes on with the same id and its
// sequence numbers; A lets the session go. Every value written before and after arrives,
// in order; at the takeover the current value may arrive again.
func TestMirrorFailover(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a, b, trust := mirroredPair(t, "failover")
	for _, sec := range securities {
		t.Run(sec.name, func(t *testing.T) {
			pa := newProxy(t, a.Addr.String())
			wa := dial(t, ctx, a.URL, dialOpts(t, securities[0], trust)...)
			cl := dial(t, ctx, pa.URL(), dialOpts(t, sec, trust, client.Failover(pa.URL(), b.URL),
				client.WithBackoff(client.Backoff{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 3}))...)
			wb := dial(t, ctx, b.URL, dialOpts(t, securities[0], trust)...)
			// The set says what it is.
			dv, err := cl.ReadValue(ctx, codec.NewNumericNodeId(0, id.Server_ServerRedundancy_RedundancySupport))
			require.NoError(t, err)
			require.EqualValues(t, ua.RedundancySupportHotAndMirrored, dv.Value.Value())
			require.Eventually(t, func() bool {
				dv, err := cl.ReadValue(ctx, codec.NewNumericNodeId(0, id.Server_ServerRedundancy_ServerUriArray))
				require.NoError(t, err)
				uris, _ := dv.Value.Value().([]string)
				return slices.Equal(uris, []string{"urn:127.0.0.1:uastack:mirror:A", "urn:127.0.0.1:uastack:mirror:B"})
			}, 5*time.Second, 20*time.Millisecond, "ServerUriArray names the set")

			write := writeAll(t, ctx, wa, wb)
			write(0, 0)
			sess := cl.SessionID()
			sub, rec := subscribeDemo(t, ctx, cl, wa, client.SubscriptionParams{Interval: 50 * time.Millisecond})
			subID := sub.ID()
			write(1, 20)
			rec.waitFor(t, 20, 10*time.Second)

			// A holds the writer's session and the client's (the count is refreshed now and
			// then).
			require.Eventually(t, func() bool { return sessionCount(t, ctx, wa) == 2 }, 5*time.Second, 50*time.Millisecond)
			// A browse begun on A, three references at a time: its continuation point goes
			// on at B.
			demoFolder := ua.BrowseDescription{NodeId: codec.NewStringNodeId(1, "Demo"), BrowseDirection: ua.BrowseDirectionForward,
				IncludeSubtypes: true, ResultMask: 0x3f}
			var all []ua.ReferenceDescription
			for ref, err := range wa.References(ctx, demoFolder, 0) {
				require.NoError(t, err)
				all = append(all, ref)
			}
			require.Greater(t, len(all), 6)
			br, err := cl.Browse(ctx, &ua.BrowseRequest{RequestedMaxReferencesPerNode: 3, NodesToBrowse: []ua.BrowseDescription{demoFolder}})
			require.NoError(t, err)
			require.NotEmpty(t, br.Results[0].ContinuationPoint)
			got := slices.Clone(br.Results[0].References)

			cutAndMove(t, pa, cl, b.URL, "moved to B") // A is out of reach; it runs on
			rec.waitFor(t, 20, 10*time.Second)         // B reports the current value
			for cp := br.Results[0].ContinuationPoint; len(cp) > 0; {
				next, err := cl.BrowseNext(ctx, &ua.BrowseNextRequest{ContinuationPoints: [][]byte{cp}})
				require.NoError(t, err)
				require.Equal(t, status.Good, next.Results[0].StatusCode, "BrowseNext on B")
				got = append(got, next.Results[0].References...)
				cp = next.Results[0].ContinuationPoint
			}
			require.Equal(t, all, got, "the browse begun on A ends on B")
			write(21, 40)
			rec.waitFor(t, 40, 10*time.Second)

			requireTakenOver(t, cl, sess, sub, rec, 40)
			require.Eventually(t, func() bool { return sessionCount(t, ctx, wa) == 1 }, 10*time.Second, 50*time.Millisecond,
				"A let the session go")
			require.Equal(t, subID, sub.ID(), "the same subscription")
			require.Zero(t, sub.Stats().Transferred)
		})
	}
}

// TestMirrorFailoverTwice: a session moves from A to B and back to A. B goes on with
// the changes of the subscription it took over, numbered after the set's last one and
// with no new snapshot; A, taking it back, replays the last snapshot with A's and then
// B's changes, and the subscription still delivers every value once, in order. On A
// the subscription first sends more messages than the mirror has change slots (128), so
// the takeovers read slots written over and snapshots taken since.
func TestMirrorFailoverTwice(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a, b, trust := mirroredPair(t, "twice", func(c *config.Config) { c.Subscriptions.MinPublishingInterval = 10 * time.Millisecond })
	pa, pb, back := newProxy(t, a.Addr.String()), newProxy(t, b.Addr.String()), newProxy(t, a.Addr.String())
	wa := dial(t, ctx, a.URL, dialOpts(t, securities[0], trust)...)
	wb := dial(t, ctx, b.URL, dialOpts(t, securities[0], trust)...)
	cl := dial(t, ctx, pa.URL(), dialOpts(t, securities[0], trust, client.Failover(pa.URL(), pb.URL(), back.URL()),
		client.WithBackoff(client.Backoff{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 3}))...)
	write := writeAll(t, ctx, wa, wb)
	write(0, 0)
	sess := cl.SessionID()
	sub, rec := subscribeDemo(t, ctx, cl, wa, client.SubscriptionParams{Interval: 10 * time.Millisecond})
	write(1, 400)
	rec.waitFor(t, 400, 10*time.Second)
	require.Greater(t, sub.Stats().Delivered, uint64(128), "more messages than change slots")

	cutAndMove(t, pa, cl, pb.URL(), "moved to B")
	write(401, 420)
	rec.waitFor(t, 420, 10*time.Second)

	cutAndMove(t, pb, cl, back.URL(), "moved back to A")
	write(421, 440)
	rec.waitFor(t, 440, 10*time.Second)

	requireTakenOver(t, cl, sess, sub, rec, 440)
}

// TestMirrorStandby: a client with a standby keeps a channel and a session of its own open
// to B; when A is lost it activates its session on that channel, with no new connection
// to B, and the subscription goes on there with every value once, in order.
func TestMirrorStandby(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b, trust := mirroredPair(t, "standby")
	pa, pb := newProxy(t, a.Addr.String()), newProxy(t, b.Addr.String())
	wa := dial(t, ctx, a.URL, dialOpts(t, securities[0], trust)...)
	wb := dial(t, ctx, b.URL, dialOpts(t, securities[0], trust)...)
	cl := dial(t, ctx, pa.URL(), dialOpts(t, securities[1], trust, client.Failover(pa.URL(), pb.URL()), client.Standby(50*time.Millisecond),
		client.WithBackoff(client.Backoff{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 2}))...)
	require.Eventually(t, func() bool { return cl.StandbyURL() == pb.URL() }, 10*time.Second, 20*time.Millisecond, "a standby at B")
	require.Eventually(t, func() bool { return sessionCount(t, ctx, wb) == 2 }, 5*time.Second, 50*time.Millisecond,
		"B holds the writer's session and the standby's")
	write := writeAll(t, ctx, wa, wb)
	write(0, 0)
	sess := cl.SessionID()
	sub, rec := subscribeDemo(t, ctx, cl, wa, client.SubscriptionParams{Interval: 50 * time.Millisecond})
	write(1, 20)
	rec.waitFor(t, 20, 10*time.Second)

	before := pb.Accepted()
	cutAndMove(t, pa, cl, pb.URL(), "moved to B")
	write(21, 40)
	rec.waitFor(t, 40, 10*time.Second)
	require.Equal(t, before, pb.Accepted(), "the move took the standby's channel")
	require.Empty(t, cl.StandbyURL(), "the standby was used")

	requireTakenOver(t, cl, sess, sub, rec, 40)
	// B holds the writer's session and the client's; the standby's was closed.
	require.Eventually(t, func() bool { return sessionCount(t, ctx, wb) == 2 }, 5*time.Second, 50*time.Millisecond)
}

// cutAndMove cuts proxy p, its listener and its connections, as a server that is lost,
// and waits until cl is at url.
func cutAndMove(t *testing.T, p *proxy, cl *client.Client, url, what string) {
	t.Helper()
	p.ln.Close()
	p.Drop()
	require.Eventually(t, func() bool { return cl.URL() == url }, 30*time.Second, 20*time.Millisecond, what)
}

// requireTakenOver checks that cl kept session sess and subscription sub, taken over
// and not created again, with no message lost, and that rec got every value 0..n once,
// in order (the current value may come again at a takeover).
func requireTakenOver(t *testing.T, cl *client.Client, sess codec.NodeId, sub *client.Subscription, rec *recorder, n int32) {
	t.Helper()
	require.Equal(t, sess, cl.SessionID(), "the same session")
	st := sub.Stats()
	require.Zero(t, st.Recreated, "taken over, not created again")
	require.Zero(t, st.Lost)
	require.Equal(t, upTo(n), slices.Compact(rec.values()), "every value once, in order: %s", rec)
}

// writeAll returns a function that writes the values from..to to the demo Int32, each to
// every server through its writer, a few milliseconds apart so that each is sampled.
func writeAll(t *testing.T, ctx context.Context, writers ...*client.Client) func(from, to int32) {
	return func(from, to int32) {
		for v := from; v <= to; v++ {
			for _, w := range writers {
				_, err := w.WriteValue(ctx, demoInt32, codec.Int32Variant(v))
				require.NoError(t, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// upTo returns 0..n.
func upTo(n int32) []int32 {
	vals := make([]int32, n+1)
	for i := range vals {
		vals[i] = int32(i)
	}
	return vals
}

// sessionCount reads the server's CurrentSessionCount.
func sessionCount(t testing.TB, ctx context.Context, c *client.Client) int {
	t.Helper()
	dv, err := c.ReadValue(ctx, codec.NewNumericNodeId(0, id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount))
	require.NoError(t, err)
	return int(dv.Value.Bits())
}

// TestMirrorDrain: a server of the set told to stop drains (ServiceLevel 0); its client,
// watching the ServiceLevel, moves its session to B before the server goes, and the
// server stops as soon as no session is left, well within redundancy.drainTimeout.
func TestMirrorDrain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nats := natsServer(t)
	key := clusterKey(t)
	b := mirroredServer(t, nats.ClientURL(), "drain", key, "B")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := config.Default()
	cfg.Endpoint.ListenAddress = ln.Addr().String()
	cfg.Endpoint.EndpointURL = "opc.tcp://" + ln.Addr().String()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1", "localhost"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:mirror:drain:A"
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	cfg.Mirror.URLs, cfg.Mirror.Cluster, cfg.Mirror.Key = []string{nats.ClientURL()}, "drain", key
	cfg.Redundancy.DrainTimeout = 30 * time.Second
	require.NoError(t, cfg.Validate())
	srv, err := server.New(cfg, server.Options{})
	require.NoError(t, err)
	defer srv.Close()
	serveCtx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(serveCtx, ln) }()
	a := cfg.Endpoint.EndpointURL

	none := client.Security(policy.URINone, ua.MessageSecurityModeNone)
	cl := dial(t, ctx, a, none, client.Failover(a, b.URL), client.ServiceLevelWatch(50*time.Millisecond))
	wb := dial(t, ctx, b.URL, none)
	_, err = wb.WriteValue(ctx, demoInt32, codec.Int32Variant(0))
	require.NoError(t, err)
	sub, rec := subscribeDemo(t, ctx, cl, cl, client.SubscriptionParams{Interval: 50 * time.Millisecond})
	sess := cl.SessionID()

	began := time.Now()
	stop() // SIGTERM, as Run sees it
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("A did not stop once its client left")
	}
	require.Less(t, time.Since(began), cfg.Redundancy.DrainTimeout, "stopped before the drain's bound")
	require.Equal(t, b.URL, cl.URL(), "moved to B")
	require.Equal(t, sess, cl.SessionID(), "the same session")
	_, err = wb.WriteValue(ctx, demoInt32, codec.Int32Variant(5))
	require.NoError(t, err)
	rec.waitFor(t, 5, 10*time.Second)
	require.Zero(t, sub.Stats().Recreated)
}

// TestMirrorWrites: a value written on A into a mirrored namespace (mirror.namespaces)
// is the value on B too, and on C, a server that joins the set afterwards; a namespace
// that is not mirrored keeps its values to itself.
func TestMirrorWrites(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nats := natsServer(t)
	key := clusterKey(t)
	demo := func(c *config.Config) { c.Mirror.Namespaces = []string{"urn:uastack:demo"} }
	a := mirroredServer(t, nats.ClientURL(), "writes", key, "A", demo)
	b := mirroredServer(t, nats.ClientURL(), "writes", key, "B", demo)
	other := mirroredServer(t, nats.ClientURL(), "writes", key, "other")
	none := client.Security(policy.URINone, ua.MessageSecurityModeNone)
	ca, cb, co := dial(t, ctx, a.URL, none), dial(t, ctx, b.URL, none), dial(t, ctx, other.URL, none)
	value := func(c *client.Client) int32 {
		dv, err := c.ReadValue(ctx, demoInt32)
		require.NoError(t, err)
		return int32(dv.Value.Bits())
	}
	before := value(co)
	for v := int32(1); v <= 20; v++ {
		code, err := ca.WriteValue(ctx, demoInt32, codec.Int32Variant(v))
		require.NoError(t, err)
		require.True(t, code.IsGood(), code)
	}
	require.Eventually(t, func() bool { return value(cb) == 20 }, 5*time.Second, 10*time.Millisecond, "B has A's write")
	code, err := cb.WriteValue(ctx, demoInt32, codec.Int32Variant(21))
	require.NoError(t, err)
	require.True(t, code.IsGood(), code)
	require.Eventually(t, func() bool { return value(ca) == 21 }, 5*time.Second, 10*time.Millisecond, "A has B's write")

	c := mirroredServer(t, nats.ClientURL(), "writes", key, "C", demo)
	cc := dial(t, ctx, c.URL, none)
	require.Eventually(t, func() bool { return value(cc) == 21 }, 5*time.Second, 10*time.Millisecond, "C starts with the set's value")
	require.Equal(t, before, value(co), "a server that does not mirror the namespace keeps its own")
}
