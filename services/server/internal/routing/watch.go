package routing

import (
	"context"
	"sync"
	"time"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/subscription"
	"uastack.dev/services/server/internal/telemetry"
)

// watchKey names a monitored item: its subscription and its id.
type watchKey struct{ sub, item uint32 }

// watchedItem is a monitored item on a pair a Watcher manager watches.
type watchedItem struct {
	w        *watcher
	pair     nodemgr.WatchKey
	interval time.Duration
	enabled  bool // not Disabled (Part 4 §5.12.1.2: a disabled item is not sampled)
}

// watches is what the routes know of the monitored items on watched pairs, from the
// subscription engine's change stream. Only items whose values are pushed (a Value with
// no index range) are watched: the engine samples the others with Reads.
type watches struct {
	mu    sync.Mutex // guards items, bySub
	items map[watchKey]*watchedItem
	bySub map[uint32]map[uint32]struct{}
}

// SubscriptionChanged follows the subscription engine's change stream
// (subscription.Engine.Observe) and tells each started nodemgr.Watcher which of its
// (node, attribute) pairs clients monitor now, with the fastest sampling interval of
// their items that are not disabled. The engine calls it holding its lock: it records
// the change and wakes the manager's delivery goroutine, which calls Watch.
func (r *Routes) SubscriptionChanged(c subscription.Change) {
	if !r.watching {
		return // no Watcher: nothing to follow
	}
	w := &r.watches
	switch c.Kind {
	case subscription.ChangeCreated:
		if c.Record != nil && len(c.Record.Items) > 0 { // a restored subscription
			r.watchItems(c.Subscription, c.Record.Items)
		}
	case subscription.ChangeItemsCreated, subscription.ChangeItemsModified:
		r.watchItems(c.Subscription, c.Items)
	case subscription.ChangeItemsDeleted:
		w.mu.Lock()
		for _, id := range c.ItemIDs {
			w.removeLocked(watchKey{c.Subscription, id})
		}
		w.mu.Unlock()
	case subscription.ChangeMonitoringMode:
		w.mu.Lock()
		for _, id := range c.ItemIDs {
			if it := w.items[watchKey{c.Subscription, id}]; it != nil {
				it.enabled = c.Mode != ua.MonitoringModeDisabled
				it.w.touch(it.pair)
			}
		}
		w.mu.Unlock()
	case subscription.ChangeDeleted:
		w.mu.Lock()
		for id := range w.bySub[c.Subscription] {
			w.removeLocked(watchKey{c.Subscription, id})
		}
		w.mu.Unlock()
	}
}

// watchItems records created or modified items whose nodes a started Watcher owns.
func (r *Routes) watchItems(sub uint32, items []subscription.ItemRecord) {
	w := &r.watches
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range items {
		rec := &items[i]
		k := watchKey{sub, rec.ID}
		o := r.nodeOwner(rec.Item.NodeId)
		if o.watch == nil || !rec.Push {
			w.removeLocked(k) // a modified item may have left a watched pair
			continue
		}
		it := w.items[k]
		if it == nil {
			it = &watchedItem{w: o.watch}
			if w.items == nil {
				w.items, w.bySub = make(map[watchKey]*watchedItem), make(map[uint32]map[uint32]struct{})
			}
			w.items[k] = it
			if w.bySub[sub] == nil {
				w.bySub[sub] = make(map[uint32]struct{})
			}
			w.bySub[sub][rec.ID] = struct{}{}
		} else if it.pair != (nodemgr.WatchKey{NodeId: rec.Item.NodeId, AttributeId: rec.Item.AttributeId}) {
			it.w.forget(it.pair, k)
		}
		it.pair = nodemgr.WatchKey{NodeId: rec.Item.NodeId, AttributeId: rec.Item.AttributeId}
		it.interval, it.enabled = rec.SamplingInterval, rec.Mode != ua.MonitoringModeDisabled
		it.w.track(it.pair, k, it)
	}
}

// removeLocked forgets item k.
func (w *watches) removeLocked(k watchKey) {
	it := w.items[k]
	if it == nil {
		return
	}
	delete(w.items, k)
	if ids := w.bySub[k.sub]; ids != nil {
		delete(ids, k.item)
		if len(ids) == 0 {
			delete(w.bySub, k.sub)
		}
	}
	it.w.forget(it.pair, k)
}

