package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// testSub is a subscription with no client, for the sequencing logic alone.
func testSub(buffer int) *Subscription {
	return &Subscription{q: make(chan *Notification, buffer), done: make(chan struct{}), next: 1, horizon: 1,
		items: map[uint32]*item{}, pending: map[uint32]*ua.NotificationMessage{}}
}

// dataMsg is a message with one data change of value seq for handle 1.
func dataMsg(seq uint32) *ua.NotificationMessage {
	return &ua.NotificationMessage{SequenceNumber: seq, NotificationData: []codec.ExtensionObject{
		codec.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: []ua.MonitoredItemNotification{
			{ClientHandle: 1, Value: codec.DataValue{Value: codec.Int32Variant(int32(seq))}},
		}}),
	}}
}

// queued returns the sequence numbers waiting in s's delivery queue.
func queued(s *Subscription) []uint32 {
	var seqs []uint32
	for {
		select {
		case n := <-s.q:
			seqs = append(seqs, n.SequenceNumber)
		default:
			return seqs
		}
	}
}

func TestSubscriptionSequencing(t *testing.T) {
	s := testSub(16)
	require.False(t, s.received(dataMsg(1), nil))
	require.Equal(t, []uint32{1}, queued(s))

	// 3 and 4 before 2: held back, and a gap is reported.
	require.True(t, s.received(dataMsg(3), []uint32{3}))
	require.True(t, s.received(dataMsg(4), []uint32{3, 4}))
	require.Empty(t, queued(s))
	// 2 fills it: all three in order.
	require.False(t, s.received(dataMsg(2), nil))
	require.Equal(t, []uint32{2, 3, 4}, queued(s))

	// A duplicate (republished after it arrived) is ignored.
	require.False(t, s.received(dataMsg(3), nil))
	require.Empty(t, queued(s))

	// A keep-alive names the next number: 7 means 5 and 6 exist and are missing.
	require.True(t, s.received(&ua.NotificationMessage{SequenceNumber: 7}, nil))
	require.EqualValues(t, 1, s.stats.KeepAlives)
	// 5 is lost (BadMessageNotAvailable): skipped, 6 follows.
	s.stats.Lost++
	s.next++
	s.drain()
	require.False(t, s.received(dataMsg(6), nil))
	require.Equal(t, []uint32{6}, queued(s))
	require.EqualValues(t, 5, s.stats.Delivered)

	// Available numbers past what arrived are a gap too (a response lost with its channel).
	require.True(t, s.noteAvailable([]uint32{7, 8}))
	require.Equal(t, uint32(7), s.next)
	require.Equal(t, uint32(9), s.horizon)
}

func TestSubscriptionBufferDrops(t *testing.T) {
	s := testSub(2)
	for seq := uint32(1); seq <= 5; seq++ {
		s.received(dataMsg(seq), nil)
	}
	require.Equal(t, []uint32{1, 2}, queued(s), "the newest are dropped, not the queue blocked")
	require.EqualValues(t, 2, s.stats.Delivered)
	require.EqualValues(t, 3, s.stats.Dropped)
	require.Equal(t, uint32(6), s.next, "dropped messages still count as received")
}

func TestSubscriptionNotificationKinds(t *testing.T) {
	s := testSub(4)
	s.received(&ua.NotificationMessage{SequenceNumber: 1, PublishTime: codec.DateTimeOf(time.Unix(1700000000, 0)), NotificationData: []codec.ExtensionObject{
		codec.NewExtensionObject(&ua.EventNotificationList{Events: []ua.EventFieldList{{ClientHandle: 9}}}),
		codec.NewExtensionObject(&ua.StatusChangeNotification{Status: 0x802D0000}),
	}}, nil)
	n := <-s.q
	require.Len(t, n.Events, 1)
	require.EqualValues(t, 9, n.Events[0].ClientHandle)
	require.EqualValues(t, 0x802D0000, n.Status)
	require.Equal(t, int64(1700000000), n.PublishTime.Unix())
	require.Same(t, s, n.Subscription)
}

func TestMonitorItemRequest(t *testing.T) {
	c := &Client{}
	node := codec.NewStringNodeId(1, "x")
	r := c.itemRequest(MonitorItem{Node: node})
	require.Equal(t, uint32(attr.Value), r.ItemToMonitor.AttributeId)
	require.Equal(t, -1.0, r.RequestedParameters.SamplingInterval, "publishing interval")
	require.EqualValues(t, 1, r.RequestedParameters.QueueSize)
	require.True(t, r.RequestedParameters.DiscardOldest)
	require.NotZero(t, r.RequestedParameters.ClientHandle)
	require.Equal(t, ua.MonitoringModeReporting, r.MonitoringMode)
	require.True(t, r.RequestedParameters.Filter.IsNull())

	f := &ua.DataChangeFilter{Trigger: ua.DataChangeTriggerStatusValueTimestamp, DeadbandType: 1, DeadbandValue: 0.5}
	r = c.itemRequest(MonitorItem{Node: node, Handle: 5, SamplingInterval: FastestSampling, QueueSize: 8, DiscardNewest: true, Filter: f})
	require.EqualValues(t, 5, r.RequestedParameters.ClientHandle)
	require.Zero(t, r.RequestedParameters.SamplingInterval)
	require.False(t, r.RequestedParameters.DiscardOldest)
	require.Same(t, f, r.RequestedParameters.Filter.Value)

	r = c.itemRequest(MonitorItem{Node: node, SamplingInterval: 250 * time.Millisecond, EventFilter: &ua.EventFilter{}})
	require.Equal(t, 250.0, r.RequestedParameters.SamplingInterval)
	require.Equal(t, uint32(attr.EventNotifier), r.ItemToMonitor.AttributeId)
	require.IsType(t, &ua.EventFilter{}, r.RequestedParameters.Filter.Value)
}
