package server

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/admission"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/telemetry"
)

// The hostile tests of issue 18's admission: each attacks from one or more loopback
// addresses other than the legitimate client's (127.0.0.x all reach the server on
// 127.0.0.1) and shows the legitimate client served meanwhile.

// dialFrom opens a TCP connection from the loopback address source to the server of
// endpoint URL url.
func dialFrom(ctx context.Context, source, url string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
	return d.DialContext(ctx, "tcp", strings.TrimPrefix(url, "opc.tcp://"))
}

// refusalOf waits up to d for what the listener sends a connection that has sent
// nothing: the code of an ERR, or held when nothing came (the connection was admitted).
// A connection closed without an ERR (too many refusals in progress) gives neither.
func refusalOf(nc net.Conn, d time.Duration) (code status.Code, held bool) {
	_ = nc.SetReadDeadline(time.Now().Add(d))
	var b [12]byte
	n, err := io.ReadFull(nc, b[:])
	var ne net.Error
	switch {
	case n == 0 && errors.As(err, &ne) && ne.Timeout():
		return 0, true
	case err != nil || string(b[:4]) != "ERRF":
		return 0, false
	}
	return status.Code(binary.LittleEndian.Uint32(b[8:])), false
}

// applicationIdentity returns a self-signed client application instance certificate
// (DER) of ApplicationUri uri, and its key.
func applicationIdentity(t *testing.T, uri string) ([]byte, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	u, err := url.Parse(uri)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "admission test client"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		URIs:                  []*url.URL{u},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return der, key
}

// secureChannel is a Basic256Sha256 SignAndEncrypt channel with the client certificate
// cert and key, over nc.
func secureChannel(ctx context.Context, nc net.Conn, url string, serverCert, cert []byte, key *rsa.PrivateKey) (*uasc.ClientChannel, error) {
	conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: url})
	if err != nil {
		return nil, err
	}
	return uasc.Dial(ctx, conn, uasc.ClientConfig{PolicyURI: policy.URIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt,
		Certificate: cert, Key: key, ServerCertificate: serverCert})
}

// noneChannel is a None channel over a connection from source.
func noneChannel(ctx context.Context, source, url string) (*uasc.ClientChannel, error) {
	nc, err := dialFrom(ctx, source, url)
	if err != nil {
		return nil, err
	}
	conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: url})
	if err != nil {
		return nil, err
	}
	return uasc.Dial(ctx, conn, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
}

// anonymousSession creates and activates an anonymous session on ch.
func anonymousSession(ctx context.Context, ch *uasc.ClientChannel) (codec.NodeId, error) {
	resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "legit", ClientNonce: make([]byte, 32)})
	if err != nil {
		return codec.NodeId{}, err
	}
	token := resp.(*ua.CreateSessionResponse).AuthenticationToken
	_, err = ch.Request(ctx, &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: token},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyIDAnonymous}),
	})
	return token, err
}

// busyHint returns the RetryAfterMs hint of a BadServerTooBusy fault, or 0.
func busyHint(resp codec.Structure) time.Duration {
	f, ok := resp.(*ua.ServiceFault)
	if !ok || f.ResponseHeader.ServiceResult != status.BadServerTooBusy {
		return 0
	}
	params, ok := f.ResponseHeader.AdditionalHeader.Value.(*ua.AdditionalParametersType)
	if !ok {
		return 0
	}
	for _, p := range params.Parameters {
		if p.Key == (codec.QualifiedName{Name: "RetryAfterMs"}) && p.Value.Type() == codec.TypeInt64 {
			return time.Duration(p.Value.Value().(int64)) * time.Millisecond
		}
	}
	return 0
}

// legitRead is a legitimate client from source as a cooperative one acts: it opens a
// None channel, an anonymous session and reads ServerStatus.State, and when the server
// says it is busy (an ERR BadTcpServerTooBusy or BadTcpNotEnoughResources, a
// BadServerTooBusy) it waits (the RetryAfterMs hint, or 50 ms) and tries again, until ctx
// ends. It returns the tries it took.
func legitRead(ctx context.Context, source, url string) (int, error) {
	for try := 1; ; try++ {
		wait := 50 * time.Millisecond
		err := func() error {
			ch, err := noneChannel(ctx, source, url)
			if err != nil {
				return err
			}
			defer ch.Close()
			token, err := anonymousSession(ctx, ch)
			if err != nil {
				return err
			}
			_, err = ch.Request(ctx, &ua.ReadRequest{
				RequestHeader: ua.RequestHeader{AuthenticationToken: token},
				NodesToRead:   []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2259), AttributeId: 13}},
			})
			return err
		}()
		if err == nil {
			return try, nil
		}
		if !errors.Is(err, status.BadServerTooBusy) && !errors.Is(err, status.BadTcpServerTooBusy) && !errors.Is(err, status.BadTcpNotEnoughResources) {
			return try, err
		}
		select {
		case <-ctx.Done():
			return try, err
		case <-time.After(wait):
		}
	}
}

