package subscription

import (
	"cmp"
	"slices"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// KeyConditionId is the key under which an event about a condition carries the
// condition's NodeId: what a select clause of ConditionType with an empty browse path
// and AttributeId NodeId reads (Part 9 §5.5.2 ConditionId).
const KeyConditionId = ""

// Refresh is what a ConditionRefresh sends (Part 9 §5.5.7): Start, then each of
// Conditions to the items that monitor one of its notifiers, then End. Start and End
// reach every event item asked for and skip the where clause, so that a client
// filtering on condition fields still sees where the refresh begins and ends.
type Refresh struct {
	Start, End *Event
	Conditions []*Event
	// Notifiers returns the notifiers of a condition event.
	Notifiers func(*Event) []codec.NodeId
}

// Refresh queues r on the event items of the session's subscription subID, or on its
// item itemID alone when that is not 0 (ConditionRefresh2, Part 9 §5.5.8), under one
// lock, so that no other event comes between. BadSubscriptionIdInvalid for no such
// subscription, BadUserAccessDenied for another session's, BadMonitoredItemIdInvalid
// for no such event item, BadNothingToDo for a subscription without event items.
func (e *Engine) Refresh(sessionID codec.NodeId, subID, itemID uint32, r *Refresh) status.Code {
	now := codec.DateTimeOf(e.now())
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.subs[subID]
	switch {
	case s == nil:
		return status.BadSubscriptionIdInvalid
	case s.session == nil || s.session.id != sessionID:
		return status.BadUserAccessDenied
	}
	var items []*item
	if itemID != 0 {
		it := s.items[itemID]
		if it == nil || it.events == nil {
			return status.BadMonitoredItemIdInvalid
		}
		items = []*item{it}
	} else {
		for _, it := range s.items {
			if it.events != nil {
				items = append(items, it)
			}
		}
		if len(items) == 0 {
			return status.BadNothingToDo
		}
		slices.SortFunc(items, func(a, b *item) int { return cmp.Compare(a.id, b.id) })
	}
	for _, it := range items {
		if it.mode == ua.MonitoringModeDisabled {
			continue
		}
		e.queueEventLocked(it, r.Start, now, false)
		for _, ev := range r.Conditions {
			if slices.Contains(r.Notifiers(ev), it.key) {
				e.queueEventLocked(it, ev, now, true)
			}
		}
		e.queueEventLocked(it, r.End, now, false)
	}
	return status.Good
}
