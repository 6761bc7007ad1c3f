package remote

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/sdk"
)

// counter is a guest manager with one variable per NodeId: a Read answers the number
// of Reads it has answered, or waits for gate when one is set.
type counter struct {
	ns    string
	reads atomic.Int64
	gate  chan struct{} // nil: answer at once
}

func (c *counter) Namespaces() []string { return []string{c.ns} }

func (c *counter) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	answer := func() {
		n := c.reads.Add(1)
		for i := range op.Results {
			op.Results[i] = codec.DataValue{Value: codec.Int64Variant(n)}
		}
		done()
	}
	if c.gate == nil {
		answer()
		return
	}
	go func() {
		<-c.gate // a device that does not answer, whatever the deadline
		answer()
	}()
}

// loop is a Dialer of guests served in this process through the wire format, as a
// WASM instance or a process serves them; calls and broken conns are counted.
type loop struct {
	factory sdk.Factory
	dials   atomic.Int32
	fail    atomic.Pointer[error] // the error every Call returns, when set
	hang    atomic.Bool           // every Call waits for its deadline, as a stuck process
}

func (l *loop) Dial(ctx context.Context, push func([]byte)) (Conn, error) {
	l.dials.Add(1)
	return &loopConn{l: l, g: sdk.NewGuest(l.factory, pushLink(push)), broken: make(chan struct{})}, nil
}

type loopConn struct {
	l      *loop
	g      *sdk.Guest
	broken chan struct{}
	once   sync.Once
}

func (c *loopConn) Call(ctx context.Context, batch []byte) ([]byte, error) {
	if err := c.l.fail.Load(); err != nil {
		return nil, *err
	}
	if c.l.hang.Load() {
		<-ctx.Done()
		return nil, status.BadTimeout
	}
	return c.g.Serve(ctx, batch), nil
}
func (c *loopConn) Broken() <-chan struct{} { return c.broken }
func (c *loopConn) Close() error            { c.once.Do(func() { close(c.broken) }); return nil }

type pushLink func([]byte)

func (p pushLink) Push(f []byte) { p(f) }
func (pushLink) Log([]byte)      {}
func (pushLink) Now() time.Time  { return time.Now() }

type testHost struct{}

func (testHost) NamespaceIndexes() []uint16 { return []uint16{2} }
func (testHost) Logger() *slog.Logger       { return slog.New(slog.DiscardHandler) }
func (testHost) Now() time.Time             { return time.Now() }
func (testHost) Notifier() nodemgr.Notifier { return nil }

func open(t *testing.T, c *counter, cfg Config) (*Manager, *loop) {
	t.Helper()
	l := &loop{factory: func(s nodemgr.Setup) (nodemgr.Manager, error) {
		c.ns = s.NamespaceURI
		return c, nil
	}}
	cfg.Setup = nodemgr.Setup{Name: "t", NamespaceURI: "urn:t"}
	m, err := Open(context.Background(), l, cfg)
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background(), testHost{}))
	t.Cleanup(func() { require.NoError(t, m.Close(context.Background())) })
	waitReady(t, m)
	return m, l
}

func waitReady(t *testing.T, m *Manager) {
	t.Helper()
	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.ready > 0
	}, 5*time.Second, time.Millisecond)
}

func read(ctx context.Context, m *Manager, n int) (*nodemgr.ReadOp, chan struct{}) {
	op := &nodemgr.ReadOp{Items: make([]ua.ReadValueId, n), Results: make([]codec.DataValue, n)}
	ch := make(chan struct{})
	m.read(ctx, op, func() { close(ch) })
	return op, ch
}

func wait(t *testing.T, ch chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("done was not called")
	}
}

