package subscription

import (
	"slices"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

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
			m.items = append(m.items, ua.MonitoredItemNotification{ClientHandle: it.handle, Value: it.dequeue()})
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
