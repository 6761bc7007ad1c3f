package subscription

import (
	"math"
	"slices"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// reviseSampling returns the sampling interval granted for ms (Part 4 §7.21): negative
// is the publishing interval, 0 the fastest supported; never below the configured
// minimum nor the node's MinimumSamplingInterval, never above the maximum.
func (e *Engine) reviseSampling(ms float64, s *Subscription, nodeMin float64) time.Duration {
	var d time.Duration
	switch {
	case math.IsNaN(ms) || ms < 0:
		d = s.interval
	case ms == 0:
		d = e.limits.MinSamplingInterval
	default:
		d = msDuration(ms)
	}
	if nodeMin > 0 {
		d = max(d, msDuration(nodeMin))
	}
	return min(max(d, e.limits.MinSamplingInterval), e.limits.MaxSamplingInterval)
}

// CreateItems adds monitored items to a subscription (Part 4 §5.12.2). pre[i], when not
// Good, is the result the server already found for reqs[i] (an unknown node, a filter it
// refuses). Beyond MaxMonitoredItems, MaxMonitoredItemsPerSubscription or the share of
// the subscription's owner (MaxMonitoredItemsPerOwner) an item gets
// BadTooManyMonitoredItems (Part 4 §5.12.2.4). The service result is
// BadSubscriptionIdInvalid for a subscription the session does not have.
func (e *Engine) CreateItems(sessionID codec.NodeId, subID uint32, ts ua.TimestampsToReturn, reqs []ItemRequest, pre []status.Code) ([]ua.MonitoredItemCreateResult, status.Code) {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.ownedLocked(sessionID, subID)
	if s == nil {
		return nil, status.BadSubscriptionIdInvalid
	}
	res := make([]ua.MonitoredItemCreateResult, len(reqs))
	var created []ItemRecord // for the observers
	for i := range reqs {
		r := &reqs[i]
		if pre[i] != status.Good {
			res[i].StatusCode = pre[i]
			continue
		}
		if (e.limits.MaxMonitoredItems > 0 && e.items >= e.limits.MaxMonitoredItems) ||
			(e.limits.MaxMonitoredItemsPerSubscription > 0 && len(s.items) >= e.limits.MaxMonitoredItemsPerSubscription) ||
			(e.limits.MaxMonitoredItemsPerOwner > 0 && s.holding.items >= e.limits.MaxMonitoredItemsPerOwner) {
			res[i].StatusCode = status.BadTooManyMonitoredItems
			continue
		}
		if r.Mode < ua.MonitoringModeDisabled || r.Mode > ua.MonitoringModeReporting {
			res[i].StatusCode = status.BadMonitoringModeInvalid
			continue
		}
		e.lastItem++
		for e.lastItem == 0 || s.items[e.lastItem] != nil {
			e.lastItem++
		}
		rec := ItemRecord{
			ID: e.lastItem, ClientHandle: r.ClientHandle, Item: r.Item, Mode: r.Mode,
			SamplingInterval: e.reviseSampling(r.SamplingInterval, s, r.MinSamplingInterval),
			QueueSize:        reviseQueue(r.QueueSize, e.limits.MaxQueueSize), DiscardOldest: r.DiscardOldest,
			Timestamps: ts, Filter: r.Filter, Push: r.Push, MinSamplingInterval: r.MinSamplingInterval,
		}
		if r.Events != nil {
			rec.SamplingInterval, rec.Push = 0, false // event items are not sampled
		}
		it := e.addItemLocked(s, &rec, r.Events, now)
		if len(e.observers) > 0 {
			created = append(created, it.record())
		}
		res[i] = ua.MonitoredItemCreateResult{
			StatusCode: status.Good, MonitoredItemId: it.id,
			RevisedSamplingInterval: durationMs(rec.SamplingInterval), RevisedQueueSize: rec.QueueSize,
		}
	}
	if len(created) > 0 {
		e.notifyLocked(Change{Kind: ChangeItemsCreated, Subscription: s.id, Items: created})
	}
	return res, status.Good
}

// addItemLocked adds the item r describes to s, with ef as its filter when it is an event
// item, indexes it and schedules its first sample.
func (e *Engine) addItemLocked(s *Subscription, r *ItemRecord, ef *EventFilter, now time.Time) *item {
	it := &item{
		id: r.ID, sub: s, handle: r.ClientHandle, rv: r.Item, key: r.Item.NodeId,
		mode: r.Mode, push: r.Push, ts: r.Timestamps, filter: r.Filter, interval: r.SamplingInterval,
		discardOld: r.DiscardOldest, nodeMin: r.MinSamplingInterval, triggers: clip(r.Triggers),
	}
	it.timer = timer{index: -1, item: it}
	s.items[it.id] = it
	e.items++
	if s.holding != nil {
		s.holding.items++
	}
	if ef != nil {
		it.events, it.push = newEventQueue(ef, r.QueueSize), false
		if len(r.Queued) > 0 {
			// Restored (Apply): the events its server had not sent yet.
			it.events.q = cloneFieldLists(r.Queued)
			it.events.ovf = int(r.OverflowAt) - 1
			it.n = len(it.events.q)
		}
		e.addNotifierLocked(it)
	} else {
		it.size = int(r.QueueSize) // the ring grows as values arrive
	}
	if it.push {
		e.byNode[it.key] = append(e.byNode[it.key], it)
		e.pushNodes.Store(int64(len(e.byNode)))
	}
	e.startLocked(it, now)
	return it
}

// startLocked schedules the first sample of an item that is not Disabled: at once, so
// that the initial value is reported; a push item is sampled only then.
func (e *Engine) startLocked(it *item, now time.Time) {
	if it.mode == ua.MonitoringModeDisabled || it.events != nil {
		return
	}
	it.initialDone = false
	e.scheduleLocked(&it.timer, now)
}

// ItemModify is one ModifyMonitoredItems request.
type ItemModify struct {
	ID               uint32
	ClientHandle     uint32
	SamplingInterval float64
	QueueSize        uint32
	DiscardOldest    bool
	Filter           Filter
	Events           *EventFilter // for an event item; nil keeps its filter
}

// ModifyItems changes monitored items (Part 4 §5.12.3); pre as for CreateItems.
func (e *Engine) ModifyItems(sessionID codec.NodeId, subID uint32, ts ua.TimestampsToReturn, reqs []ItemModify, pre []status.Code) ([]ua.MonitoredItemModifyResult, status.Code) {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.ownedLocked(sessionID, subID)
	if s == nil {
		return nil, status.BadSubscriptionIdInvalid
	}
	res := make([]ua.MonitoredItemModifyResult, len(reqs))
	var modified []ItemRecord // for the observers
	for i := range reqs {
		r := &reqs[i]
		it := s.items[r.ID]
		switch {
		case it == nil:
			res[i].StatusCode = status.BadMonitoredItemIdInvalid
			continue
		case pre[i] != status.Good:
			res[i].StatusCode = pre[i]
			continue
		}
		rec := ItemRecord{ClientHandle: r.ClientHandle, QueueSize: reviseQueue(r.QueueSize, e.limits.MaxQueueSize),
			DiscardOldest: r.DiscardOldest, Timestamps: ts, Filter: r.Filter}
		if it.events == nil {
			rec.SamplingInterval = e.reviseSampling(r.SamplingInterval, s, it.nodeMin)
		}
		e.modifyItemLocked(it, &rec, r.Events, now)
		if len(e.observers) > 0 {
			modified = append(modified, it.record())
		}
		res[i] = ua.MonitoredItemModifyResult{StatusCode: status.Good,
			RevisedSamplingInterval: durationMs(rec.SamplingInterval), RevisedQueueSize: rec.QueueSize}
	}
	if len(modified) > 0 {
		e.notifyLocked(Change{Kind: ChangeItemsModified, Subscription: s.id, Items: modified})
	}
	return res, status.Good
}

// modifyItemLocked takes ClientHandle, Timestamps, DiscardOldest and QueueSize from r,
// and for a data item Filter and SamplingInterval; an event item takes ef as its filter
// unless ef is nil.
func (e *Engine) modifyItemLocked(it *item, r *ItemRecord, ef *EventFilter, now time.Time) {
	it.handle, it.ts, it.discardOld = r.ClientHandle, r.Timestamps, r.DiscardOldest
	if it.events != nil {
		if ef != nil {
			it.events.filter = ef
		}
		it.events.resize(r.QueueSize)
		it.n = len(it.events.q)
		return
	}
	it.filter = r.Filter
	it.setQueue(r.QueueSize)
	if r.SamplingInterval != it.interval {
		it.interval = r.SamplingInterval
		if !it.push && it.timer.index >= 0 {
			e.scheduleLocked(&it.timer, now.Add(it.interval))
		}
	}
}

// DeleteItems deletes monitored items (Part 4 §5.12.6).
func (e *Engine) DeleteItems(sessionID codec.NodeId, subID uint32, ids []uint32) ([]status.Code, status.Code) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.ownedLocked(sessionID, subID)
	if s == nil {
		return nil, status.BadSubscriptionIdInvalid
	}
	res := make([]status.Code, len(ids))
	var deleted []uint32 // for the observers
	for i, id := range ids {
		it := s.items[id]
		if it == nil {
			res[i] = status.BadMonitoredItemIdInvalid
			continue
		}
		e.removeItemLocked(it)
		if len(e.observers) > 0 {
			deleted = append(deleted, id)
		}
	}
	if len(deleted) > 0 {
		e.notifyLocked(Change{Kind: ChangeItemsDeleted, Subscription: s.id, ItemIDs: deleted})
	}
	return res, status.Good
}

