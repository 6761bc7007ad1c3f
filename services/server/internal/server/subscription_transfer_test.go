package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// rawSend sends req with gopcua's low-level Send and returns the response of type T, or
// the StatusCode of a ServiceFault.
func rawSend[T ua.Response](t *testing.T, ctx context.Context, c *opcua.Client, req ua.Request) (T, ua.StatusCode) {
	t.Helper()
	var out T
	err := c.Send(ctx, req, func(r ua.Response) error {
		if f, ok := r.(*ua.ServiceFault); ok {
			return f.ResponseHeader.ServiceResult
		}
		v, ok := r.(T)
		if !ok {
			return errors.New("unexpected response type")
		}
		out = v
		return nil
	})
	var code ua.StatusCode
	if errors.As(err, &code) {
		return out, code
	}
	require.NoError(t, err)
	return out, out.Header().ServiceResult
}

// dataChanges returns the values of the DataChangeNotifications of m by client handle.
func dataChanges(m *ua.NotificationMessage) map[uint32]any {
	out := map[uint32]any{}
	for _, x := range m.NotificationData {
		if dcn, ok := x.Value.(*ua.DataChangeNotification); ok {
			for _, mi := range dcn.MonitoredItems {
				out[mi.ClientHandle] = mi.Value.Value.Value()
			}
		}
	}
	return out
}

