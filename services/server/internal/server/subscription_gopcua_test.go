package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/servertest"
)

// notification is one MonitoredItemNotification as the test sees it.
type notification struct {
	handle uint32
	value  any
	status ua.StatusCode
	at     time.Time
}

// handles demultiplexes the data changes of a gopcua subscription by client handle.
type handles struct {
	t  *testing.T
	by map[uint32]chan notification
}

// collect forwards the data changes of ch to one channel per client handle, made for
// handles 1..n.
func collect(ctx context.Context, t *testing.T, ch <-chan *opcua.PublishNotificationData, n uint32) *handles {
	h := &handles{t: t, by: make(map[uint32]chan notification)}
	for i := uint32(1); i <= n; i++ {
		h.by[i] = make(chan notification, 256)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case n := <-ch:
				if n.Error != nil {
					t.Logf("publish error: %v", n.Error)
					continue
				}
				dcn, ok := n.Value.(*ua.DataChangeNotification)
				if !ok {
					continue
				}
				for _, mi := range dcn.MonitoredItems {
					if c := h.by[mi.ClientHandle]; c != nil {
						c <- notification{handle: mi.ClientHandle, value: mi.Value.Value.Value(), status: mi.Value.Status, at: time.Now()}
					}
				}
			}
		}
	}()
	return h
}

// next returns the next notification for handle, or fails after d.
func (h *handles) next(handle uint32, d time.Duration) notification {
	h.t.Helper()
	select {
	case n := <-h.by[handle]:
		return n
	case <-time.After(d):
		h.t.Fatalf("no notification for handle %d within %v", handle, d)
	}
	return notification{}
}

// none fails if a notification for handle arrives within d.
func (h *handles) none(handle uint32, d time.Duration) {
	h.t.Helper()
	select {
	case n := <-h.by[handle]:
		h.t.Fatalf("unexpected notification for handle %d: %v", handle, n.value)
	case <-time.After(d):
	}
}

// TestSubscriptionGopcua drives subscriptions with gopcua's client: ServerStatus
// CurrentTime is sampled every publishing interval; a write of the demo Double reaches
// its monitored item within one publishing interval; an absolute deadband of 1.0
// suppresses a change of 0.5 and reports one of 2.0.
func TestSubscriptionGopcua(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	// gopcua starts its publish loop at Connect; its first Publish gets BadNoSubscription
	// and pauses the loop. Subscribe resumes it, but when the resume and the pause are
	// both pending gopcua's select may take the resume first and then stay paused. Let
	// the pause land first.
	time.Sleep(300 * time.Millisecond)

	const interval = 50 * time.Millisecond
	ch := make(chan *opcua.PublishNotificationData, 64)
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: interval}, ch)
	require.NoError(t, err)
	require.Equal(t, interval, sub.RevisedPublishingInterval)
	got := collect(ctx, t, ch, 3)

	node := ua.NewStringNodeID(1, "Demo.Scalar_Double")
	write := func(v float64) time.Time {
		resp, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{
			NodeID: node, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)},
		}}})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, resp.Results[0])
		return time.Now()
	}
	write(0)

	currentTime := opcua.NewMonitoredItemCreateRequestWithDefaults(ua.NewNumericNodeID(0, 2258), ua.AttributeIDValue, 1)
	plain := opcua.NewMonitoredItemCreateRequestWithDefaults(node, ua.AttributeIDValue, 2)
	deadband := opcua.NewMonitoredItemCreateRequestWithDefaults(node, ua.AttributeIDValue, 3)
	deadband.RequestedParameters.Filter = ua.NewExtensionObject(&ua.DataChangeFilter{
		Trigger: ua.DataChangeTriggerStatusValue, DeadbandType: uint32(ua.DeadbandTypeAbsolute), DeadbandValue: 1.0,
	})
	unknown := opcua.NewMonitoredItemCreateRequestWithDefaults(ua.NewStringNodeID(1, "Demo.NoSuchNode"), ua.AttributeIDValue, 4)
	percent := opcua.NewMonitoredItemCreateRequestWithDefaults(node, ua.AttributeIDValue, 5)
	percent.RequestedParameters.Filter = ua.NewExtensionObject(&ua.DataChangeFilter{
		Trigger: ua.DataChangeTriggerStatusValue, DeadbandType: uint32(ua.DeadbandTypePercent), DeadbandValue: 10,
	})
	res, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, currentTime, plain, deadband, unknown, percent)
	require.NoError(t, err)
	require.Len(t, res.Results, 5)
	for i := range 3 {
		require.Equal(t, ua.StatusOK, res.Results[i].StatusCode, "item %d", i)
	}
	require.Equal(t, ua.StatusBadNodeIDUnknown, res.Results[3].StatusCode)
	// The demo Double has no EURange, so a percent deadband cannot apply.
	require.Equal(t, ua.StatusBadMonitoredItemFilterUnsupported, res.Results[4].StatusCode)

	// Initial values, then CurrentTime keeps changing every sample.
	require.EqualValues(t, 0.0, got.next(2, 5*time.Second).value)
	require.EqualValues(t, 0.0, got.next(3, 5*time.Second).value)
	t1 := got.next(1, 5*time.Second).value.(time.Time)
	t2 := got.next(1, 5*time.Second).value.(time.Time)
	require.True(t, t2.After(t1), "CurrentTime %v then %v", t1, t2)

	// A write reaches its item within one publishing interval (plus scheduling slack on a
	// shared machine).
	at := write(10)
	n := got.next(2, 5*time.Second)
	require.EqualValues(t, 10.0, n.value)
	require.Less(t, n.at.Sub(at), interval+150*time.Millisecond)
	require.EqualValues(t, 10.0, got.next(3, 5*time.Second).value)

	// 0.5 is inside the deadband: the plain item reports it, the deadband item does not.
	write(10.5)
	require.EqualValues(t, 10.5, got.next(2, 5*time.Second).value)
	got.none(3, 4*interval)
	write(12)
	require.EqualValues(t, 12.0, got.next(3, 5*time.Second).value)
}
