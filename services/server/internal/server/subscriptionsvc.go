package server

import (
	"fmt"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/subscription"
)

// ownerKey names who may take a subscription over with TransferSubscriptions (Part 4
// §5.13.7): the same user; for an anonymous user, the same client application (its
// certificate's ApplicationUri) over a signed channel. "" is nobody, and the engine
// deletes such a subscription with its session. (Who holds a subscription's share of the
// server is another matter: the session's owner.Owner, set on activation.)
func ownerKey(p nodemgr.Principal, ch *uasc.ServerChannel) string {
	switch {
	case p.Anonymous:
		cert := ch.ClientCertificate()
		if ch.SecurityMode() == ua.MessageSecurityModeNone || cert == nil || len(cert.URIs) == 0 {
			return ""
		}
		return "anonymous:" + cert.URIs[0].String()
	case p.Thumbprint != "":
		return "cert:" + p.Thumbprint
	}
	return "user:" + p.UserName
}

// subscriptionParams are the requested parameters of a Create- or ModifySubscription.
func subscriptionParams(interval float64, lifetime, keepAlive, maxNotif uint32, priority byte) subscription.Params {
	return subscription.Params{PublishingInterval: interval, LifetimeCount: lifetime,
		MaxKeepAliveCount: keepAlive, MaxNotificationsPerPublish: maxNotif, Priority: priority}
}

// createSubscription answers CreateSubscription (Part 4 §5.13.2).
func (s *Server) createSubscription(r *pipeline.Request[*conn], m *ua.CreateSubscriptionRequest) codec.Structure {
	p := r.Principal
	subID, rev, code := s.subs.Create(p.SessionID, ownerKey(*p, r.Req.Channel), subscriptionParams(m.RequestedPublishingInterval,
		m.RequestedLifetimeCount, m.RequestedMaxKeepAliveCount, m.MaxNotificationsPerPublish, m.Priority), m.PublishingEnabled)
	if code != status.Good {
		return r.Fault(code)
	}
	s.events.system(fmt.Sprintf("Subscription %d created", subID))
	return &ua.CreateSubscriptionResponse{ResponseHeader: r.ResponseHeader(status.Good), SubscriptionId: subID,
		RevisedPublishingInterval: rev.PublishingInterval, RevisedLifetimeCount: rev.LifetimeCount,
		RevisedMaxKeepAliveCount: rev.MaxKeepAliveCount}
}

// modifySubscription answers ModifySubscription (Part 4 §5.13.3).
func (s *Server) modifySubscription(r *pipeline.Request[*conn], m *ua.ModifySubscriptionRequest) codec.Structure {
	p := r.Principal
	rev, code := s.subs.Modify(p.SessionID, m.SubscriptionId, subscriptionParams(m.RequestedPublishingInterval,
		m.RequestedLifetimeCount, m.RequestedMaxKeepAliveCount, m.MaxNotificationsPerPublish, m.Priority))
	if code != status.Good {
		return r.Fault(code)
	}
	return &ua.ModifySubscriptionResponse{ResponseHeader: r.ResponseHeader(status.Good),
		RevisedPublishingInterval: rev.PublishingInterval, RevisedLifetimeCount: rev.LifetimeCount,
		RevisedMaxKeepAliveCount: rev.MaxKeepAliveCount}
}

// setPublishingMode answers SetPublishingMode (Part 4 §5.13.4).
func (s *Server) setPublishingMode(r *pipeline.Request[*conn], m *ua.SetPublishingModeRequest) codec.Structure {
	p := r.Principal
	if code := pipeline.CheckCount(len(m.SubscriptionIds), 0); code != status.Good {
		return r.Fault(code)
	}
	return &ua.SetPublishingModeResponse{ResponseHeader: r.ResponseHeader(status.Good),
		Results: s.subs.SetPublishingMode(p.SessionID, m.PublishingEnabled, m.SubscriptionIds)}
}

