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
// refuses). Beyond MaxMonitoredItems or MaxMonitoredItemsPerSubscription an item gets
// BadTooManyMonitoredItems. The service result is BadSubscriptionIdInvalid for a
// subscription the session does not have.
func (e *Engine) CreateItems(sessionID codec.NodeId, subID uint32, ts ua.TimestampsToReturn, reqs []ItemRequest, pre []status.Code) ([]ua.MonitoredItemCreateResult, status.Code) {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.ownedLocked(sessionID, subID)
	if s == nil {
		return nil, status.BadSubscriptionIdInvalid
	}
	res := make([]ua.MonitoredItemCreateResult, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		if pre[i] != status.Good {
			res[i].StatusCode = pre[i]
			continue
		}
		if (e.limits.MaxMonitoredItems > 0 && e.items >= e.limits.MaxMonitoredItems) ||
			(e.limits.MaxMonitoredItemsPerSubscription > 0 && len(s.items) >= e.limits.MaxMonitoredItemsPerSubscription) {
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
		interval := e.reviseSampling(r.SamplingInterval, s, r.MinSamplingInterval)
		q := reviseQueue(r.QueueSize, e.limits.MaxQueueSize)
		if r.Events != nil {
			interval = 0 // event items are not sampled
		}
		it := &item{
			id: e.lastItem, sub: s, handle: r.ClientHandle, rv: r.Item, key: r.Item.NodeId,
			mode: r.Mode, push: r.Push, ts: ts, filter: r.Filter, interval: interval,
			discardOld: r.DiscardOldest, queue: make([]codec.DataValue, q), nodeMin: r.MinSamplingInterval,
		}
		it.timer = timer{index: -1, item: it}
		s.items[it.id] = it
		e.items++
		if r.Events != nil {
			it.events, it.queue, it.push = newEventQueue(r.Events, q), nil, false
			e.addNotifierLocked(it)
		}
		if it.push {
			e.byNode[it.key] = append(e.byNode[it.key], it)
			e.pushNodes.Store(int64(len(e.byNode)))
		}
		e.startLocked(it, now)
		res[i] = ua.MonitoredItemCreateResult{
			StatusCode: status.Good, MonitoredItemId: it.id,
			RevisedSamplingInterval: durationMs(interval), RevisedQueueSize: q,
		}
	}
	return res, status.Good
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
		q := reviseQueue(r.QueueSize, e.limits.MaxQueueSize)
		if it.events != nil {
			it.handle, it.ts, it.discardOld = r.ClientHandle, ts, r.DiscardOldest
			if r.Events != nil {
				it.events.filter = r.Events
			}
			it.events.resize(q)
			it.n = len(it.events.q)
			res[i] = ua.MonitoredItemModifyResult{StatusCode: status.Good, RevisedQueueSize: q}
			continue
		}
		interval := e.reviseSampling(r.SamplingInterval, s, it.nodeMin)
		it.handle, it.ts, it.filter, it.discardOld = r.ClientHandle, ts, r.Filter, r.DiscardOldest
		it.setQueue(q)
		if interval != it.interval {
			it.interval = interval
			if !it.push && it.timer.index >= 0 {
				e.scheduleLocked(&it.timer, now.Add(interval))
			}
		}
		res[i] = ua.MonitoredItemModifyResult{StatusCode: status.Good, RevisedSamplingInterval: durationMs(interval), RevisedQueueSize: q}
	}
	return res, status.Good
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
	for i, id := range ids {
		it := s.items[id]
		if it == nil {
			res[i] = status.BadMonitoredItemIdInvalid
			continue
		}
		e.removeItemLocked(it)
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
	for i, id := range ids {
		it := s.items[id]
		if it == nil {
			res[i] = status.BadMonitoredItemIdInvalid
			continue
		}
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
	return res, status.Good
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
