package clienttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	"uastack.dev/services/server/internal/config"
)

func n0(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }

func objects() ua.BrowseDescription {
	return ua.BrowseDescription{
		NodeId:          n0(id.ObjectsFolder),
		BrowseDirection: ua.BrowseDirectionForward,
		ReferenceTypeId: n0(id.HierarchicalReferences),
		IncludeSubtypes: true,
		ResultMask:      0x3f,
	}
}

// TestDiscovery checks GetEndpoints, FindServers and the choice of the most secure
// endpoint when none is named.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	ts, trust := testServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	eps, err := client.GetEndpoints(ctx, ts.URL)
	require.NoError(t, err)
	require.Len(t, eps, 5) // None, Basic256Sha256 ×2, Aes256Sha256RsaPss ×2
	servers, err := client.FindServers(ctx, ts.URL)
	require.NoError(t, err)
	require.Len(t, servers, 1)
	require.Equal(t, ts.Config.Application.ApplicationURI, servers[0].ApplicationUri)
	servers, err = client.FindServers(ctx, ts.URL, "urn:someone:else")
	require.NoError(t, err)
	require.Empty(t, servers)

	ep, err := client.SelectEndpoint(eps, "", 0)
	require.NoError(t, err)
	require.Equal(t, policy.URIAes256Sha256RsaPss, ep.SecurityPolicyUri)
	require.Equal(t, ua.MessageSecurityModeSignAndEncrypt, ep.SecurityMode)

	// No Security option: the most secure endpoint, and a working session on it.
	id := testIdentities(t)
	c := dial(t, ctx, ts.URL, client.Certificate(id.appDER, id.appKey), client.Application(appURI, "t"), client.TrustStore(trust))
	require.Equal(t, policy.URIAes256Sha256RsaPss, c.Endpoint().SecurityPolicyUri)
	dv, err := c.ReadValue(ctx, n0(id2259))
	require.NoError(t, err)
	require.Equal(t, status.Good, dv.Status)

	// A secured endpoint is refused without a certificate, None is never chosen by default.
	_, err = client.Dial(ctx, ts.URL, client.TrustStore(trust))
	require.ErrorIs(t, err, status.BadCertificateInvalid)
	_, err = client.SelectEndpoint(eps[len(eps)-1:], "", 0)
	require.ErrorIs(t, err, status.BadSecurityPolicyRejected)
}

// id2259 is Server_ServerStatus_State.
const id2259 = id.Server_ServerStatus_State

// TestUntrustedServer checks that the client refuses a server certificate missing from
// its trust store, and that InsecureSkipVerify is the explicit way around it.
func TestUntrustedServer(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	empty, err := pki.Open(t.TempDir(), pki.Options{})
	require.NoError(t, err)
	defer empty.Close()
	sec := securities[1]
	_, err = client.Dial(ctx, ts.URL, dialOpts(t, sec, empty)...)
	require.ErrorIs(t, err, status.BadCertificateUntrusted)
	c := dial(t, ctx, ts.URL, dialOpts(t, sec, empty, client.InsecureSkipVerify())...)
	_, err = c.ReadValue(ctx, n0(id2259))
	require.NoError(t, err)
}

