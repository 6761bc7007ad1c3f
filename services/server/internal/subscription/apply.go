package subscription

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/owner"
)

// ErrNotApplicable is the error of a Change that does not fit the engine's state: a
// subscription or item that does not exist (or already does), a message out of sequence,
// values no engine would hold. The engine is unchanged; a follower that meets it has
// missed part of the stream and starts again from the state (Follow).
var ErrNotApplicable = errors.New("subscription: change does not apply")

// SetEventTypes sets the type tree Apply compiles the EventFilters of event items
// against. Without it, a change that brings an event item fails. Safe for concurrent use.
func (e *Engine) SetEventTypes(t EventTypes) {
	e.mu.Lock()
	e.types = t
	e.mu.Unlock()
}

// Apply makes c, a change another engine reported (Observe, Follow), to this engine's
// state, which it checks first: a change that does not fit fails with ErrNotApplicable
// and changes nothing. The subscriptions it brings are live: their publishing timers run,
// their items are sampled (the first value of each is reported again), Publish, Republish
// and Transfer serve them. What it changes goes to this engine's observers too.
//
// State only is applied: the counters of the diagnostics, the value queues and the
// StatusChangeNotifications waiting for a session stay this engine's own (see
// RATIONALE.md). Safe for concurrent use.
func (e *Engine) Apply(c Change) error {
	e.mu.Lock()
	types := e.types
	e.mu.Unlock()
	// EventTypes may read the address space, which calls the engine (Changed) holding its
	// own lock: filters are compiled before the engine's lock is taken.
	filters, err := compileFilters(&c, types)
	if err != nil {
		return err
	}
	now := e.now()
	e.mu.Lock()
	out, err := e.applyLocked(&c, filters, now)
	if err == nil && len(e.observers) > 0 {
		e.notifyLocked(c)
	}
	e.mu.Unlock()
	e.send(out)
	return err
}

// notApplicable is an ErrNotApplicable about c.
func notApplicable(c *Change, format string, args ...any) error {
	return fmt.Errorf("%w: %v of subscription %d: %s", ErrNotApplicable, c.Kind, c.Subscription, fmt.Sprintf(format, args...))
}

// compileFilters compiles the EventFilters of the items c brings, in their order; nil
// for data items.
func compileFilters(c *Change, types EventTypes) ([]*EventFilter, error) {
	var items []ItemRecord
	switch c.Kind {
	case ChangeCreated:
		if c.Record == nil {
			return nil, notApplicable(c, "no record")
		}
		items = c.Record.Items
	case ChangeItemsCreated, ChangeItemsModified:
		items = c.Items
	}
	var filters []*EventFilter
	for i := range items {
		r := &items[i]
		if r.Events == nil {
			continue
		}
		if types == nil {
			return nil, notApplicable(c, "item %d: an event item, and no EventTypes to compile its filter", r.ID)
		}
		ef, _, code := CompileEventFilter(r.Events, types)
		if code != status.Good {
			return nil, notApplicable(c, "item %d: its EventFilter does not compile: %v", r.ID, code)
		}
		if filters == nil {
			filters = make([]*EventFilter, len(items))
		}
		filters[i] = ef
	}
	return filters, nil
}

// filterAt returns filters[i], nil when filters is.
func filterAt(filters []*EventFilter, i int) *EventFilter {
	if filters == nil {
		return nil
	}
	return filters[i]
}

