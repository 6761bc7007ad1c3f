package subscription

import (
	"cmp"
	"slices"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

// subscriptionCounters are the event counts of one subscription reported in its
// SubscriptionDiagnosticsDataType (Part 5 §12.16). They are plain fields guarded by
// Engine.mu and bumped where the event already happens: no extra work per notification
// beyond an addition.
type subscriptionCounters struct {
	modify, enable, disable uint32
	republishRequests       uint32 // Republish calls for this subscription
	republishMessages       uint32 // of them, answered with a message
	transferRequests        uint32
	transferredSameClient   uint32
	publishRequests         uint32 // Publishes answered for this subscription
	dataChangeNotifications uint32 // MonitoredItemNotifications sent
	eventNotifications      uint32 // EventFieldLists sent
	latePublish             uint32 // times the subscription turned LATE
	discardedMessages       uint32 // pushed out of the retransmission queue
	queueOverflows          uint32 // item queue overflows
}

// engineCounters are the server-wide counts of the engine.
type engineCounters struct {
	cumulatedSubscriptions uint32 // created since start
}

// SessionCounts are what a session's SessionDiagnosticsDataType needs from the engine.
type SessionCounts struct {
	Subscriptions  uint32
	MonitoredItems uint32
	QueuedPublish  uint32 // parked Publish requests
}

// Diagnostics is a copy of the engine's diagnostic counts, taken under its lock.
type Diagnostics struct {
	CurrentSubscriptions   uint32
	CumulatedSubscriptions uint32
	// PublishingIntervals is the number of distinct publishing intervals in use.
	PublishingIntervals uint32
	// Subscriptions (by SubscriptionId) and Sessions are filled only when asked for.
	Subscriptions []ua.SubscriptionDiagnosticsDataType
	Sessions      map[codec.NodeId]SessionCounts
}

// Counts returns the subscriptions and the monitored items in the server, as
// MaxSubscriptions and MaxMonitoredItems count them: what the server's load is made of
// (package redundancy). It takes the lock and makes no pass.
func (e *Engine) Counts() (subscriptions, monitoredItems int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.subs), e.items
}

// Diagnostics returns the engine's counts; with details, also one
// SubscriptionDiagnosticsDataType per subscription and the counts of every session. It
// costs one pass over the subscriptions under the lock, so callers throttle it.
func (e *Engine) Diagnostics(details bool) Diagnostics {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := Diagnostics{
		CurrentSubscriptions:   uint32(len(e.subs)),
		CumulatedSubscriptions: e.counters.cumulatedSubscriptions,
	}
	intervals := make(map[int64]struct{})
	for _, s := range e.subs {
		intervals[int64(s.interval)] = struct{}{}
	}
	d.PublishingIntervals = uint32(len(intervals))
	if !details {
		return d
	}
	d.Subscriptions = make([]ua.SubscriptionDiagnosticsDataType, 0, len(e.subs))
	for _, s := range e.subs {
		d.Subscriptions = append(d.Subscriptions, s.diagnosticsLocked())
	}
	slices.SortFunc(d.Subscriptions, func(a, b ua.SubscriptionDiagnosticsDataType) int {
		return cmp.Compare(a.SubscriptionId, b.SubscriptionId)
	})
	d.Sessions = make(map[codec.NodeId]SessionCounts, len(e.sessions))
	for id, ss := range e.sessions {
		c := SessionCounts{Subscriptions: uint32(len(ss.subs)), QueuedPublish: uint32(len(ss.queue))}
		for _, s := range ss.subs {
			c.MonitoredItems += uint32(len(s.items))
		}
		d.Sessions[id] = c
	}
	return d
}

// diagnosticsLocked describes s (Part 5 §12.16). A subscription whose session ended
// reports a null SessionId.
func (s *Subscription) diagnosticsLocked() ua.SubscriptionDiagnosticsDataType {
	c := &s.counters
	d := ua.SubscriptionDiagnosticsDataType{
		SubscriptionId:               s.id,
		Priority:                     s.priority,
		PublishingInterval:           durationMs(s.interval),
		MaxKeepAliveCount:            s.maxKeep,
		MaxLifetimeCount:             s.lifetime,
		MaxNotificationsPerPublish:   s.maxNotif,
		PublishingEnabled:            s.enabled,
		ModifyCount:                  c.modify,
		EnableCount:                  c.enable,
		DisableCount:                 c.disable,
		RepublishRequestCount:        c.republishRequests,
		RepublishMessageRequestCount: c.republishRequests,
		RepublishMessageCount:        c.republishMessages,
		TransferRequestCount:         c.transferRequests,
		TransferredToSameClientCount: c.transferredSameClient,
		PublishRequestCount:          c.publishRequests,
		DataChangeNotificationsCount: c.dataChangeNotifications,
		EventNotificationsCount:      c.eventNotifications,
		NotificationsCount:           c.dataChangeNotifications + c.eventNotifications,
		LatePublishRequestCount:      c.latePublish,
		CurrentKeepAliveCount:        s.keepAlive,
		CurrentLifetimeCount:         s.life,
		UnacknowledgedMessageCount:   uint32(len(s.retrans)),
		DiscardedMessageCount:        c.discardedMessages,
		MonitoredItemCount:           uint32(len(s.items)),
		MonitoringQueueOverflowCount: c.queueOverflows,
		NextSequenceNumber:           s.seq,
	}
	if s.session != nil {
		d.SessionId = s.session.id
	}
	for _, it := range s.items {
		if it.mode == ua.MonitoringModeDisabled {
			d.DisabledMonitoredItemCount++
		}
	}
	return d
}
