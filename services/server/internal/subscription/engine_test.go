package subscription

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// clock is a fake clock that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// values is a Sampler answering from a map, synchronously.
type values map[codec.NodeId]codec.DataValue

func (v values) Sample(items []ua.ReadValueId, out []codec.DataValue, done func()) {
	for i := range items {
		out[i] = v[items[i].NodeId]
	}
	done()
}

// reply is what a fake Responder got.
type reply struct {
	code    status.Code
	sub     uint32
	seq     uint32
	more    bool
	avail   []uint32
	results []status.Code
	items   []ua.MonitoredItemNotification // nil for a keep-alive
	change  status.Code                    // a StatusChangeNotification's status
	isEmpty bool
}

// inbox is a Responder that records its answers. Tests read got after the calls that
// answer synchronously; count is for answers sent from another goroutine.
type inbox struct {
	mu  sync.Mutex // guards got
	got []reply
}

func (in *inbox) count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.got)
}

func (in *inbox) Respond(r *ua.PublishResponse) {
	in.mu.Lock()
	defer in.mu.Unlock()
	rp := reply{code: r.ResponseHeader.ServiceResult, sub: r.SubscriptionId, seq: r.NotificationMessage.SequenceNumber,
		more: r.MoreNotifications, avail: append([]uint32(nil), r.AvailableSequenceNumbers...),
		results: append([]status.Code(nil), r.Results...), isEmpty: len(r.NotificationMessage.NotificationData) == 0}
	for _, x := range r.NotificationMessage.NotificationData {
		switch v := x.Value.(type) {
		case *ua.DataChangeNotification:
			rp.items = append(rp.items, v.MonitoredItems...)
		case *ua.StatusChangeNotification:
			rp.change = v.Status
		}
	}
	in.got = append(in.got, rp)
}

// rig is an engine on a fake clock with one session.
type rig struct {
	t    *testing.T
	clk  *clock
	e    *Engine
	vals values
	ses  codec.NodeId
}

func testLimits() Limits {
	return Limits{
		MaxSubscriptions: 10, MaxSubscriptionsPerSession: 10, MaxPublishRequests: 5,
		MaxMonitoredItems: 100, MaxMonitoredItemsPerSubscription: 50,
		MinPublishingInterval: 10 * time.Millisecond, MaxPublishingInterval: time.Hour,
		MaxKeepAliveCount: 100, MaxLifetimeCount: 1000, MaxNotificationsPerPublish: 0,
		MinSamplingInterval: 10 * time.Millisecond, MaxSamplingInterval: time.Hour,
		MaxQueueSize: 100, RetransmissionQueueSize: 4,
	}
}

func newRig(t *testing.T, l Limits) *rig {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	vals := values{}
	return &rig{t: t, clk: clk, e: New(l, clk.now, vals), vals: vals, ses: codec.NewNumericNodeId(1, 1)}
}

// advance moves the clock by d, running every timer due on the way at its due time.
func (r *rig) advance(d time.Duration) {
	end := r.clk.t.Add(d)
	for {
		next, ok := r.e.Step()
		if !ok || next.After(end) {
			break
		}
		r.clk.t = next
	}
	r.clk.t = end
	r.e.Step()
}

func (r *rig) create(interval time.Duration, keep, life uint32) uint32 {
	id, rev, code := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: durationMs(interval), MaxKeepAliveCount: keep, LifetimeCount: life}, true)
	require.Equal(r.t, status.Good, code)
	require.Equal(r.t, keep, rev.MaxKeepAliveCount)
	require.Equal(r.t, life, rev.LifetimeCount)
	return id
}

func node(i uint32) codec.NodeId { return codec.NewNumericNodeId(2, i) }

// monitor adds a push item on node(n) with handle n.
func (r *rig) monitor(sub, n uint32, q uint32, discardOldest bool, f Filter) uint32 {
	r.vals[node(n)] = codec.DataValue{Value: codec.DoubleVariant(0)}
	res, code := r.e.CreateItems(r.ses, sub, ua.TimestampsToReturnNeither, []ItemRequest{{
		Item: ua.ReadValueId{NodeId: node(n), AttributeId: 13}, Mode: ua.MonitoringModeReporting,
		ClientHandle: n, SamplingInterval: -1, QueueSize: q, DiscardOldest: discardOldest, Filter: f, Push: true,
	}}, []status.Code{status.Good})
	require.Equal(r.t, status.Good, code)
	require.Equal(r.t, status.Good, res[0].StatusCode)
	return res[0].MonitoredItemId
}