func TestReadCrossesAndCoalesces(t *testing.T) {
	c := &counter{gate: make(chan struct{})}
	m, _ := open(t, c, Config{})
	require.Equal(t, []string{"urn:t"}, m.Namespaces())
	// The first Read holds the only lane; the next 50 queue and go in one call.
	first, firstDone := read(context.Background(), m, 1)
	require.Eventually(t, func() bool { calls, _ := m.Stats(); return calls == 0 && len(m.queueSnapshot()) == 0 }, time.Second, time.Millisecond)
	var dones []chan struct{}
	var ops []*nodemgr.ReadOp
	for range 50 {
		op, ch := read(context.Background(), m, 2)
		ops, dones = append(ops, op), append(dones, ch)
	}
	close(c.gate)
	wait(t, firstDone)
	require.Equal(t, status.Good, first.Results[0].Status)
	for i, ch := range dones {
		wait(t, ch)
		require.Equal(t, status.Good, ops[i].Results[1].Status)
	}
	calls, frames := m.Stats()
	require.Equal(t, uint64(51), frames)
	require.Equal(t, uint64(2), calls, "51 Reads in two calls")
}

func (m *Manager) queueSnapshot() []*pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*pending(nil), m.queue...)
}

func TestOutstandingBound(t *testing.T) {
	c := &counter{gate: make(chan struct{})}
	m, _ := open(t, c, Config{MaxOutstanding: 4})
	var dones []chan struct{}
	for range 4 {
		_, ch := read(context.Background(), m, 1)
		dones = append(dones, ch)
	}
	op, ch := read(context.Background(), m, 3)
	wait(t, ch)
	for _, r := range op.Results {
		require.Equal(t, status.BadResourceUnavailable, r.Status)
	}
	close(c.gate)
	for _, ch := range dones {
		wait(t, ch)
	}
}

func TestDeadline(t *testing.T) {
	c := &counter{gate: make(chan struct{})}
	m, _ := open(t, c, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	op, ch := read(ctx, m, 2)
	wait(t, ch)
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, status.BadTimeout, op.Results[0].Status)
	require.Equal(t, status.BadTimeout, op.Results[1].Status)
	close(c.gate)
}

func TestBrokenGuestIsReplaced(t *testing.T) {
	c := &counter{}
	m, l := open(t, c, Config{Backoff: time.Millisecond})
	boom := error(errors.Join(status.BadInternalError, ErrBroken))
	l.fail.Store(&boom)
	op, ch := read(context.Background(), m, 1)
	wait(t, ch)
	require.Equal(t, status.BadInternalError, op.Results[0].Status)
	l.fail.Store(nil)
	require.Eventually(t, func() bool { return l.dials.Load() == 2 }, 5*time.Second, time.Millisecond)
	waitReady(t, m)
	_, _, replaced, _ := m.Traffic()
	require.Equal(t, uint64(1), replaced)
	op, ch = read(context.Background(), m, 1)
	wait(t, ch)
	require.Equal(t, status.Good, op.Results[0].Status)
}

func TestGoneGuestIsNotConnected(t *testing.T) {
	c := &counter{}
	m, l := open(t, c, Config{Backoff: time.Hour})
	// The guest dies by itself, and the next one cannot be dialed for an hour.
	gone := error(errors.Join(status.BadCommunicationError, ErrBroken))
	l.fail.Store(&gone)
	m.slots[0].current().Close()
	require.Eventually(t, func() bool { return m.Health(context.Background()).Status == status.BadNotConnected }, 5*time.Second, time.Millisecond)
	op, ch := read(context.Background(), m, 1)
	wait(t, ch)
	require.Equal(t, status.BadNotConnected, op.Results[0].Status)
}

func TestReloadUnderLoad(t *testing.T) {
	c := &counter{}
	m, l := open(t, c, Config{MaxOutstanding: 1024})
	stop := make(chan struct{})
	var bad atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				op, ch := read(context.Background(), m, 1)
				<-ch
				if op.Results[0].Status != status.Good {
					bad.Add(1)
				}
			}
		}()
	}
	for i := range 3 {
		require.NoError(t, m.Reload(context.Background()))
		require.Eventually(t, func() bool { return l.dials.Load() == int32(i+2) }, 5*time.Second, time.Millisecond)
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.Zero(t, bad.Load(), "no Read failed across three reloads")
	_, frames := m.Stats()
	require.Positive(t, frames)
}

func TestReloadWhenTheFileIsReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugin.bin")
	require.NoError(t, os.WriteFile(path, []byte("v1"), 0o644))
	c := &counter{}
	_, l := open(t, c, Config{Watch: path, WatchEvery: 10 * time.Millisecond})
	require.Equal(t, int32(1), l.dials.Load())
	// Replaced the way installers do it: written beside, then renamed over.
	next := path + ".new"
	require.NoError(t, os.WriteFile(next, []byte("v2!"), 0o644))
	require.NoError(t, os.Rename(next, path))
	require.Eventually(t, func() bool { return l.dials.Load() == 2 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, int32(2), l.dials.Load(), "one reload per replacement")
}

// TestReadRightAfterStart checks that the guest Open connected serves as soon as Start
// returns, before its supervisor runs.
func TestReadRightAfterStart(t *testing.T) {
	for range 20 {
		l := &loop{factory: func(s nodemgr.Setup) (nodemgr.Manager, error) { return &counter{ns: s.NamespaceURI}, nil }}
		m, err := Open(context.Background(), l, Config{Setup: nodemgr.Setup{Name: "t", NamespaceURI: "urn:t"}})
		require.NoError(t, err)
		require.NoError(t, m.Start(context.Background(), testHost{}))
		op, ch := read(context.Background(), m, 1)
		wait(t, ch)
		require.Equal(t, status.Good, op.Results[0].Status)
		require.NoError(t, m.Close(context.Background()))
	}
}

// echo answers each item with its NodeId's number, and counts the Reads it gets.
type echo struct {
	ns    string
	reads atomic.Int64
	gate  chan struct{}
}

func (e *echo) Namespaces() []string { return []string{e.ns} }

func (e *echo) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	e.reads.Add(1)
	if e.gate != nil {
		<-e.gate
	}
	for i, it := range op.Items {
		op.Results[i] = codec.DataValue{Value: codec.Int64Variant(int64(it.NodeId.IntID())), SourceTimestamp: op.Now}
	}
	done()
}

// TestReadsOfOneAskerTravelAsOne: Reads queued together travel as one Read per asker,
// and each gets its own items' results back; one answered meanwhile is left out.
func TestReadsOfOneAskerTravelAsOne(t *testing.T) {
	e := &echo{gate: make(chan struct{})}
	l := &loop{factory: func(s nodemgr.Setup) (nodemgr.Manager, error) { e.ns = s.NamespaceURI; return e, nil }}
	m, err := Open(context.Background(), l, Config{Setup: nodemgr.Setup{Name: "t", NamespaceURI: "urn:t"}})
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background(), testHost{}))
	t.Cleanup(func() { require.NoError(t, m.Close(context.Background())) })
	// The first Read holds the lane; the rest queue behind it.
	_, first := read(context.Background(), m, 1)
	require.Eventually(t, func() bool { return e.reads.Load() == 1 }, 5*time.Second, time.Millisecond)

	type sent struct {
		op   *nodemgr.ReadOp
		done chan struct{}
	}
	var all []sent
	expired, cancel := context.WithCancel(context.Background())
	for i := range 30 {
		op := &nodemgr.ReadOp{Principal: nodemgr.Principal{SessionID: codec.NewNumericNodeId(1, uint32(i%3))}}
		for k := range 1 + i%4 {
			op.Items = append(op.Items, ua.ReadValueId{NodeId: codec.NewNumericNodeId(2, uint32(100*i+k)), AttributeId: 13})
		}
		op.Results = make([]codec.DataValue, len(op.Items))
		ctx := context.Background()
		if i == 7 {
			ctx = expired
		}
		ch := make(chan struct{})
		m.read(ctx, op, func() { close(ch) })
		all = append(all, sent{op, ch})
	}
	cancel() // Read 7 ends before it travels
	wait(t, all[7].done)
	close(e.gate)
	wait(t, first)
	for i, s := range all {
		wait(t, s.done)
		for k, r := range s.op.Results {
			if i == 7 {
				require.Equal(t, status.BadTimeout, r.Status)
				continue
			}
			require.Equal(t, status.Good, r.Status, "read %d item %d", i, k)
			require.Equal(t, codec.Int64Variant(int64(100*i+k)), r.Value, "read %d item %d", i, k)
		}
	}
	require.Equal(t, int64(1+3), e.reads.Load(), "the first Read, then one per asker")
}

