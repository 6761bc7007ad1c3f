package subscription

import (
	"testing"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// BenchmarkChanged measures a pushed write reaching its item: one Changed per op on one
// of 1,000 monitored nodes, the value alternating so that every write passes the filter
// and is queued. Nothing publishes, so the dirty list stays at its 1,000 items.
func BenchmarkChanged(b *testing.B) {
	const n = 1000
	l := testLimits()
	l.MaxMonitoredItemsPerSubscription, l.MaxMonitoredItems = n, n
	r := newRig(&testing.T{}, l)
	sub, _, _ := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30}, true)
	reqs := make([]ItemRequest, n)
	for i := range reqs {
		reqs[i] = ItemRequest{Item: ua.ReadValueId{NodeId: node(uint32(i)), AttributeId: 13}, Mode: ua.MonitoringModeReporting,
			ClientHandle: uint32(i), QueueSize: 1, Filter: DefaultFilter, Push: true}
	}
	if _, code := r.e.CreateItems(r.ses, sub, ua.TimestampsToReturnBoth, reqs, make([]status.Code, n)); code != status.Good {
		b.Fatal(code)
	}
	nodes := make([]codec.NodeId, n)
	for i := range nodes {
		nodes[i] = node(uint32(i))
	}
	dvs := [2]codec.DataValue{{Value: codec.DoubleVariant(1)}, {Value: codec.DoubleVariant(2)}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.e.Changed(nodes[i%n], &dvs[(i/n)&1])
	}
}

// BenchmarkTick measures publishing cycles of 1,000 subscriptions, each of its own
// session, all due at once: idle (a parked Publish each, nothing to report, the
// keep-alive far away: the cycle only counts down) and publish (one pushed item each
// changes, so every cycle builds, sends and has acknowledged 1,000 one-value messages).
func BenchmarkTick(b *testing.B) {
	const n = 1000
	iv := 100 * time.Millisecond
	setup := func(b *testing.B) (*rig, []codec.NodeId, []uint32) {
		l := testLimits()
		l.MaxSubscriptions, l.MaxMonitoredItems = n, n
		l.MaxKeepAliveCount, l.MaxLifetimeCount = 1<<30, 1<<31
		r := newRig(&testing.T{}, l)
		sessions := make([]codec.NodeId, n)
		subs := make([]uint32, n)
		for i := range n {
			sessions[i] = codec.NewNumericNodeId(3, uint32(i))
			sub, _, code := r.e.Create(sessions[i], "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 1 << 30, LifetimeCount: 1 << 31}, true)
			if code != status.Good {
				b.Fatal(code)
			}
			subs[i] = sub
		}
		return r, sessions, subs
	}
	b.Run("idle", func(b *testing.B) {
		r, sessions, _ := setup(b)
		out := &encoder{}
		for _, ses := range sessions {
			r.e.Publish(ses, nil, nil, out, time.Time{})
		}
		r.advance(iv) // the first cycle answers each parked Publish with a keep-alive
		for _, ses := range sessions {
			r.e.Publish(ses, nil, nil, out, time.Time{})
		}
		b.ReportAllocs()
		for b.Loop() {
			r.clk.t = r.clk.t.Add(iv)
			r.e.Step()
		}
		b.ReportMetric(float64(b.Elapsed())/float64(b.N*n), "ns/tick")
	})
	b.Run("publish", func(b *testing.B) {
		r, sessions, subs := setup(b)
		for i, sub := range subs {
			_, code := r.e.CreateItems(sessions[i], sub, ua.TimestampsToReturnBoth, []ItemRequest{{
				Item: ua.ReadValueId{NodeId: node(uint32(i)), AttributeId: 13}, Mode: ua.MonitoringModeReporting,
				ClientHandle: 1, QueueSize: 1, Filter: DefaultFilter, Push: true}}, []status.Code{status.Good})
			if code != status.Good {
				b.Fatal(code)
			}
		}
		out := &encoder{}
		acks := make([]ua.SubscriptionAcknowledgement, n)
		results := make([]status.Code, n)
		seq := uint32(0)
		dv := codec.DataValue{}
		cycle := func(v float64) {
			dv.Value = codec.DoubleVariant(v)
			for i := range n {
				r.e.Changed(node(uint32(i)), &dv)
				var a []ua.SubscriptionAcknowledgement
				if seq > 0 {
					acks[i] = ua.SubscriptionAcknowledgement{SubscriptionId: subs[i], SequenceNumber: seq}
					a = acks[i : i+1]
				}
				r.e.Publish(sessions[i], a, results[i:i+len(a)], out, time.Time{})
			}
			r.clk.t = r.clk.t.Add(iv)
			r.e.Step()
			seq++
		}
		for i := range 5 { // warm the pools
			cycle(float64(i + 1))
		}
		out.notes = 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			cycle(float64(i + 100))
		}
		if out.notes != b.N*n {
			b.Fatalf("%d notifications for %d cycles of %d", out.notes, b.N, n)
		}
		b.ReportMetric(float64(b.Elapsed())/float64(b.N*n), "ns/message")
	})
}