// removeItemLocked deletes it from its subscription, the push index and the heap.
func (e *Engine) removeItemLocked(it *item) {
	s := it.sub
	e.unscheduleLocked(&it.timer)
	if it.push {
		list := e.byNode[it.key]
		if j := slices.Index(list, it); j >= 0 {
			list = slices.Delete(list, j, j+1)
		}
		if len(list) == 0 {
			delete(e.byNode, it.key)
		} else {
			e.byNode[it.key] = list
		}
		e.pushNodes.Store(int64(len(e.byNode)))
	}
	if it.events != nil {
		e.removeNotifierLocked(it)
	}
	s.undirty(it)
	delete(s.items, it.id)
	e.items--
	if s.holding != nil {
		s.holding.items--
	}
	it.sub = nil
	it.clearQueue()
}

// undirty takes it off the list of items to report.
func (s *Subscription) undirty(it *item) {
	if !it.dirty {
		return
	}
	it.dirty, it.triggered = false, false
	if j := slices.Index(s.dirty, it); j >= 0 {
		s.dirty = slices.Delete(s.dirty, j, j+1)
	}
}

// SetMonitoringMode sets the mode of monitored items (Part 4 §5.12.4). Disabling an
// item drops its queue; enabling one reports its current value again.
func (e *Engine) SetMonitoringMode(sessionID codec.NodeId, subID uint32, mode ua.MonitoringMode, ids []uint32) ([]status.Code, status.Code) {
	if mode < ua.MonitoringModeDisabled || mode > ua.MonitoringModeReporting {
		return nil, status.BadMonitoringModeInvalid
	}
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.ownedLocked(sessionID, subID)
	if s == nil {
		return nil, status.BadSubscriptionIdInvalid
	}
	res := make([]status.Code, len(ids))
	var set []uint32 // for the observers
	for i, id := range ids {
		it := s.items[id]
		if it == nil {
			res[i] = status.BadMonitoredItemIdInvalid
			continue
		}
		e.setModeLocked(it, mode, now)
		if len(e.observers) > 0 {
			set = append(set, id)
		}
	}
	if len(set) > 0 {
		e.notifyLocked(Change{Kind: ChangeMonitoringMode, Subscription: s.id, Mode: mode, ItemIDs: set})
	}
	return res, status.Good
}

