package routing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/services/server/internal/addrspace"
)

// starter is a manager that records its lifecycle in log and keeps its host.
type starter struct {
	plain
	log      *[]string
	startErr error
	host     nodemgr.Host
}

func (s *starter) Start(_ context.Context, h nodemgr.Host) error {
	*s.log = append(*s.log, "start "+string(s.plain))
	s.host = h
	return s.startErr
}

func (s *starter) Close(context.Context) error {
	*s.log = append(*s.log, "close "+string(s.plain))
	return nil
}

// recorder is Pushes that records what reaches it; hold, when set, blocks delivery.
type recorder struct {
	mu      sync.Mutex // guards changes, events
	changes []nodemgr.DataChange
	events  []nodemgr.Event
	hold    chan struct{}
}

func (r *recorder) Changed(c *nodemgr.DataChange) {
	if r.hold != nil {
		<-r.hold
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, *c)
}

func (r *recorder) Event(ev *nodemgr.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, *ev)
}

func (r *recorder) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.changes), len(r.events)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestStartClose: Starters start in mount order with a host that knows their indexes
// and delivers what they push; Closers close last first, once; a failed Start closes the
// ones started before it and names the manager.
func TestStartClose(t *testing.T) {
	t.Parallel()
	var log []string
	a, b := &starter{plain: "urn:a", log: &log}, &starter{plain: "urn:b", log: &log}
	rt, err := New(addrspace.NewNamespace0(), Unnamed(a, plain("urn:plain"), b))
	require.NoError(t, err)
	rec := &recorder{}
	require.NoError(t, rt.Start(context.Background(), quiet, time.Now, rec))
	require.Equal(t, []string{"start urn:a", "start urn:b"}, log)
	require.Equal(t, []uint16{3}, b.host.NamespaceIndexes())

	node := codec.NewStringNodeId(3, "x")
	changes := []nodemgr.DataChange{{NodeId: node, AttributeId: 13, Value: codec.DataValue{Value: codec.Int32Variant(7)}}}
	b.host.Notifier().Changed(changes)
	changes[0].Value = codec.DataValue{} // the notifier copied the batch
	b.host.Notifier().Emit([]nodemgr.Event{{EventType: node, SourceNode: node}})
	require.Eventually(t, func() bool { c, e := rec.counts(); return c == 1 && e == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, codec.Int32Variant(7), rec.changes[0].Value.Value)

	require.NoError(t, rt.Close(context.Background()))
	require.NoError(t, rt.Close(context.Background()), "a second Close closes nothing")
	require.Equal(t, []string{"start urn:a", "start urn:b", "close urn:b", "close urn:a"}, log)
	b.host.Notifier().Changed(changes)
	time.Sleep(10 * time.Millisecond)
	c, _ := rec.counts()
	require.Equal(t, 1, c, "pushes after Close are ignored")

	log = nil
	a, b = &starter{plain: "urn:a", log: &log}, &starter{plain: "urn:b", log: &log, startErr: errors.New("no device")}
	rt, err = New(addrspace.NewNamespace0(), Unnamed(a, b))
	require.NoError(t, err)
	err = rt.Start(context.Background(), quiet, time.Now, rec)
	require.ErrorContains(t, err, "node manager *routing.starter: start: no device")
	require.NoError(t, rt.Close(context.Background()))
	require.Equal(t, []string{"start urn:a", "start urn:b", "close urn:a"}, log, "the failed one is not closed, the started one once")
}

// TestPushesBounded: a manager that pushes while delivery is stuck fills its queue and
// loses batches beyond it instead of blocking or growing.
func TestPushesBounded(t *testing.T) {
	t.Parallel()
	var log []string
	a := &starter{plain: "urn:a", log: &log}
	rt, err := New(addrspace.NewNamespace0(), Unnamed(a))
	require.NoError(t, err)
	rec := &recorder{hold: make(chan struct{})}
	require.NoError(t, rt.Start(context.Background(), quiet, time.Now, rec))
	one := []nodemgr.DataChange{{NodeId: codec.NewStringNodeId(1, "x"), AttributeId: 13}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 2 * pushQueue {
			a.host.Notifier().Changed(one)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("pushing blocked")
	}
	require.GreaterOrEqual(t, rt.Dropped(), uint64(pushQueue-1))
	close(rec.hold)
	require.NoError(t, rt.Close(context.Background()))
}

// reloading is a manager that counts its reloads, and fails them with err.
type reloading struct {
	plain
	n   *int
	err error
}

func (r reloading) Reload(context.Context) error { *r.n++; return r.err }

// TestReload: Reload reloads every Reloader, and an error names its manager.
func TestReload(t *testing.T) {
	t.Parallel()
	n := 0
	rt, err := New(addrspace.NewNamespace0(), []Named{
		{Name: "a", Manager: reloading{plain: "urn:a", n: &n}},
		{Name: "plain", Manager: plain("urn:p")},
		{Name: "b", Manager: reloading{plain: "urn:b", n: &n, err: errors.New("not a WebAssembly module")}},
	})
	require.NoError(t, err)
	err = rt.Reload(context.Background())
	require.Equal(t, 2, n)
	require.ErrorContains(t, err, "node manager b: reload: not a WebAssembly module")
	require.NotContains(t, err.Error(), "node manager a")
}
