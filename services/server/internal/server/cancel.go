package server

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/subscription"
)

// cancel answers Cancel (Part 4 §5.6.5): every outstanding request of the session with
// the given RequestHandle is answered with a ServiceFault BadRequestCancelledByClient,
// its context ends (so a node manager may stop) and a queued one is skipped by the
// workers. CancelCount counts the requests answered this way; one answered a moment
// earlier does not count. Requests served inline are answered before the next message
// of the channel is read, so only queued and parked ones can be cancelled.
func (s *Server) cancel(r *pipeline.Request[*conn], m *ua.CancelRequest) codec.Structure {
	n := uint32(s.pipe.Outstanding().Cancel(r.Header.AuthenticationToken, m.RequestHandle))
	// Parked Publishes wait in the subscription engine, not in the registry: registering
	// each would cost every Publish an allocation for the rare Cancel.
	n += uint32(s.subs.CancelPublishes(r.Principal.SessionID, func(x subscription.Responder) bool {
		c, ok := x.(*publishCall)
		return ok && c.handle == m.RequestHandle
	}, status.BadRequestCancelledByClient))
	return &ua.CancelResponse{ResponseHeader: r.ResponseHeader(status.Good), CancelCount: n}
}