// TestSubscriptionTransferAndRepublish drives the subscription services with raw
// requests from two gopcua sessions: Republish of an unacknowledged message and
// BadMessageNotAvailable once it is acknowledged, TransferSubscriptions to the second
// session of the same application with initial values (the first session is told
// GoodSubscriptionTransferred; an anonymous session on a None channel is refused),
// BadTooManyPublishRequests for the oldest parked Publish beyond the limit, and
// BadTooManyMonitoredItems beyond MaxMonitoredItemsPerSubscription.
func TestSubscriptionTransferAndRepublish(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Limits.MaxPublishRequestCount = 2
		c.Limits.MaxMonitoredItemsPerSubscription = 2
		c.Security.AutoAcceptUntrusted = true
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	// An anonymous user's subscription moves only between sessions of the same
	// application on signed channels (Part 4 §5.13.7): both sessions use one client
	// certificate over Basic256Sha256 SignAndEncrypt.
	der, key := clientIdentity(t)
	creds := []opcua.Option{opcua.Certificate(der), opcua.PrivateKey(key)}
	pol, mode := ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt
	c1 := connect(t, ctx, ts.URL, pol, mode, ua.UserTokenTypeAnonymous, creds...)
	defer c1.Close(ctx)
	c2 := connect(t, ctx, ts.URL, pol, mode, ua.UserTokenTypeAnonymous, creds...)
	defer c2.Close(ctx)
	stranger := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer stranger.Close(ctx)

	cs, code := rawSend[*ua.CreateSubscriptionResponse](t, ctx, c1, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: 50, RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 20, PublishingEnabled: true,
	})
	require.Equal(t, ua.StatusOK, code)
	sub := cs.SubscriptionID
	node := ua.NewStringNodeID(1, "Demo.Scalar_Int32")
	items := []*ua.MonitoredItemCreateRequest{
		opcua.NewMonitoredItemCreateRequestWithDefaults(node, ua.AttributeIDValue, 7),
		opcua.NewMonitoredItemCreateRequestWithDefaults(ua.NewNumericNodeID(0, 2259), ua.AttributeIDValue, 8),
		opcua.NewMonitoredItemCreateRequestWithDefaults(ua.NewNumericNodeID(0, 2258), ua.AttributeIDValue, 9),
	}
	cm, code := rawSend[*ua.CreateMonitoredItemsResponse](t, ctx, c1, &ua.CreateMonitoredItemsRequest{
		SubscriptionID: sub, TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: items,
	})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, ua.StatusOK, cm.Results[0].StatusCode)
	require.Equal(t, ua.StatusOK, cm.Results[1].StatusCode)
	require.Equal(t, ua.StatusBadTooManyMonitoredItems, cm.Results[2].StatusCode)

	// The first message holds the initial values; Republish returns it again.
	p, code := rawSend[*ua.PublishResponse](t, ctx, c1, &ua.PublishRequest{})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, sub, p.SubscriptionID)
	first := p.NotificationMessage.SequenceNumber
	require.Contains(t, p.AvailableSequenceNumbers, first)
	require.Len(t, dataChanges(p.NotificationMessage), 2)
	rp, code := rawSend[*ua.RepublishResponse](t, ctx, c1, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: first})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, first, rp.NotificationMessage.SequenceNumber)
	require.Equal(t, dataChanges(p.NotificationMessage), dataChanges(rp.NotificationMessage))

	// Acknowledged, it is gone; acknowledging it twice is BadSequenceNumberUnknown.
	ack := []*ua.SubscriptionAcknowledgement{{SubscriptionID: sub, SequenceNumber: first}, {SubscriptionID: sub, SequenceNumber: first}}
	p, code = rawSend[*ua.PublishResponse](t, ctx, c1, &ua.PublishRequest{SubscriptionAcknowledgements: ack})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, []ua.StatusCode{ua.StatusOK, ua.StatusBadSequenceNumberUnknown}, p.Results)
	_, code = rawSend[*ua.RepublishResponse](t, ctx, c1, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: first})
	require.Equal(t, ua.StatusBadMessageNotAvailable, code)

	// An anonymous session without a signed channel may not take it.
	tr, code := rawSend[*ua.TransferSubscriptionsResponse](t, ctx, stranger, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{sub}})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, ua.StatusBadUserAccessDenied, tr.Results[0].StatusCode)

	// The second session takes the subscription over with its current values.
	tr, code = rawSend[*ua.TransferSubscriptionsResponse](t, ctx, c2, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{sub, sub + 1000}, SendInitialValues: true})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, ua.StatusOK, tr.Results[0].StatusCode)
	require.Equal(t, ua.StatusBadSubscriptionIDInvalid, tr.Results[1].StatusCode)
	p, code = rawSend[*ua.PublishResponse](t, ctx, c2, &ua.PublishRequest{})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, sub, p.SubscriptionID)
	require.Len(t, dataChanges(p.NotificationMessage), 2)

	// The first session learns of it in its next Publish, then has no subscription.
	p, code = rawSend[*ua.PublishResponse](t, ctx, c1, &ua.PublishRequest{})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, sub, p.SubscriptionID)
	require.Len(t, p.NotificationMessage.NotificationData, 1)
	sc, ok := p.NotificationMessage.NotificationData[0].Value.(*ua.StatusChangeNotification)
	require.True(t, ok, "%T", p.NotificationMessage.NotificationData[0].Value)
	require.Equal(t, ua.StatusGoodSubscriptionTransferred, sc.Status)
	_, code = rawSend[*ua.PublishResponse](t, ctx, c1, &ua.PublishRequest{})
	require.Equal(t, ua.StatusBadNoSubscription, code)
	_, code = rawSend[*ua.RepublishResponse](t, ctx, c1, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: first})
	require.Equal(t, ua.StatusBadSubscriptionIDInvalid, code)

	// Three parked Publishes with a limit of two: the oldest is answered at once with
	// BadTooManyPublishRequests. Publishing is disabled and the keep-alive far away, so
	// nothing else answers them meanwhile.
	_, code = rawSend[*ua.SetPublishingModeResponse](t, ctx, c2, &ua.SetPublishingModeRequest{PublishingEnabled: false, SubscriptionIDs: []uint32{sub}})
	require.Equal(t, ua.StatusOK, code)
	_, code = rawSend[*ua.ModifySubscriptionResponse](t, ctx, c2, &ua.ModifySubscriptionRequest{SubscriptionID: sub,
		RequestedPublishingInterval: 1000, RequestedMaxKeepAliveCount: 100, RequestedLifetimeCount: 300})
	require.Equal(t, ua.StatusOK, code)
	type result struct {
		i    int
		code ua.StatusCode
	}
	done := make(chan result, 3)
	for i := range 3 {
		go func() {
			_, code := rawSend[*ua.PublishResponse](t, ctx, c2, &ua.PublishRequest{})
			done <- result{i, code}
		}()
		time.Sleep(100 * time.Millisecond) // keep the arrival order
	}
	select {
	case r := <-done:
		require.Equal(t, result{0, ua.StatusBadTooManyPublishRequests}, r)
	case <-time.After(5 * time.Second):
		t.Fatal("no Publish answered")
	}
	_, code = rawSend[*ua.DeleteSubscriptionsResponse](t, ctx, c2, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{sub}})
	require.Equal(t, ua.StatusOK, code)
	for range 2 {
		r := <-done
		require.Equal(t, ua.StatusBadNoSubscription, r.code, "parked Publish %d", r.i)
	}
}