// TestServices runs every service under None and Basic256Sha256 SignAndEncrypt.
func TestServices(t *testing.T) {
	t.Parallel()
	ts, trust := testServer(t, nil)
	for _, sec := range securities {
		t.Run(sec.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := dial(t, ctx, ts.URL, dialOpts(t, sec, trust)...)

			// Read: a good node and an unknown one; per-item codes stay in the results.
			rr, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []ua.ReadValueId{
				{NodeId: n0(id2259), AttributeId: 13},
				{NodeId: codec.NewStringNodeId(1, "nope"), AttributeId: 13},
			}})
			require.NoError(t, err)
			require.Equal(t, status.Good, rr.Results[0].Status)
			require.EqualValues(t, 0, rr.Results[0].Value.Value())
			require.Equal(t, status.BadNodeIdUnknown, rr.Results[1].Status)
			// A call that fails as a whole is a *StatusError matching its code.
			_, err = c.Read(ctx, &ua.ReadRequest{})
			require.ErrorIs(t, err, status.BadNothingToDo)
			var se *client.StatusError
			require.ErrorAs(t, err, &se)
			require.Equal(t, "Read", se.Service)

			// Write, then read back.
			node := codec.NewStringNodeId(1, "Demo.Scalar_Int32")
			code, err := c.WriteValue(ctx, node, codec.Int32Variant(-42))
			require.NoError(t, err)
			require.Equal(t, status.Good, code)
			dv, err := c.ReadValue(ctx, node)
			require.NoError(t, err)
			require.EqualValues(t, -42, dv.Value.Value())

			// Browse and the iterator (one reference per call).
			br, err := c.Browse(ctx, &ua.BrowseRequest{NodesToBrowse: []ua.BrowseDescription{objects()}})
			require.NoError(t, err)
			var want []string
			for _, r := range br.Results[0].References {
				want = append(want, r.BrowseName.Name)
			}
			require.Contains(t, want, "Server")
			require.Contains(t, want, "Demo")
			var got []string
			for r, err := range c.References(ctx, objects(), 1) {
				require.NoError(t, err)
				got = append(got, r.BrowseName.Name)
			}
			require.Equal(t, want, got)

			// TranslateBrowsePaths: Objects/Server.
			tr, err := c.TranslateBrowsePaths(ctx, &ua.TranslateBrowsePathsToNodeIdsRequest{BrowsePaths: []ua.BrowsePath{{
				StartingNode: n0(id.ObjectsFolder),
				RelativePath: ua.RelativePath{Elements: []ua.RelativePathElement{{
					ReferenceTypeId: n0(id.HierarchicalReferences), IncludeSubtypes: true,
					TargetName: codec.QualifiedName{Name: "Server"},
				}}},
			}}})
			require.NoError(t, err)
			require.Equal(t, status.Good, tr.Results[0].StatusCode)
			require.Equal(t, n0(id.Server), tr.Results[0].Targets[0].TargetId.NodeId)

			// Call Demo/Add.
			cr, err := c.Call(ctx, &ua.CallRequest{MethodsToCall: []ua.CallMethodRequest{{
				ObjectId: codec.NewStringNodeId(1, "Demo"), MethodId: codec.NewStringNodeId(1, "Demo.Add"),
				InputArguments: []codec.Variant{codec.DoubleVariant(1.5), codec.DoubleVariant(2)},
			}}})
			require.NoError(t, err)
			require.Equal(t, status.Good, cr.Results[0].StatusCode)
			require.Equal(t, []codec.Variant{codec.DoubleVariant(3.5)}, cr.Results[0].OutputArguments)

			// RegisterNodes: the registered id reads like the node.
			reg, err := c.RegisterNodes(ctx, []codec.NodeId{node})
			require.NoError(t, err)
			require.Len(t, reg, 1)
			dv, err = c.ReadValue(ctx, reg[0])
			require.NoError(t, err)
			require.EqualValues(t, -42, dv.Value.Value())
			require.NoError(t, c.UnregisterNodes(ctx, reg))
			_, err = c.RegisterNodes(ctx, nil)
			require.ErrorIs(t, err, status.BadNothingToDo)

			// Closed: calls fail with BadSessionClosed, and the token is gone on the server.
			require.NoError(t, c.Close(ctx))
			_, err = c.ReadValue(ctx, node)
			require.ErrorIs(t, err, status.BadSessionClosed)
			require.NoError(t, c.Close(ctx))
		})
	}
}