// setModeLocked sets the monitoring mode of it.
func (e *Engine) setModeLocked(it *item, mode ua.MonitoringMode, now time.Time) {
	s := it.sub
	old := it.mode
	it.mode = mode
	switch {
	case mode == ua.MonitoringModeDisabled:
		e.unscheduleLocked(&it.timer)
		s.undirty(it)
		it.clearQueue()
		it.hasLast = false
	case old == ua.MonitoringModeDisabled:
		e.startLocked(it, now)
	case mode == ua.MonitoringModeSampling:
		if !it.triggered {
			s.undirty(it)
		}
	case it.n > 0:
		s.markDirty(it)
	}
}

// SetTriggering adds and removes triggering links of a monitored item (Part 4
// §5.12.5): when it reports, the linked items in Sampling mode report their queues.
func (e *Engine) SetTriggering(sessionID codec.NodeId, subID, trigger uint32, add, remove []uint32) ([]status.Code, []status.Code, status.Code) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.ownedLocked(sessionID, subID)
	if s == nil {
		return nil, nil, status.BadSubscriptionIdInvalid
	}
	t := s.items[trigger]
	if t == nil {
		return nil, nil, status.BadMonitoredItemIdInvalid
	}
	rem := make([]status.Code, len(remove))
	for i, id := range remove {
		j := slices.Index(t.triggers, id)
		if j < 0 {
			rem[i] = status.BadMonitoredItemIdInvalid
			continue
		}
		t.triggers = slices.Delete(t.triggers, j, j+1)
	}
	addRes := make([]status.Code, len(add))
	for i, id := range add {
		if s.items[id] == nil {
			addRes[i] = status.BadMonitoredItemIdInvalid
			continue
		}
		if !slices.Contains(t.triggers, id) {
			t.triggers = append(t.triggers, id)
		}
	}
	if len(e.observers) > 0 {
		links := t.triggers
		if len(links) == 0 {
			links = nil // as it decodes
		}
		e.notifyLocked(Change{Kind: ChangeTriggering, Subscription: s.id, Trigger: trigger, Links: links})
	}
	return addRes, rem, status.Good
}

// ItemTarget returns what a monitored item of a session's subscription monitors.
func (e *Engine) ItemTarget(sessionID codec.NodeId, subID, itemID uint32) (ua.ReadValueId, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.ownedLocked(sessionID, subID); s != nil {
		if it := s.items[itemID]; it != nil {
			return it.rv, true
		}
	}
	return ua.ReadValueId{}, false
}