// watchingEcho is an echo that is a Watcher; it pushes nothing.
type watchingEcho struct{ echo }

func (*watchingEcho) Watch(context.Context, *nodemgr.WatchSet) {}

// recordingHost records what is pushed.
type recordingHost struct {
	testHost
	mu      sync.Mutex
	changes []nodemgr.DataChange
}

func (h *recordingHost) Notifier() nodemgr.Notifier { return h }
func (h *recordingHost) Emit([]nodemgr.Event)       {}
func (h *recordingHost) Changed(c []nodemgr.DataChange) {
	h.mu.Lock()
	h.changes = append(h.changes, c...)
	h.mu.Unlock()
}

// TestLostGuestReportsWatchedPairs: when a Watcher's guest is gone, its watched pairs
// get BadNotConnected, since nothing samples them.
func TestLostGuestReportsWatchedPairs(t *testing.T) {
	g := &watchingEcho{}
	l := &loop{factory: func(s nodemgr.Setup) (nodemgr.Manager, error) { g.ns = s.NamespaceURI; return g, nil }}
	m, err := Open(context.Background(), l, Config{Setup: nodemgr.Setup{Name: "t", NamespaceURI: "urn:t"}, Backoff: time.Hour})
	require.NoError(t, err)
	h := &recordingHost{}
	require.NoError(t, m.Start(context.Background(), h))
	t.Cleanup(func() { require.NoError(t, m.Close(context.Background())) })
	w, ok := m.Served().(nodemgr.Watcher)
	require.True(t, ok, "a Watcher guest is served as one")
	key := nodemgr.WatchKey{NodeId: codec.NewStringNodeId(2, "T"), AttributeId: 13}
	w.Watch(context.Background(), &nodemgr.WatchSet{Add: []nodemgr.WatchItem{{NodeId: key.NodeId, AttributeId: 13, SamplingInterval: 100}}})

	gone := error(errors.Join(status.BadCommunicationError, ErrBroken))
	l.fail.Store(&gone) // the next guest cannot be set up either
	m.slots[0].current().Close()
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.changes) == 1
	}, 5*time.Second, time.Millisecond)
	require.Equal(t, key.NodeId, h.changes[0].NodeId)
	require.Equal(t, status.BadNotConnected, h.changes[0].Value.Status)
}

// TestHungGuestIsReplaced: a guest that no longer answers (alive, but stuck) fails its
// health check and is replaced.
func TestHungGuestIsReplaced(t *testing.T) {
	c := &counter{}
	m, l := open(t, c, Config{HealthEvery: 20 * time.Millisecond, CallTimeout: 50 * time.Millisecond})
	l.hang.Store(true)
	require.Eventually(t, func() bool { return l.dials.Load() >= 2 }, 5*time.Second, time.Millisecond)
	l.hang.Store(false)
	waitReady(t, m)
	require.Eventually(t, func() bool {
		op, ch := read(context.Background(), m, 1)
		wait(t, ch)
		return op.Results[0].Status == status.Good
	}, 5*time.Second, 10*time.Millisecond)
}
