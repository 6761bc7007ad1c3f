package subscription

import (
	"math"
	"slices"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// state is a state of the Subscription state table (Part 4 §5.13.1.2).
type state uint8

const (
	stateNormal state = iota
	stateLate
	stateKeepAlive
)

// Subscription is one Subscription (Part 4 §5.13.1). Its fields are guarded by Engine.mu.
type Subscription struct {
	id       uint32
	session  *session // nil once its session ended without deleting it
	owner    string   // who may transfer it
	interval time.Duration
	maxKeep  uint32 // revised max keep-alive count
	lifetime uint32 // revised lifetime count
	maxNotif uint32 // 0 is no limit
	enabled  bool
	priority byte

	state       state
	keepAlive   uint32 // keep-alive counter
	life        uint32 // lifetime counter
	messageSent bool
	more        bool // the last message left notifications behind
	lateSince   time.Time
	seq         uint32 // the next sequence number
	timer       timer
	// orphan ends the subscription Limits.OrphanLifetime after its session left it.
	orphan timer
	// holding is the share of its owner it counts in, with its items (shares.go).
	holding *holding

	items map[uint32]*item
	dirty []*item // items with values to report, in the order they got them

	retrans []*message // sent, not yet acknowledged; oldest first
	free    []*message

	counters subscriptionCounters // diagnostics.go
}

// message is a NotificationMessage of the retransmission queue and the arrays it
// points at; it is reused once acknowledged (or dropped) and no longer being sent.
type message struct {
	owner       *Subscription
	seq         uint32
	publishTime codec.DateTime
	data        [2]codec.ExtensionObject
	ndata       int // entries of data in use
	dcn         ua.DataChangeNotification
	items       []ua.MonitoredItemNotification
	enl         ua.EventNotificationList
	events      []ua.EventFieldList
	pins        int  // responses being encoded from it
	released    bool // acknowledged or dropped while pinned
}

func (m *message) notification() ua.NotificationMessage {
	return ua.NotificationMessage{SequenceNumber: m.seq, PublishTime: m.publishTime, NotificationData: m.data[:m.ndata]}
}

// Params are the requested parameters of CreateSubscription and ModifySubscription.
type Params struct {
	PublishingInterval         float64 // ms
	LifetimeCount              uint32
	MaxKeepAliveCount          uint32
	MaxNotificationsPerPublish uint32
	Priority                   byte
}

// Revised are the parameters the server granted.
type Revised struct {
	PublishingInterval float64 // ms
	LifetimeCount      uint32
	MaxKeepAliveCount  uint32
}

// defaultKeepAlive is the keep-alive count granted for a request of 0.
const defaultKeepAlive = 10

// revise fits p into the limits (Part 4 §5.13.2): the interval into [min, max], a
// keep-alive count of 0 to the default, the lifetime to at least three keep-alives.
func (e *Engine) revise(p Params) (time.Duration, uint32, uint32, uint32) {
	l := e.limits
	iv := l.MinPublishingInterval
	if !math.IsNaN(p.PublishingInterval) && p.PublishingInterval > 0 {
		iv = min(max(msDuration(p.PublishingInterval), l.MinPublishingInterval), l.MaxPublishingInterval)
	}
	keep := p.MaxKeepAliveCount
	if keep == 0 {
		keep = defaultKeepAlive
	}
	keep = min(keep, l.MaxKeepAliveCount)
	life := min(max(p.LifetimeCount, 3*keep), l.MaxLifetimeCount)
	if life < 3*keep {
		keep = max(life/3, 1)
	}
	notif := p.MaxNotificationsPerPublish
	if l.MaxNotificationsPerPublish > 0 && (notif == 0 || notif > l.MaxNotificationsPerPublish) {
		notif = l.MaxNotificationsPerPublish
	}
	return iv, keep, life, notif
}

// Create adds a subscription to session sessionID for owner (Part 4 §5.13.2), the key of
// who may transfer it. It fails with BadTooManySubscriptions when the server, the
// session or the session's owner (SetSessionOwner) holds its maximum.
func (e *Engine) Create(sessionID codec.NodeId, owner string, p Params, enabled bool) (uint32, Revised, status.Code) {
	iv, keep, life, notif := e.revise(p)
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	ss := e.sessionLocked(sessionID)
	if len(e.subs) >= e.limits.MaxSubscriptions ||
		(e.limits.MaxSubscriptionsPerSession > 0 && len(ss.subs) >= e.limits.MaxSubscriptionsPerSession) ||
		(e.limits.MaxSubscriptionsPerOwner > 0 && e.holdings[ss.share] != nil && e.holdings[ss.share].subs >= e.limits.MaxSubscriptionsPerOwner) {
		return 0, Revised{}, status.BadTooManySubscriptions
	}
	e.lastSub = e.nextIDLocked()
	s := &Subscription{
		id: e.lastSub, session: ss, owner: owner, interval: iv, maxKeep: keep, lifetime: life,
		maxNotif: notif, enabled: enabled, priority: p.Priority,
		keepAlive: keep, life: life, seq: 1, items: make(map[uint32]*item),
	}
	s.timer = timer{index: -1, sub: s}
	s.orphan = timer{index: -1, orphan: s}
	e.subs[s.id] = s
	e.holdLocked(s, ss.share)
	e.counters.cumulatedSubscriptions++
	ss.subs = append(ss.subs, s)
	e.scheduleLocked(&s.timer, now.Add(iv))
	if len(e.observers) > 0 {
		r := s.recordLocked(false)
		e.notifyLocked(Change{Kind: ChangeCreated, Subscription: s.id, Record: &r})
	}
	return s.id, Revised{durationMs(iv), life, keep}, status.Good
}

// ownedLocked returns subscription id when it belongs to session sessionID.
func (e *Engine) ownedLocked(sessionID codec.NodeId, id uint32) *Subscription {
	s := e.subs[id]
	if s == nil || s.session == nil || s.session.id != sessionID {
		return nil
	}
	return s
}

// Modify changes a subscription's parameters (Part 4 §5.13.3).
func (e *Engine) Modify(sessionID codec.NodeId, id uint32, p Params) (Revised, status.Code) {
	iv, keep, life, notif := e.revise(p)
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.ownedLocked(sessionID, id)
	if s == nil {
		return Revised{}, status.BadSubscriptionIdInvalid
	}
	s.counters.modify++
	s.maxKeep, s.lifetime, s.maxNotif, s.priority = keep, life, notif, p.Priority
	s.keepAlive, s.life = min(s.keepAlive, keep), life
	if iv != s.interval {
		s.interval = iv
		e.scheduleLocked(&s.timer, now.Add(iv))
	}
	if len(e.observers) > 0 {
		e.notifyLocked(Change{Kind: ChangeModified, Subscription: s.id, Settings: s.settings()})
	}
	return Revised{durationMs(iv), life, keep}, status.Good
}

// SetPublishingMode enables or disables publishing of subscriptions (Part 4 §5.13.4).
func (e *Engine) SetPublishingMode(sessionID codec.NodeId, enabled bool, ids []uint32) []status.Code {
	res := make([]status.Code, len(ids))
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, id := range ids {
		s := e.ownedLocked(sessionID, id)
		if s == nil {
			res[i] = status.BadSubscriptionIdInvalid
			continue
		}
		if enabled {
			s.counters.enable++
		} else {
			s.counters.disable++
		}
		s.enabled = enabled
		if len(e.observers) > 0 {
			e.notifyLocked(Change{Kind: ChangePublishingMode, Subscription: s.id, Enabled: enabled})
		}
	}
	return res
}

// Delete deletes subscriptions of a session with their monitored items (Part 4
// §5.13.8). Publishes still parked when the session has no subscription left are
// answered with BadNoSubscription.
func (e *Engine) Delete(sessionID codec.NodeId, ids []uint32) []status.Code {
	res := make([]status.Code, len(ids))
	e.mu.Lock()
	for i, id := range ids {
		s := e.ownedLocked(sessionID, id)
		if s == nil {
			res[i] = status.BadSubscriptionIdInvalid
			continue
		}
		e.endLocked(s, status.Good)
	}
	var out []outgoing
	if ss := e.sessions[sessionID]; ss != nil {
		out = e.noSubscriptionLocked(ss, out)
	}
	e.mu.Unlock()
	e.send(out)
	return res
}

// noSubscriptionLocked answers the parked Publishes of a session left without
// subscriptions or messages to deliver.
func (e *Engine) noSubscriptionLocked(ss *session, out []outgoing) []outgoing {
	if len(ss.subs) > 0 || len(ss.statuses) > 0 {
		return out
	}
	for _, p := range ss.queue {
		out = appendFault(out, p.r, status.BadNoSubscription)
	}
	clear(ss.queue)
	ss.queue = ss.queue[:0]
	return out
}

// endLocked deletes s and tells the observers why (see ChangeDeleted).
func (e *Engine) endLocked(s *Subscription, why status.Code) {
	e.deleteLocked(s)
	if len(e.observers) > 0 {
		e.notifyLocked(Change{Kind: ChangeDeleted, Subscription: s.id, Status: why})
	}
}

// deleteLocked removes s, its timer and its items.
func (e *Engine) deleteLocked(s *Subscription) {
	e.unscheduleLocked(&s.timer)
	e.unscheduleLocked(&s.orphan)
	for _, it := range s.items {
		e.removeItemLocked(it)
	}
	e.unholdLocked(s)
	s.dirty = nil
	if ss := s.session; ss != nil {
		if i := slices.Index(ss.subs, s); i >= 0 {
			ss.subs = slices.Delete(ss.subs, i, i+1)
		}
	}
	delete(e.subs, s.id)
	for _, m := range s.retrans {
		s.releaseMessage(m)
	}
	s.retrans = nil
}

// SessionEnded is told that a session ended (the server's session table calls it with
// its own lock held, so it does not block). Its subscriptions are deleted when
// deleteSubscriptions, otherwise they live on until another session takes them over
// (Part 4 §5.13.7), their lifetime ends or Limits.OrphanLifetime passes; those nobody may
// take over (owner "") are deleted at once. Parked Publishes get BadSessionClosed.
func (e *Engine) SessionEnded(sessionID codec.NodeId, deleteSubscriptions bool) {
	now := e.now()
	e.mu.Lock()
	ss := e.sessions[sessionID]
	if ss == nil {
		e.mu.Unlock()
		return
	}
	delete(e.sessions, sessionID)
	for _, s := range slices.Clone(ss.subs) {
		if deleteSubscriptions {
			e.endLocked(s, status.BadSessionClosed)
			continue
		}
		e.detachLocked(s, now)
	}
	ss.subs = nil
	var out []outgoing
	for _, p := range ss.queue {
		out = appendFault(out, p.r, status.BadSessionClosed)
	}
	ss.queue = nil
	e.mu.Unlock()
	if len(out) > 0 {
		go e.send(out) // the caller holds the session table's lock
	}
}

// Transfer moves subscriptions to session to (Part 4 §5.13.7). Only their owner may
// take them (BadUserAccessDenied otherwise; an owner "" never may). The session that had one gets a
// StatusChangeNotification GoodSubscriptionTransferred; with sendInitialValues the last
// value of every monitored item is queued again.
func (e *Engine) Transfer(to codec.NodeId, owner string, ids []uint32, sendInitialValues bool) []ua.TransferResult {
	res := make([]ua.TransferResult, len(ids))
	now := e.now()
	var out []outgoing
	e.mu.Lock()
	dst := e.sessionLocked(to)
	for i, id := range ids {
		s := e.subs[id]
		switch {
		case s == nil:
			res[i].StatusCode = status.BadSubscriptionIdInvalid
			continue
		case owner == "" || s.owner != owner:
			s.counters.transferRequests++
			res[i].StatusCode = status.BadUserAccessDenied
			continue
		}
		s.counters.transferRequests++
		if old := s.session; old != dst {
			if old != nil {
				if j := slices.Index(old.subs, s); j >= 0 {
					old.subs = slices.Delete(old.subs, j, j+1)
				}
				old.statuses = append(old.statuses, statusMessage(s.id, s.seq, status.GoodSubscriptionTransferred, now))
				out = e.flushStatusesLocked(old, now, out)
			}
			s.session = dst
			dst.subs = append(dst.subs, s)
			e.unscheduleLocked(&s.orphan)
			e.moveLocked(s, dst.share)
			s.counters.transferredSameClient++
			if len(e.observers) > 0 {
				e.notifyLocked(Change{Kind: ChangeTransferred, Subscription: s.id, Session: dst.id, Owner: s.owner})
			}
		}
		s.life = s.lifetime
		if sendInitialValues {
			for _, it := range s.items {
				if it.mode == ua.MonitoringModeDisabled || !it.hasLast {
					continue
				}
				v := it.last
				stamp(&v, it.ts)
				it.enqueue(&v)
				if it.mode == ua.MonitoringModeReporting {
					s.markDirty(it)
				}
			}
		}
		for _, m := range s.retrans {
			res[i].AvailableSequenceNumbers = append(res[i].AvailableSequenceNumbers, m.seq)
		}
	}
	e.mu.Unlock()
	e.send(out)
	return res
}
