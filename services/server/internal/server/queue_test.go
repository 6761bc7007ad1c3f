package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/pipeline"
)

// testNamespaceURI is the namespace of slowManager.
const testNamespaceURI = "urn:uastack:test:slow"

// slowManager is a node manager for one namespace whose Reads are slow: with hold set a
// Read blocks inside the call, holding its worker, until hold is closed; otherwise it
// returns at once and completes from its own goroutine after delay, as a manager
// waiting on a device does. Every item reads as Int32 42.
type slowManager struct {
	delay time.Duration
	hold  chan struct{} // Read blocks its caller until closed
	// release, when set, parks each Read (answered from another goroutine) until closed.
	release chan struct{}

	calls    atomic.Int32 // Reads started
	inFlight atomic.Int32 // Reads not yet done
}

var _ nodemgr.Reader = (*slowManager)(nil)

func (m *slowManager) Namespaces() []string { return []string{testNamespaceURI} }

func (m *slowManager) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	m.calls.Add(1)
	m.inFlight.Add(1)
	for i := range op.Results {
		op.Results[i] = codec.DataValue{Value: codec.Int32Variant(42)}
	}
	finish := func() {
		m.inFlight.Add(-1)
		done()
	}
	if m.hold != nil {
		<-m.hold
		finish()
		return
	}
	go func() {
		if m.release != nil {
			<-m.release
		} else {
			time.Sleep(m.delay)
		}
		finish()
	}()
}

// pipelineServer is a server started by startPipeline and a session on it.
type pipelineServer struct {
	srv   *Server
	ch    *uasc.ClientChannel
	token codec.NodeId
	// slowNS is the namespace index of the manager's first namespace.
	slowNS uint16
	// url is the endpoint URL, for other clients.
	url string
}

// startPipeline starts a server with the node manager m mounted, opens a None channel
// and activates an anonymous session on it. configure may change the configuration.
func startPipeline(t testing.TB, m nodemgr.Manager, configure func(*config.Config)) *pipelineServer {
	t.Helper()
	return startPipelineWith(t, m, Options{}, configure)
}

// startPipelineWith is startPipeline with Options opts, m (when not nil) added to its
// Managers; without m, the manager of testNamespaceURI comes from the configuration.
// Without opts.Logger the server's log is discarded.
func startPipelineWith(t testing.TB, m nodemgr.Manager, opts Options, configure func(*config.Config)) *pipelineServer {
	t.Helper()
	cfg := config.Default()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1", "localhost"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:pipelinetest"
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	if configure != nil {
		configure(cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.Endpoint.ListenAddress = ln.Addr().String()
	cfg.Endpoint.EndpointURL = "opc.tcp://" + ln.Addr().String()
	require.NoError(t, cfg.Validate())
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	uri := testNamespaceURI
	if m != nil {
		opts.Managers = append(opts.Managers, m)
		uri = m.Namespaces()[0]
	}
	srv, err := New(cfg, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("server did not stop within 10 s")
		}
		require.NoError(t, srv.Close())
	})
	if m, ok := m.(*slowManager); ok && m.hold != nil {
		// Registered after the server's cleanup, so it runs first: Serve waits for the
		// workers that hold.
		t.Cleanup(func() {
			select {
			case <-m.hold:
			default:
				close(m.hold)
			}
		})
	}

	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	nc, err := (&net.Dialer{}).DialContext(dctx, "tcp", ln.Addr().String())
	require.NoError(t, err)
	conn, err := uacp.Dial(dctx, nc, uacp.ClientConfig{EndpointURL: cfg.Endpoint.EndpointURL})
	require.NoError(t, err)
	ch, err := uasc.Dial(dctx, conn, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	resp, err := ch.Request(dctx, &ua.CreateSessionRequest{SessionName: "pipeline"})
	require.NoError(t, err)
	token := resp.(*ua.CreateSessionResponse).AuthenticationToken
	_, err = ch.Request(dctx, &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: token},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyIDAnonymous}),
	})
	require.NoError(t, err)

	ns := -1
	for i, u := range srv.routes.Namespaces() {
		if u == uri {
			ns = i
		}
	}
	require.Positive(t, ns)
	return &pipelineServer{srv: srv, ch: ch, token: token, slowNS: uint16(ns), url: cfg.Endpoint.EndpointURL}
}

