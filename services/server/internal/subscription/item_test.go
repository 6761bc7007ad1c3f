package subscription

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// TestTooManyMonitoredItems: MaxMonitoredItemsPerSubscription and MaxMonitoredItems
// refuse items with BadTooManyMonitoredItems; a subscription of another session is
// BadSubscriptionIdInvalid.
func TestTooManyMonitoredItems(t *testing.T) {
	l := testLimits()
	l.MaxMonitoredItemsPerSubscription = 2
	l.MaxMonitoredItems = 3
	r := newRig(t, l)
	s1, s2 := r.create(time.Second, 10, 30), r.create(time.Second, 10, 30)
	req := func(n uint32) ItemRequest {
		return ItemRequest{Item: ua.ReadValueId{NodeId: node(n), AttributeId: 13}, Mode: ua.MonitoringModeReporting, ClientHandle: n, Push: true}
	}
	good3 := []status.Code{status.Good, status.Good, status.Good}
	res, code := r.e.CreateItems(r.ses, s1, ua.TimestampsToReturnBoth, []ItemRequest{req(1), req(2), req(3)}, good3)
	require.Equal(t, status.Good, code)
	require.Equal(t, []status.Code{status.Good, status.Good, status.BadTooManyMonitoredItems},
		[]status.Code{res[0].StatusCode, res[1].StatusCode, res[2].StatusCode})
	res, _ = r.e.CreateItems(r.ses, s2, ua.TimestampsToReturnBoth, []ItemRequest{req(4), req(5)}, good3[:2])
	require.Equal(t, status.Good, res[0].StatusCode)
	require.Equal(t, status.BadTooManyMonitoredItems, res[1].StatusCode, "the server holds its 3")
	_, code = r.e.CreateItems(codec.NewNumericNodeId(1, 99), s1, ua.TimestampsToReturnBoth, []ItemRequest{req(6)}, good3[:1])
	require.Equal(t, status.BadSubscriptionIdInvalid, code)
}

// TestQueueOverflow: a full queue of more than one value flags the Overflow InfoBits on
// the new oldest value (discardOldest) or on the replaced newest; a queue of one keeps
// the newest value without the flag (Part 4 §5.12.1.5).
func TestQueueOverflow(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	sub := r.create(iv, 10, 30)
	r.monitor(sub, 1, 3, true, DefaultFilter)
	r.monitor(sub, 2, 3, false, DefaultFilter)
	r.monitor(sub, 3, 1, true, DefaultFilter)
	p := r.publish()
	r.advance(iv) // initial values
	require.Len(t, p.got[0].items, 3)
	for v := 1.0; v <= 5; v++ {
		r.write(1, v)
		r.write(2, v)
		r.write(3, v)
	}
	p = r.publish()
	r.advance(iv)
	by := map[uint32][]ua.MonitoredItemNotification{}
	for _, it := range p.got[0].items {
		by[it.ClientHandle] = append(by[it.ClientHandle], it)
	}
	require.Equal(t, []float64{3, 4, 5}, doubles(by[1]))
	require.Equal(t, Overflow, by[1][0].Value.Status)
	require.Equal(t, status.Good, by[1][1].Value.Status)
	require.Equal(t, []float64{1, 2, 5}, doubles(by[2]))
	require.Equal(t, Overflow, by[2][2].Value.Status)
	require.Equal(t, status.Good, by[2][0].Value.Status)
	require.Equal(t, []float64{5}, doubles(by[3]))
	require.Equal(t, status.Good, by[3][0].Value.Status)
}

