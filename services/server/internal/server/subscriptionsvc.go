package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/diagnostics"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/session"
	"uastack.dev/services/server/internal/subscription"
)

// initSubscriptions builds the subscription engine from the configuration, has the
// in-memory address space push its writes to it and the session table tell it of
// ended sessions. It runs in New, before the server serves.
func (s *Server) initSubscriptions() {
	l, c := s.cfg.Limits, s.cfg.Subscriptions
	s.subs = subscription.New(subscription.Limits{
		MaxSubscriptions:                 l.MaxSubscriptionCount,
		MaxSubscriptionsPerSession:       c.MaxSubscriptionsPerSession,
		MaxPublishRequests:               l.MaxPublishRequestCount,
		MaxMonitoredItems:                l.MaxMonitoredItemCount,
		MaxMonitoredItemsPerSubscription: l.MaxMonitoredItemsPerSubscription,
		MinPublishingInterval:            c.MinPublishingInterval,
		MaxPublishingInterval:            c.MaxPublishingInterval,
		MaxKeepAliveCount:                uint32(c.MaxKeepAliveCount),
		MaxLifetimeCount:                 uint32(c.MaxLifetimeCount),
		MaxNotificationsPerPublish:       uint32(c.MaxNotificationsPerPublish),
		MinSamplingInterval:              c.MinSamplingInterval,
		MaxSamplingInterval:              c.MaxSamplingInterval,
		MaxQueueSize:                     uint32(c.MaxQueueSize),
		RetransmissionQueueSize:          c.RetransmissionQueueSize,
	}, s.now, sampler{s})
	s.space.OnChange(s.subs.Changed)
	s.initEvents()
	// The diagnostics observe the sessions first, so that a session's end is counted
	// before its subscriptions go.
	s.diag = diagnostics.New(s.cfg.Observability.DiagnosticsEnabled, s.now, s.subs)
	s.sessions.Observe(s.diag.SessionChanged)
	s.sessions.Observe(func(c *session.Change) {
		if c.Kind == session.Ended {
			s.subs.SessionEnded(c.Record.SessionID, c.DeleteSubscriptions)
			s.systemEvent("Session closed: " + c.Record.SessionID.String())
		}
	})
}

// ownerKey names who may take a subscription over with TransferSubscriptions (Part 4
// §5.13.7): the same user; for an anonymous user, the same client application (its
// certificate's ApplicationUri) over a signed channel. "" is nobody.
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
func (s *Server) createSubscription(r pipeline.Request[*conn], m *ua.CreateSubscriptionRequest) codec.Structure {
	p := r.Principal
	subID, rev, code := s.subs.Create(p.SessionID, ownerKey(*p, r.Req.Channel), subscriptionParams(m.RequestedPublishingInterval,
		m.RequestedLifetimeCount, m.RequestedMaxKeepAliveCount, m.MaxNotificationsPerPublish, m.Priority), m.PublishingEnabled)
	if code != status.Good {
		return r.Fault(code)
	}
	s.systemEvent(fmt.Sprintf("Subscription %d created", subID))
	return &ua.CreateSubscriptionResponse{ResponseHeader: r.ResponseHeader(status.Good), SubscriptionId: subID,
		RevisedPublishingInterval: rev.PublishingInterval, RevisedLifetimeCount: rev.LifetimeCount,
		RevisedMaxKeepAliveCount: rev.MaxKeepAliveCount}
}