// read reads the Value of node i=1 of namespace ns with timeoutHint (ms, 0 for none).
func (ps *pipelineServer) read(ctx context.Context, ns uint16, handle, timeoutHint uint32) (codec.Structure, error) {
	nodeID := codec.NewNumericNodeId(ns, 1)
	if ns == 0 {
		nodeID = codec.NewNumericNodeId(0, 2258) // Server_ServerStatus_CurrentTime
	}
	return ps.ch.Request(ctx, &ua.ReadRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: ps.token, RequestHandle: handle, TimeoutHint: timeoutHint},
		NodesToRead:   []ua.ReadValueId{{NodeId: nodeID, AttributeId: 13}},
	})
}

// requireReadGood checks that a Read of one item succeeded.
func requireReadGood(t testing.TB, resp codec.Structure, err error) {
	t.Helper()
	require.NoError(t, err)
	rr, ok := resp.(*ua.ReadResponse)
	require.True(t, ok, "response is %T", resp)
	require.Len(t, rr.Results, 1)
	require.Equal(t, status.Good, rr.Results[0].Status)
}

// requirePipelineFault checks that resp is a ServiceFault with code echoing handle.
func requirePipelineFault(t *testing.T, resp codec.Structure, err error, code status.Code, handle uint32) *ua.ServiceFault {
	t.Helper()
	require.ErrorIs(t, err, code)
	f, ok := resp.(*ua.ServiceFault)
	require.True(t, ok, "response is %T", resp)
	require.Equal(t, code, f.ResponseHeader.ServiceResult)
	require.Equal(t, handle, f.ResponseHeader.RequestHandle)
	return f
}

// retryAfterOf returns the RetryAfterMs parameter of an AdditionalHeader.
func retryAfterOf(t *testing.T, h codec.ExtensionObject) int64 {
	t.Helper()
	params, ok := h.Value.(*ua.AdditionalParametersType)
	require.True(t, ok, "AdditionalHeader holds %T", h.Value)
	for _, p := range params.Parameters {
		if p.Key == (codec.QualifiedName{Name: "RetryAfterMs"}) {
			require.Equal(t, codec.TypeInt64, p.Value.Type())
			return p.Value.Value().(int64)
		}
	}
	t.Fatal("no RetryAfterMs parameter")
	return 0
}