// applyLocked checks c against the state, then makes it. Parked Publishes it answers go
// to out.
func (e *Engine) applyLocked(c *Change, filters []*EventFilter, now time.Time) ([]outgoing, error) {
	var out []outgoing
	if c.Kind == ChangeCreated {
		return out, e.restoreLocked(c, filters, now)
	}
	s := e.subs[c.Subscription]
	if s == nil {
		return out, notApplicable(c, "no such subscription")
	}
	switch c.Kind {
	case ChangeModified:
		st := &c.Settings
		if err := checkSettings(c, st); err != nil {
			return out, err
		}
		s.maxKeep, s.lifetime, s.maxNotif, s.priority = st.MaxKeepAliveCount, st.LifetimeCount, st.MaxNotificationsPerPublish, st.Priority
		s.keepAlive, s.life = min(s.keepAlive, s.maxKeep), s.lifetime
		if st.PublishingInterval != s.interval {
			s.interval = st.PublishingInterval
			e.scheduleLocked(&s.timer, now.Add(s.interval))
		}
	case ChangePublishingMode:
		s.enabled = c.Enabled
	case ChangeDeleted:
		ss := s.session
		e.deleteLocked(s)
		if ss != nil {
			out = e.noSubscriptionLocked(ss, out)
			e.dropIfIdleLocked(ss)
		}
	case ChangeTransferred:
		if c.Session.IsNull() {
			return out, notApplicable(c, "to no session")
		}
		dst := e.sessionLocked(c.Session)
		if old := s.session; old != dst {
			if old != nil {
				if j := slices.Index(old.subs, s); j >= 0 {
					old.subs = slices.Delete(old.subs, j, j+1)
				}
				e.dropIfIdleLocked(old)
			}
			s.session = dst
			dst.subs = append(dst.subs, s)
			e.unscheduleLocked(&s.orphan)
			e.moveLocked(s, dst.share)
		}
		s.owner = c.Owner
		s.life = s.lifetime
	case ChangeDetached:
		ss := s.session
		if ss == nil {
			return out, notApplicable(c, "already detached")
		}
		if j := slices.Index(ss.subs, s); j >= 0 {
			ss.subs = slices.Delete(ss.subs, j, j+1)
		}
		s.session = nil
		e.orphanLocked(s, now)
		e.dropIfIdleLocked(ss)
	case ChangeItemsCreated:
		if len(c.Items) == 0 {
			return out, notApplicable(c, "no items")
		}
		if err := e.checkItems(c, s, c.Items, filters); err != nil {
			return out, err
		}
		for i := range c.Items {
			e.addItemLocked(s, &c.Items[i], filterAt(filters, i), now)
		}
		e.lastItem = c.Items[len(c.Items)-1].ID
	case ChangeItemsModified:
		for i := range c.Items {
			r := &c.Items[i]
			it := s.items[r.ID]
			switch {
			case it == nil:
				return out, notApplicable(c, "no item %d", r.ID)
			case (it.events != nil) != (r.Events != nil):
				return out, notApplicable(c, "item %d: an event item and a data item", r.ID)
			}
			if err := e.checkItem(c, r, it.push); err != nil {
				return out, err
			}
		}
		for i := range c.Items {
			r := &c.Items[i]
			e.modifyItemLocked(s.items[r.ID], r, filterAt(filters, i), now)
		}
	case ChangeItemsDeleted:
		if err := checkItemIDs(c, s); err != nil {
			return out, err
		}
		for _, id := range c.ItemIDs {
			e.removeItemLocked(s.items[id])
		}
	case ChangeMonitoringMode:
		if c.Mode < ua.MonitoringModeDisabled || c.Mode > ua.MonitoringModeReporting {
			return out, notApplicable(c, "monitoring mode %d", c.Mode)
		}
		if err := checkItemIDs(c, s); err != nil {
			return out, err
		}
		for _, id := range c.ItemIDs {
			e.setModeLocked(s.items[id], c.Mode, now)
		}
	case ChangeTriggering:
		t := s.items[c.Trigger]
		if t == nil {
			return out, notApplicable(c, "no item %d", c.Trigger)
		}
		t.triggers = clip(c.Links)
	case ChangeSent:
		if c.Message.SequenceNumber != s.seq {
			return out, notApplicable(c, "message %d, expected %d", c.Message.SequenceNumber, s.seq)
		}
		if err := checkMessage(c, &c.Message); err != nil {
			return out, err
		}
		s.retrans = append(s.retrans, s.restoreMessage(&c.Message))
		s.seq = nextSequence(s.seq)
		takeSentEvents(s, &c.Message)
	case ChangeEventQueued:
		it := s.items[c.Item]
		if it == nil || it.events == nil {
			return out, notApplicable(c, "no event item %d", c.Item)
		}
		it.events.push(c.Event, it.discardOld, func() []codec.Variant { return c.Overflow })
		it.n = len(it.events.q)
		e.reportLocked(it)
	case ChangeAcknowledged, ChangeDropped:
		if s.ack(c.Sequence) != status.Good {
			return out, notApplicable(c, "no message %d", c.Sequence)
		}
	default:
		return out, notApplicable(c, "unknown kind")
	}
	return out, nil
}

