package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// fakeServer is a SecurityPolicy None server built on uasc alone: it offers one
// endpoint with anonymous logins, refuses the first refusals CreateSessions with
// refuseCode and a RetryAfterMs hint, and answers Reads of any node with the
// request handle as an Int32, after a random delay so that answers overtake each other.
type fakeServer struct {
	url        string
	refusals   int
	refuseCode status.Code
	hint       time.Duration

	mu       sync.Mutex  // guards creates, channels, sessions, known
	creates  []time.Time // arrival of each CreateSession
	channels []uint32    // the SecureChannelId of each CreateSession
	sessions int
	known    map[codec.NodeId]bool // authentication tokens of live sessions
	conns    atomic.Int32          // connections the server holds
}

// countingListener counts the connections its server holds until it closes them.
type countingListener struct {
	net.Listener
	n *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.n.Add(1)
	return &countedConn{Conn: nc, n: l.n}, nil
}

type countedConn struct {
	net.Conn
	n    *atomic.Int32
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.n.Add(-1) })
	return c.Conn.Close()
}

// forget drops every session, as a restarted server would.
func (f *fakeServer) forget() {
	f.mu.Lock()
	clear(f.known)
	f.mu.Unlock()
}

func startFake(t *testing.T, f *fakeServer) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f.url = "opc.tcp://" + ln.Addr().String()
	srv, err := uasc.NewServer(uasc.ServerConfig{
		Security: []uasc.SecurityConfig{{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone}},
	}, uasc.HandlerFunc(f.handle))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, countingListener{Listener: ln, n: &f.conns}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("fake server did not stop")
		}
	})
	return f
}

func (f *fakeServer) header(h ua.RequestHeader, code status.Code) ua.ResponseHeader {
	return ua.ResponseHeader{Timestamp: codec.Now(), RequestHandle: h.RequestHandle, ServiceResult: code}
}

func (f *fakeServer) handle(_ context.Context, req uasc.Request) {
	var resp codec.Structure
	switch m := req.Message.(type) {
	case *ua.GetEndpointsRequest:
		resp = &ua.GetEndpointsResponse{ResponseHeader: f.header(m.RequestHeader, status.Good), Endpoints: []ua.EndpointDescription{{
			EndpointUrl:         f.url,
			SecurityMode:        ua.MessageSecurityModeNone,
			SecurityPolicyUri:   policy.URINone,
			UserIdentityTokens:  []ua.UserTokenPolicy{{PolicyId: "anon", TokenType: ua.UserTokenTypeAnonymous}},
			TransportProfileUri: uacp.TransportProfile,
		}}}
	case *ua.CreateSessionRequest:
		f.mu.Lock()
		f.creates = append(f.creates, time.Now())
		f.channels = append(f.channels, req.Channel.ID())
		refuse := len(f.creates) <= f.refusals
		f.sessions++
		n := f.sessions
		f.mu.Unlock()
		if refuse {
			fault := &ua.ServiceFault{ResponseHeader: f.header(m.RequestHeader, f.refuseCode)}
			if f.hint > 0 {
				fault.ResponseHeader.AdditionalHeader = codec.NewExtensionObject(&ua.AdditionalParametersType{Parameters: []ua.KeyValuePair{{
					Key: codec.QualifiedName{Name: retryAfterKey}, Value: codec.Int64Variant(f.hint.Milliseconds()),
				}}})
			}
			resp = fault
			break
		}
		f.mu.Lock()
		if f.known == nil {
			f.known = make(map[codec.NodeId]bool)
		}
		f.known[codec.NewNumericNodeId(2, uint32(n))] = true
		f.mu.Unlock()
		resp = &ua.CreateSessionResponse{
			ResponseHeader: f.header(m.RequestHeader, status.Good),
			SessionId:      codec.NewNumericNodeId(1, uint32(n)), AuthenticationToken: codec.NewNumericNodeId(2, uint32(n)),
			RevisedSessionTimeout: 60000, ServerNonce: make([]byte, 32),
		}
	case *ua.ActivateSessionRequest:
		f.mu.Lock()
		ok := f.known[m.RequestHeader.AuthenticationToken]
		f.mu.Unlock()
		if !ok {
			resp = &ua.ServiceFault{ResponseHeader: f.header(m.RequestHeader, status.BadSessionIdInvalid)}
			break
		}
		resp = &ua.ActivateSessionResponse{ResponseHeader: f.header(m.RequestHeader, status.Good), ServerNonce: make([]byte, 32)}
	case *ua.ReadRequest:
		h := m.RequestHeader
		go func() {
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			_ = req.Respond(&ua.ReadResponse{ResponseHeader: f.header(h, status.Good),
				Results: []codec.DataValue{{Value: codec.Int32Variant(int32(h.RequestHandle))}}})
		}()
		return
	case *ua.CloseSessionRequest:
		resp = &ua.CloseSessionResponse{ResponseHeader: f.header(m.RequestHeader, status.Good)}
	default:
		resp = &ua.ServiceFault{ResponseHeader: ua.ResponseHeader{ServiceResult: status.BadServiceUnsupported}}
	}
	_ = req.Respond(resp)
}