// TestServerTooBusy fills the one worker (a Read held in the manager) and the one queue
// slot: the next queued request is refused with BadServerTooBusy and a RetryAfterMs
// hint, while an in-memory Read is still answered; once released, both waiting Reads
// succeed.
func TestServerTooBusy(t *testing.T) {
	t.Parallel()
	m := &slowManager{hold: make(chan struct{})}
	ps := startPipeline(t, m, func(c *config.Config) {
		c.Limits.MinRequestThreadCount = 1
		c.Limits.MaxRequestThreadCount = 1
		c.Limits.MaxQueuedRequestCount = 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	type result struct {
		resp codec.Structure
		err  error
	}
	held := make(chan result, 2)
	go func() { r, err := ps.read(ctx, ps.slowNS, 1, 0); held <- result{r, err} }()
	require.Eventually(t, func() bool { return m.inFlight.Load() == 1 }, 5*time.Second, time.Millisecond)
	go func() { r, err := ps.read(ctx, ps.slowNS, 2, 0); held <- result{r, err} }()
	require.Eventually(t, func() bool { q, _, _ := ps.srv.pipe.Queue().Stats(); return q == 1 }, 5*time.Second, time.Millisecond)

	resp, err := ps.read(ctx, ps.slowNS, 3, 0)
	f := requirePipelineFault(t, resp, err, status.BadServerTooBusy, 3)
	ms := retryAfterOf(t, f.ResponseHeader.AdditionalHeader)
	require.Positive(t, ms)
	require.LessOrEqual(t, ms, pipeline.RetryAfterMax.Milliseconds())

	// The hint survives a binary round trip on its own as well.
	e := codec.NewEncoder(nil)
	e.ExtensionObject(&f.ResponseHeader.AdditionalHeader)
	require.NoError(t, e.Err())
	var back codec.ExtensionObject
	d := codec.NewDecoder(e.Bytes())
	d.ExtensionObject(&back)
	require.NoError(t, d.Err())
	require.Equal(t, ms, retryAfterOf(t, back))

	// In-memory services do not queue.
	start := time.Now()
	resp, err = ps.read(ctx, 0, 4, 0)
	requireReadGood(t, resp, err)
	require.Less(t, time.Since(start), time.Second)

	close(m.hold)
	for range 2 {
		r := <-held
		requireReadGood(t, r.resp, r.err)
	}
}

// TestTimeoutHint checks BadTimeout for a request whose TimeoutHint passes while it waits
// in the queue (it then never reaches the manager) and while its manager works (the late
// result is dropped and the channel carries on).
func TestTimeoutHint(t *testing.T) {
	t.Parallel()
	t.Run("queue", func(t *testing.T) {
		t.Parallel()
		m := &slowManager{hold: make(chan struct{})}
		ps := startPipeline(t, m, func(c *config.Config) {
			c.Limits.MinRequestThreadCount = 1
			c.Limits.MaxRequestThreadCount = 1
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		held := make(chan error, 1)
		go func() { _, err := ps.read(ctx, ps.slowNS, 1, 0); held <- err }()
		require.Eventually(t, func() bool { return m.inFlight.Load() == 1 }, 5*time.Second, time.Millisecond)

		start := time.Now()
		resp, err := ps.read(ctx, ps.slowNS, 2, 100)
		requirePipelineFault(t, resp, err, status.BadTimeout, 2)
		require.Less(t, time.Since(start), 2*time.Second)

		close(m.hold)
		require.NoError(t, <-held)
		require.Eventually(t, func() bool { q, _, busy := ps.srv.pipe.Queue().Stats(); return q == 0 && busy == 0 }, 5*time.Second, time.Millisecond)
		require.Equal(t, int32(1), m.calls.Load(), "the timed-out request never reached the manager")
	})
	t.Run("manager", func(t *testing.T) {
		t.Parallel()
		m := &slowManager{delay: time.Second}
		ps := startPipeline(t, m, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := ps.read(ctx, ps.slowNS, 1, 100)
		requirePipelineFault(t, resp, err, status.BadTimeout, 1)
		require.Less(t, time.Since(start), 900*time.Millisecond, "answered before the manager")
		require.Eventually(t, func() bool { return m.inFlight.Load() == 0 }, 5*time.Second, time.Millisecond)
		resp, err = ps.read(ctx, 0, 2, 0)
		requireReadGood(t, resp, err)
	})
}

// TestParkedReadsHoldNoWorker mounts a manager that takes 1 s per Read, completing from
// its own goroutine, and has many such Reads in flight with two workers: all of them
// reach the manager at once, no worker stays busy, and Reads of namespace 0 keep their
// latency.
func TestParkedReadsHoldNoWorker(t *testing.T) {
	t.Parallel()
	const parked = 50
	// The manager holds every Read for at least a second, answering from its own
	// goroutine; holding them until released (rather than for a fixed delay) keeps all 50
	// parked at once however slowly a loaded machine sends them.
	m := &slowManager{release: make(chan struct{})}
	ps := startPipeline(t, m, func(c *config.Config) {
		c.Limits.MinRequestThreadCount = 1
		c.Limits.MaxRequestThreadCount = 2
		c.Limits.MaxQueuedRequestCount = parked
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	errs := make(chan error, parked)
	for i := range parked {
		go func() {
			resp, err := ps.read(ctx, ps.slowNS, uint32(i+1), 0)
			if err == nil {
				if rr, ok := resp.(*ua.ReadResponse); !ok || rr.Results[0].Status != status.Good {
					err = errors.New("slow read failed")
				}
			}
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return m.inFlight.Load() == parked }, 10*time.Second, time.Millisecond,
		"with two workers, all %d Reads are parked in the manager at once", parked)
	parkedAt := time.Now()
	// The last job may still be returning from the manager's method.
	require.Eventually(t, func() bool { _, _, busy := ps.srv.pipe.Queue().Stats(); return busy == 0 }, 2*time.Second, time.Millisecond,
		"the workers are free once the Reads are parked")

	var latencies []time.Duration
	for i := range 20 {
		_, running, busy := ps.srv.pipe.Queue().Stats()
		require.Zero(t, busy, "no worker is held by a parked Read")
		require.LessOrEqual(t, running, 2)
		start := time.Now()
		resp, err := ps.read(ctx, 0, uint32(1000+i), 0)
		latencies = append(latencies, time.Since(start))
		requireReadGood(t, resp, err)
	}
	requireNormalLatency(t, latencies)
	require.Equal(t, int32(parked), m.inFlight.Load(), "the namespace 0 Reads ran while the slow ones were parked")

	time.Sleep(time.Second - time.Since(parkedAt))
	close(m.release)
	for range parked {
		require.NoError(t, <-errs)
	}
}
