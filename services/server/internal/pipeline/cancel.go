package pipeline

import (
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// cancelKey names the requests Cancel reaches: those of one session (by its
// authentication token) with one RequestHandle.
type cancelKey struct {
	token  codec.NodeId
	handle uint32
}

// Outstanding is the registry of the requests of sessions that are queued or parked,
// for Cancel (Part 4 §5.6.5). A queued request is in it from Enqueue until its context
// ends: when it is answered, times out or its channel ends. Services that park requests
// elsewhere (Publish) may register them with Add. It is safe for concurrent use.
type Outstanding struct {
	mu    sync.Mutex // guards byKey
	byKey map[cancelKey][]*cancelEntry
}

// cancelEntry is one registered request: cancel answers it with
// BadRequestCancelledByClient and reports whether it did (false when it was answered
// already).
type cancelEntry struct {
	cancel func() bool
}

// Add registers a request of the session with authentication token token under its
// RequestHandle; the returned function removes it and may be called more than once.
func (o *Outstanding) Add(token codec.NodeId, handle uint32, cancel func() bool) (remove func()) {
	k, e := o.register(token, handle, cancel)
	return func() { o.remove(k, e) }
}

// register is Add without the function that removes the entry.
func (o *Outstanding) register(token codec.NodeId, handle uint32, cancel func() bool) (cancelKey, *cancelEntry) {
	k, e := cancelKey{token, handle}, &cancelEntry{cancel: cancel}
	o.mu.Lock()
	if o.byKey == nil {
		o.byKey = make(map[cancelKey][]*cancelEntry)
	}
	o.byKey[k] = append(o.byKey[k], e)
	o.mu.Unlock()
	return k, e
}

// track registers the queued request p and returns the function that removes it and
// gives back what it holds of the admission (Pending.held), which the caller runs when
// p's context ends. Requests without a session (CreateSession) cannot be named by a
// Cancel and are not tracked: track returns nil.
func (o *Outstanding) track(p *Pending) (done func()) {
	if p.h.AuthenticationToken.IsNull() {
		return nil
	}
	k, e := o.register(p.h.AuthenticationToken, p.h.RequestHandle, func() bool {
		return p.Answer(p.a.Fault(p.h, status.BadRequestCancelledByClient))
	})
	return func() {
		o.remove(k, e)
		p.release()
	}
}

func (o *Outstanding) remove(k cancelKey, e *cancelEntry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	list := o.byKey[k]
	for i, q := range list {
		if q == e {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(o.byKey, k)
	} else {
		o.byKey[k] = list
	}
}

// Cancel answers every registered request of the session of token with RequestHandle
// handle with BadRequestCancelledByClient and returns how many it answered; one answered
// a moment earlier does not count. The requests stay registered until their contexts
// end.
func (o *Outstanding) Cancel(token codec.NodeId, handle uint32) int {
	o.mu.Lock()
	entries := append([]*cancelEntry(nil), o.byKey[cancelKey{token, handle}]...)
	o.mu.Unlock()
	n := 0
	for _, e := range entries {
		if e.cancel() {
			n++
		}
	}
	return n
}

// Len returns the number of registered requests.
func (o *Outstanding) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, l := range o.byKey {
		n += len(l)
	}
	return n
}