// TestDeadband: an absolute deadband reports a change only when it exceeds the band
// around the last reported value; trigger Status ignores value changes.
func TestDeadband(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	sub := r.create(iv, 10, 30)
	r.monitor(sub, 1, 10, true, Filter{Trigger: ua.DataChangeTriggerStatusValue, Deadband: 1})
	r.monitor(sub, 2, 10, true, Filter{Trigger: ua.DataChangeTriggerStatus})
	p := r.publish()
	r.advance(iv)
	require.Len(t, p.got[0].items, 2)
	for _, v := range []float64{0.5, 1.5, 2.0, 0.4} {
		r.write(1, v)
		r.write(2, v)
	}
	bad := codec.DataValue{Value: codec.DoubleVariant(0.4), Status: status.BadNoCommunication}
	r.e.Changed(node(2), &bad)
	p = r.publish()
	r.advance(iv)
	var one, two []ua.MonitoredItemNotification
	for _, it := range p.got[0].items {
		if it.ClientHandle == 1 {
			one = append(one, it)
		} else {
			two = append(two, it)
		}
	}
	require.Equal(t, []float64{1.5, 0.4}, doubles(one))
	require.Len(t, two, 1)
	require.Equal(t, status.BadNoCommunication, two[0].Value.Status)
}

// TestMonitoringModes: a Disabled item reports nothing; a Sampling item queues without
// reporting until it is set to Reporting; re-enabling a Disabled item reports its
// current value.
func TestMonitoringModes(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	sub := r.create(iv, 1, 30) // a keep-alive for every cycle without data
	a := r.monitor(sub, 1, 5, true, DefaultFilter)
	b := r.monitor(sub, 2, 5, true, DefaultFilter)
	p := r.publish()
	r.advance(iv)
	require.Len(t, p.got[0].items, 2)

	res, code := r.e.SetMonitoringMode(r.ses, sub, ua.MonitoringModeDisabled, []uint32{a, 99})
	require.Equal(t, status.Good, code)
	require.Equal(t, []status.Code{status.Good, status.BadMonitoredItemIdInvalid}, res)
	_, code = r.e.SetMonitoringMode(r.ses, sub, ua.MonitoringModeSampling, []uint32{b})
	require.Equal(t, status.Good, code)
	_, code = r.e.SetMonitoringMode(r.ses, sub, ua.MonitoringMode(7), []uint32{b})
	require.Equal(t, status.BadMonitoringModeInvalid, code)
	r.write(1, 1)
	r.write(2, 2)
	p = r.publish()
	r.advance(iv)
	require.True(t, p.got[0].isEmpty, "a keep-alive: nothing reports")

	_, _ = r.e.SetMonitoringMode(r.ses, sub, ua.MonitoringModeReporting, []uint32{a, b})
	p = r.publish()
	r.advance(iv)
	require.ElementsMatch(t, []ua.MonitoredItemNotification{
		{ClientHandle: 1, Value: codec.DataValue{Value: codec.DoubleVariant(1)}},
		{ClientHandle: 2, Value: codec.DataValue{Value: codec.DoubleVariant(2)}},
	}, p.got[0].items)
}

// TestTriggering: a Sampling item linked to a triggering item reports its queue when the
// triggering item reports; after the link is removed it does not.
func TestTriggering(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	sub := r.create(iv, 1, 30) // a keep-alive for every cycle without data
	trig := r.monitor(sub, 1, 1, true, DefaultFilter)
	linked := r.monitor(sub, 2, 1, true, DefaultFilter)
	p := r.publish()
	r.advance(iv)
	require.Len(t, p.got[0].items, 2)
	_, _ = r.e.SetMonitoringMode(r.ses, sub, ua.MonitoringModeSampling, []uint32{linked})
	add, rem, code := r.e.SetTriggering(r.ses, sub, trig, []uint32{linked, 99}, []uint32{42})
	require.Equal(t, status.Good, code)
	require.Equal(t, []status.Code{status.Good, status.BadMonitoredItemIdInvalid}, add)
	require.Equal(t, []status.Code{status.BadMonitoredItemIdInvalid}, rem)
	_, _, code = r.e.SetTriggering(r.ses, sub, 99, nil, nil)
	require.Equal(t, status.BadMonitoredItemIdInvalid, code)

	r.write(2, 5) // sampled, not reported
	p = r.publish()
	r.advance(iv)
	require.True(t, p.got[0].isEmpty)
	r.write(1, 6) // triggers the linked item
	p = r.publish()
	r.advance(iv)
	require.ElementsMatch(t, []float64{6, 5}, doubles(p.got[0].items))

	_, rem, _ = r.e.SetTriggering(r.ses, sub, trig, nil, []uint32{linked})
	require.Equal(t, []status.Code{status.Good}, rem)
	r.write(2, 7)
	r.write(1, 8)
	p = r.publish()
	r.advance(iv)
	require.Equal(t, []float64{8}, doubles(p.got[0].items))
}