// watcher delivers the watch set of one started Watcher: what the manager should watch
// (the items on each pair) against what it was told, sent as a WatchSet of the pairs
// that changed, from one goroutine, in order.
type watcher struct {
	m nodemgr.Watcher
	// name and panics report a Watch that panics.
	name   string
	panics *telemetry.Panics
	wake   chan struct{}
	done   chan struct{}
	ctx    context.Context
	stop   context.CancelFunc
	ran    sync.WaitGroup

	mu    sync.Mutex // guards pairs, told, dirty
	pairs map[nodemgr.WatchKey]map[watchKey]*watchedItem
	told  map[nodemgr.WatchKey]float64 // the interval (ms) each pair was added with
	dirty map[nodemgr.WatchKey]struct{}
}

func newWatcher(m nodemgr.Watcher, name string, panics *telemetry.Panics) *watcher {
	w := &watcher{m: m, name: name, panics: panics, wake: make(chan struct{}, 1), done: make(chan struct{}),
		pairs: make(map[nodemgr.WatchKey]map[watchKey]*watchedItem),
		told:  make(map[nodemgr.WatchKey]float64), dirty: make(map[nodemgr.WatchKey]struct{})}
	w.ctx, w.stop = context.WithCancel(context.Background())
	w.ran.Add(1)
	go w.run()
	return w
}

// track records item k on pair.
func (w *watcher) track(pair nodemgr.WatchKey, k watchKey, it *watchedItem) {
	w.mu.Lock()
	if w.pairs[pair] == nil {
		w.pairs[pair] = make(map[watchKey]*watchedItem)
	}
	w.pairs[pair][k] = it
	w.dirty[pair] = struct{}{}
	w.mu.Unlock()
	w.signal()
}

// forget removes item k from pair.
func (w *watcher) forget(pair nodemgr.WatchKey, k watchKey) {
	w.mu.Lock()
	if items := w.pairs[pair]; items != nil {
		delete(items, k)
		if len(items) == 0 {
			delete(w.pairs, pair)
		}
	}
	w.dirty[pair] = struct{}{}
	w.mu.Unlock()
	w.signal()
}

// touch marks pair to be looked at again (an item's mode changed).
func (w *watcher) touch(pair nodemgr.WatchKey) {
	w.mu.Lock()
	w.dirty[pair] = struct{}{}
	w.mu.Unlock()
	w.signal()
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run calls Watch with what changed, until close.
func (w *watcher) run() {
	defer w.ran.Done()
	for {
		select {
		case <-w.wake:
		case <-w.done:
			return
		}
		if set := w.collect(); len(set.Add)+len(set.Remove) > 0 {
			w.tell(set)
		}
	}
}

// tell hands set to the manager's Watch; one that panics is reported and the watcher
// goes on (the pairs of set count as told).
func (w *watcher) tell(set *nodemgr.WatchSet) {
	defer func() {
		if v := recover(); v != nil {
			w.panics.Recovered(telemetry.PlaceNodeManager, v, "nodeManager", w.name)
		}
	}()
	w.m.Watch(w.ctx, set)
}

// collect returns the changes of the dirty pairs and takes them as told. A pair is
// watched while one of its items is enabled, at the fastest interval of those items.
func (w *watcher) collect() *nodemgr.WatchSet {
	set := &nodemgr.WatchSet{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for pair := range w.dirty {
		fastest, on := time.Duration(0), false
		for _, it := range w.pairs[pair] {
			if it.enabled && (!on || it.interval < fastest) {
				fastest, on = it.interval, true
			}
		}
		ms := float64(fastest) / float64(time.Millisecond)
		told, was := w.told[pair]
		switch {
		case on && (!was || told != ms):
			set.Add = append(set.Add, nodemgr.WatchItem{NodeId: pair.NodeId, AttributeId: pair.AttributeId, SamplingInterval: ms})
			w.told[pair] = ms
		case !on && was:
			set.Remove = append(set.Remove, pair)
			delete(w.told, pair)
		}
	}
	clear(w.dirty)
	return set
}

// close stops the delivery; the manager is told nothing more.
func (w *watcher) close() {
	close(w.done)
	w.stop()
	w.ran.Wait()
}
