package subscription

import (
	"slices"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// What a redundant set needs of the engine (Part 4 §6.6.2, HotAndMirrored): subscription
// IDs that no other server of the set hands out, a point before responses leave where a
// mirror makes sure what they carry is kept, a record of one subscription read together
// with an observer's own state, and a way to let a session's subscriptions go to the
// server that took the session over.

// spaceShift places the ID space in the high byte of a subscription ID.
const spaceShift = 24

// SetIDSpace makes the engine create subscription IDs whose high byte is space, so that
// servers of a redundant set, each with its own space, never hand out the same ID and a
// subscription keeps its ID on the server that takes it over. 0 (the default) uses the
// whole range. Call it before serving.
func (e *Engine) SetIDSpace(space uint8) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.space = space
	if !e.inSpace(e.lastSub) {
		e.lastSub = uint32(space) << spaceShift
	}
}

// inSpace reports whether id is one this engine would create.
func (e *Engine) inSpace(id uint32) bool {
	return e.space == 0 || id>>spaceShift == uint32(e.space)
}

// nextIDLocked returns the next free subscription ID of the engine's space.
func (e *Engine) nextIDLocked() uint32 {
	id := e.lastSub
	for {
		id++
		if e.space != 0 && id>>spaceShift != uint32(e.space) {
			id = uint32(e.space)<<spaceShift + 1 // wrapped within the space
		}
		if id != 0 && e.subs[id] == nil {
			return id
		}
	}
}

// SetSendBarrier sets fn to run before the engine answers Publish requests, once for
// each batch of responses and without the engine's lock: a mirror waits there until the
// NotificationMessages those responses carry (reported to observers as ChangeSent) are
// kept elsewhere, so that a client can Republish them from another server. nil (the
// default) sends at once. The publishing cycles that fall due within coalesce after a
// batch sent through fn wait until then and go out together, up to coalesce late, as
// one batch whose messages a mirror writes together; sampling is not held. Call it
// before serving.
func (e *Engine) SetSendBarrier(fn func(), coalesce time.Duration) {
	e.barrier, e.coalesce = fn, coalesce
}

// WithRecord calls fn with the record of subscription id (nil when there is none)
// under the engine's lock, between two changes: an observer that keeps the record there
// has it at exactly its place in the change stream. fn must be quick and must not call
// the engine; the record is fn's to keep.
func (e *Engine) WithRecord(id uint32, fn func(*SubscriptionRecord)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.subs[id]
	if s == nil {
		fn(nil)
		return
	}
	r := s.recordLocked(true)
	fn(&r)
}

// Forget drops the subscriptions of session sessionID without ending them for the set:
// another server took the session over and carries them on. Observers get ChangeDeleted
// with GoodSubscriptionTransferred, which a mirror does not pass on; the session's
// parked Publishes get BadSessionIdInvalid, the session being no longer this server's.
func (e *Engine) Forget(sessionID codec.NodeId) {
	e.mu.Lock()
	ss := e.sessions[sessionID]
	if ss == nil {
		e.mu.Unlock()
		return
	}
	delete(e.sessions, sessionID)
	for _, s := range slices.Clone(ss.subs) {
		e.endLocked(s, status.GoodSubscriptionTransferred)
	}
	ss.subs = nil
	var out []outgoing
	for _, p := range ss.queue {
		out = appendFault(out, p.r, status.BadSessionIdInvalid)
	}
	ss.queue = nil
	e.mu.Unlock()
	if len(out) > 0 {
		go e.send(out) // the caller may hold the session table's lock
	}
}

// Scratch returns an empty engine with e's limits, clock and event types whose items are
// never sampled and whose timers never run: a place to replay a change stream (Apply)
// and read the records it leaves (Snapshot) without serving anything.
func (e *Engine) Scratch() *Engine {
	e.mu.Lock()
	types := e.types
	e.mu.Unlock()
	s := New(e.limits, e.now, noSampler{})
	s.types = types
	return s
}

// noSampler samples nothing: a scratch engine's Step never runs.
type noSampler struct{}

func (noSampler) Sample(_ []ua.ReadValueId, _ []codec.DataValue, done func()) { done() }