// modifySubscription answers ModifySubscription (Part 4 §5.13.3).
func (s *Server) modifySubscription(r pipeline.Request[*conn], m *ua.ModifySubscriptionRequest) codec.Structure {
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
func (s *Server) setPublishingMode(r pipeline.Request[*conn], m *ua.SetPublishingModeRequest) codec.Structure {
	p := r.Principal
	if code := pipeline.CheckCount(len(m.SubscriptionIds), 0); code != status.Good {
		return r.Fault(code)
	}
	return &ua.SetPublishingModeResponse{ResponseHeader: r.ResponseHeader(status.Good),
		Results: s.subs.SetPublishingMode(p.SessionID, m.PublishingEnabled, m.SubscriptionIds)}
}

// deleteSubscriptions answers DeleteSubscriptions (Part 4 §5.13.8).
func (s *Server) deleteSubscriptions(r pipeline.Request[*conn], m *ua.DeleteSubscriptionsRequest) codec.Structure {
	p := r.Principal
	if code := pipeline.CheckCount(len(m.SubscriptionIds), 0); code != status.Good {
		return r.Fault(code)
	}
	res := s.subs.Delete(p.SessionID, m.SubscriptionIds)
	for i, code := range res {
		if code == status.Good {
			s.systemEvent(fmt.Sprintf("Subscription %d deleted", m.SubscriptionIds[i]))
		}
	}
	return &ua.DeleteSubscriptionsResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: res}
}

// transferSubscriptions answers TransferSubscriptions (Part 4 §5.13.7).
func (s *Server) transferSubscriptions(r pipeline.Request[*conn], m *ua.TransferSubscriptionsRequest) codec.Structure {
	p := r.Principal
	if code := pipeline.CheckCount(len(m.SubscriptionIds), 0); code != status.Good {
		return r.Fault(code)
	}
	return &ua.TransferSubscriptionsResponse{ResponseHeader: r.ResponseHeader(status.Good),
		Results: s.subs.Transfer(p.SessionID, ownerKey(*p, r.Req.Channel), m.SubscriptionIds, m.SendInitialValues)}
}

// republish answers Republish (Part 4 §5.13.6).
func (s *Server) republish(r pipeline.Request[*conn], m *ua.RepublishRequest) {
	code := s.subs.Republish(r.Principal.SessionID, m.SubscriptionId, m.RetransmitSequenceNumber, func(nm *ua.NotificationMessage) {
		r.Respond(&ua.RepublishResponse{ResponseHeader: r.ResponseHeader(status.Good), NotificationMessage: *nm})
	})
	if code != status.Good {
		r.Respond(r.Fault(code))
	}
}

// publish answers Publish (Part 4 §5.13.5): the request is parked in its session's
// queue, as a pooled record and nothing else, until a publishing cycle answers it.
func (s *Server) publish(r pipeline.Request[*conn], m *ua.PublishRequest) {
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

// createMonitoredItems answers CreateMonitoredItems (Part 4 §5.12.2). Items of the
// address space are checked by reading them as the session's user; the node's
// MinimumSamplingInterval and, for a percent deadband, its EURange are read too.
func (s *Server) createMonitoredItems(r pipeline.Request[*conn], m *ua.CreateMonitoredItemsRequest) codec.Structure {
	ctx, p := r.Ctx, r.Principal
	code := pipeline.CheckCount(len(m.ItemsToCreate), s.cfg.OperationLimits.MaxMonitoredItemsPerCall)
	if code == status.Good {
		code = checkTimestamps(m.TimestampsToReturn)
	}
	if code != status.Good {
		return r.Fault(code)
	}
	n := len(m.ItemsToCreate)
	reqs := make([]subscription.ItemRequest, n)
	pre := make([]status.Code, n)
	rvs := make([]ua.ReadValueId, n)
	for i := range m.ItemsToCreate {
		rvs[i] = m.ItemsToCreate[i].ItemToMonitor
	}
	checks := s.checkItems(ctx, *p, rvs)
	var filterResults []*ua.EventFilterResult
	for i := range m.ItemsToCreate {
		c := &m.ItemsToCreate[i]
		rp := &c.RequestedParameters
		reqs[i] = subscription.ItemRequest{
			Item: c.ItemToMonitor, Mode: c.MonitoringMode, ClientHandle: rp.ClientHandle,
			SamplingInterval: rp.SamplingInterval, QueueSize: rp.QueueSize, DiscardOldest: rp.DiscardOldest,
			Push: checks[i].push, MinSamplingInterval: checks[i].minInterval,
		}
		pre[i] = checks[i].code
		switch {
		case pre[i] != status.Good:
		case c.ItemToMonitor.AttributeId == uint32(attr.EventNotifier) && s.routes.LocalNode(c.ItemToMonitor.NodeId):
			var fr *ua.EventFilterResult
			reqs[i].Events, fr, pre[i] = s.eventFilter(&rp.Filter, &checks[i].value)
			if fr != nil {
				if filterResults == nil {
					filterResults = make([]*ua.EventFilterResult, n)
				}
				filterResults[i] = fr
			}
		default:
			reqs[i].Filter, pre[i] = s.dataChangeFilter(ctx, &c.ItemToMonitor, &rp.Filter, &checks[i].value)
		}
	}
	res, code := s.subs.CreateItems(p.SessionID, m.SubscriptionId, m.TimestampsToReturn, reqs, pre)
	if code != status.Good {
		return r.Fault(code)
	}
	for i, fr := range filterResults {
		if fr != nil {
			res[i].FilterResult = codec.NewExtensionObject(fr)
		}
	}
	return &ua.CreateMonitoredItemsResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: res}
}