// TestSampledItem: an item that is not pushed is read through the Sampler at its revised
// interval and reports only changes; revision follows Part 4 §7.21 (-1 is the publishing
// interval, 0 the minimum, never below the node's MinimumSamplingInterval).
func TestSampledItem(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	sub := r.create(iv, 10, 30)
	r.vals[node(1)] = codec.DataValue{Value: codec.Int32Variant(1)}
	req := func(ms, nodeMin float64) ItemRequest {
		return ItemRequest{Item: ua.ReadValueId{NodeId: node(1), AttributeId: 13}, Mode: ua.MonitoringModeReporting,
			ClientHandle: 1, SamplingInterval: ms, QueueSize: 10, Filter: DefaultFilter, MinSamplingInterval: nodeMin}
	}
	good := []status.Code{status.Good, status.Good, status.Good, status.Good}
	res, code := r.e.CreateItems(r.ses, sub, ua.TimestampsToReturnNeither, []ItemRequest{req(50, 0), req(-1, 0), req(0, 0), req(5, 40)}, good)
	require.Equal(t, status.Good, code)
	var revised []float64
	for _, x := range res {
		revised = append(revised, x.RevisedSamplingInterval)
	}
	require.Equal(t, []float64{50, 100, 10, 40}, revised)
	_, code = r.e.DeleteItems(r.ses, sub, []uint32{res[1].MonitoredItemId, res[2].MonitoredItemId, res[3].MonitoredItemId})
	require.Equal(t, status.Good, code)

	p := r.publish()
	r.advance(iv)
	require.Len(t, p.got[0].items, 1, "the initial sample")
	r.vals[node(1)] = codec.DataValue{Value: codec.Int32Variant(2)}
	p = r.publish()
	r.advance(iv)
	require.Len(t, p.got[0].items, 1, "one change over two samples")
	require.Equal(t, int32(2), p.got[0].items[0].Value.Value.Value())

	mod, code := r.e.ModifyItems(r.ses, sub, ua.TimestampsToReturnBoth, []ItemModify{{ID: res[0].MonitoredItemId, ClientHandle: 9,
		SamplingInterval: 20, QueueSize: 0, Filter: DefaultFilter}, {ID: 77}}, []status.Code{status.Good, status.Good})
	require.Equal(t, status.Good, code)
	require.Equal(t, status.Good, mod[0].StatusCode)
	require.Equal(t, 20.0, mod[0].RevisedSamplingInterval)
	require.Equal(t, uint32(1), mod[0].RevisedQueueSize)
	require.Equal(t, status.BadMonitoredItemIdInvalid, mod[1].StatusCode)
	r.vals[node(1)] = codec.DataValue{Value: codec.Int32Variant(3)}
	p = r.publish()
	r.advance(iv)
	require.Equal(t, uint32(9), p.got[0].items[0].ClientHandle)
}

// TestTooManySubscriptions: MaxSubscriptionsPerSession and MaxSubscriptions refuse a
// subscription with BadTooManySubscriptions; deleting one makes room.
func TestTooManySubscriptions(t *testing.T) {
	l := testLimits()
	l.MaxSubscriptionsPerSession, l.MaxSubscriptions = 2, 3
	r := newRig(t, l)
	p := Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30}
	a := r.create(100*time.Millisecond, 10, 30)
	r.create(100*time.Millisecond, 10, 30)
	_, _, code := r.e.Create(r.ses, "anonymous", p, true)
	require.Equal(t, status.BadTooManySubscriptions, code, "per session")
	other := codec.NewNumericNodeId(1, 2)
	_, _, code = r.e.Create(other, "anonymous", p, true)
	require.Equal(t, status.Good, code)
	_, _, code = r.e.Create(other, "anonymous", p, true)
	require.Equal(t, status.BadTooManySubscriptions, code, "per server")
	require.Equal(t, []status.Code{status.Good, status.BadSubscriptionIdInvalid}, r.e.Delete(r.ses, []uint32{a, a}))
	_, _, code = r.e.Create(other, "anonymous", p, true)
	require.Equal(t, status.Good, code)
}