func noneOpts() []Option {
	return []Option{Security(policy.URINone, ua.MessageSecurityModeNone)}
}

// TestRetryAfterHint checks that Dial retries a busy server no sooner than its
// RetryAfterMs hint, although the backoff alone would retry after a millisecond.
func TestRetryAfterHint(t *testing.T) {
	t.Parallel()
	for _, code := range []status.Code{status.BadServerTooBusy, status.BadTooManySessions} {
		t.Run(code.Name(), func(t *testing.T) {
			t.Parallel()
			const hint = 150 * time.Millisecond
			f := startFake(t, &fakeServer{refusals: 2, refuseCode: code, hint: hint})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := Dial(ctx, f.url, append(noneOpts(), WithBackoff(Backoff{Initial: time.Millisecond}))...)
			require.NoError(t, err)
			defer c.Close(ctx)
			f.mu.Lock()
			creates := f.creates
			f.mu.Unlock()
			require.Len(t, creates, 3)
			for i := 1; i < len(creates); i++ {
				require.GreaterOrEqual(t, creates[i].Sub(creates[i-1]), hint, "retry %d came too soon", i)
			}
			f.mu.Lock()
			channels := f.channels
			f.mu.Unlock()
			require.Equal(t, []uint32{channels[0], channels[0], channels[0]}, channels,
				"the retries reuse the channel the session was refused on: no second handshake")
		})
	}
}

// TestNoRetryOnRefusal checks that a refusal other than busy ends Dial at once, with
// the status in a *StatusError.
func TestNoRetryOnRefusal(t *testing.T) {
	t.Parallel()
	f := startFake(t, &fakeServer{refusals: 1, refuseCode: status.BadIdentityTokenRejected})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Dial(ctx, f.url, append(noneOpts(), WithBackoff(Backoff{Initial: time.Millisecond}))...)
	require.ErrorIs(t, err, status.BadIdentityTokenRejected)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "CreateSession", se.Service)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.creates, 1)
}

// TestAttemptsBound checks that Dial gives up after Backoff.Attempts.
func TestAttemptsBound(t *testing.T) {
	t.Parallel()
	f := startFake(t, &fakeServer{refusals: 100, refuseCode: status.BadServerTooBusy})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Dial(ctx, f.url, append(noneOpts(), WithBackoff(Backoff{Initial: time.Millisecond, Attempts: 3}))...)
	require.ErrorIs(t, err, status.BadServerTooBusy)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.creates, 3)
	require.Eventually(t, func() bool { return f.conns.Load() == 0 }, 5*time.Second, time.Millisecond,
		"the channel kept for the retries is closed once Dial gives up")
}

