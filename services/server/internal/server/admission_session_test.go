package server

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/admission"
	"uastack.dev/services/server/internal/config"
)

// sessionFlood floods the server with CreateSession requests from source: channels
// Basic256Sha256 channels of one client certificate, each with perChannel requests in
// flight at all times, every one of which costs the server an RSA signature. The
// channels are opened at once, the flood runs from begin until stop is closed, and it
// counts the answers.
type sessionFlood struct {
	created, busy, other atomic.Int32
	hinted               atomic.Int32 // busy answers with a RetryAfterMs hint > 0
	wg                   sync.WaitGroup
}

func startSessionFlood(t *testing.T, ctx context.Context, ps *pipelineServer, source string, channels, perChannel int, begin, stop <-chan struct{}) *sessionFlood {
	t.Helper()
	cert, key := applicationIdentity(t, "urn:admission:flood:"+source)
	f := &sessionFlood{}
	for range channels {
		nc, err := dialFrom(ctx, source, ps.url)
		require.NoError(t, err)
		ch, err := secureChannel(ctx, nc, ps.url, ps.srv.cert.Raw, cert, key)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ch.Close() })
		for range perChannel {
			f.wg.Go(func() {
				select {
				case <-begin:
				case <-stop:
					return
				}
				for {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "flood",
						ClientNonce: make([]byte, 32), ClientCertificate: cert, RequestedSessionTimeout: 10000})
					switch {
					case err == nil:
						f.created.Add(1)
					case errors.Is(err, status.BadServerTooBusy):
						f.busy.Add(1)
						if busyHint(resp) > 0 {
							f.hinted.Add(1)
						}
					case ctx.Err() != nil || ch.Err() != nil:
						return
					default:
						f.other.Add(1)
					}
				}
			})
		}
	}
	return f
}

// TestAdmissionSessionEstablishmentFlood: one client floods CreateSession over secured
// channels, RSA work each, far beyond limits.maxConcurrentSessionEstablishment. The
// excess is answered BadServerTooBusy with a RetryAfterMs hint, on the channel's
// goroutine before any RSA work; a legitimate client from another source opens its
// session and reads meanwhile.
func TestAdmissionSessionEstablishmentFlood(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Security.AutoAcceptUntrusted = true
		c.Limits.MaxSessionCount = 100000
		c.Limits.MaxConcurrentSessionEstablishment = 16
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop := make(chan struct{})
	begin := make(chan struct{})
	close(begin)
	f := startSessionFlood(t, ctx, ps, "127.0.0.2", 3, 40, begin, stop)
	stopFlood := sync.OnceFunc(func() {
		close(stop)
		f.wg.Wait()
	})
	defer stopFlood()
	require.Eventually(t, func() bool { return f.busy.Load() > 20 }, 10*time.Second, 5*time.Millisecond, "the flood is refused")

	start := time.Now()
	tries, err := legitRead(ctx, "127.0.0.3", ps.url)
	require.NoError(t, err)
	took := time.Since(start)
	stopFlood()
	t.Logf("legitimate client served after %d tries in %v; flood: %d created, %d busy (%d with a hint), %d other",
		tries, took, f.created.Load(), f.busy.Load(), f.hinted.Load(), f.other.Load())
	require.Equal(t, f.busy.Load(), f.hinted.Load(), "every BadServerTooBusy carries RetryAfterMs > 0")
	require.Zero(t, f.other.Load())
	st := ps.srv.admission.Stats().Stages[admission.StageSession]
	require.LessOrEqual(t, st.Used, st.Capacity)
	require.Positive(t, st.Rejections[admission.OwnerLimit]+st.Rejections[admission.Capacity])
}