// restoreLocked makes the subscription of a ChangeCreated, with its items and
// retransmission queue.
func (e *Engine) restoreLocked(c *Change, filters []*EventFilter, now time.Time) error {
	r := c.Record
	switch {
	case r.ID == 0 || r.ID != c.Subscription:
		return notApplicable(c, "record of subscription %d", r.ID)
	case e.subs[r.ID] != nil:
		return notApplicable(c, "exists")
	case r.NextSequenceNumber == 0:
		return notApplicable(c, "next sequence number 0")
	}
	if err := checkSettings(c, &r.Settings); err != nil {
		return err
	}
	st := &r.Settings
	s := &Subscription{
		id: r.ID, owner: r.Owner, interval: st.PublishingInterval, maxKeep: st.MaxKeepAliveCount,
		lifetime: st.LifetimeCount, maxNotif: st.MaxNotificationsPerPublish, enabled: r.Enabled, priority: st.Priority,
		keepAlive: st.MaxKeepAliveCount, life: st.LifetimeCount, seq: r.NextSequenceNumber, items: make(map[uint32]*item),
	}
	if err := e.checkItems(c, s, r.Items, filters); err != nil {
		return err
	}
	for i := range r.Retransmission {
		m := &r.Retransmission[i]
		if err := checkMessage(c, m); err != nil {
			return err
		}
		for _, o := range r.Retransmission[:i] {
			if o.SequenceNumber == m.SequenceNumber {
				return notApplicable(c, "message %d twice", m.SequenceNumber)
			}
		}
	}
	s.timer = timer{index: -1, sub: s}
	s.orphan = timer{index: -1, orphan: s}
	var share owner.Owner // a detached subscription counts for nobody's share
	if !r.Session.IsNull() {
		ss := e.sessionLocked(r.Session)
		s.session = ss
		ss.subs = append(ss.subs, s)
		share = ss.share
	}
	e.subs[s.id] = s
	e.holdLocked(s, share)
	if s.session == nil {
		e.orphanLocked(s, now)
	}
	if e.inSpace(s.id) {
		e.lastSub = s.id
	}
	e.counters.cumulatedSubscriptions++
	e.scheduleLocked(&s.timer, now.Add(s.interval))
	for i := range r.Items {
		it := e.addItemLocked(s, &r.Items[i], filterAt(filters, i), now)
		e.lastItem = max(e.lastItem, r.Items[i].ID)
		if it.events != nil && it.n > 0 {
			e.reportLocked(it) // its queued events go out in the next message
		}
	}
	for i := range r.Retransmission {
		s.retrans = append(s.retrans, s.restoreMessage(&r.Retransmission[i]))
	}
	return nil
}

// checkSettings refuses parameters that would stall the timer goroutine.
func checkSettings(c *Change, st *Settings) error {
	if st.PublishingInterval <= 0 {
		return notApplicable(c, "publishing interval %v", st.PublishingInterval)
	}
	return nil
}

// checkItems checks the records of items to add to s: new ids, each once, and values the
// engine can run.
func (e *Engine) checkItems(c *Change, s *Subscription, items []ItemRecord, filters []*EventFilter) error {
	for i := range items {
		r := &items[i]
		switch {
		case r.ID == 0 || s.items[r.ID] != nil:
			return notApplicable(c, "item %d exists or is 0", r.ID)
		case r.Mode < ua.MonitoringModeDisabled || r.Mode > ua.MonitoringModeReporting:
			return notApplicable(c, "item %d: monitoring mode %d", r.ID, r.Mode)
		}
		for _, o := range items[:i] {
			if o.ID == r.ID {
				return notApplicable(c, "item %d twice", r.ID)
			}
		}
		if err := e.checkItem(c, r, r.Push && filterAt(filters, i) == nil); err != nil {
			return err
		}
	}
	return nil
}

