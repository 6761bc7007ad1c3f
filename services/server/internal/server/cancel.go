package server

import (
	"context"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/subscription"
)

// cancelKey names the requests Cancel reaches: those of one session (by its
// authentication token) with one RequestHandle.
type cancelKey struct {
	token  codec.NodeId
	handle uint32
}

// outstanding is the registry of the requests of sessions that are queued or parked,
// for Cancel (Part 4 §5.6.5). A queued request is in it from enqueue until its context
// ends: when it is answered, times out or its channel ends. Services that park requests
// elsewhere (Publish) may register them with add. It is safe for concurrent use.
type outstanding struct {
	mu    sync.Mutex // guards byKey
	byKey map[cancelKey][]*cancelEntry
}

// cancelEntry is one registered request: cancel answers it with
// BadRequestCancelledByClient and reports whether it did (false when it was answered
// already).
type cancelEntry struct {
	cancel func() bool
}

// add registers a request of the session with authentication token token under its
// RequestHandle; the returned function removes it and may be called more than once.
func (o *outstanding) add(token codec.NodeId, handle uint32, cancel func() bool) (remove func()) {
	k, e := cancelKey{token, handle}, &cancelEntry{cancel: cancel}
	o.mu.Lock()
	if o.byKey == nil {
		o.byKey = make(map[cancelKey][]*cancelEntry)
	}
	o.byKey[k] = append(o.byKey[k], e)
	o.mu.Unlock()
	return func() { o.remove(k, e) }
}

// track registers the queued request p until p.ctx ends. Requests without a session
// (CreateSession) cannot be named by a Cancel and are not tracked.
func (o *outstanding) track(p *pending) {
	if p.h.AuthenticationToken.IsNull() {
		return
	}
	remove := o.add(p.h.AuthenticationToken, p.h.RequestHandle, func() bool {
		return p.answer(p.s.fault(p.h, status.BadRequestCancelledByClient))
	})
	context.AfterFunc(p.ctx, remove)
}

func (o *outstanding) remove(k cancelKey, e *cancelEntry) {
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

// take returns the requests of k, which stay registered until they are removed.
func (o *outstanding) take(k cancelKey) []*cancelEntry {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*cancelEntry(nil), o.byKey[k]...)
}

// len returns the number of registered requests.
func (o *outstanding) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, l := range o.byKey {
		n += len(l)
	}
	return n
}

// cancel answers Cancel (Part 4 §5.6.5): every outstanding request of the session with
// the given RequestHandle is answered with a ServiceFault BadRequestCancelledByClient,
// its context ends (so a node manager may stop) and a queued one is skipped by the
// workers. CancelCount counts the requests answered this way; one answered a moment
// earlier does not count. Requests served inline are answered before the next message
// of the channel is read, so only queued and parked ones can be cancelled.
func (s *Server) cancel(ch *uasc.ServerChannel, m *ua.CancelRequest) codec.Structure {
	h := m.RequestHeader
	p, code := s.sessions.Principal(h.AuthenticationToken, ch.ID())
	if code != status.Good {
		return s.fault(h, code)
	}
	var n uint32
	for _, e := range s.outstanding.take(cancelKey{h.AuthenticationToken, m.RequestHandle}) {
		if e.cancel() {
			n++
		}
	}
	// Parked Publishes wait in the subscription engine, not in the registry: registering
	// each would cost every Publish an allocation for the rare Cancel.
	n += uint32(s.subs.CancelPublishes(p.SessionID, func(r subscription.Responder) bool {
		c, ok := r.(*publishCall)
		return ok && c.handle == m.RequestHandle
	}, status.BadRequestCancelledByClient))
	return &ua.CancelResponse{ResponseHeader: s.header(h, status.Good), CancelCount: n}
}
