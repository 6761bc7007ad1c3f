package subscription

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// TestDiagnosticsCounters drives one subscription through the events its
// SubscriptionDiagnosticsDataType counts (Part 5 §12.16) and checks every counter:
// publishes answered, data change notifications, queue overflows, LATE, Republish,
// Modify, SetPublishingMode, the retransmission queue, disabled items and a transfer.
func TestDiagnosticsCounters(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 50 * time.Millisecond
	sub := r.create(iv, 3, 30)
	r.monitor(sub, 1, 3, true, DefaultFilter)
	r.monitor(sub, 2, 3, false, DefaultFilter)
	gone := r.create(iv*2, 3, 30)
	require.Equal(t, []status.Code{status.Good}, r.e.Delete(r.ses, []uint32{gone}))

	p := r.publish()
	r.advance(iv) // the initial values: 2 notifications
	require.Len(t, p.got, 1)
	for v := 1.0; v <= 5; v++ { // 5 values into queues of 3: 2 overflows each
		r.write(1, v)
		r.write(2, v)
	}
	p = r.publish()
	r.advance(iv) // 6 notifications
	require.Len(t, p.got[0].items, 6)

	r.write(1, 6)
	r.advance(iv) // no Publish parked: LATE
	p = r.publish()
	require.Len(t, p.got, 1) // answered at once: 1 notification

	require.Equal(t, status.Good, r.e.Republish(r.ses, sub, 1, func(*ua.NotificationMessage) {}))
	require.Equal(t, status.BadMessageNotAvailable, r.e.Republish(r.ses, sub, 99, func(*ua.NotificationMessage) {}))
	_, code := r.e.Modify(r.ses, sub, Params{PublishingInterval: durationMs(iv), MaxKeepAliveCount: 3, LifetimeCount: 30})
	require.Equal(t, status.Good, code)
	r.e.SetPublishingMode(r.ses, false, []uint32{sub})
	r.e.SetPublishingMode(r.ses, true, []uint32{sub})

	// Two more messages make 5 sent: the retransmission queue keeps 4 and discards one.
	for v := 7.0; v <= 8; v++ {
		r.write(1, v)
		p = r.publish()
		r.advance(iv)
		require.Len(t, p.got, 1)
	}
	_, code = r.e.SetMonitoringMode(r.ses, sub, ua.MonitoringModeDisabled, []uint32{2})
	require.Equal(t, status.Good, code)

	d := r.e.Diagnostics(true)
	require.EqualValues(t, 1, d.CurrentSubscriptions)
	require.EqualValues(t, 2, d.CumulatedSubscriptions)
	require.EqualValues(t, 1, d.PublishingIntervals)
	require.Len(t, d.Subscriptions, 1)
	require.Equal(t, SessionCounts{Subscriptions: 1, MonitoredItems: 2, QueuedPublish: 0}, d.Sessions[r.ses])
	got := d.Subscriptions[0]
	require.Equal(t, ua.SubscriptionDiagnosticsDataType{
		SessionId:                    r.ses,
		SubscriptionId:               sub,
		PublishingInterval:           50,
		MaxKeepAliveCount:            3,
		MaxLifetimeCount:             30,
		PublishingEnabled:            true,
		ModifyCount:                  1,
		EnableCount:                  1,
		DisableCount:                 1,
		RepublishRequestCount:        2,
		RepublishMessageRequestCount: 2,
		RepublishMessageCount:        1,
		PublishRequestCount:          5,
		DataChangeNotificationsCount: 2 + 6 + 1 + 1 + 1,
		NotificationsCount:           2 + 6 + 1 + 1 + 1,
		LatePublishRequestCount:      1,
		CurrentKeepAliveCount:        3,
		CurrentLifetimeCount:         30,
		UnacknowledgedMessageCount:   4,
		DiscardedMessageCount:        1,
		MonitoredItemCount:           2,
		DisabledMonitoredItemCount:   1,
		MonitoringQueueOverflowCount: 4,
		NextSequenceNumber:           6,
	}, got)

	// Without details only the counts are gathered.
	brief := r.e.Diagnostics(false)
	require.Nil(t, brief.Subscriptions)
	require.Nil(t, brief.Sessions)
	require.EqualValues(t, 2, brief.CumulatedSubscriptions)

	// A transfer to another session of the same owner moves the SessionId.
	other := codec.NewNumericNodeId(1, 2)
	res := r.e.Transfer(other, "anonymous", []uint32{sub}, false)
	require.Equal(t, status.Good, res[0].StatusCode)
	require.Equal(t, status.BadUserAccessDenied, r.e.Transfer(other, "someone else", []uint32{sub}, false)[0].StatusCode)
	got = r.e.Diagnostics(true).Subscriptions[0]
	require.Equal(t, other, got.SessionId)
	require.EqualValues(t, 2, got.TransferRequestCount)
	require.EqualValues(t, 1, got.TransferredToSameClientCount)
}

// TestCounts follows the subscriptions and monitored items of the server as they are
// created and deleted.
func TestCounts(t *testing.T) {
	r := newRig(t, testLimits())
	subs, items := r.e.Counts()
	require.Zero(t, subs)
	require.Zero(t, items)
	a := r.create(50*time.Millisecond, 3, 30)
	b := r.create(50*time.Millisecond, 3, 30)
	r.monitor(a, 1, 3, true, DefaultFilter)
	r.monitor(a, 2, 3, true, DefaultFilter)
	r.monitor(b, 3, 3, true, DefaultFilter)
	subs, items = r.e.Counts()
	require.Equal(t, 2, subs)
	require.Equal(t, 3, items)
	require.Equal(t, []status.Code{status.Good}, r.e.Delete(r.ses, []uint32{a}))
	subs, items = r.e.Counts()
	require.Equal(t, 1, subs)
	require.Equal(t, 1, items, "the items of a deleted subscription go with it")
}
