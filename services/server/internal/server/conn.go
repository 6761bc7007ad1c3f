package server

import (
	"context"

	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/services/server/internal/diagnostics"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/session"
)

// connHandler makes the server's state of each secure channel (uasc.Handler).
type connHandler struct{ s *Server }

// Channel returns the state of a new channel.
func (h connHandler) Channel(*uasc.ServerChannel) uasc.ChannelHandler { return &conn{s: h.s} }

// conn is the server's state of one secure channel, used only by the channel's reading
// goroutine: the uasc.ChannelHandler of the channel.
type conn struct {
	s    *Server
	pipe pipeline.Channel[*conn]
	// read is the memory of the channel's inline Reads.
	read readState
	// counters are the diagnostics counters of counted, the session the pipeline's
	// memory held when they were looked up (countersOf).
	counters *diagnostics.Counters
	counted  *session.Session
}

var (
	_ uasc.ChannelHandler = (*conn)(nil)
	_ uasc.Repeater       = (*conn)(nil)
)

// Handle hands a request of the channel to the pipeline with the channel's state; it
// runs on the channel's reading goroutine.
func (c *conn) Handle(ctx context.Context, req uasc.Request) { c.s.pipe.Handle(ctx, req, c, &c.pipe) }

// RepeatRecycled opts the channel in to repeated requests: the inline Read hands back
// its request unchanged (uasc.Request.Recycle), so a poll that repeats it is not decoded
// again.
func (c *conn) RepeatRecycled() bool { return true }

// services is the service table (Part 4 §5): one row per service the server answers,
// with its handler, whether it needs a session and whether it runs on a worker. Every
// other request is answered with a ServiceFault BadServiceUnsupported.
//
// Inline is the rule: the in-memory services are faster on the channel's goroutine than
// handed to another. CreateSession and ActivateSession do RSA and password hashing work
// and run on a worker. Read, Write, Call, Browse and TranslateBrowsePathsToNodeIds run
// inline while the items stay in the in-memory address space and go through the queue
// when they reach a node manager that may wait (route.go). A Publish is parked on its
// session, holding neither a worker nor a goroutine.
func (s *Server) services() []pipeline.Service[*conn] {
	const session, worker = pipeline.NeedsSession, pipeline.OnWorker
	return []pipeline.Service[*conn]{
		// Discovery (§5.4)
		pipeline.Serves(s.getEndpoints),
		pipeline.Serves(s.findServers),
		// Sessions (§5.6)
		pipeline.Answers(s.createSession, worker),
		pipeline.Answers(s.activateSession, worker),
		pipeline.Answers(s.closeSession),
		pipeline.Answers(s.cancel, session),
		// Attributes (§5.10) and methods (§5.11)
		pipeline.Serves(s.read, session),
		pipeline.Serves(s.write, session),
		pipeline.Serves(s.call, session),
		// View (§5.9)
		pipeline.Serves(s.browse, session),
		pipeline.Answers(s.browseNext, session),
		pipeline.Serves(s.translate, session),
		pipeline.Answers(s.registerNodes, session),
		pipeline.Answers(s.unregisterNodes, session),
		// Subscriptions (§5.13) and monitored items (§5.12)
		pipeline.Answers(s.createSubscription, session),
		pipeline.Answers(s.modifySubscription, session),
		pipeline.Answers(s.setPublishingMode, session),
		pipeline.Answers(s.deleteSubscriptions, session),
		pipeline.Answers(s.transferSubscriptions, session),
		pipeline.Serves(s.publish, session),
		pipeline.Serves(s.republish, session),
		pipeline.Answers(s.createMonitoredItems, session),
		pipeline.Answers(s.modifyMonitoredItems, session),
		pipeline.Answers(s.deleteMonitoredItems, session),
		pipeline.Answers(s.setMonitoringMode, session),
		pipeline.Answers(s.setTriggering, session),
	}
}
