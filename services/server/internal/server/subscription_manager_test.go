package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// TestSubscriptionSamplesManager: a monitored item on a Variable of a mounted node
// manager, which answers reads from its own goroutine, is sampled at its interval: the
// initial value, then a change made inside the manager (no write through the server)
// arrives in a later Publish. A node the manager does not know reports the manager's
// BadNodeIdUnknown in the value's status.
func TestSubscriptionSamplesManager(t *testing.T) {
	t.Parallel()
	m := newRouteManager(5 * time.Millisecond)
	ps := startPipeline(t, m, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := ua.RequestHeader{AuthenticationToken: ps.token}
	resp, err := ps.ch.Request(ctx, &ua.CreateSubscriptionRequest{RequestHeader: h,
		RequestedPublishingInterval: 50, RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true})
	require.NoError(t, err)
	cs := resp.(*ua.CreateSubscriptionResponse)
	require.Equal(t, status.Good, cs.ResponseHeader.ServiceResult)
	item := func(name string, handle uint32) ua.MonitoredItemCreateRequest {
		return ua.MonitoredItemCreateRequest{
			ItemToMonitor:       ua.ReadValueId{NodeId: codec.NewStringNodeId(ps.slowNS, name), AttributeId: 13},
			MonitoringMode:      ua.MonitoringModeReporting,
			RequestedParameters: ua.MonitoringParameters{ClientHandle: handle, SamplingInterval: 20, QueueSize: 1},
		}
	}
	resp, err = ps.ch.Request(ctx, &ua.CreateMonitoredItemsRequest{RequestHeader: h, SubscriptionId: cs.SubscriptionId,
		TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: []ua.MonitoredItemCreateRequest{item("Child0", 1), item("Nope", 2)}})
	require.NoError(t, err)
	cm := resp.(*ua.CreateMonitoredItemsResponse)
	require.Equal(t, status.Good, cm.Results[0].StatusCode)
	require.Equal(t, 20.0, cm.Results[0].RevisedSamplingInterval)
	require.Equal(t, status.Good, cm.Results[1].StatusCode, "checked by sampling, not at creation")

	values := map[uint32][]codec.DataValue{}
	var acks []ua.SubscriptionAcknowledgement
	publishUntil := func(done func() bool) {
		t.Helper()
		for !done() {
			resp, err := ps.ch.Request(ctx, &ua.PublishRequest{RequestHeader: h, SubscriptionAcknowledgements: acks})
			require.NoError(t, err)
			p, ok := resp.(*ua.PublishResponse)
			require.True(t, ok, "%T", resp)
			acks = nil
			if len(p.NotificationMessage.NotificationData) > 0 {
				acks = []ua.SubscriptionAcknowledgement{{SubscriptionId: p.SubscriptionId, SequenceNumber: p.NotificationMessage.SequenceNumber}}
			}
			for _, x := range p.NotificationMessage.NotificationData {
				if dcn, ok := x.Value.(*ua.DataChangeNotification); ok {
					for _, mi := range dcn.MonitoredItems {
						values[mi.ClientHandle] = append(values[mi.ClientHandle], mi.Value)
					}
				}
			}
		}
	}
	publishUntil(func() bool { return len(values[1]) > 0 && len(values[2]) > 0 })
	require.Equal(t, int32(100), values[1][0].Value.Value())
	require.Equal(t, status.BadNodeIdUnknown, values[2][0].Status)

	m.mu.Lock()
	m.values["Child0"] = 777
	m.mu.Unlock()
	publishUntil(func() bool { return len(values[1]) > 1 })
	require.Equal(t, int32(777), values[1][1].Value.Value())
	require.Len(t, values[2], 1, "an unchanged bad status is not reported again")
}
