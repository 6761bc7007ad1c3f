package routing

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/subscription"
)

// watching is a Watcher that records the watch sets it is given and keeps the set of
// watched pairs they add up to, and the pairs removed before they were added (recorded,
// not panicked on: the routes recover a Watch that panics).
type watching struct {
	plain
	mu         sync.Mutex // guards sets, watched, violations
	sets       []nodemgr.WatchSet
	watched    map[nodemgr.WatchKey]float64
	violations []nodemgr.WatchKey
}

func (w *watching) Watch(_ context.Context, set *nodemgr.WatchSet) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched == nil {
		w.watched = make(map[nodemgr.WatchKey]float64)
	}
	for _, k := range set.Remove {
		if _, ok := w.watched[k]; !ok {
			w.violations = append(w.violations, k)
			continue
		}
		delete(w.watched, k)
	}
	for _, a := range set.Add {
		w.watched[a.Key()] = a.SamplingInterval
	}
	w.sets = append(w.sets, nodemgr.WatchSet{Add: append([]nodemgr.WatchItem(nil), set.Add...), Remove: append([]nodemgr.WatchKey(nil), set.Remove...)})
}

func (w *watching) state() map[nodemgr.WatchKey]float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[nodemgr.WatchKey]float64, len(w.watched))
	for k, v := range w.watched {
		out[k] = v
	}
	return out
}

// TestWatch: the pairs a Watcher is told to watch follow the items on them, from the
// subscription engine's changes: the fastest interval of the enabled items, none once
// the last is disabled, deleted or its subscription gone; items that are not pushed, and
// nodes of other owners, are not watched.
func TestWatch(t *testing.T) {
	t.Parallel()
	w := &watching{plain: "urn:dev"}
	rt, err := New(addrspace.NewNamespace0(), Unnamed(w))
	require.NoError(t, err)
	require.NoError(t, rt.Start(context.Background(), quiet, time.Now, &recorder{}))
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	temp := nodemgr.WatchKey{NodeId: codec.NewStringNodeId(1, "temp"), AttributeId: 13}
	item := func(id uint32, pair nodemgr.WatchKey, ms int, push bool) subscription.ItemRecord {
		return subscription.ItemRecord{ID: id, Item: ua.ReadValueId{NodeId: pair.NodeId, AttributeId: pair.AttributeId},
			Mode: ua.MonitoringModeReporting, SamplingInterval: time.Duration(ms) * time.Millisecond, Push: push}
	}
	want := func(state map[nodemgr.WatchKey]float64, why string) {
		t.Helper()
		require.Eventually(t, func() bool { return len(w.state()) == len(state) && equalState(w.state(), state) }, 5*time.Second, time.Millisecond, why)
	}
	local := nodemgr.WatchKey{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13}
	rt.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeItemsCreated, Subscription: 1, Items: []subscription.ItemRecord{
		item(1, temp, 500, true), item(2, local, 100, true), item(3, temp, 50, false)}})
	want(map[nodemgr.WatchKey]float64{temp: 500}, "the pushed item of the manager's node")
	rt.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeItemsCreated, Subscription: 2, Items: []subscription.ItemRecord{item(4, temp, 200, true)}})
	want(map[nodemgr.WatchKey]float64{temp: 200}, "the fastest of two")
	rt.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeMonitoringMode, Subscription: 2, ItemIDs: []uint32{4}, Mode: ua.MonitoringModeDisabled})
	want(map[nodemgr.WatchKey]float64{temp: 500}, "a disabled item does not count")
	rt.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeItemsModified, Subscription: 1, Items: []subscription.ItemRecord{item(1, temp, 1000, true)}})
	want(map[nodemgr.WatchKey]float64{temp: 1000}, "a modified interval")
	rt.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeItemsDeleted, Subscription: 1, ItemIDs: []uint32{1}})
	want(map[nodemgr.WatchKey]float64{}, "the last enabled item gone")
	rt.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeMonitoringMode, Subscription: 2, ItemIDs: []uint32{4}, Mode: ua.MonitoringModeSampling})
	want(map[nodemgr.WatchKey]float64{temp: 200}, "enabled again")
	rt.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeDeleted, Subscription: 2})
	want(map[nodemgr.WatchKey]float64{}, "its subscription deleted")
	rt.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeCreated, Subscription: 3, Record: &subscription.SubscriptionRecord{
		ID: 3, Items: []subscription.ItemRecord{item(9, temp, 300, true)}}})
	want(map[nodemgr.WatchKey]float64{temp: 300}, "a restored subscription's items")
	require.Empty(t, rt.watches.bySub[1], "no item of subscription 1 is remembered")
	require.NoError(t, rt.Close(context.Background()))
	n := len(w.sets)
	rt.SubscriptionChanged(subscription.Change{Kind: subscription.ChangeDeleted, Subscription: 3})
	time.Sleep(20 * time.Millisecond)
	require.Len(t, w.sets, n, "nothing is watched after Close")
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Empty(t, w.violations, "a pair removed before it was added")
}

func equalState(a, b map[nodemgr.WatchKey]float64) bool {
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