// userNameToken is a UserName identity token for name and password, encrypted as the
// default token policy asks: Basic256Sha256 under the server certificate of cs, with
// length || password || server nonce.
func userNameToken(t *testing.T, cs *ua.CreateSessionResponse, name, password string) codec.ExtensionObject {
	t.Helper()
	cert, err := x509.ParseCertificate(cs.ServerCertificate)
	require.NoError(t, err)
	pol, _ := policy.Lookup(policy.URIBasic256Sha256)
	asym, err := pol.NewAsymmetric(nil, cert)
	require.NoError(t, err)
	plain := binary.LittleEndian.AppendUint32(nil, uint32(len(password)+len(cs.ServerNonce)))
	plain = append(append(plain, password...), cs.ServerNonce...)
	secret := make([]byte, asym.EncryptedLen(len(plain)))
	n, err := asym.Encrypt(secret, plain)
	require.NoError(t, err)
	return codec.NewExtensionObject(&ua.UserNameIdentityToken{PolicyId: policyIDUserName, UserName: name,
		Password: secret[:n], EncryptionAlgorithm: pol.Info().AsymmetricEncryptionURI})
}

// TestAdmissionPasswordFlood: one source tries 40 random user names at once (each an
// RSA decryption and a password hash). With the lockout off, only the burst of the
// source's password meter and its refill reach the password check; the rest are
// answered BadServerTooBusy with a RetryAfterMs hint before the token is decrypted.
// The legitimate user logs in from another source meanwhile.
func TestAdmissionPasswordFlood(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	require.NoError(t, err)
	const perMinute, burst = 6, 5 // a token every 10 s: none refills while the test runs
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Security.Users = []config.User{{Name: "alice", PasswordHash: string(hash)}}
		c.Security.MaxFailedAuthenticationAttempts = 0 // the meter alone
		c.Limits.UserNameLoginsPerMinute, c.Limits.UserNameLoginBurst = perMinute, burst
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	login := func(ch *uasc.ClientChannel, name, password string) (codec.Structure, error) {
		resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "login", ClientNonce: make([]byte, 32)})
		require.NoError(t, err)
		cs := resp.(*ua.CreateSessionResponse)
		return ch.Request(ctx, &ua.ActivateSessionRequest{
			RequestHeader:     ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken},
			UserIdentityToken: userNameToken(t, cs, name, password),
		})
	}
	attacker, err := noneChannel(ctx, "127.0.0.2", ps.url)
	require.NoError(t, err)
	defer attacker.Close()
	const attempts = 40
	var denied, metered, hinted, other atomic.Int32
	var wg sync.WaitGroup
	start := time.Now()
	for i := range attempts {
		wg.Go(func() {
			name := make([]byte, 8)
			_, _ = rand.Read(name)
			resp, err := login(attacker, "user-"+string(rune('a'+i%26))+string(name), "guess")
			switch {
			case errors.Is(err, status.BadUserAccessDenied):
				denied.Add(1)
			case errors.Is(err, status.BadServerTooBusy):
				metered.Add(1)
				if busyHint(resp) > 0 {
					hinted.Add(1)
				}
			default:
				other.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d attempts in %v: %d checked (denied), %d metered", attempts, elapsed, denied.Load(), metered.Load())
	require.Zero(t, other.Load())
	require.LessOrEqual(t, int(denied.Load()), burst+1+int(elapsed.Seconds()*perMinute/60), "only the burst and the refill reach the password check")
	require.GreaterOrEqual(t, int(denied.Load()), burst)
	require.Equal(t, attempts-denied.Load(), metered.Load())
	require.Equal(t, metered.Load(), hinted.Load(), "every metered refusal says when to retry")
	require.Equal(t, uint64(metered.Load()), ps.srv.admission.Stats().PasswordChecksMetered)

	legit, err := noneChannel(ctx, "127.0.0.3", ps.url)
	require.NoError(t, err)
	defer legit.Close()
	_, err = login(legit, "alice", "s3cret")
	require.NoError(t, err, "the user logs in from another source")
	_, err = login(attacker, "alice", "s3cret")
	require.ErrorIs(t, err, status.BadServerTooBusy, "the flooding source is still metered, whatever the name")
}

// TestAdmissionReconnectDuringFlood (Balanced): connections from many sources take
// every shared connection slot and the bootstrap reserve, and two clients flood
// CreateSession; a newcomer is refused. The known client's channel drops; it connects
// again from its source, which holds its live session (the reconnect reserve),
// activates its session on the new channel (Reconnect at session establishment) and
// reads. A newcomer is still refused afterwards.
func TestAdmissionReconnectDuringFlood(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Security.AutoAcceptUntrusted = true
		c.Limits.MaxSessionCount = 100000
		c.Limits.MaxChannelCount = 48
		c.Limits.MaxConnectionsPerSource = 0
		c.Limits.MaxConcurrentSessionEstablishment = 16
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	begin, stop := make(chan struct{}), make(chan struct{})
	f1 := startSessionFlood(t, ctx, ps, "127.0.0.10", 1, 20, begin, stop)
	f2 := startSessionFlood(t, ctx, ps, "127.0.0.11", 1, 20, begin, stop)
	stopFlood := sync.OnceFunc(func() {
		close(stop)
		f1.wg.Wait()
		f2.wg.Wait()
	})
	defer stopFlood()

	var mu sync.Mutex // guards held
	var held []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range held {
			_ = nc.Close()
		}
	})
	// fill opens connections from source until one is refused.
	fill := func(source string) {
		for {
			nc, err := dialFrom(ctx, source, ps.url)
			if err != nil {
				return
			}
			if _, h := refusalOf(nc, 50*time.Millisecond); !h {
				_ = nc.Close()
				return
			}
			mu.Lock()
			held = append(held, nc)
			mu.Unlock()
		}
	}
	// A distributed flood: sources one after the other, each filling until refused
	// (the fair share of the shared slots stops each), until a source's first
	// connection is refused: the shared slots and the bootstrap reserve are taken.
	for i := 20; ; i++ {
		require.Less(t, i, 120, "the flood never filled the connection slots")
		n := len(held)
		fill(net.IPv4(127, 0, 0, byte(i)).String())
		if len(held) == n {
			break
		}
	}
	connections := func() admission.StageStats { return ps.srv.admission.Stats().Stages[admission.StageConnection] }
	st := connections()
	t.Logf("connection flood holds %d, the stage %d of %d (shared %d)", len(held), st.Used, st.Capacity, st.Shared)
	reserves := st.Capacity - st.Shared // bootstrap and reconnect, alike
	newcomer := func() status.Code {
		nc, err := dialFrom(ctx, "127.0.0.99", ps.url)
		require.NoError(t, err)
		defer nc.Close()
		code, h := refusalOf(nc, 200*time.Millisecond)
		if h {
			return status.Good
		}
		return code
	}
	require.Equal(t, status.BadTcpNotEnoughResources, newcomer(), "the flood leaves no room for a newcomer")
	close(begin)
	require.Eventually(t, func() bool { return f1.busy.Load()+f2.busy.Load() > 10 }, 10*time.Second, time.Millisecond,
		"session establishment is flooded too")

	// The known client's channel drops, and the flood takes its slot at once.
	before := connections().Used
	require.NoError(t, ps.ch.Close())
	require.Eventually(t, func() bool { return connections().Used == before-1 }, 5*time.Second, time.Millisecond)
	fill("127.0.0.30")
	require.Equal(t, before, connections().Used)
	require.Equal(t, status.BadTcpNotEnoughResources, newcomer())

	// The known client comes back from its source.
	start := time.Now()
	var ch *uasc.ClientChannel
	var resp codec.Structure
	for try := 1; ; try++ {
		require.NoError(t, ctx.Err(), "the known client did not get back in")
		var err error
		if ch == nil {
			if ch, err = noneChannel(ctx, "127.0.0.1", ps.url); err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			defer ch.Close()
		}
		resp, err = ch.Request(ctx, &ua.ActivateSessionRequest{
			RequestHeader:     ua.RequestHeader{AuthenticationToken: ps.token},
			UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyIDAnonymous}),
		})
		if errors.Is(err, status.BadServerTooBusy) {
			time.Sleep(busyHint(resp))
			continue
		}
		require.NoError(t, err)
		t.Logf("the known client reactivated its session after %d tries in %v", try, time.Since(start))
		break
	}
	resp, err := ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: ps.token},
		NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2259), AttributeId: 13}}})
	requireReadGood(t, resp, err)
	busy := f1.busy.Load() + f2.busy.Load()
	stopFlood()
	require.Greater(t, connections().Used, st.Shared+reserves/2, "the known client's channel is on the reconnect reserve")
	require.Equal(t, status.BadTcpNotEnoughResources, newcomer(), "newcomers are still refused")
	t.Logf("session flood: %d created, %d busy", f1.created.Load()+f2.created.Load(), busy)
}
