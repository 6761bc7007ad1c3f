package diagnostics

import (
	"sync/atomic"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Service indexes the per-service counters of SessionDiagnosticsDataType (Part 5
// §12.10): one ServiceCounterDataType per service a session can call.
type Service uint8

// The counted services; svcNone's slot holds TotalRequestCount.
const (
	svcNone Service = iota
	SvcRead
	svcHistoryRead
	svcWrite
	svcHistoryUpdate
	svcCall
	svcCreateMonitoredItems
	svcModifyMonitoredItems
	svcSetMonitoringMode
	svcSetTriggering
	svcDeleteMonitoredItems
	svcCreateSubscription
	svcModifySubscription
	svcSetPublishingMode
	svcPublish
	svcRepublish
	svcTransferSubscriptions
	svcDeleteSubscriptions
	svcAddNodes
	svcAddReferences
	svcDeleteNodes
	svcDeleteReferences
	svcBrowse
	svcBrowseNext
	svcTranslateBrowsePaths
	svcQueryFirst
	svcQueryNext
	svcRegisterNodes
	svcUnregisterNodes
	svcCount
)

// Counters are a session's counters: requests and failures per service, and the
// requests refused for want of authorisation. They are safe for concurrent use.
type Counters struct {
	total, errors [svcCount]atomic.Uint32
	unauthorized  atomic.Uint32
}

// serviceOf returns the counted service of a request and its header; svcNone for the
// session services themselves and the ones not counted per service.
func serviceOf(m codec.Structure) (Service, *ua.RequestHeader) {
	switch x := m.(type) {
	case *ua.ReadRequest:
		return SvcRead, &x.RequestHeader
	case *ua.HistoryReadRequest:
		return svcHistoryRead, &x.RequestHeader
	case *ua.WriteRequest:
		return svcWrite, &x.RequestHeader
	case *ua.HistoryUpdateRequest:
		return svcHistoryUpdate, &x.RequestHeader
	case *ua.CallRequest:
		return svcCall, &x.RequestHeader
	case *ua.CreateMonitoredItemsRequest:
		return svcCreateMonitoredItems, &x.RequestHeader
	case *ua.ModifyMonitoredItemsRequest:
		return svcModifyMonitoredItems, &x.RequestHeader
	case *ua.SetMonitoringModeRequest:
		return svcSetMonitoringMode, &x.RequestHeader
	case *ua.SetTriggeringRequest:
		return svcSetTriggering, &x.RequestHeader
	case *ua.DeleteMonitoredItemsRequest:
		return svcDeleteMonitoredItems, &x.RequestHeader
	case *ua.CreateSubscriptionRequest:
		return svcCreateSubscription, &x.RequestHeader
	case *ua.ModifySubscriptionRequest:
		return svcModifySubscription, &x.RequestHeader
	case *ua.SetPublishingModeRequest:
		return svcSetPublishingMode, &x.RequestHeader
	case *ua.PublishRequest:
		return svcPublish, &x.RequestHeader
	case *ua.RepublishRequest:
		return svcRepublish, &x.RequestHeader
	case *ua.TransferSubscriptionsRequest:
		return svcTransferSubscriptions, &x.RequestHeader
	case *ua.DeleteSubscriptionsRequest:
		return svcDeleteSubscriptions, &x.RequestHeader
	case *ua.AddNodesRequest:
		return svcAddNodes, &x.RequestHeader
	case *ua.AddReferencesRequest:
		return svcAddReferences, &x.RequestHeader
	case *ua.DeleteNodesRequest:
		return svcDeleteNodes, &x.RequestHeader
	case *ua.DeleteReferencesRequest:
		return svcDeleteReferences, &x.RequestHeader
	case *ua.BrowseRequest:
		return svcBrowse, &x.RequestHeader
	case *ua.BrowseNextRequest:
		return svcBrowseNext, &x.RequestHeader
	case *ua.TranslateBrowsePathsToNodeIdsRequest:
		return svcTranslateBrowsePaths, &x.RequestHeader
	case *ua.QueryFirstRequest:
		return svcQueryFirst, &x.RequestHeader
	case *ua.QueryNextRequest:
		return svcQueryNext, &x.RequestHeader
	case *ua.RegisterNodesRequest:
		return svcRegisterNodes, &x.RequestHeader
	case *ua.UnregisterNodesRequest:
		return svcUnregisterNodes, &x.RequestHeader
	case *ua.CancelRequest:
		return svcNone, &x.RequestHeader
	}
	return svcNone, nil
}

// Answered counts the answer resp to the request req in the diagnostics of the session
// req names, when sessions are described: every request in TotalRequestCount, the ones of
// a counted service in its counter, a ServiceFault or bad ServiceResult as an error, and a
// refusal for want of authorisation in UnauthorizedRequestCount; and a ServiceFault in the
// server's RejectedRequestsCount. It runs as the answer is sent, so the services need not
// count.
func (d *Diagnostics) Answered(req, resp codec.Structure) {
	if f, ok := resp.(*ua.ServiceFault); ok {
		d.rejected(f.ResponseHeader.ServiceResult)
	}
	if !d.Enabled() {
		return
	}
	svc, h := serviceOf(req)
	if h == nil {
		return
	}
	d.CountersOf(h.AuthenticationToken).Count(svc, resultOf(resp))
}

// Count counts one answer of service svc with result in c, which may be nil.
func (c *Counters) Count(svc Service, result status.Code) {
	if c == nil {
		return
	}
	c.total[svcNone].Add(1) // svcNone's slot holds TotalRequestCount
	if svc != svcNone {
		c.total[svc].Add(1)
	}
	if result.IsBad() {
		c.errors[svcNone].Add(1)
		if svc != svcNone {
			c.errors[svc].Add(1)
		}
		if result == status.BadUserAccessDenied || result == status.BadIdentityTokenRejected {
			c.unauthorized.Add(1)
		}
	}
}

// resultOf returns the ServiceResult of a response.
func resultOf(resp codec.Structure) status.Code {
	switch x := resp.(type) {
	case *ua.ServiceFault:
		return x.ResponseHeader.ServiceResult
	case *ua.ReadResponse:
		return x.ResponseHeader.ServiceResult
	case *ua.PublishResponse:
		return x.ResponseHeader.ServiceResult
	case *ua.WriteResponse:
		return x.ResponseHeader.ServiceResult
	}
	return status.Good // the others answer Good or with a ServiceFault
}

// fill copies the counters into d.
func (c *Counters) fill(d *ua.SessionDiagnosticsDataType) {
	get := func(i Service) ua.ServiceCounterDataType {
		return ua.ServiceCounterDataType{TotalCount: c.total[i].Load(), ErrorCount: c.errors[i].Load()}
	}
	d.TotalRequestCount = get(svcNone)
	d.UnauthorizedRequestCount = c.unauthorized.Load()
	d.ReadCount = get(SvcRead)
	d.HistoryReadCount = get(svcHistoryRead)
	d.WriteCount = get(svcWrite)
	d.HistoryUpdateCount = get(svcHistoryUpdate)
	d.CallCount = get(svcCall)
	d.CreateMonitoredItemsCount = get(svcCreateMonitoredItems)
	d.ModifyMonitoredItemsCount = get(svcModifyMonitoredItems)
	d.SetMonitoringModeCount = get(svcSetMonitoringMode)
	d.SetTriggeringCount = get(svcSetTriggering)
	d.DeleteMonitoredItemsCount = get(svcDeleteMonitoredItems)
	d.CreateSubscriptionCount = get(svcCreateSubscription)
	d.ModifySubscriptionCount = get(svcModifySubscription)
	d.SetPublishingModeCount = get(svcSetPublishingMode)
	d.PublishCount = get(svcPublish)
	d.RepublishCount = get(svcRepublish)
	d.TransferSubscriptionsCount = get(svcTransferSubscriptions)
	d.DeleteSubscriptionsCount = get(svcDeleteSubscriptions)
	d.AddNodesCount = get(svcAddNodes)
	d.AddReferencesCount = get(svcAddReferences)
	d.DeleteNodesCount = get(svcDeleteNodes)
	d.DeleteReferencesCount = get(svcDeleteReferences)
	d.BrowseCount = get(svcBrowse)
	d.BrowseNextCount = get(svcBrowseNext)
	d.TranslateBrowsePathsToNodeIdsCount = get(svcTranslateBrowsePaths)
	d.QueryFirstCount = get(svcQueryFirst)
	d.QueryNextCount = get(svcQueryNext)
	d.RegisterNodesCount = get(svcRegisterNodes)
	d.UnregisterNodesCount = get(svcUnregisterNodes)
}
