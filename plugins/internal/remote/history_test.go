package remote

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
)

// historian is a guest that keeps history in memory.
type historian struct {
	counter
	*history.Memory
}

// valuesOnly is a guest whose store keeps values, not events.
type valuesOnly struct {
	counter
	history.Store
}

// openGuest opens a Manager over the loop whose guest is m.
func openGuest(t *testing.T, m nodemgr.Manager) *Manager {
	t.Helper()
	l := &loop{factory: func(nodemgr.Setup) (nodemgr.Manager, error) { return m, nil }}
	mgr, err := Open(context.Background(), l, Config{Setup: nodemgr.Setup{Name: "t", NamespaceURI: "urn:t"}})
	require.NoError(t, err)
	require.NoError(t, mgr.Start(context.Background(), testHost{}))
	t.Cleanup(func() { require.NoError(t, mgr.Close(context.Background())) })
	waitReady(t, mgr)
	return mgr
}

func newMemory() *history.Memory {
	return history.NewMemory(history.MemoryLimits{PerNode: 10_000, Total: 100_000, EventsPerNotifier: 100})
}

// TestHistoryConformance runs the store conformance kit against a guest's store across
// the boundary: every operation and result is encoded, served by the guest and decoded.
func TestHistoryConformance(t *testing.T) {
	t.Parallel()
	historytest.Run(t, func(t *testing.T) history.Store {
		served := openGuest(t, &historian{counter{ns: "urn:t"}, newMemory()}).Served()
		caps := nodemgr.CapabilitiesOf(served)
		require.Equal(t, nodemgr.CapHistory|nodemgr.CapHistoryEvents, caps&(nodemgr.CapHistory|nodemgr.CapHistoryEvents))
		return served.(history.Store)
	})
}

// TestHistoryCapabilities: the served manager is a history.Store exactly when its guest
// is, and an EventStore only when the guest's store keeps events.
func TestHistoryCapabilities(t *testing.T) {
	t.Parallel()
	plain := openGuest(t, &counter{ns: "urn:t"}).Served()
	_, ok := plain.(history.Store)
	require.False(t, ok)
	values := openGuest(t, &valuesOnly{counter{ns: "urn:t"}, storeOnly{newMemory()}}).Served()
	_, ok = values.(history.Store)
	require.True(t, ok)
	_, ok = values.(history.EventStore)
	require.False(t, ok)
}

// storeOnly hides the EventStore of a store.
type storeOnly struct{ s history.Store }

func (s storeOnly) Append(ctx context.Context, v []history.Value) error { return s.s.Append(ctx, v) }
func (s storeOnly) ReadRaw(ctx context.Context, op *history.ReadRawOp) error {
	return s.s.ReadRaw(ctx, op)
}
func (s storeOnly) Update(ctx context.Context, op *history.UpdateOp) error {
	return s.s.Update(ctx, op)
}
func (s storeOnly) DeleteRaw(ctx context.Context, op *history.DeleteRawOp) error {
	return s.s.DeleteRaw(ctx, op)
}
func (s storeOnly) DeleteAtTime(ctx context.Context, op *history.DeleteAtTimeOp) error {
	return s.s.DeleteAtTime(ctx, op)
}

// failing is a store that fails as a whole.
type failing struct{ storeOnly }

func (failing) ReadRaw(context.Context, *history.ReadRawOp) error { return status.BadOutOfService }

// TestHistoryStoreFails: a guest store's error answers every item with its code.
func TestHistoryStoreFails(t *testing.T) {
	t.Parallel()
	st := openGuest(t, &valuesOnly{counter{ns: "urn:t"}, failing{storeOnly{newMemory()}}}).Served().(history.Store)
	op := &history.ReadRawOp{Items: make([]history.RawRead, 2), Results: make([]history.RawResult, 2)}
	op.Items[0].Node = codec.NewStringNodeId(1, "x")
	require.NoError(t, st.ReadRaw(context.Background(), op))
	require.Equal(t, []history.RawResult{{Status: status.BadOutOfService}, {Status: status.BadOutOfService}}, op.Results)
}