// itemCheck is what checkItems found about one item.
type itemCheck struct {
	code        status.Code
	push        bool
	minInterval float64
	value       codec.Variant // the current value, for the filter checks
}

// checkItems reads the items of the address space and their MinimumSamplingInterval as
// p, so that an unknown node, an invalid attribute or an unreadable value fails the
// item. Items of mounted node managers are sampled and checked by their first sample.
func (s *Server) checkItems(ctx context.Context, p nodemgr.Principal, rvs []ua.ReadValueId) []itemCheck {
	out := make([]itemCheck, len(rvs))
	var idx []int
	var items []ua.ReadValueId
	for i := range rvs {
		if !s.routes.LocalNode(rvs[i].NodeId) {
			continue
		}
		idx = append(idx, i)
		items = append(items, rvs[i], ua.ReadValueId{NodeId: rvs[i].NodeId, AttributeId: uint32(attr.MinimumSamplingInterval)})
	}
	if len(items) == 0 {
		return out
	}
	op := &nodemgr.ReadOp{Principal: p, Timestamps: ua.TimestampsToReturnNeither, Items: items, Results: make([]codec.DataValue, len(items))}
	s.space.Read(ctx, op, func() {})
	for j, i := range idx {
		dv, minDV := &op.Results[2*j], &op.Results[2*j+1]
		switch dv.Status.Sub() {
		case status.BadNodeIdUnknown, status.BadNodeIdInvalid, status.BadAttributeIdInvalid,
			status.BadIndexRangeInvalid, status.BadIndexRangeNoData, status.BadDataEncodingInvalid, status.BadDataEncodingUnsupported,
			status.BadNotReadable, status.BadUserAccessDenied:
			out[i].code = dv.Status.Sub()
			continue
		}
		rv := &rvs[i]
		out[i].value = dv.Value
		out[i].push = rv.AttributeId == uint32(attr.Value) && rv.IndexRange == "" && rv.DataEncoding.Name == "" &&
			!s.space.Computed(rv.NodeId)
		if minDV.Status == status.Good && minDV.Value.Type() == codec.TypeDouble {
			if v, ok := minDV.Value.Value().(float64); ok && v > 0 {
				out[i].minInterval = v
			}
		}
	}
	return out
}