// deleteSubscriptions answers DeleteSubscriptions (Part 4 §5.13.8).
func (s *Server) deleteSubscriptions(r *pipeline.Request[*conn], m *ua.DeleteSubscriptionsRequest) codec.Structure {
	p := r.Principal
	if code := pipeline.CheckCount(len(m.SubscriptionIds), 0); code != status.Good {
		return r.Fault(code)
	}
	res := s.subs.Delete(p.SessionID, m.SubscriptionIds)
	for i, code := range res {
		if code == status.Good {
			s.events.system(fmt.Sprintf("Subscription %d deleted", m.SubscriptionIds[i]))
		}
	}
	return &ua.DeleteSubscriptionsResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: res}
}

// transferSubscriptions answers TransferSubscriptions (Part 4 §5.13.7).
func (s *Server) transferSubscriptions(r *pipeline.Request[*conn], m *ua.TransferSubscriptionsRequest) codec.Structure {
	p := r.Principal
	if code := pipeline.CheckCount(len(m.SubscriptionIds), 0); code != status.Good {
		return r.Fault(code)
	}
	return &ua.TransferSubscriptionsResponse{ResponseHeader: r.ResponseHeader(status.Good),
		Results: s.subs.Transfer(p.SessionID, ownerKey(*p, r.Req.Channel), m.SubscriptionIds, m.SendInitialValues)}
}

// republish answers Republish (Part 4 §5.13.6).
func (s *Server) republish(r *pipeline.Request[*conn], m *ua.RepublishRequest) {
	code := s.subs.Republish(r.Principal.SessionID, m.SubscriptionId, m.RetransmitSequenceNumber, func(nm *ua.NotificationMessage) {
		r.Respond(&ua.RepublishResponse{ResponseHeader: r.ResponseHeader(status.Good), NotificationMessage: *nm})
	})
	if code != status.Good {
		r.Respond(r.Fault(code))
	}
}

// publish answers Publish (Part 4 §5.13.5): the request is parked in its session's
// queue, as a pooled record and nothing else, until a publishing cycle answers it.
func (s *Server) publish(r *pipeline.Request[*conn], m *ua.PublishRequest) {
	h, p := r.Header, r.Principal
	var deadline time.Time
	if h.TimeoutHint > 0 {
		deadline = s.now().Add(time.Duration(h.TimeoutHint) * time.Millisecond)
	}
	c := publishCalls.Get().(*publishCall)
	c.s, c.req, c.handle = s, r.Req, h.RequestHandle
	n := len(m.SubscriptionAcknowledgements)
	if cap(c.results) < n {
		c.results = make([]status.Code, n)
	}
	// From here the engine answers the request, whatever happens to this goroutine.
	r.Handed()
	s.subs.Publish(p.SessionID, m.SubscriptionAcknowledgements, c.results[:n], c, deadline)
}

// publishCall is a parked Publish: the request to answer, its handle and the buffer of
// its acknowledgement results. It goes back to publishCalls once answered, keeping the
// buffer.
type publishCall struct {
	s       *Server
	req     uasc.Request
	handle  uint32
	results []status.Code
}

var publishCalls = sync.Pool{New: func() any { return new(publishCall) }}

// Respond sends resp, or a ServiceFault for a bad ServiceResult, then frees c.
func (c *publishCall) Respond(resp *ua.PublishResponse) {
	s := c.s
	h := ua.RequestHeader{RequestHandle: c.handle}
	// The engine answers every session's Publishes from one goroutine: no answer may
	// wait on its peer's socket (uasc.Request.RespondNoWait).
	var msg codec.Structure = resp
	if code := resp.ResponseHeader.ServiceResult; code.IsBad() {
		msg = s.pipe.Fault(h, code)
	} else {
		resp.ResponseHeader = s.pipe.Header(h, status.Good)
	}
	s.pipe.RespondNoWait(c.req, msg)
	*c = publishCall{results: c.results}
	publishCalls.Put(c)
}
