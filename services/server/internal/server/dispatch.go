package server

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

const statusInternal = status.BadInternalError

// handle is the uasc Handler: it runs on the channel's reading goroutine. It answers the
// in-memory services inline and hands what may block to the request queue: CreateSession
// and ActivateSession (RSA and password hashing) and the Read, Write, Call, Browse and
// TranslateBrowsePaths items that reach a node manager mounted with Options.Managers.
// A parked Publish waits in its session's queue, holding neither a worker nor a goroutine.
func (s *Server) handle(ctx context.Context, req uasc.Request) {
	switch m := req.Message.(type) {
	case *ua.GetEndpointsRequest:
		s.answerGetEndpoints(req, m)
	case *ua.FindServersRequest:
		s.answerFindServers(req, m)
	case *ua.CreateSessionRequest:
		s.enqueue(ctx, req, m.RequestHeader, func(p *pending) { p.answer(s.createSession(req.Channel, m)) })
	case *ua.ActivateSessionRequest:
		s.enqueue(ctx, req, m.RequestHeader, func(p *pending) { p.answer(s.activateSession(req.Channel, m)) })
	case *ua.CloseSessionRequest:
		s.respond(req, s.closeSession(req.Channel, m))
	case *ua.ReadRequest:
		if s.routesRead(m) {
			s.readRouted(ctx, req, m)
		} else {
			s.read(ctx, req, m)
		}
	case *ua.WriteRequest:
		s.write(ctx, req, m)
	case *ua.CallRequest:
		s.call(ctx, req, m)
	case *ua.BrowseRequest:
		s.browse(ctx, req, m)
	case *ua.BrowseNextRequest:
		s.respond(req, s.browseNext(req.Channel, m))
	case *ua.TranslateBrowsePathsToNodeIdsRequest:
		s.translate(ctx, req, m)
	case *ua.RegisterNodesRequest:
		s.respond(req, s.registerNodes(req.Channel, m))
	case *ua.UnregisterNodesRequest:
		s.respond(req, s.unregisterNodes(req.Channel, m))
	case *ua.CancelRequest:
		s.respond(req, s.cancel(req.Channel, m))
	case *ua.CreateSubscriptionRequest:
		s.respond(req, s.createSubscription(req.Channel, m))
	case *ua.ModifySubscriptionRequest:
		s.respond(req, s.modifySubscription(req.Channel, m))
	case *ua.SetPublishingModeRequest:
		s.respond(req, s.setPublishingMode(req.Channel, m))
	case *ua.DeleteSubscriptionsRequest:
		s.respond(req, s.deleteSubscriptions(req.Channel, m))
	case *ua.TransferSubscriptionsRequest:
		s.respond(req, s.transferSubscriptions(req.Channel, m))
	case *ua.PublishRequest:
		s.publish(req, m)
	case *ua.RepublishRequest:
		s.republish(req, m)
	case *ua.CreateMonitoredItemsRequest:
		s.respond(req, s.createMonitoredItems(ctx, req.Channel, m))
	case *ua.ModifyMonitoredItemsRequest:
		s.respond(req, s.modifyMonitoredItems(ctx, req.Channel, m))
	case *ua.DeleteMonitoredItemsRequest:
		s.respond(req, s.deleteMonitoredItems(req.Channel, m))
	case *ua.SetMonitoringModeRequest:
		s.respond(req, s.setMonitoringMode(req.Channel, m))
	case *ua.SetTriggeringRequest:
		s.respond(req, s.setTriggering(req.Channel, m))
	default:
		s.respond(req, s.fault(ua.RequestHeaderOf(req.Message), status.BadServiceUnsupported))
	}
}

// pending is a request handed to the request queue: it is answered once, by its job, by
// its deadline (RequestHeader.TimeoutHint after receipt, Part 4 §7.32) with BadTimeout,
// or not at all when the channel ends first. An answer after the first is dropped.
type pending struct {
	s   *Server
	req uasc.Request
	h   ua.RequestHeader
	// ctx ends when the request is answered, times out or its channel ends; node
	// managers get it.
	ctx      context.Context
	cancel   context.CancelFunc
	stopTime func() bool // stops the deadline's answer; nil without a deadline
	answered atomic.Bool
}

// answer sends msg unless the request was answered already; it reports whether it sent.
func (p *pending) answer(msg codec.Structure) bool {
	if !p.answered.CompareAndSwap(false, true) {
		return false
	}
	if p.stopTime != nil {
		p.stopTime()
	}
	p.cancel()
	p.s.respond(p.req, msg)
	return true
}