func (r *rig) write(n uint32, v float64) {
	dv := codec.DataValue{Value: codec.DoubleVariant(v)}
	r.vals[node(n)] = dv
	r.e.Changed(node(n), &dv)
}

func (r *rig) publish(acks ...ua.SubscriptionAcknowledgement) *inbox {
	in := &inbox{}
	r.e.Publish(r.ses, acks, make([]status.Code, len(acks)), in, time.Time{})
	return in
}

func doubles(items []ua.MonitoredItemNotification) []float64 {
	var out []float64
	for _, it := range items {
		out = append(out, it.Value.Value.Value().(float64))
	}
	return out
}

// TestKeepAlive: the first cycle sends a keep-alive to a parked Publish; after that, with
// nothing to report, one keep-alive every MaxKeepAliveCount intervals, carrying the next
// sequence number without using it.
func TestKeepAlive(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	sub := r.create(iv, 3, 9)
	p1, p2 := r.publish(), r.publish()
	r.advance(iv)
	require.Len(t, p1.got, 1)
	require.Equal(t, reply{sub: sub, seq: 1, isEmpty: true, avail: nil, results: nil}, p1.got[0])
	r.advance(2 * iv)
	require.Empty(t, p2.got, "no keep-alive before 3 intervals")
	r.advance(iv)
	require.Len(t, p2.got, 1)
	require.Equal(t, uint32(1), p2.got[0].seq)
	require.True(t, p2.got[0].isEmpty)
}

// TestLifetimeExpiry: without Publishes a subscription lives LifetimeCount intervals,
// then the next Publish gets a StatusChangeNotification BadTimeout and the one after it
// BadNoSubscription.
func TestLifetimeExpiry(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	sub := r.create(iv, 2, 6)
	r.advance(5 * iv)
	require.Len(t, r.e.subs, 1, "alive after 5 of 6 intervals")
	r.advance(iv)
	require.Empty(t, r.e.subs)
	p := r.publish()
	require.Len(t, p.got, 1)
	require.Equal(t, status.Good, p.got[0].code)
	require.Equal(t, sub, p.got[0].sub)
	require.Equal(t, status.BadTimeout, p.got[0].change)
	p = r.publish()
	require.Equal(t, status.BadNoSubscription, p.got[0].code)
}

// TestAcknowledgeAndRepublish: sent messages stay in the retransmission queue, listed in
// AvailableSequenceNumbers, until acknowledged; Republish returns them, and afterwards
// BadMessageNotAvailable; an unknown acknowledgement is BadSequenceNumberUnknown.
func TestAcknowledgeAndRepublish(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 50 * time.Millisecond
	sub := r.create(iv, 10, 30)
	r.monitor(sub, 1, 1, true, DefaultFilter)
	p := r.publish()
	r.advance(iv)
	require.Len(t, p.got, 1)
	require.Equal(t, uint32(1), p.got[0].seq)
	require.Equal(t, []float64{0}, doubles(p.got[0].items))
	require.Equal(t, []uint32{1}, p.got[0].avail)

	r.write(1, 5)
	p = r.publish()
	r.advance(iv)
	require.Equal(t, uint32(2), p.got[0].seq)
	require.Equal(t, []uint32{1, 2}, p.got[0].avail)

	var again []float64
	code := r.e.Republish(r.ses, sub, 1, func(m *ua.NotificationMessage) {
		again = doubles(m.NotificationData[0].Value.(*ua.DataChangeNotification).MonitoredItems)
	})
	require.Equal(t, status.Good, code)
	require.Equal(t, []float64{0}, again)

	p = r.publish(ua.SubscriptionAcknowledgement{SubscriptionId: sub, SequenceNumber: 1},
		ua.SubscriptionAcknowledgement{SubscriptionId: sub, SequenceNumber: 1},
		ua.SubscriptionAcknowledgement{SubscriptionId: sub + 100, SequenceNumber: 2})
	r.write(1, 6)
	r.advance(iv)
	require.Equal(t, []status.Code{status.Good, status.BadSequenceNumberUnknown, status.BadSubscriptionIdInvalid}, p.got[0].results)
	require.Equal(t, []uint32{2, 3}, p.got[0].avail)
	require.Equal(t, status.BadMessageNotAvailable, r.e.Republish(r.ses, sub, 1, func(*ua.NotificationMessage) {}))
	require.Equal(t, status.BadSubscriptionIdInvalid, r.e.Republish(r.ses, sub+100, 2, func(*ua.NotificationMessage) {}))
}