// TestInFlight sends Reads from 50 goroutines, answered out of order, and checks each
// caller gets its own answer.
func TestInFlight(t *testing.T) {
	t.Parallel()
	f := startFake(t, &fakeServer{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, f.url, noneOpts()...)
	require.NoError(t, err)
	defer c.Close(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			for range 20 {
				req := &ua.ReadRequest{NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 1), AttributeId: 13}}}
				r, err := c.Read(ctx, req)
				if err == nil && r.Results[0].Value.Value() != int32(req.RequestHeader.RequestHandle) {
					err = errors.New("answer to another request")
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
}

// TestSecureByDefault checks that None is never chosen unless named.
func TestSecureByDefault(t *testing.T) {
	t.Parallel()
	f := startFake(t, &fakeServer{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Dial(ctx, f.url)
	require.ErrorIs(t, err, status.BadSecurityPolicyRejected)
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Jitter: 0.5}
	for n, base := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		base *= time.Millisecond
		for range 50 {
			d := b.Delay(n, 0)
			require.GreaterOrEqual(t, d, base/2, "retry %d", n)
			require.LessOrEqual(t, d, base, "retry %d", n)
		}
	}
	require.Equal(t, 5*time.Second, b.Delay(0, 5*time.Second), "the hint wins over Max")
	require.Equal(t, 100*time.Millisecond, Backoff{Initial: 100 * time.Millisecond, Jitter: -1}.Delay(0, 0))
}

func TestStatusError(t *testing.T) {
	t.Parallel()
	fault := &ua.ServiceFault{ResponseHeader: ua.ResponseHeader{
		ServiceResult: status.BadServerTooBusy,
		AdditionalHeader: codec.NewExtensionObject(&ua.AdditionalParametersType{Parameters: []ua.KeyValuePair{
			{Key: codec.QualifiedName{Name: "Other"}, Value: codec.Int64Variant(9)},
			{Key: codec.QualifiedName{Name: retryAfterKey}, Value: codec.Int64Variant(250)},
		}}),
	}}
	err := error(statusError("Read", fault, errors.New("uasc: service fault")))
	require.ErrorIs(t, err, status.BadServerTooBusy)
	require.NotErrorIs(t, err, status.BadTimeout)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 250*time.Millisecond, se.RetryAfter)
	require.Equal(t, 250*time.Millisecond, hintOf(err))
	require.True(t, retryable(err))
	require.Contains(t, err.Error(), "BadServerTooBusy")

	err = statusError("Write", nil, errors.Join(errors.New("x"), status.BadSecureChannelClosed))
	require.ErrorIs(t, err, status.BadSecureChannelClosed)
	require.False(t, retryable(statusError("ActivateSession", nil, status.BadUserAccessDenied)))
	require.True(t, retryable(fmt.Errorf("dial: %w", &uacp.Error{Code: status.BadTcpServerTooBusy})), "a listener's connection rate")
	lost := statusError("ActivateSession", nil, status.BadSessionIdInvalid)
	require.False(t, retryable(lost), "a session in use that the server no longer knows")
	require.True(t, retryable(&lostSession{lost}), "a new session given up before its activation")
	require.ErrorIs(t, &lostSession{lost}, status.BadSessionIdInvalid)
}

// dropProxy forwards TCP connections to target until drop cuts them.
type dropProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex // guards conns
	conns  []net.Conn
}

func newDropProxy(t *testing.T, target string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dropProxy{ln: ln, target: strings.TrimPrefix(target, "opc.tcp://")}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.drop() })
	return p
}

func (p *dropProxy) url() string { return "opc.tcp://" + p.ln.Addr().String() }

func (p *dropProxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestReconnectNewSession cuts the connection after the server forgot the session: the
// re-activation is refused, so the client creates a new session and the Read goes
// through on it.
func TestReconnectNewSession(t *testing.T) {
	t.Parallel()
	f := startFake(t, &fakeServer{})
	p := newDropProxy(t, f.url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, p.url(), append(noneOpts(), WithBackoff(Backoff{Initial: time.Millisecond}))...)
	require.NoError(t, err)
	defer c.Close(ctx)
	first := c.SessionID()

	// The session survives: it is re-activated.
	p.drop()
	_, err = c.ReadValue(ctx, codec.NewNumericNodeId(0, 1))
	require.NoError(t, err)
	require.Equal(t, first, c.SessionID())

	// The server forgot it: a new one is created.
	f.forget()
	p.drop()
	_, err = c.ReadValue(ctx, codec.NewNumericNodeId(0, 1))
	require.NoError(t, err)
	require.NotEqual(t, first, c.SessionID())
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Equal(t, 2, f.sessions)
}