// TestIdentities logs in as anonymous, user name and X509 user over both securities,
// and checks that wrong credentials are refused at once, not retried.
func TestIdentities(t *testing.T) {
	t.Parallel()
	// The X509 token policy names no SecurityPolicy: the channel's applies.
	ts, trust := testServer(t, func(c *config.Config) {
		c.Security.UserTokenPolicies = []config.UserTokenPolicy{
			{Type: config.TokenAnonymous},
			{Type: config.TokenUsername, SecurityPolicy: policy.URIBasic256Sha256},
			{Type: config.TokenCertificate},
		}
	})
	id := testIdentities(t)
	cases := []struct {
		name string
		opt  client.Option
		none bool // also on a None channel
	}{
		{"anonymous", client.Anonymous(), true},
		{"username", client.UserName("alice", "s3cret"), true}, // Basic256Sha256 token policy
		{"x509", client.X509Identity(id.userDER, id.userKey), false},
	}
	for _, sec := range securities {
		for _, tc := range cases {
			if sec.policy == policy.URINone && !tc.none {
				continue
			}
			t.Run(sec.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				c := dial(t, ctx, ts.URL, dialOpts(t, sec, trust, tc.opt)...)
				dv, err := c.ReadValue(ctx, n0(id2259))
				require.NoError(t, err)
				require.Equal(t, status.Good, dv.Status)
			})
		}
	}
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		start := time.Now()
		_, err := client.Dial(ctx, ts.URL, dialOpts(t, securities[1], trust, client.UserName("alice", "wrong"),
			client.WithBackoff(client.Backoff{Initial: 2 * time.Second}))...)
		require.ErrorIs(t, err, status.BadUserAccessDenied)
		require.Less(t, time.Since(start), 2*time.Second, "a refused login is not retried")
	})
	t.Run("x509 on None", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// Nothing to sign with: the client refuses before asking.
		_, err := client.Dial(ctx, ts.URL, dialOpts(t, securities[0], trust, client.X509Identity(id.userDER, id.userKey))...)
		require.ErrorIs(t, err, status.BadIdentityTokenRejected)

		// A token policy with its own SecurityPolicy makes it possible.
		ts2, trust2 := testServer(t, func(c *config.Config) {
			c.Security.UserTokenPolicies = []config.UserTokenPolicy{{Type: config.TokenCertificate, SecurityPolicy: policy.URIBasic256Sha256}}
		})
		c := dial(t, ctx, ts2.URL, dialOpts(t, securities[0], trust2, client.X509Identity(id.userDER, id.userKey))...)
		dv, err := c.ReadValue(ctx, n0(id2259))
		require.NoError(t, err)
		require.Equal(t, status.Good, dv.Status)
	})
}