// TestRevise: publishing parameters are revised into the limits (Part 4 §5.13.2).
func TestRevise(t *testing.T) {
	l := testLimits()
	l.MaxKeepAliveCount, l.MaxLifetimeCount = 50, 90
	r := newRig(t, l)
	for _, tt := range []struct {
		in   Params
		want Revised
	}{
		{Params{PublishingInterval: 1, MaxKeepAliveCount: 0, LifetimeCount: 0}, Revised{10, 30, 10}},
		{Params{PublishingInterval: 1e12, MaxKeepAliveCount: 200, LifetimeCount: 1}, Revised{3.6e6, 90, 30}},
		{Params{PublishingInterval: -5, MaxKeepAliveCount: 5, LifetimeCount: 100}, Revised{10, 90, 5}},
	} {
		_, rev, code := r.e.Create(r.ses, "anonymous", tt.in, true)
		require.Equal(t, status.Good, code)
		require.Equal(t, tt.want, rev, "%+v", tt.in)
	}
}

// TestPriority: a Publish arriving while several subscriptions are late serves the one
// with the highest priority first.
func TestPriority(t *testing.T) {
	r := newRig(t, testLimits())
	low, _, _ := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30, Priority: 1}, true)
	high, _, _ := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30, Priority: 200}, true)
	r.advance(100 * time.Millisecond) // both late
	p := r.publish()
	require.Equal(t, high, p.got[0].sub)
	p = r.publish()
	require.Equal(t, low, p.got[0].sub)
}

// TestParkedPublishesHoldNoGoroutine: 2,000 sessions with a subscription, a monitored
// item and three parked Publishes each add no goroutine; a cycle in which one
// subscription is due answers only that one.
func TestParkedPublishesHoldNoGoroutine(t *testing.T) {
	l := testLimits()
	l.MaxSubscriptions, l.MaxMonitoredItems = 10000, 10000
	r := newRig(t, l)
	before := runtime.NumGoroutine()
	const n = 2000
	var boxes []*inbox
	for i := range n {
		ses := codec.NewNumericNodeId(3, uint32(i))
		// Spread the subscriptions over 1 s so that each cycle has one due.
		sub, _, code := r.e.Create(ses, "anonymous", Params{PublishingInterval: 1000, MaxKeepAliveCount: 1, LifetimeCount: 30}, true)
		require.Equal(t, status.Good, code)
		_, code = r.e.CreateItems(ses, sub, ua.TimestampsToReturnBoth, []ItemRequest{{Item: ua.ReadValueId{NodeId: node(1), AttributeId: 13},
			Mode: ua.MonitoringModeReporting, ClientHandle: 1, QueueSize: 1, Filter: DefaultFilter, Push: true}}, []status.Code{status.Good})
		require.Equal(t, status.Good, code)
		for range 3 {
			in := &inbox{}
			boxes = append(boxes, in)
			r.e.Publish(ses, nil, nil, in, time.Time{})
		}
		r.e.Step() // the initial sample, as Run would take it at once
		r.clk.t = r.clk.t.Add(time.Second / n)
	}
	// At most before: an unrelated goroutine (the runtime's, the test framework's) may
	// have ended meanwhile, but none may have been added.
	require.LessOrEqual(t, runtime.NumGoroutine(), before)
	answered := func() int {
		k := 0
		for _, b := range boxes {
			k += b.count()
		}
		return k
	}
	require.Zero(t, answered())
	r.e.Step() // the first subscription's cycle
	first := answered()
	require.Equal(t, 1, first)
	r.clk.t = r.clk.t.Add(time.Second / n)
	r.e.Step()
	require.Equal(t, 1, answered()-first, "one more subscription was due")
	r.advance(time.Second)
	for i := range n {
		require.Len(t, boxes[3*i].got, 1, "session %d", i)
		require.Len(t, boxes[3*i].got[0].items, 1, "session %d: the initial value", i)
	}
}