// TestAdmissionConnectionRate floods the listener from one source with connections
// that send nothing, beyond limits.connectionsPerSecond and its burst: the excess gets
// ERR BadTcpServerTooBusy at once, before anything is read from it and so before any
// crypto work. Meanwhile a new client from another source (bootstrap) and the client of
// a live session (reconnect) connect, open a session and read.
func TestAdmissionConnectionRate(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Limits.ConnectionsPerSecond, c.Limits.ConnectionBurst = 40, 40
		c.Limits.MaxConnectionsPerSource, c.Limits.MaxChannelCount = 0, 5000
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var mu sync.Mutex // guards conns
	var conns []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			_ = nc.Close()
		}
	})
	flood := func(n int) {
		for range n {
			nc, err := dialFrom(ctx, "127.0.0.2", ps.url)
			if err != nil {
				continue // the kernel's backlog overflowed: the flood outran the accept loop
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
		}
	}
	start := time.Now()
	flood(300)
	elapsed := time.Since(start)
	counts := map[status.Code]int{}
	held := 0
	mu.Lock()
	first := append([]net.Conn(nil), conns...)
	mu.Unlock()
	var wg sync.WaitGroup
	var cmu sync.Mutex // guards counts, held
	for _, nc := range first {
		wg.Go(func() {
			code, h := refusalOf(nc, 300*time.Millisecond)
			cmu.Lock()
			defer cmu.Unlock()
			if h {
				held++
			} else {
				counts[code]++
			}
		})
	}
	wg.Wait()
	t.Logf("300 connections at once: %d admitted, refusals %v (0: closed unanswered)", held, counts)
	require.Positive(t, counts[status.BadTcpServerTooBusy], "the excess is told the server is too busy")
	require.LessOrEqual(t, float64(held), 40+40*elapsed.Seconds()+5, "no more than the burst and the refill while the flood ran (%v)", elapsed)
	require.GreaterOrEqual(t, held, 30, "the shared burst is admitted")
	for code := range counts {
		require.Contains(t, []status.Code{0, status.BadTcpServerTooBusy}, code, "only the rate refused")
	}

	// The flood goes on while the legitimate clients connect.
	stop := make(chan struct{})
	var flooding sync.WaitGroup
	flooding.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				flood(10)
			}
		}
	})
	tries, err := legitRead(ctx, "127.0.0.3", ps.url)
	require.NoError(t, err, "a new source is served during the flood")
	t.Logf("new source served after %d tries", tries)
	tries, err = legitRead(ctx, "127.0.0.1", ps.url)
	require.NoError(t, err, "the source of a live session is served during the flood")
	t.Logf("source with a live session served after %d tries", tries)
	close(stop)
	flooding.Wait()
	st := ps.srv.admission.Stats()
	require.Positive(t, st.ConnectionsRateLimited)
	require.Greater(t, st.ConnectionsRateLimited, uint64(counts[status.BadTcpServerTooBusy]), "the flood went on being refused")
}

// TestAdmissionConnectionsPerSource: one source holds connections that send nothing up
// to limits.maxConnectionsPerSource; every further one gets ERR BadTcpNotEnoughResources
// (reason OwnerLimit), while a client from another source is served; once the source
// closes one, it may open one again.
func TestAdmissionConnectionsPerSource(t *testing.T) {
	t.Parallel()
	const perSource = 5
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) { c.Limits.MaxConnectionsPerSource = perSource })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var held []net.Conn
	t.Cleanup(func() {
		for _, nc := range held {
			_ = nc.Close()
		}
	})
	for i := range 3 * perSource {
		nc, err := dialFrom(ctx, "127.0.0.2", ps.url)
		require.NoError(t, err)
		code, h := refusalOf(nc, 200*time.Millisecond)
		if i < perSource {
			require.True(t, h, "connection %d is admitted", i)
			held = append(held, nc)
			continue
		}
		require.False(t, h, "connection %d is refused", i)
		require.Equal(t, status.BadTcpNotEnoughResources, code, "connection %d", i)
		_ = nc.Close()
	}
	rej := ps.srv.admission.Stats().Stages[admission.StageConnection].Rejections
	require.Equal(t, uint64(2*perSource), rej[admission.OwnerLimit])

	_, err := legitRead(ctx, "127.0.0.3", ps.url)
	require.NoError(t, err, "another source is served")

	require.NoError(t, held[0].Close())
	held = held[1:]
	require.Eventually(t, func() bool {
		nc, err := dialFrom(ctx, "127.0.0.2", ps.url)
		if err != nil {
			return false
		}
		if _, h := refusalOf(nc, 100*time.Millisecond); !h {
			_ = nc.Close()
			return false
		}
		held = append(held, nc)
		return true
	}, 5*time.Second, 20*time.Millisecond, "a closed connection gives its slot back")
}

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

