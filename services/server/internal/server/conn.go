package server

import (
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/services/server/internal/diagnostics"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/session"
)

// connHandler makes the server's state of each secure channel (uasc.Handler).
type connHandler struct{ s *Server }

// Channel returns the handler of a new channel: the pipeline's part of its state.
func (h connHandler) Channel(*uasc.ServerChannel) uasc.ChannelHandler { return h.s.newConn() }

// newConn returns the state of a new channel, opened in the pipeline.
func (s *Server) newConn() *pipeline.Channel[*conn] {
	c := new(conn)
	s.pipe.Open(&c.pipe, c)
	return &c.pipe
}

// conn is the server's state of one secure channel, used only by the channel's reading
// goroutine.
type conn struct {
	// pipe is the pipeline's part, and the channel's uasc.ChannelHandler.
	pipe pipeline.Channel[*conn]
	// read is the memory of the channel's inline Reads.
	read readState
	// counters are the diagnostics counters of counted, the session the pipeline's
	// memory held when they were looked up (countersOf).
	counters *diagnostics.Counters
	counted  *session.Session
}

// services is the service table (Part 4 §5): one row per service the server answers,
// with its handler, whether it needs a session and whether it runs on a worker. Every
// other request is answered with a ServiceFault BadServiceUnsupported.
//
// The services that change a subscription answer once the change is kept in the
// redundant set (kept). Inline is the rule: the in-memory services are faster on the channel's goroutine than
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
		// History (§5.10.3, §5.10.5): a store may wait.
		pipeline.Answers(s.historyRead, session, worker),
		pipeline.Answers(s.historyUpdate, session, worker),
		// Subscriptions (§5.13) and monitored items (§5.12)
		pipeline.Answers(kept(s, s.createSubscription), session),
		pipeline.Answers(kept(s, s.modifySubscription), session),
		pipeline.Answers(kept(s, s.setPublishingMode), session),
		pipeline.Answers(kept(s, s.deleteSubscriptions), session),
		pipeline.Answers(kept(s, s.transferSubscriptions), session),
		pipeline.Serves(s.publish, session),
		pipeline.Serves(s.republish, session),
		pipeline.Answers(kept(s, s.createMonitoredItems), session),
		pipeline.Answers(kept(s, s.modifyMonitoredItems), session),
		pipeline.Answers(kept(s, s.deleteMonitoredItems), session),
		pipeline.Answers(kept(s, s.setMonitoringMode), session),
		pipeline.Answers(kept(s, s.setTriggering), session),
	}
}
