package routing

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/subscription"
	"uastack.dev/services/server/internal/telemetry"
)

// panicReader is a manager of one namespace whose Read behaves as how says.
type panicReader struct {
	uri string
	how string
	// calls counts the done calls the manager made.
	calls atomic.Int32
}

func (m *panicReader) Namespaces() []string { return []string{m.uri} }

func (m *panicReader) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	good := func() {
		for i := range op.Results {
			op.Results[i] = codec.DataValue{Value: codec.StringVariant(m.how)}
		}
	}
	call := func() { m.calls.Add(1); done() }
	switch m.how {
	case "panics":
		panic("a manager's bug")
	case "panics after deferred done":
		defer call()
		op.Results[0] = codec.DataValue{Value: codec.StringVariant("half done")}
		panic("a manager's bug after half its work")
	case "done twice":
		good()
		call()
		call()
	case "done later":
		go func() {
			time.Sleep(20 * time.Millisecond)
			good()
			call()
		}()
	default:
		good()
		call()
	}
}

// routesOf mounts ms after namespace 0 and reports panics to a fresh Telemetry.
func routesOf(t *testing.T, ms ...nodemgr.Manager) (*Routes, *telemetry.Panics) {
	t.Helper()
	r, err := New(addrspace.NewNamespace0(), Unnamed(ms...))
	require.NoError(t, err)
	tel, err := telemetry.New(telemetry.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	r.SetPanics(tel.Panics())
	return r, tel.Panics()
}

// nodeIn returns node i=1 of the namespace uri.
func nodeIn(t *testing.T, r *Routes, uri string) codec.NodeId {
	t.Helper()
	for i, u := range r.Namespaces() {
		if u == uri {
			return codec.NewNumericNodeId(uint16(i), 1)
		}
	}
	t.Fatalf("namespace %s not mounted", uri)
	return codec.NodeId{}
}

// TestManagerPanics: a Read across managers, one of which panics (before it calls done,
// or after a deferred done with its results half filled in), answers that manager's
// items with BadInternalError and the others' with their values, once; a manager that
// calls done twice, or from its own goroutine after its Read returned, is answered as
// it said. The panics are counted at place node_manager.
func TestManagerPanics(t *testing.T) {
	t.Parallel()
	hows := []string{"fine", "panics", "panics after deferred done", "done twice", "done later"}
	var ms []nodemgr.Manager
	for _, how := range hows {
		ms = append(ms, &panicReader{uri: "urn:test:" + how, how: how})
	}
	r, panics := routesOf(t, ms...)
	op := &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnNeither, Results: make([]codec.DataValue, len(hows))}
	for _, how := range hows {
		op.Items = append(op.Items, ua.ReadValueId{NodeId: nodeIn(t, r, "urn:test:"+how), AttributeId: 13})
	}
	finished := make(chan struct{}, 2)
	r.Read(context.Background(), op, func() { finished <- struct{}{} })
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("the Read was not finished")
	}
	require.Equal(t, []codec.DataValue{
		{Value: codec.StringVariant("fine")},
		{Status: status.BadInternalError},
		{Status: status.BadInternalError},
		{Value: codec.StringVariant("done twice")},
		{Value: codec.StringVariant("done later")},
	}, op.Results)
	select {
	case <-finished:
		t.Fatal("finished twice")
	case <-time.After(50 * time.Millisecond):
	}
	require.EqualValues(t, 2, panics.Count(telemetry.PlaceNodeManager))
	require.EqualValues(t, 1, ms[2].(*panicReader).calls.Load(), "the deferred done was called, and ignored")
}

