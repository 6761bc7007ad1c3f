package server

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/subscription"
)

// createMonitoredItems answers CreateMonitoredItems (Part 4 §5.12.2). Items of the
// address space are checked by reading them as the session's user; the node's
// MinimumSamplingInterval and, for a percent deadband, its EURange are read too.
func (s *Server) createMonitoredItems(r *pipeline.Request[*conn], m *ua.CreateMonitoredItemsRequest) codec.Structure {
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
// item. Items of mounted node managers are checked by their first sample; their values
// are pushed when the manager watches what is monitored (a nodemgr.Watcher), sampled
// otherwise.
func (s *Server) checkItems(ctx context.Context, p nodemgr.Principal, rvs []ua.ReadValueId) []itemCheck {
	out := make([]itemCheck, len(rvs))
	var idx []int
	var items []ua.ReadValueId
	for i := range rvs {
		if !s.routes.LocalNode(rvs[i].NodeId) {
			out[i].push = s.routes.Watched(rvs[i].NodeId) && pushable(&rvs[i])
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
		out[i].push = pushable(rv) && !s.space.Computed(rv.NodeId)
		if minDV.Status == status.Good && minDV.Value.Type() == codec.TypeDouble {
			if v, ok := minDV.Value.Value().(float64); ok && v > 0 {
				out[i].minInterval = v
			}
		}
	}
	return out
}

// pushable reports whether the values of an item on rv can be pushed as its node's
// writes arrive: a whole Value in its default encoding.
func pushable(rv *ua.ReadValueId) bool {
	return rv.AttributeId == uint32(attr.Value) && rv.IndexRange == "" && rv.DataEncoding.Name == ""
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
func (s *Server) modifyMonitoredItems(r *pipeline.Request[*conn], m *ua.ModifyMonitoredItemsRequest) codec.Structure {
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
func (s *Server) deleteMonitoredItems(r *pipeline.Request[*conn], m *ua.DeleteMonitoredItemsRequest) codec.Structure {
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
func (s *Server) setMonitoringMode(r *pipeline.Request[*conn], m *ua.SetMonitoringModeRequest) codec.Structure {
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
func (s *Server) setTriggering(r *pipeline.Request[*conn], m *ua.SetTriggeringRequest) codec.Structure {
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