// busyManager serves one namespace whose Reads hold the worker for a millisecond each, as
// a manager doing blocking device I/O does; every item reads as Int32 7.
type busyManager struct{ calls atomic.Int32 }

func (m *busyManager) Namespaces() []string { return []string{"urn:uastack:test:busy"} }

func (m *busyManager) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	m.calls.Add(1)
	time.Sleep(time.Millisecond)
	for i := range op.Results {
		op.Results[i] = codec.DataValue{Value: codec.Int32Variant(7)}
	}
	done()
}

// TestAdmissionRequestFlood: one session keeps 200 Reads of a blocking manager in
// flight (two workers, a millisecond each: the queue stays full) while another session
// reads the same manager one Read at a time. With SharedOnly (one FIFO, the control)
// each legitimate Read waits behind the flood's queue or is refused; with FairShare and
// Balanced the owners take turns, so it waits for at most the job in progress and one
// of the flooder's.
//
// Not parallel: it measures latencies, which other tests' work would distort.
func TestAdmissionRequestFlood(t *testing.T) {
	medians := map[string]time.Duration{}
	for _, profile := range []string{"SharedOnly", "FairShare", "Balanced"} {
		m := &busyManager{}
		ps := startPipeline(t, m, func(c *config.Config) {
			c.Limits.IsolationProfile = profile
			c.Limits.MinRequestThreadCount, c.Limits.MaxRequestThreadCount = 1, 2
			c.Limits.MaxQueuedRequestCount = 200
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		flooder, err := noneChannel(ctx, "127.0.0.2", ps.url)
		require.NoError(t, err)
		token, err := anonymousSession(ctx, flooder)
		require.NoError(t, err)
		stop := make(chan struct{})
		var flood sync.WaitGroup
		var busyAnswers atomic.Int32
		node := codec.NewNumericNodeId(ps.slowNS, 1)
		for range 200 {
			flood.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, err := flooder.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: token},
						NodesToRead: []ua.ReadValueId{{NodeId: node, AttributeId: 13}}})
					if errors.Is(err, status.BadServerTooBusy) {
						busyAnswers.Add(1)
						time.Sleep(5 * time.Millisecond) // rude, but not spinning on the test's processors
					} else if err != nil {
						return
					}
				}
			})
		}
		require.Eventually(t, func() bool { return ps.srv.pipe.Queue().Queued(pipeline.StageService) > 100 }, 10*time.Second, time.Millisecond)

		var latencies []time.Duration
		refused, reads := 0, 20
		if profile == "SharedOnly" {
			reads = 3 // each waits for the whole queue
		}
		for i := range reads {
			start := time.Now()
			resp, err := ps.read(ctx, ps.slowNS, uint32(i+1), 0)
			latencies = append(latencies, time.Since(start))
			if errors.Is(err, status.BadServerTooBusy) {
				refused++
				continue
			}
			requireReadGood(t, resp, err)
		}
		queued := ps.srv.pipe.Queue().Queued(pipeline.StageService)
		close(stop)
		flood.Wait()
		_ = flooder.Close()
		cancel()
		slices.Sort(latencies)
		medians[profile] = latencies[len(latencies)/2]
		t.Logf("%s: legitimate Reads: median %v, max %v, %d of %d refused; flood: %d refused, %d queued at the end",
			profile, latencies[len(latencies)/2], latencies[len(latencies)-1], refused, reads, busyAnswers.Load(), queued)
		if profile == "SharedOnly" {
			require.True(t, refused > 0 || latencies[len(latencies)/2] > 50*time.Millisecond,
				"the control: the flood does delay or refuse a client that shares its FIFO")
			continue
		}
		require.Zero(t, refused, "%s: no legitimate Read is refused", profile)
		require.Less(t, latencies[len(latencies)/2], 25*time.Millisecond, "%s: the legitimate client takes its turns", profile)
	}
	require.Less(t, 4*medians["Balanced"], medians["SharedOnly"], "turns beat the FIFO: %v", medians)
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