// TestBrowseReleasesContinuationPoints gives the session a single continuation point:
// an iteration stopped early must release it, or the next Browse that needs one gets
// BadNoContinuationPoints.
func TestBrowseReleasesContinuationPoints(t *testing.T) {
	t.Parallel()
	ts, trust := testServer(t, func(c *config.Config) { c.Limits.MaxBrowseContinuationPoints = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, ctx, ts.URL, dialOpts(t, securities[0], trust)...)
	for range 3 {
		n := 0
		for _, err := range c.References(ctx, objects(), 1) {
			require.NoError(t, err)
			n++
			if n == 2 {
				break
			}
		}
		require.Equal(t, 2, n)
	}
	// The leak this guards against, shown by hand: a continuation point left open.
	br, err := c.Browse(ctx, &ua.BrowseRequest{RequestedMaxReferencesPerNode: 1, NodesToBrowse: []ua.BrowseDescription{objects()}})
	require.NoError(t, err)
	require.NotEmpty(t, br.Results[0].ContinuationPoint)
	for _, err := range c.References(ctx, objects(), 1) {
		require.ErrorIs(t, err, status.BadNoContinuationPoints)
		break
	}
}

// TestConcurrentReads runs Reads from 50 goroutines on one channel.
func TestConcurrentReads(t *testing.T) {
	t.Parallel()
	ts, trust := testServer(t, nil)
	for _, sec := range securities {
		t.Run(sec.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := dial(t, ctx, ts.URL, dialOpts(t, sec, trust)...)
			var wg sync.WaitGroup
			errs := make(chan error, 50)
			for g := range 50 {
				wg.Go(func() {
					node := codec.NewStringNodeId(1, "Demo.Scalar_Int32")
					if g%2 == 0 {
						node = n0(id2259)
					}
					for range 20 {
						dv, err := c.ReadValue(ctx, node)
						if err == nil && dv.Status != status.Good {
							err = dv.Status
						}
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}

// TestReconnect cuts the TCP connection under a session: the next calls reconnect and
// re-activate the same session on a new channel (Part 4 §5.6.3).
func TestReconnect(t *testing.T) {
	t.Parallel()
	ts, trust := testServer(t, nil)
	for _, sec := range securities {
		t.Run(sec.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			p := newProxy(t, ts.Addr.String())
			c := dial(t, ctx, p.URL(), dialOpts(t, sec, trust, client.UserName("alice", "s3cret"),
				client.WithBackoff(client.Backoff{Initial: 10 * time.Millisecond}))...)
			sid := c.SessionID()
			_, err := c.ReadValue(ctx, n0(id2259))
			require.NoError(t, err)

			// A Read is sent again on the new channel.
			require.Positive(t, p.Drop())
			dv, err := c.ReadValue(ctx, n0(id2259))
			require.NoError(t, err)
			require.Equal(t, status.Good, dv.Status)
			require.Equal(t, sid, c.SessionID(), "the session is re-activated, not replaced")

			// A Write finds the channel dead before sending, so it reconnects first.
			require.Positive(t, p.Drop())
			waitDead(t, c)
			code, err := c.WriteValue(ctx, codec.NewStringNodeId(1, "Demo.Scalar_Int32"), codec.Int32Variant(7))
			require.NoError(t, err)
			require.Equal(t, status.Good, code)
			require.Equal(t, sid, c.SessionID())
		})
	}
}

// waitDead waits until the client's reading goroutine has seen the connection drop.
func waitDead(t *testing.T, c *client.Client) {
	t.Helper()
	require.Eventually(t, func() bool { return !c.Connected() }, 10*time.Second, 5*time.Millisecond)
}

// TestBusyServerRetryAfter provokes BadServerTooBusy from the real server (one worker,
// a queue of one, few session establishments at once, 40 clients logging in with
// passwords at once, each login an RSA decryption and a bcrypt check) and checks that
// every client gets in, and that the wait after each refusal, measured from the refusal
// to the end of Dial, is at least the RetryAfterMs hint the server sent.
func TestBusyServerRetryAfter(t *testing.T) {
	t.Parallel()
	ts, trust := testServer(t, func(c *config.Config) {
		c.Limits.MaxRequestThreadCount = 1
		c.Limits.MinRequestThreadCount = 1
		c.Limits.MaxQueuedRequestCount = 1
		// Session establishment has a bound of its own: 3, of which one client (an
		// address) may hold all but the fair-share headroom, so one login runs and
		// one waits. The 40 logins come from one address, which the password meter
		// would hold to two a second.
		c.Limits.MaxConcurrentSessionEstablishment = 3
		c.Limits.UserNameLoginsPerMinute = 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type refusal struct {
		at   time.Time
		hint time.Duration
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		busy    int
		clients []*client.Client
	)
	const n = 40
	cache := client.NewEndpointCache()
	_, err := cache.Get(ctx, ts.URL)
	require.NoError(t, err)
	start := make(chan struct{})
	errs := make(chan error, 2*n)
	for range n {
		wg.Go(func() {
			<-start
			var last refusal
			c, err := client.Dial(ctx, ts.URL, dialOpts(t, securities[0], trust,
				client.WithEndpointCache(cache), client.UserName("alice", "s3cret"),
				client.WithBackoff(client.Backoff{Initial: time.Millisecond, Attempts: -1}),
				client.OnRetry(func(err error, delay time.Duration) {
					var se *client.StatusError
					if errors.As(err, &se) && se.Code == status.BadServerTooBusy {
						last = refusal{at: time.Now(), hint: se.RetryAfter}
						mu.Lock()
						busy++
						mu.Unlock()
						if delay < se.RetryAfter || se.RetryAfter <= 0 {
							errs <- fmt.Errorf("delay %v for hint %v", delay, se.RetryAfter)
						}
					}
				}))...)
			if err != nil {
				errs <- err
				return
			}
			if !last.at.IsZero() && time.Since(last.at) < last.hint {
				errs <- fmt.Errorf("retried %v after a refusal with hint %v", time.Since(last.at), last.hint)
			}
			mu.Lock()
			clients = append(clients, c)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, c := range clients {
		require.NoError(t, c.Close(ctx))
	}
	require.Len(t, clients, n)
	require.Positive(t, busy, "the server was never busy: the test proves nothing")
}

// TestKeepAlive leaves two sessions with a one-second timeout idle for 2.5 s: the one
// with keep-alives is still there; the one without has expired on the server, so the
// client creates a new session and sends the Read again.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	ts, trust := testServer(t, func(c *config.Config) { c.Limits.MinSessionTimeout = 500 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alive := dial(t, ctx, ts.URL, dialOpts(t, securities[0], trust, client.SessionTimeout(time.Second))...)
	idle := dial(t, ctx, ts.URL, dialOpts(t, securities[0], trust, client.SessionTimeout(time.Second), client.KeepAlive(-1))...)
	sid, idleSID := alive.SessionID(), idle.SessionID()
	time.Sleep(2500 * time.Millisecond)
	_, err := alive.ReadValue(ctx, n0(id2259))
	require.NoError(t, err)
	require.Equal(t, sid, alive.SessionID())
	// A Write too: the server refused it before it ran, so it is safe to send again.
	code, err := idle.WriteValue(ctx, codec.NewStringNodeId(1, "Demo.Scalar_Int32"), codec.Int32Variant(1))
	require.NoError(t, err)
	require.Equal(t, status.Good, code)
	require.NotEqual(t, idleSID, idle.SessionID())
}