// dataChangeFilter checks the filter of a data item (Part 4 §7.22.2): a DataChangeFilter
// only on the Value attribute (BadFilterNotAllowed otherwise, and for a deadband on a
// value that is not numeric), a known trigger and deadband type and a deadband that is
// not negative (BadDeadbandFilterInvalid), a percent deadband only on a node with an
// EURange (BadMonitoredItemFilterUnsupported otherwise). Other filters are
// BadMonitoredItemFilterUnsupported; EventFilter is BadFilterNotAllowed on a data item
// (eventFilter checks the items on EventNotifier) and BadMonitoredItemFilterUnsupported
// on an EventNotifier of a mounted node manager, which serves no events.
func (s *Server) dataChangeFilter(ctx context.Context, rv *ua.ReadValueId, x *codec.ExtensionObject, value *codec.Variant) (subscription.Filter, status.Code) {
	f := subscription.DefaultFilter
	if x.IsNull() {
		return f, status.Good
	}
	switch v := x.Value.(type) {
	case *ua.DataChangeFilter:
		if rv.AttributeId != uint32(attr.Value) {
			return f, status.BadFilterNotAllowed
		}
		if v.Trigger < ua.DataChangeTriggerStatus || v.Trigger > ua.DataChangeTriggerStatusValueTimestamp {
			return f, status.BadMonitoredItemFilterInvalid
		}
		f.Trigger = v.Trigger
		switch ua.DeadbandType(v.DeadbandType) {
		case ua.DeadbandTypeNone:
			return f, status.Good
		case ua.DeadbandTypeAbsolute, ua.DeadbandTypePercent:
		default:
			return f, status.BadDeadbandFilterInvalid
		}
		if v.DeadbandValue < 0 || v.DeadbandValue != v.DeadbandValue ||
			(ua.DeadbandType(v.DeadbandType) == ua.DeadbandTypePercent && v.DeadbandValue > 100) {
			return f, status.BadDeadbandFilterInvalid
		}
		if s.routes.LocalNode(rv.NodeId) && !subscription.IsNumeric(value) {
			return f, status.BadFilterNotAllowed
		}
		if ua.DeadbandType(v.DeadbandType) == ua.DeadbandTypeAbsolute {
			f.Deadband = v.DeadbandValue
			return f, status.Good
		}
		r, ok := s.euRange(ctx, rv.NodeId)
		if !ok {
			return f, status.BadMonitoredItemFilterUnsupported
		}
		f.Deadband = v.DeadbandValue / 100 * (r.High - r.Low)
		return f, status.Good
	case *ua.EventFilter:
		if rv.AttributeId == uint32(attr.EventNotifier) {
			return f, status.BadMonitoredItemFilterUnsupported
		}
		return f, status.BadFilterNotAllowed
	}
	return f, status.BadMonitoredItemFilterUnsupported
}

// euRange returns the EURange property of a node of the address space (Part 8 §5.3.2).
func (s *Server) euRange(ctx context.Context, node codec.NodeId) (ua.Range, bool) {
	paths := []ua.BrowsePath{{StartingNode: node, RelativePath: ua.RelativePath{Elements: []ua.RelativePathElement{{
		ReferenceTypeId: codec.NewNumericNodeId(0, id.HasProperty),
		TargetName:      codec.QualifiedName{Name: "EURange"},
	}}}}}
	res := make([]ua.BrowsePathResult, 1)
	s.space.TranslateBrowsePaths(ctx, paths, res)
	if res[0].StatusCode != status.Good || len(res[0].Targets) == 0 {
		return ua.Range{}, false
	}
	op := &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnNeither,
		Items:   []ua.ReadValueId{{NodeId: res[0].Targets[0].TargetId.NodeId, AttributeId: uint32(attr.Value)}},
		Results: make([]codec.DataValue, 1)}
	s.space.Read(ctx, op, func() {})
	if x, ok := op.Results[0].Value.Value().(*codec.ExtensionObject); ok {
		if r, ok := x.Value.(*ua.Range); ok && r.High > r.Low {
			return *r, true
		}
	}
	if x, ok := op.Results[0].Value.Value().(codec.ExtensionObject); ok {
		if r, ok := x.Value.(*ua.Range); ok && r.High > r.Low {
			return *r, true
		}
	}
	return ua.Range{}, false
}

