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

// reviseLocked fits p into the limits (Part 4 §5.13.2): the interval into [min, max], a
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

// Create adds a subscription to session sessionID for owner (Part 4 §5.13.2). It fails
// with BadTooManySubscriptions when the server or the session holds its maximum.
func (e *Engine) Create(sessionID codec.NodeId, owner string, p Params, enabled bool) (uint32, Revised, status.Code) {
	iv, keep, life, notif := e.revise(p)
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	ss := e.sessionLocked(sessionID)
	if len(e.subs) >= e.limits.MaxSubscriptions ||
		(e.limits.MaxSubscriptionsPerSession > 0 && len(ss.subs) >= e.limits.MaxSubscriptionsPerSession) {
		return 0, Revised{}, status.BadTooManySubscriptions
	}
	e.lastSub++
	for e.lastSub == 0 || e.subs[e.lastSub] != nil {
		e.lastSub++
	}
	s := &Subscription{
		id: e.lastSub, session: ss, owner: owner, interval: iv, maxKeep: keep, lifetime: life,
		maxNotif: notif, enabled: enabled, priority: p.Priority,
		keepAlive: keep, life: life, seq: 1, items: make(map[uint32]*item),
	}
	s.timer = timer{index: -1, sub: s}
	e.subs[s.id] = s
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
	for _, it := range s.items {
		e.removeItemLocked(it)
	}
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
// deleteSubscriptions, otherwise they live on until their lifetime ends or another
// session takes them over (Part 4 §5.13.7). Parked Publishes get BadSessionClosed.
func (e *Engine) SessionEnded(sessionID codec.NodeId, deleteSubscriptions bool) {
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
		s.session = nil
		if len(e.observers) > 0 {
			e.notifyLocked(Change{Kind: ChangeDetached, Subscription: s.id})
		}
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

// Publish acknowledges NotificationMessages and hands r a NotificationMessage, a
// keep-alive or a StatusChangeNotification (Part 4 §5.13.5): at once when a subscription
// of the session is late or has more notifications, otherwise when a publishing timer
// finds it parked. A parked Publish that passes deadline (zero for none) is answered
// with BadTimeout. Beyond Limits.MaxPublishRequests the oldest parked Publish is
// answered with BadTooManyPublishRequests. results, of len(acks), receives the
// acknowledgement results and is handed back in the response; the caller owns it again
// once r has been answered, so a pooled Responder can keep it.
func (e *Engine) Publish(sessionID codec.NodeId, acks []ua.SubscriptionAcknowledgement, results []status.Code, r Responder, deadline time.Time) {
	now := e.now()
	if len(acks) == 0 {
		results = nil
	}
	var out []outgoing
	e.mu.Lock()
	ss := e.sessions[sessionID]
	for i, a := range acks {
		s := e.subs[a.SubscriptionId]
		if s == nil || s.session != ss || ss == nil {
			results[i] = status.BadSubscriptionIdInvalid
			continue
		}
		results[i] = s.ack(a.SequenceNumber)
		if results[i] == status.Good && len(e.observers) > 0 {
			e.notifyLocked(Change{Kind: ChangeAcknowledged, Subscription: s.id, Sequence: a.SequenceNumber})
		}
	}
	switch {
	case ss == nil || (len(ss.subs) == 0 && len(ss.statuses) == 0):
		out = appendFault(out, r, status.BadNoSubscription)
	case len(ss.statuses) > 0:
		out = e.deliverStatusLocked(ss, parked{r: r, results: results}, out)
	default:
		for _, s := range ss.subs {
			s.life = s.lifetime
		}
		p := parked{r: r, results: results, deadline: deadline}
		if s := ss.urgent(); s != nil {
			out = e.serveLocked(s, p, now, out)
			break
		}
		if len(ss.queue) >= e.limits.MaxPublishRequests {
			oldest := ss.queue[0]
			n := copy(ss.queue, ss.queue[1:])
			ss.queue = ss.queue[:n]
			out = appendFault(out, oldest.r, status.BadTooManyPublishRequests)
		}
		ss.queue = append(ss.queue, p)
	}
	e.mu.Unlock()
	e.send(out)
	e.unpin(out)
}

// unpin releases the messages of sent responses.
func (e *Engine) unpin(out []outgoing) {
	for i := range out {
		if out[i].msg != nil {
			e.mu.Lock()
			e.unpinLocked(out)
			e.mu.Unlock()
			return
		}
	}
}

// urgent returns the subscription a new Publish serves at once: a late one, or one with
// more notifications, of the highest priority and late the longest.
func (ss *session) urgent() *Subscription {
	var best *Subscription
	for _, s := range ss.subs {
		if s.state != stateLate && !(s.state == stateNormal && s.more && s.enabled) {
			continue
		}
		if best == nil || s.priority > best.priority ||
			(s.priority == best.priority && s.lateSince.Before(best.lateSince)) {
			best = s
		}
	}
	return best
}

// serveLocked answers p for s with its notifications, or a keep-alive when it has none
// to publish, and moves s to NORMAL or KEEPALIVE.
func (e *Engine) serveLocked(s *Subscription, p parked, now time.Time, out []outgoing) []outgoing {
	out, o := appendOut(out)
	o.r = p.r
	o.resp.Results = p.results
	o.resp.SubscriptionId = s.id
	s.counters.publishRequests++
	if s.enabled && len(s.dirty) > 0 {
		m := e.buildLocked(s, now)
		m.pins++
		o.msg = m
		o.resp.NotificationMessage = m.notification()
		o.resp.MoreNotifications = s.more
		s.state = stateNormal
	} else {
		o.resp.NotificationMessage = ua.NotificationMessage{SequenceNumber: s.seq, PublishTime: codec.DateTimeOf(now)}
		s.state, s.more = stateKeepAlive, false
	}
	o.avail = o.avail[:0]
	for _, m := range s.retrans {
		o.avail = append(o.avail, m.seq)
	}
	o.resp.AvailableSequenceNumbers = o.avail
	s.messageSent = true
	s.life, s.keepAlive = s.lifetime, s.maxKeep
	return out
}

// tickLocked runs the publishing timer of s (Part 4 §5.13.1.2, transitions 6–9, 12,
// 14–17 and 27). The keep-alive counter starts at the max keep-alive count after each
// message and counts down the cycles that send nothing; at zero a keep-alive goes out,
// so one is sent every MaxKeepAliveCount publishing intervals.
func (e *Engine) tickLocked(s *Subscription, now time.Time, out []outgoing) []outgoing {
	ss := s.session
	queued := false
	if ss != nil {
		queued, out = e.hasQueuedLocked(ss, now, out)
	}
	avail := s.enabled && len(s.dirty) > 0
	serve := func() {
		var p parked
		p, _, out = e.dequeueLocked(ss, now, out)
		out = e.serveLocked(s, p, now, out)
	}
	switch {
	case s.state == stateLate:
		// Waits for a Publish (transition 12).
	case queued && avail: // transitions 6 and 14
		serve()
		return out
	case s.state == stateNormal && queued && !s.messageSent: // transition 7
		serve()
		s.state = stateNormal
		return out
	case avail || !s.messageSent: // transitions 8 and 17
		s.state, s.lateSince = stateLate, now
		s.counters.latePublish++
	default: // transitions 9, 15, 16 and 17
		s.state = stateKeepAlive
		if s.keepAlive > 0 {
			s.keepAlive--
		}
		if s.keepAlive == 0 {
			if queued {
				serve()
				return out
			}
			s.state, s.lateSince = stateLate, now
			s.counters.latePublish++
		}
	}
	s.life--
	if s.life == 0 {
		out = e.expireLocked(s, now, out)
	}
	return out
}

// expireLocked ends s when its lifetime counter runs out (transition 27): it is deleted
// and its session, if any, gets a StatusChangeNotification BadTimeout.
func (e *Engine) expireLocked(s *Subscription, now time.Time, out []outgoing) []outgoing {
	ss, seq := s.session, s.seq
	e.endLocked(s, status.BadTimeout)
	if ss == nil {
		return out
	}
	ss.statuses = append(ss.statuses, statusMessage(s.id, seq, status.BadTimeout, now))
	return e.flushStatusesLocked(ss, now, out)
}

// flushStatusesLocked delivers waiting StatusChangeNotifications to parked Publishes.
func (e *Engine) flushStatusesLocked(ss *session, now time.Time, out []outgoing) []outgoing {
	for len(ss.statuses) > 0 {
		var p parked
		var ok bool
		p, ok, out = e.dequeueLocked(ss, now, out)
		if !ok {
			break
		}
		out = e.deliverStatusLocked(ss, p, out)
	}
	return e.noSubscriptionLocked(ss, out)
}

// deliverStatusLocked answers p with the oldest waiting StatusChangeNotification.
func (e *Engine) deliverStatusLocked(ss *session, p parked, out []outgoing) []outgoing {
	resp := ss.statuses[0]
	ss.statuses[0] = nil
	ss.statuses = ss.statuses[1:]
	out, o := appendOut(out)
	o.r, o.own = p.r, resp
	o.resp.Results = p.results
	return out
}

// statusMessage is a PublishResponse carrying a StatusChangeNotification (Part 4
// §7.25.4) for subscription id.
func statusMessage(id, seq uint32, code status.Code, now time.Time) *ua.PublishResponse {
	return &ua.PublishResponse{
		SubscriptionId: id,
		NotificationMessage: ua.NotificationMessage{
			SequenceNumber:   seq,
			PublishTime:      codec.DateTimeOf(now),
			NotificationData: []codec.ExtensionObject{codec.NewExtensionObject(&ua.StatusChangeNotification{Status: code})},
		},
	}
}

// markDirty puts it on the list of items with values to report.
func (s *Subscription) markDirty(it *item) {
	if !it.dirty {
		it.dirty = true
		s.dirty = append(s.dirty, it)
	}
}

// buildLocked takes a message from the pool and fills it with the queued values of the
// dirty items, at most maxNotif of them; what is left sets s.more.
func (e *Engine) buildLocked(s *Subscription, now time.Time) *message {
	m := s.takeMessage()
	limit := int(s.maxNotif)
	i := 0
	for ; i < len(s.dirty); i++ {
		it := s.dirty[i]
		if it.events != nil {
			drainEventsLocked(it, m, limit)
		}
		for it.events == nil && it.n > 0 && (limit == 0 || len(m.items)+len(m.events) < limit) {
			dv := &it.queue[it.head]
			m.items = append(m.items, ua.MonitoredItemNotification{ClientHandle: it.handle, Value: *dv})
			*dv = codec.DataValue{}
			it.head = (it.head + 1) % len(it.queue)
			it.n--
		}
		if it.n > 0 {
			break
		}
		it.dirty, it.triggered = false, false
	}
	n := copy(s.dirty, s.dirty[i:])
	clear(s.dirty[n:])
	s.dirty = s.dirty[:n]
	s.more = n > 0
	m.seq = s.seq
	s.seq = nextSequence(s.seq)
	m.publishTime = codec.DateTimeOf(now)
	m.dcn.MonitoredItems = m.items
	s.counters.dataChangeNotifications += uint32(len(m.items))
	s.counters.eventNotifications += uint32(len(m.events))
	m.ndata = 0
	if len(m.items) > 0 || len(m.events) == 0 {
		m.data[m.ndata] = codec.ExtensionObject{Value: &m.dcn}
		m.ndata++
	}
	if len(m.events) > 0 {
		m.enl.Events = m.events
		m.data[m.ndata] = codec.ExtensionObject{Value: &m.enl}
		m.ndata++
	}
	// A loop, not an if: a queue restored by Apply may hold more than this engine keeps.
	for len(s.retrans) >= max(e.limits.RetransmissionQueueSize, 1) {
		old := s.retrans[0]
		s.retrans = slices.Delete(s.retrans, 0, 1)
		s.counters.discardedMessages++
		if len(e.observers) > 0 {
			e.notifyLocked(Change{Kind: ChangeDropped, Subscription: s.id, Sequence: old.seq})
		}
		s.releaseMessage(old)
	}
	s.retrans = append(s.retrans, m)
	if len(e.observers) > 0 {
		e.notifyLocked(Change{Kind: ChangeSent, Subscription: s.id, Message: m.notification()})
	}
	return m
}

// takeMessage returns a free message with its arrays emptied.
func (s *Subscription) takeMessage() *message {
	if n := len(s.free); n > 0 {
		m := s.free[n-1]
		s.free = s.free[:n-1]
		return m
	}
	return &message{owner: s}
}

// releaseMessage returns m to the pool, or marks it to return once no response is
// being encoded from it.
func (s *Subscription) releaseMessage(m *message) {
	m.released = true
	if m.pins == 0 {
		s.freeMessage(m)
	}
}

func (s *Subscription) freeMessage(m *message) {
	clear(m.items) // drop references to values
	m.items = m.items[:0]
	clear(m.events)
	m.events = m.events[:0]
	m.released = false
	s.free = append(s.free, m)
}

// ack removes the message seq from the retransmission queue (Part 4 §5.13.5).
func (s *Subscription) ack(seq uint32) status.Code {
	for i, m := range s.retrans {
		if m.seq == seq {
			s.retrans = slices.Delete(s.retrans, i, i+1)
			s.releaseMessage(m)
			return status.Good
		}
	}
	return status.BadSequenceNumberUnknown
}

// Republish hands fn the NotificationMessage seq of a subscription from its
// retransmission queue (Part 4 §5.13.6); fn runs without the engine's lock and must not
// keep the message. It fails with BadSubscriptionIdInvalid or BadMessageNotAvailable.
func (e *Engine) Republish(sessionID codec.NodeId, id, seq uint32, fn func(*ua.NotificationMessage)) status.Code {
	e.mu.Lock()
	s := e.ownedLocked(sessionID, id)
	if s == nil {
		e.mu.Unlock()
		return status.BadSubscriptionIdInvalid
	}
	s.counters.republishRequests++
	var m *message
	for _, r := range s.retrans {
		if r.seq == seq {
			m = r
			break
		}
	}
	if m == nil {
		e.mu.Unlock()
		return status.BadMessageNotAvailable
	}
	m.pins++
	s.counters.republishMessages++
	nm := m.notification()
	e.mu.Unlock()
	fn(&nm)
	e.mu.Lock()
	m.pins--
	if m.pins == 0 && m.released {
		m.owner.freeMessage(m)
	}
	e.mu.Unlock()
	return status.Good
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
