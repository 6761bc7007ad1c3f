package subscription

import (
	"container/heap"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/owner"
)

// holding is what one owner holds of the engine: its subscriptions and their monitored
// items, counted against Limits.MaxSubscriptionsPerOwner and MaxMonitoredItemsPerOwner.
// Subscriptions left by their session count for their owner until they end.
type holding struct {
	key         owner.Owner
	subs, items int
}

// SetSessionOwner makes o the owner of session id's subscriptions and monitored items,
// for the per-owner shares: the server calls it when a session is activated (from the
// session table's observer, which holds the table's lock: it does not block). A session
// not named here is its own owner. The subscriptions the session has move to o.
func (e *Engine) SetSessionOwner(id codec.NodeId, o owner.Owner) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ss := e.sessionLocked(id)
	ss.share = o
	for _, s := range ss.subs {
		e.moveLocked(s, o)
	}
}

// holdingLocked returns o's holding, creating it.
func (e *Engine) holdingLocked(o owner.Owner) *holding {
	h := e.holdings[o]
	if h == nil {
		h = &holding{key: o}
		e.holdings[o] = h
	}
	return h
}

// holdLocked counts s, new, with its items for its session's owner.
func (e *Engine) holdLocked(s *Subscription, o owner.Owner) {
	s.holding = e.holdingLocked(o)
	s.holding.subs++
	s.holding.items += len(s.items)
}

// unholdLocked gives up what s, ending, held.
func (e *Engine) unholdLocked(s *Subscription) {
	h := s.holding
	h.subs--
	h.items -= len(s.items)
	if h.subs == 0 && h.items == 0 {
		delete(e.holdings, h.key)
	}
	s.holding = nil
}

// moveLocked makes o hold s and its items (a transfer, a new owner of its session). The
// move is not refused for want of room: it is the same client taking back what it had.
func (e *Engine) moveLocked(s *Subscription, o owner.Owner) {
	if s.holding.key == o {
		return
	}
	e.unholdLocked(s)
	e.holdLocked(s, o)
}

// Owned returns the subscriptions and monitored items o holds.
func (e *Engine) Owned(o owner.Owner) (subscriptions, items int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h := e.holdings[o]; h != nil {
		return h.subs, h.items
	}
	return 0, 0
}

// detachLocked leaves s without its session, which ended without deleting it (Part 4
// §5.13.7: it waits for TransferSubscriptions). A subscription nobody may take over (an
// owner key of "") is deleted at once; the others end Limits.OrphanLifetime later unless
// adopted, whatever their lifetime count.
func (e *Engine) detachLocked(s *Subscription, now time.Time) {
	s.session = nil
	if s.owner == "" {
		e.endLocked(s, status.BadSessionClosed)
		return
	}
	if len(e.observers) > 0 {
		e.notifyLocked(Change{Kind: ChangeDetached, Subscription: s.id})
	}
	e.orphanLocked(s, now)
}

// orphanLocked schedules the end of s, which has no session, Limits.OrphanLifetime from
// now.
func (e *Engine) orphanLocked(s *Subscription, now time.Time) {
	if e.limits.OrphanLifetime > 0 {
		e.scheduleLocked(&s.orphan, now.Add(e.limits.OrphanLifetime))
	}
}

// expireOrphanLocked ends s when its orphan timer fires: nobody took it over in time.
func (e *Engine) expireOrphanLocked(s *Subscription) {
	heap.Pop(&e.timers)
	if s.session == nil {
		e.endLocked(s, status.BadTimeout)
	}
}