// TestAdmissionParkedRequests: a session parks Reads in a manager that holds them
// (limits.maxParkedRequestCount 4) up to the stage's capacity and is then refused
// BadServerTooBusy with a RetryAfterMs hint; a second session still parks one on the
// fair-share headroom, a third on the bootstrap reserve; once the manager answers, all
// parked Reads succeed and the stage is empty again.
func TestAdmissionParkedRequests(t *testing.T) {
	t.Parallel()
	m := &slowManager{release: make(chan struct{})}
	ps := startPipeline(t, m, func(c *config.Config) { c.Limits.MaxParkedRequestCount = 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type session struct {
		ch    *uasc.ClientChannel
		token codec.NodeId
	}
	open := func(source string) session {
		ch, err := noneChannel(ctx, source, ps.url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ch.Close() })
		token, err := anonymousSession(ctx, ch)
		require.NoError(t, err)
		return session{ch, token}
	}
	var parked sync.WaitGroup
	errs := make(chan error, 16)
	park := func(s session) {
		parked.Go(func() {
			_, err := s.ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: s.token},
				NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(ps.slowNS, 1), AttributeId: 13}}})
			errs <- err
		})
	}
	refusedNow := func(s session) time.Duration {
		resp, err := s.ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: s.token},
			NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(ps.slowNS, 1), AttributeId: 13}}})
		require.ErrorIs(t, err, status.BadServerTooBusy)
		return busyHint(resp)
	}
	parkedNow := func() int { return ps.srv.admission.Stats().Stages[admission.StageParked].Used }

	flooder := session{ps.ch, ps.token}
	for i := range 4 {
		park(flooder)
		require.Eventually(t, func() bool { return parkedNow() == i+1 }, 5*time.Second, time.Millisecond)
	}
	require.Positive(t, refusedNow(flooder), "a lone session holds the configured capacity, no more")
	second, third, fourth := open("127.0.0.2"), open("127.0.0.3"), open("127.0.0.4")
	park(second)
	require.Eventually(t, func() bool { return parkedNow() == 5 }, 5*time.Second, time.Millisecond, "the headroom")
	park(third)
	require.Eventually(t, func() bool { return parkedNow() == 6 }, 5*time.Second, time.Millisecond, "the bootstrap reserve")
	require.Positive(t, refusedNow(fourth), "the stage is full")
	rej := ps.srv.admission.Stats().Stages[admission.StageParked].Rejections
	require.Equal(t, uint64(1), rej[admission.OwnerLimit])
	require.Equal(t, uint64(1), rej[admission.Capacity])

	close(m.release)
	parked.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return parkedNow() == 0 }, 5*time.Second, time.Millisecond, "answered requests give their units back")
}

// TestAdmissionHandshakeQueue: a flood of Basic256Sha256 OpenSecureChannel requests takes
// turns at one processor's RSA (limits.maxConcurrentHandshakes=1) with two waiting at
// most (limits.maxQueuedHandshakes=2); the excess is answered with an ERR
// BadTcpServerTooBusy and counted, a None client reads meanwhile, and once the flood is
// over the lane is whole: a secured channel opens at once.
func TestAdmissionHandshakeQueue(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Security.AutoAcceptUntrusted = true
		c.Limits.MaxConcurrentHandshakes, c.Limits.MaxQueuedHandshakes = 1, 2
		c.Limits.ConnectionsPerSecond, c.Limits.MaxConnectionsPerSource = 0, 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cert, key := applicationIdentity(t, "urn:admission:handshakes")

	const flood = 24
	var opened, busy atomic.Int32
	var others []error
	var mu sync.Mutex // guards others
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range flood {
		wg.Go(func() {
			nc, err := dialFrom(ctx, "127.0.0.2", ps.url)
			if err != nil {
				mu.Lock()
				others = append(others, err)
				mu.Unlock()
				return
			}
			defer nc.Close()
			<-start
			ch, err := secureChannel(ctx, nc, ps.url, ps.srv.cert.Raw, cert, key)
			switch {
			case err == nil:
				opened.Add(1)
				_ = ch.Close()
			case errors.Is(err, status.BadTcpServerTooBusy):
				busy.Add(1)
			default:
				mu.Lock()
				others = append(others, err)
				mu.Unlock()
			}
		})
	}
	close(start)
	tries, err := legitRead(ctx, "127.0.0.3", ps.url)
	require.NoError(t, err, "a None client is served during the flood")
	wg.Wait()
	t.Logf("%d secured channels at once: %d opened, %d refused busy; None client served after %d tries", flood, opened.Load(), busy.Load(), tries)
	require.Empty(t, others)
	require.Positive(t, busy.Load(), "the excess is told the server is too busy")
	require.GreaterOrEqual(t, opened.Load(), int32(3), "the turn and the queue are served")
	require.Equal(t, uint64(busy.Load()), ps.srv.tel.Admission().Refused(telemetry.RefusedHandshakes))
	require.Zero(t, ps.srv.handshakes.Waiting())

	nc, err := dialFrom(ctx, "127.0.0.4", ps.url)
	require.NoError(t, err)
	ch, err := secureChannel(ctx, nc, ps.url, ps.srv.cert.Raw, cert, key)
	require.NoError(t, err, "the lane is whole again")
	require.NoError(t, ch.Close())
}