// BenchmarkQueue measures items whose queues hold several values: 1,000 pushed items of
// QueueSize 16 each take 4 changes per publishing cycle, and one parked Publish per cycle
// takes the 4,000 values out. Steady traffic must not make a queue grow and shrink every
// cycle: allocs/op is the figure to keep at 0.
func BenchmarkQueue(b *testing.B) {
	const n, perCycle = 1000, 4
	l := testLimits()
	l.MaxMonitoredItemsPerSubscription, l.MaxMonitoredItems, l.MaxQueueSize = n, n, 16
	r := newRig(&testing.T{}, l)
	iv := 100 * time.Millisecond
	sub, _, _ := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30}, true)
	reqs := make([]ItemRequest, n)
	for i := range reqs {
		reqs[i] = ItemRequest{Item: ua.ReadValueId{NodeId: node(uint32(i)), AttributeId: 13}, Mode: ua.MonitoringModeReporting,
			ClientHandle: uint32(i), QueueSize: 16, Filter: DefaultFilter, Push: true}
		r.vals[node(uint32(i))] = codec.DataValue{Value: codec.DoubleVariant(0)}
	}
	if _, code := r.e.CreateItems(r.ses, sub, ua.TimestampsToReturnBoth, reqs, make([]status.Code, n)); code != status.Good {
		b.Fatal(code)
	}
	out := &encoder{}
	acks := make([]ua.SubscriptionAcknowledgement, 1)
	results := make([]status.Code, 1)
	var seq uint32
	var dv codec.DataValue
	v := 0.0
	cycle := func() {
		for range perCycle {
			v++
			dv.Value = codec.DoubleVariant(v)
			for i := range uint32(n) {
				r.e.Changed(node(i), &dv)
			}
		}
		var a []ua.SubscriptionAcknowledgement
		if seq > 0 {
			acks[0] = ua.SubscriptionAcknowledgement{SubscriptionId: sub, SequenceNumber: seq}
			a = acks
		}
		r.e.Publish(r.ses, a, results[:len(a)], out, time.Time{})
		r.advance(iv)
		seq++
	}
	for range 10 { // warm the pools and the queues
		cycle()
	}
	out.notes = 0
	b.ReportAllocs()
	for b.Loop() {
		cycle()
	}
	if out.notes != b.N*n*perCycle {
		b.Fatalf("%d notifications for %d cycles of %d", out.notes, b.N, n*perCycle)
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N*n*perCycle), "ns/value")
}

// BenchmarkCreateItems measures CreateMonitoredItems of 1,000 items of QueueSize 1,000
// on nodes that have not changed yet, and their deletion. B/op is what the items cost
// before any value arrives: what a client asks for, not what it uses.
func BenchmarkCreateItems(b *testing.B) {
	const n = 1000
	l := testLimits()
	l.MaxMonitoredItemsPerSubscription, l.MaxMonitoredItems, l.MaxQueueSize = n, n, 1000
	r := newRig(&testing.T{}, l)
	sub, _, _ := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30}, true)
	reqs := make([]ItemRequest, n)
	for i := range reqs {
		reqs[i] = ItemRequest{Item: ua.ReadValueId{NodeId: node(uint32(i)), AttributeId: 13}, Mode: ua.MonitoringModeReporting,
			ClientHandle: uint32(i), QueueSize: 1000, Filter: DefaultFilter, Push: true}
	}
	pre := make([]status.Code, n)
	ids := make([]uint32, n)
	b.ReportAllocs()
	for b.Loop() {
		res, code := r.e.CreateItems(r.ses, sub, ua.TimestampsToReturnBoth, reqs, pre)
		if code != status.Good || res[n-1].StatusCode != status.Good {
			b.Fatal(code, res[n-1].StatusCode)
		}
		for i := range res {
			ids[i] = res[i].MonitoredItemId
		}
		if _, code := r.e.DeleteItems(r.ses, sub, ids); code != status.Good {
			b.Fatal(code)
		}
	}
}