// modifyMonitoredItems answers ModifyMonitoredItems (Part 4 §5.12.3).
func (s *Server) modifyMonitoredItems(r pipeline.Request[*conn], m *ua.ModifyMonitoredItemsRequest) codec.Structure {
	ctx, p := r.Ctx, r.Principal
	code := pipeline.CheckCount(len(m.ItemsToModify), s.cfg.OperationLimits.MaxMonitoredItemsPerCall)
	if code == status.Good {
		code = checkTimestamps(m.TimestampsToReturn)
	}
	if code != status.Good {
		return r.Fault(code)
	}
	reqs := make([]subscription.ItemModify, len(m.ItemsToModify))
	pre := make([]status.Code, len(m.ItemsToModify))
	var filterResults []*ua.EventFilterResult
	for i := range m.ItemsToModify {
		mi := &m.ItemsToModify[i]
		rp := &mi.RequestedParameters
		reqs[i] = subscription.ItemModify{ID: mi.MonitoredItemId, ClientHandle: rp.ClientHandle,
			SamplingInterval: rp.SamplingInterval, QueueSize: rp.QueueSize, DiscardOldest: rp.DiscardOldest,
			Filter: subscription.DefaultFilter}
		if rp.Filter.IsNull() {
			continue // an event item keeps its EventFilter
		}
		// The filter is checked against the item's node, which the engine knows.
		rv, ok := s.subs.ItemTarget(p.SessionID, m.SubscriptionId, mi.MonitoredItemId)
		switch {
		case !ok:
		case rv.AttributeId == uint32(attr.EventNotifier) && s.routes.LocalNode(rv.NodeId):
			checks := s.checkItems(ctx, *p, []ua.ReadValueId{rv})
			var fr *ua.EventFilterResult
			reqs[i].Events, fr, pre[i] = s.eventFilter(&rp.Filter, &checks[0].value)
			if fr != nil {
				if filterResults == nil {
					filterResults = make([]*ua.EventFilterResult, len(reqs))
				}
				filterResults[i] = fr
			}
		default:
			checks := s.checkItems(ctx, *p, []ua.ReadValueId{rv})
			reqs[i].Filter, pre[i] = s.dataChangeFilter(ctx, &rv, &rp.Filter, &checks[0].value)
		}
	}
	res, code := s.subs.ModifyItems(p.SessionID, m.SubscriptionId, m.TimestampsToReturn, reqs, pre)
	if code != status.Good {
		return r.Fault(code)
	}
	for i, fr := range filterResults {
		if fr != nil {
			res[i].FilterResult = codec.NewExtensionObject(fr)
		}
	}
	return &ua.ModifyMonitoredItemsResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: res}
}

// deleteMonitoredItems answers DeleteMonitoredItems (Part 4 §5.12.6).
func (s *Server) deleteMonitoredItems(r pipeline.Request[*conn], m *ua.DeleteMonitoredItemsRequest) codec.Structure {
	p := r.Principal
	if code := pipeline.CheckCount(len(m.MonitoredItemIds), s.cfg.OperationLimits.MaxMonitoredItemsPerCall); code != status.Good {
		return r.Fault(code)
	}
	res, code := s.subs.DeleteItems(p.SessionID, m.SubscriptionId, m.MonitoredItemIds)
	if code != status.Good {
		return r.Fault(code)
	}
	return &ua.DeleteMonitoredItemsResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: res}
}

// setMonitoringMode answers SetMonitoringMode (Part 4 §5.12.4).
func (s *Server) setMonitoringMode(r pipeline.Request[*conn], m *ua.SetMonitoringModeRequest) codec.Structure {
	p := r.Principal
	if code := pipeline.CheckCount(len(m.MonitoredItemIds), s.cfg.OperationLimits.MaxMonitoredItemsPerCall); code != status.Good {
		return r.Fault(code)
	}
	res, code := s.subs.SetMonitoringMode(p.SessionID, m.SubscriptionId, m.MonitoringMode, m.MonitoredItemIds)
	if code != status.Good {
		return r.Fault(code)
	}
	return &ua.SetMonitoringModeResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: res}
}

// setTriggering answers SetTriggering (Part 4 §5.12.5).
func (s *Server) setTriggering(r pipeline.Request[*conn], m *ua.SetTriggeringRequest) codec.Structure {
	p := r.Principal
	if code := pipeline.CheckCount(len(m.LinksToAdd)+len(m.LinksToRemove), s.cfg.OperationLimits.MaxMonitoredItemsPerCall); code != status.Good {
		return r.Fault(code)
	}
	add, rem, code := s.subs.SetTriggering(p.SessionID, m.SubscriptionId, m.TriggeringItemId, m.LinksToAdd, m.LinksToRemove)
	if code != status.Good {
		return r.Fault(code)
	}
	return &ua.SetTriggeringResponse{ResponseHeader: r.ResponseHeader(status.Good), AddResults: add, RemoveResults: rem}
}