// TestTooManyPublishRequests: beyond MaxPublishRequests the oldest parked Publish is
// answered with BadTooManyPublishRequests (Part 4 §5.13.5).
func TestTooManyPublishRequests(t *testing.T) {
	l := testLimits()
	l.MaxPublishRequests = 2
	r := newRig(t, l)
	r.create(time.Second, 10, 30)
	r.advance(time.Second) // nothing parked: the subscription is late
	first := r.publish()   // serves the late subscription at once
	require.Len(t, first.got, 1)
	a, b, c := r.publish(), r.publish(), r.publish()
	require.Len(t, a.got, 1)
	require.Equal(t, status.BadTooManyPublishRequests, a.got[0].code)
	require.Empty(t, b.got)
	require.Empty(t, c.got)
}

// TestMaxNotificationsPerPublish: a message holds at most MaxNotificationsPerPublish
// notifications; MoreNotifications says more follow, and the next Publish gets them at
// once.
func TestMaxNotificationsPerPublish(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	sub, _, code := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30, MaxNotificationsPerPublish: 2}, true)
	require.Equal(t, status.Good, code)
	for n := uint32(1); n <= 5; n++ {
		r.monitor(sub, n, 1, true, DefaultFilter)
	}
	p := r.publish()
	r.advance(iv)
	require.Len(t, p.got[0].items, 2)
	require.True(t, p.got[0].more)
	p = r.publish() // served at once (transition 4)
	require.Len(t, p.got, 1)
	require.Len(t, p.got[0].items, 2)
	require.True(t, p.got[0].more)
	p = r.publish()
	require.Len(t, p.got[0].items, 1)
	require.False(t, p.got[0].more)
	require.Equal(t, uint32(3), p.got[0].seq)
}

// TestTransfer: another session of the same user takes a subscription over; the old
// session is told GoodSubscriptionTransferred, the new one gets the last values again.
// Another user is refused with BadUserAccessDenied.
func TestTransfer(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	sub := r.create(iv, 10, 30)
	r.monitor(sub, 1, 1, true, DefaultFilter)
	r.write(1, 7)
	p := r.publish()
	r.advance(iv)
	require.Equal(t, []float64{7}, doubles(p.got[0].items))

	oldP := r.publish()
	other := codec.NewNumericNodeId(1, 2)
	res := r.e.Transfer(other, "user:mallory", []uint32{sub}, true)
	require.Equal(t, status.BadUserAccessDenied, res[0].StatusCode)
	res = r.e.Transfer(other, "", []uint32{sub}, true)
	require.Equal(t, status.BadUserAccessDenied, res[0].StatusCode, "nobody")
	res = r.e.Transfer(other, "anonymous", []uint32{sub, sub + 1}, true)
	require.Equal(t, status.Good, res[0].StatusCode)
	require.Equal(t, []uint32{1}, res[0].AvailableSequenceNumbers)
	require.Equal(t, status.BadSubscriptionIdInvalid, res[1].StatusCode)
	require.Len(t, oldP.got, 1, "the parked Publish of the old session gets the status change")
	require.Equal(t, status.GoodSubscriptionTransferred, oldP.got[0].change)
	require.Equal(t, sub, oldP.got[0].sub)

	in := &inbox{}
	r.e.Publish(other, nil, nil, in, time.Time{})
	r.advance(iv)
	require.Len(t, in.got, 1)
	require.Equal(t, []float64{7}, doubles(in.got[0].items))
	require.Equal(t, uint32(2), in.got[0].seq)
}