// timeout answers BadTimeout unless the request was answered already. It runs when the
// deadline passes and does not touch stopTime, which may not be set yet.
func (p *pending) timeout() {
	if p.answered.CompareAndSwap(false, true) {
		p.s.respond(p.req, p.s.fault(p.h, status.BadTimeout))
	}
}

// done reports whether the request was answered (or timed out) already, so that a job
// that finds it so skips its work.
func (p *pending) done() bool { return p.answered.Load() }

// enqueue hands job to the request queue. When the queue is full the request is answered
// with a ServiceFault BadServerTooBusy carrying a RetryAfterMs hint; after Serve the
// answer is BadShutdown. A job gets the pending request and answers it with
// pending.answer; it must not wait on I/O (see requestQueue).
func (s *Server) enqueue(ctx context.Context, req uasc.Request, h ua.RequestHeader, job func(*pending)) {
	p := &pending{s: s, req: req, h: h}
	if h.TimeoutHint > 0 {
		timeout := time.Duration(h.TimeoutHint) * time.Millisecond
		p.ctx, p.cancel = context.WithTimeout(ctx, timeout)
		deadline := p.ctx
		p.stopTime = context.AfterFunc(deadline, func() {
			if errors.Is(deadline.Err(), context.DeadlineExceeded) {
				p.timeout()
			}
		})
	} else {
		p.ctx, p.cancel = context.WithCancel(ctx)
	}
	s.outstanding.track(p)
	ok, retryAfter := s.queue.push(func() {
		if !p.done() {
			job(p)
		}
	})
	if ok {
		return
	}
	if s.stopping.Load() {
		p.answer(s.fault(h, status.BadShutdown))
		return
	}
	f := s.fault(h, status.BadServerTooBusy)
	f.ResponseHeader.AdditionalHeader = retryAfterHeader(retryAfter)
	p.answer(f)
}

// retryAfterHeader returns the AdditionalHeader that tells a client how long to wait
// before it retries: an AdditionalParametersType (Part 4 §7.1) with the parameter
// RetryAfterMs, a whole number of milliseconds as Int64, as the OPC Foundation .NET
// stack sends it with BadServerTooBusy (UA-.NETStandard Docs/RetryAfterSignaling.md).
func retryAfterHeader(d time.Duration) codec.ExtensionObject {
	return codec.NewExtensionObject(&ua.AdditionalParametersType{Parameters: []ua.KeyValuePair{{
		Key:   codec.QualifiedName{Name: retryAfterKey},
		Value: codec.Int64Variant(d.Milliseconds()),
	}}})
}

// retryAfterKey is the name of the RetryAfterMs parameter of an AdditionalHeader.
const retryAfterKey = "RetryAfterMs"

// respond sends msg; a failure means the channel is gone, which the channel's own
// goroutine reports.
func (s *Server) respond(req uasc.Request, msg codec.Structure) {
	s.diag.Answered(req.Message, msg)
	s.send(req, msg)
}

// send is respond for a response already counted.
func (s *Server) send(req uasc.Request, msg codec.Structure) {
	if err := req.Respond(msg); err != nil {
		s.log.Debug("response not sent", "channel", req.Channel.ID(), "err", err)
	}
}

// header returns the ResponseHeader answering h with result.
func (s *Server) header(h ua.RequestHeader, result status.Code) ua.ResponseHeader {
	return headerAt(h, result, s.now())
}

// headerAt returns the ResponseHeader answering h with result, sent at t.
func headerAt(h ua.RequestHeader, result status.Code, t time.Time) ua.ResponseHeader {
	return ua.ResponseHeader{
		Timestamp:     codec.DateTimeOf(t),
		RequestHandle: h.RequestHandle,
		ServiceResult: result,
	}
}

// timeOf returns the current time for a request answered at once: the time it was read
// (microseconds ago, one clock reading shared by the requests of one system call, on the
// server's clock), or now when the request was not read from a channel.
func (s *Server) timeOf(req uasc.Request) time.Time {
	if !req.Received.IsZero() {
		return req.Received
	}
	return s.now()
}

// fault returns a ServiceFault answering h with code (Part 4 §7.33).
func (s *Server) fault(h ua.RequestHeader, code status.Code) *ua.ServiceFault {
	return &ua.ServiceFault{ResponseHeader: s.header(h, code)}
}

// codeOf returns the status.Code an error carries, or def.
func codeOf(err error, def status.Code) status.Code {
	var c status.Code
	if errors.As(err, &c) {
		return c
	}
	return def
}