// TestDonePanics: the done of a Read that a manager completes from its own goroutine
// panics: the panic is recovered there (place done), and the routes serve on.
func TestDonePanics(t *testing.T) {
	t.Parallel()
	m := &panicReader{uri: "urn:test:late", how: "done later"}
	r, panics := routesOf(t, m)
	item := ua.ReadValueId{NodeId: nodeIn(t, r, m.uri), AttributeId: 13}
	op := &nodemgr.ReadOp{Items: []ua.ReadValueId{item}, Results: make([]codec.DataValue, 1)}
	r.Read(context.Background(), op, func() { panic("the answer's bug") })
	require.Eventually(t, func() bool { return panics.Count(telemetry.PlaceDone) == 1 }, 5*time.Second, time.Millisecond)

	finished := make(chan struct{})
	op = &nodemgr.ReadOp{Items: []ua.ReadValueId{item}, Results: make([]codec.DataValue, 1)}
	r.Read(context.Background(), op, func() { close(finished) })
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("the next Read was not finished")
	}
	require.Equal(t, codec.StringVariant("done later"), op.Results[0].Value)
}

// healthPanicker is a manager whose Health panics.
type healthPanicker struct{ panicReader }

func (*healthPanicker) Health(context.Context) nodemgr.Health { panic("a manager's bug in Health") }

// TestHealthPanics: a manager whose Health panics reports BadInternalError.
func TestHealthPanics(t *testing.T) {
	t.Parallel()
	r, panics := routesOf(t, &healthPanicker{panicReader{uri: "urn:test:health"}})
	h := r.Health(context.Background())
	require.Len(t, h, 1)
	require.Equal(t, status.BadInternalError, h[0].Health.Status)
	require.EqualValues(t, 1, panics.Count(telemetry.PlaceNodeManager))
}

// watchPanicker is a started Watcher whose first Watch panics.
type watchPanicker struct {
	plain
	host  nodemgr.Host
	calls atomic.Int32
}

func (m *watchPanicker) Start(_ context.Context, h nodemgr.Host) error {
	m.host = h
	return nil
}

func (m *watchPanicker) Watch(context.Context, *nodemgr.WatchSet) {
	if m.calls.Add(1) == 1 {
		panic("a manager's bug in Watch")
	}
}

// panicPushes is where pushes go; a change of node i=1 panics.
type panicPushes struct{ recorder }

func (p *panicPushes) Changed(c *nodemgr.DataChange) {
	if c.NodeId.IntID() == 1 {
		panic("a bug in the delivery of a push")
	}
	p.recorder.Changed(c)
}

// TestWatchAndPushPanics: a Watch that panics does not end the manager's watcher (the
// next watch set reaches it), and a pushed value whose delivery panics does not keep the
// next one from its delivery.
func TestWatchAndPushPanics(t *testing.T) {
	t.Parallel()
	m := &watchPanicker{plain: "urn:test:watch"}
	r, panics := routesOf(t, m)
	pushes := &panicPushes{}
	require.NoError(t, r.Start(context.Background(), quiet, time.Now, pushes))
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	ns := nodeIn(t, r, string(m.plain)).Namespace()
	item := func(id, node uint32) subscription.ItemRecord {
		return subscription.ItemRecord{ID: id, Item: ua.ReadValueId{NodeId: codec.NewNumericNodeId(ns, node), AttributeId: 13},
			Mode: ua.MonitoringModeReporting, SamplingInterval: 100 * time.Millisecond, Push: true}
	}
	r.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeItemsCreated, Subscription: 1, Items: []subscription.ItemRecord{item(1, 5)}})
	require.Eventually(t, func() bool { return m.calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	r.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeItemsCreated, Subscription: 1, Items: []subscription.ItemRecord{item(2, 6)}})
	require.Eventually(t, func() bool { return m.calls.Load() == 2 }, 5*time.Second, time.Millisecond, "the watcher goes on")
	require.EqualValues(t, 1, panics.Count(telemetry.PlaceNodeManager))

	m.host.Notifier().Changed([]nodemgr.DataChange{
		{NodeId: codec.NewNumericNodeId(ns, 1), AttributeId: 13},
		{NodeId: codec.NewNumericNodeId(ns, 2), AttributeId: 13},
	})
	require.Eventually(t, func() bool {
		pushes.mu.Lock()
		defer pushes.mu.Unlock()
		return len(pushes.changes) == 1 && pushes.changes[0].NodeId.IntID() == 2
	}, 5*time.Second, time.Millisecond, "the next value is delivered")
	require.EqualValues(t, 1, panics.Count(telemetry.PlacePush))
}