// TestSessionEndKeepsSubscriptions: a session that ends without deleting its
// subscriptions leaves them to their lifetime; within it they can be transferred.
func TestSessionEndKeepsSubscriptions(t *testing.T) {
	r := newRig(t, testLimits())
	iv := 100 * time.Millisecond
	keep, lose := r.create(iv, 2, 6), r.create(iv, 2, 6)
	parked := r.publish()
	r.e.SessionEnded(r.ses, false)
	r.advance(3 * iv)
	require.Len(t, r.e.subs, 2)
	res := r.e.Transfer(codec.NewNumericNodeId(1, 3), "anonymous", []uint32{keep}, false)
	require.Equal(t, status.Good, res[0].StatusCode)
	r.advance(3 * iv)
	require.NotContains(t, r.e.subs, lose)
	require.Contains(t, r.e.subs, keep, "the transferred one is reset by the transfer")
	r.e.SessionEnded(codec.NewNumericNodeId(1, 3), true)
	require.Empty(t, r.e.subs)
	require.Eventually(t, func() bool { return parked.count() == 1 }, time.Second, time.Millisecond) // answered off-lock
}

// encoder is a Responder that encodes the response as the transport does, into a buffer
// it reuses.
type encoder struct {
	e     codec.Encoder
	buf   []byte
	notes int
}

func (x *encoder) Respond(r *ua.PublishResponse) {
	x.e.Reset(x.buf)
	r.EncodeBinary(&x.e)
	x.buf = x.e.Bytes()
	for _, d := range r.NotificationMessage.NotificationData {
		if dcn, ok := d.Value.(*ua.DataChangeNotification); ok {
			x.notes += len(dcn.MonitoredItems)
		}
	}
}

// BenchmarkPublish measures the steady publish path: n pushed items change, one parked
// Publish (acknowledging the previous message) is answered by a publishing cycle and the
// response encoded. allocs/notification is the figure to keep at 0.
func BenchmarkPublish(b *testing.B) {
	const n = 1000
	l := testLimits()
	l.MaxMonitoredItemsPerSubscription, l.MaxMonitoredItems = n, n
	r := newRig(&testing.T{}, l)
	iv := 100 * time.Millisecond
	sub, _, _ := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30}, true)
	reqs := make([]ItemRequest, n)
	pre := make([]status.Code, n)
	for i := range reqs {
		reqs[i] = ItemRequest{Item: ua.ReadValueId{NodeId: node(uint32(i)), AttributeId: 13}, Mode: ua.MonitoringModeReporting,
			ClientHandle: uint32(i), QueueSize: 1, Filter: DefaultFilter, Push: true}
		r.vals[node(uint32(i))] = codec.DataValue{Value: codec.DoubleVariant(0)}
	}
	if _, code := r.e.CreateItems(r.ses, sub, ua.TimestampsToReturnBoth, reqs, pre); code != status.Good {
		b.Fatal(code)
	}
	out := &encoder{}
	acks := make([]ua.SubscriptionAcknowledgement, 1)
	results := make([]status.Code, 1)
	var seq uint32
	dv := codec.DataValue{SourceTimestamp: codec.DateTimeOf(r.clk.t), ServerTimestamp: codec.DateTimeOf(r.clk.t)}
	cycle := func(v float64) {
		dv.Value = codec.DoubleVariant(v)
		for i := range uint32(n) {
			r.e.Changed(node(i), &dv)
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
	for i := range 10 { // warm the pools
		cycle(float64(i + 1))
	}
	out.notes = 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		cycle(float64(i + 100))
	}
	b.StopTimer()
	if out.notes != b.N*n {
		b.Fatalf("%d notifications for %d cycles of %d", out.notes, b.N, n)
	}
	b.ReportMetric(float64(n), "notifications/op")
	b.ReportMetric(float64(testing.AllocsPerRun(5, func() { cycle(1e6 + float64(seq)) }))/n, "allocs/notification")
}