// TestSubscriptionLifetimeAndOverflow, with raw requests: a subscription without
// Publishes for its lifetime is deleted and the next Publish carries a
// StatusChangeNotification BadTimeout; a queue of three with discardOldest that got five
// values while publishing was disabled reports the newest three, the first flagged with
// the Overflow InfoBits (0x480).
func TestSubscriptionLifetimeAndOverflow(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)

	// Lifetime: 3 intervals of 50 ms.
	cs, code := rawSend[*ua.CreateSubscriptionResponse](t, ctx, c, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: 50, RequestedLifetimeCount: 3, RequestedMaxKeepAliveCount: 1, PublishingEnabled: true,
	})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, uint32(3), cs.RevisedLifetimeCount)
	require.Equal(t, uint32(1), cs.RevisedMaxKeepAliveCount)
	time.Sleep(500 * time.Millisecond)
	p, code := rawSend[*ua.PublishResponse](t, ctx, c, &ua.PublishRequest{})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, cs.SubscriptionID, p.SubscriptionID)
	require.Len(t, p.NotificationMessage.NotificationData, 1)
	sc, ok := p.NotificationMessage.NotificationData[0].Value.(*ua.StatusChangeNotification)
	require.True(t, ok, "%T", p.NotificationMessage.NotificationData[0].Value)
	require.Equal(t, ua.StatusBadTimeout, sc.Status)
	ds, code := rawSend[*ua.DeleteSubscriptionsResponse](t, ctx, c, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{cs.SubscriptionID}})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, []ua.StatusCode{ua.StatusBadSubscriptionIDInvalid}, ds.Results, "it is gone")

	// Overflow.
	cs, code = rawSend[*ua.CreateSubscriptionResponse](t, ctx, c, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: 50, RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 10, PublishingEnabled: false,
	})
	require.Equal(t, ua.StatusOK, code)
	node := ua.NewStringNodeID(1, "Demo.Scalar_UInt32")
	item := opcua.NewMonitoredItemCreateRequestWithDefaults(node, ua.AttributeIDValue, 1)
	item.RequestedParameters.QueueSize = 3
	item.RequestedParameters.DiscardOldest = true
	cm, code := rawSend[*ua.CreateMonitoredItemsResponse](t, ctx, c, &ua.CreateMonitoredItemsRequest{
		SubscriptionID: cs.SubscriptionID, TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: []*ua.MonitoredItemCreateRequest{item},
	})
	require.Equal(t, ua.StatusOK, code)
	require.Equal(t, ua.StatusOK, cm.Results[0].StatusCode)
	require.Equal(t, uint32(3), cm.Results[0].RevisedQueueSize)
	time.Sleep(100 * time.Millisecond) // the initial value is queued
	for v := uint32(1); v <= 5; v++ {
		w, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: node, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}}}})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, w.Results[0])
	}
	_, code = rawSend[*ua.SetPublishingModeResponse](t, ctx, c, &ua.SetPublishingModeRequest{PublishingEnabled: true, SubscriptionIDs: []uint32{cs.SubscriptionID}})
	require.Equal(t, ua.StatusOK, code)
	var got []*ua.DataValue
	for len(got) == 0 {
		p, code = rawSend[*ua.PublishResponse](t, ctx, c, &ua.PublishRequest{})
		require.Equal(t, ua.StatusOK, code)
		for _, x := range p.NotificationMessage.NotificationData {
			if dcn, ok := x.Value.(*ua.DataChangeNotification); ok {
				for _, mi := range dcn.MonitoredItems {
					got = append(got, mi.Value)
				}
			}
		}
	}
	require.Len(t, got, 3)
	for i, want := range []uint32{3, 4, 5} {
		require.Equal(t, want, got[i].Value.Value(), "value %d", i)
	}
	require.Equal(t, ua.StatusCode(0x480), got[0].Status)
	require.Equal(t, ua.StatusOK, got[1].Status)
	require.Equal(t, ua.StatusOK, got[2].Status)
}