// checkItem checks the queue size and, for a sampled data item, the sampling interval.
func (e *Engine) checkItem(c *Change, r *ItemRecord, push bool) error {
	if r.QueueSize == 0 || r.QueueSize > max(e.limits.MaxQueueSize, 1) {
		return notApplicable(c, "item %d: queue size %d", r.ID, r.QueueSize)
	}
	if r.Events == nil && !push && r.SamplingInterval <= 0 {
		return notApplicable(c, "item %d: sampling interval %v", r.ID, r.SamplingInterval)
	}
	return nil
}

// checkItemIDs checks that c.ItemIDs are items of s, each once.
func checkItemIDs(c *Change, s *Subscription) error {
	if len(c.ItemIDs) == 0 {
		return notApplicable(c, "no items")
	}
	for i, id := range c.ItemIDs {
		if s.items[id] == nil || slices.Contains(c.ItemIDs[:i], id) {
			return notApplicable(c, "item %d unknown or twice", id)
		}
	}
	return nil
}

// checkMessage checks that m is a NotificationMessage the engine could have sent: at
// most one DataChangeNotification and one EventNotificationList.
func checkMessage(c *Change, m *ua.NotificationMessage) error {
	var dcn, enl bool
	for _, x := range m.NotificationData {
		switch x.Value.(type) {
		case *ua.DataChangeNotification:
			if dcn {
				return notApplicable(c, "message %d: two DataChangeNotifications", m.SequenceNumber)
			}
			dcn = true
		case *ua.EventNotificationList:
			if enl {
				return notApplicable(c, "message %d: two EventNotificationLists", m.SequenceNumber)
			}
			enl = true
		default:
			return notApplicable(c, "message %d: a notification the engine does not send", m.SequenceNumber)
		}
	}
	return nil
}

// restoreMessage takes a message from the pool and fills it from nm, which checkMessage
// accepted; it copies nm's arrays, not their values.
func (s *Subscription) restoreMessage(nm *ua.NotificationMessage) *message {
	m := s.takeMessage()
	m.seq, m.publishTime, m.ndata = nm.SequenceNumber, nm.PublishTime, 0
	for _, x := range nm.NotificationData {
		switch v := x.Value.(type) {
		case *ua.DataChangeNotification:
			m.items = append(m.items[:0], v.MonitoredItems...)
			m.dcn = ua.DataChangeNotification{MonitoredItems: m.items}
			m.data[m.ndata].Value = &m.dcn
		case *ua.EventNotificationList:
			m.events = append(m.events[:0], v.Events...)
			m.enl = ua.EventNotificationList{Events: m.events}
			m.data[m.ndata].Value = &m.enl
		}
		m.ndata++
	}
	return m
}

// nextSequence returns the sequence number after seq, skipping 0 (Part 4 §7.21).
func nextSequence(seq uint32) uint32 {
	seq++
	if seq == 0 {
		seq = 1
	}
	return seq
}

// dropIfIdleLocked forgets a session left with no subscription, no parked Publish and no
// StatusChangeNotification, as its engine would once it ended: an engine that applies
// changes is not told when sessions end.
func (e *Engine) dropIfIdleLocked(ss *session) {
	if len(ss.subs) == 0 && len(ss.queue) == 0 && len(ss.statuses) == 0 && e.sessions[ss.id] == ss {
		delete(e.sessions, ss.id)
	}
}

// takeSentEvents takes the events message m carries out of the queues of the event
// items they came from, oldest first, as building m did on the engine that sent it.
func takeSentEvents(s *Subscription, m *ua.NotificationMessage) {
	var byHandle map[uint32]int
	for i := range m.NotificationData {
		if enl, ok := m.NotificationData[i].Value.(*ua.EventNotificationList); ok {
			for _, ev := range enl.Events {
				if byHandle == nil {
					byHandle = make(map[uint32]int)
				}
				byHandle[ev.ClientHandle]++
			}
		}
	}
	if byHandle == nil {
		return
	}
	for _, it := range s.items {
		k := byHandle[it.handle]
		if it.events == nil || k == 0 {
			continue
		}
		k = min(k, len(it.events.q))
		it.events.take(k)
		it.n = len(it.events.q)
		byHandle[it.handle] -= k
	}
}
