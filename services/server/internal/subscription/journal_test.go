package subscription

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// journalLimits are the rig's limits with a retransmission queue short enough that the
// run below pushes messages out of it.
func journalLimits() Limits {
	l := testLimits()
	l.RetransmissionQueueSize = 3
	return l
}

// newJournalRig is a rig whose engine compiles restored EventFilters over namespace 0.
func newJournalRig(t *testing.T) *rig {
	r := newRig(t, journalLimits())
	r.e.SetEventTypes(ns0Types{})
	return r
}

// journalRun is a realistic run of an engine recorded three times: full from the start
// (the engine empty), mid and detached from later on (Follow: the state, then the
// changes). It covers every ChangeKind.
type journalRun struct {
	r         *rig
	full, mid *Journal
	detached  *Journal     // follows from the moment a's subscriptions are detached
	a, b      codec.NodeId // the sessions; a ends without deleting its subscriptions
	kept      uint32       // on b at the end: data and event items, a retransmission queue
	points    []checkpoint
}

// checkpoint is the state of the engine after the first n changes of the full journal.
type checkpoint struct {
	n     int
	state []SubscriptionRecord
}

const journalOwner = "user:ann"

func runJournal(t *testing.T, observers ...func(Change)) *journalRun {
	r := newJournalRig(t)
	run := &journalRun{r: r, full: NewJournal(1 << 20), mid: NewJournal(1 << 20), detached: NewJournal(1 << 20), a: r.ses, b: codec.NewNumericNodeId(1, 2)}
	for _, fn := range append(observers, run.full.Record) {
		t.Cleanup(r.e.Observe(fn))
	}
	a, b := run.a, run.b
	good := func(codes []status.Code, code status.Code) {
		t.Helper()
		require.Equal(t, status.Good, code)
		for _, c := range codes {
			require.Equal(t, status.Good, c)
		}
	}
	create := func(ses codec.NodeId, p Params) uint32 {
		sub, _, code := r.e.Create(ses, journalOwner, p, true)
		require.Equal(t, status.Good, code)
		return sub
	}
	publish := func(ses codec.NodeId, acks ...ua.SubscriptionAcknowledgement) *inbox {
		in := &inbox{}
		r.e.Publish(ses, acks, make([]status.Code, len(acks)), in, time.Time{})
		return in
	}
	dataItem := func(n uint32, ms float64, q uint32, f Filter, push bool) ItemRequest {
		r.vals[node(n)] = codec.DataValue{Value: codec.DoubleVariant(0)}
		return ItemRequest{Item: ua.ReadValueId{NodeId: node(n), AttributeId: uint32(attr.Value)}, Mode: ua.MonitoringModeReporting,
			ClientHandle: n, SamplingInterval: ms, QueueSize: q, DiscardOldest: true, Filter: f, Push: push, MinSamplingInterval: 20}
	}
	eventItem := func(notifier codec.NodeId, handle, q uint32, minSeverity int32) ItemRequest {
		f := &ua.EventFilter{SelectClauses: []ua.SimpleAttributeOperand{*sao(id.BaseEventType, "Severity"), *sao(id.BaseEventType, "Message")}}
		if minSeverity > 0 {
			f.WhereClause.Elements = []ua.ContentFilterElement{el(ua.FilterOperatorGreaterThan, fld("Severity"), lit(codec.Int32Variant(minSeverity)))}
		}
		ef, _, code := CompileEventFilter(f, ns0Types{})
		require.Equal(t, status.Good, code)
		return ItemRequest{Item: ua.ReadValueId{NodeId: notifier, AttributeId: uint32(attr.EventNotifier)}, Mode: ua.MonitoringModeReporting,
			ClientHandle: handle, QueueSize: q, Events: ef}
	}
	items := func(ses codec.NodeId, sub uint32, reqs ...ItemRequest) []uint32 {
		res, code := r.e.CreateItems(ses, sub, ua.TimestampsToReturnBoth, reqs, make([]status.Code, len(reqs)))
		require.Equal(t, status.Good, code)
		ids := make([]uint32, len(res))
		for i := range res {
			require.Equal(t, status.Good, res[i].StatusCode)
			ids[i] = res[i].MonitoredItemId
		}
		return ids
	}
	iv := 100 * time.Millisecond
	check := func() { run.points = append(run.points, checkpoint{run.full.Len(), r.e.Snapshot()}) }

	// Session a: three subscriptions, data items pushed and sampled, event items with and
	// without a where clause.
	s1 := create(a, Params{PublishingInterval: 100, MaxKeepAliveCount: 3, LifetimeCount: 30, MaxNotificationsPerPublish: 4, Priority: 5})
	s2 := create(a, Params{PublishingInterval: 200, MaxKeepAliveCount: 2, LifetimeCount: 20})
	s3 := create(a, Params{PublishingInterval: 100, MaxKeepAliveCount: 2, LifetimeCount: 6})
	run.kept = s1
	ids := items(a, s1, dataItem(1, -1, 3, Filter{Trigger: ua.DataChangeTriggerStatusValue, Deadband: 0.5}, true),
		dataItem(2, 0, 2, DefaultFilter, true), dataItem(3, 50, 1, DefaultFilter, false), eventItem(notifierA, 10, 4, 500))
	d1, d2, d3, ev := ids[0], ids[1], ids[2], ids[3]
	items(a, s2, dataItem(4, -1, 1, DefaultFilter, true), eventItem(serverNode, 20, 2, 0))
	items(a, s3, dataItem(5, 30, 1, DefaultFilter, false))

	_, code := r.e.Modify(a, s1, Params{PublishingInterval: 50, MaxKeepAliveCount: 3, LifetimeCount: 40, MaxNotificationsPerPublish: 4, Priority: 7})
	require.Equal(t, status.Good, code)
	good(r.e.SetPublishingMode(a, false, []uint32{s3}), status.Good)
	add, _, code := r.e.SetTriggering(a, s1, d1, []uint32{d2}, nil)
	good(add, code)
	good(r.e.SetMonitoringMode(a, s1, ua.MonitoringModeSampling, []uint32{d2}))
	f := eventItem(notifierA, 12, 5, 300).Events
	mod, code := r.e.ModifyItems(a, s1, ua.TimestampsToReturnSource, []ItemModify{
		{ID: d1, ClientHandle: 11, SamplingInterval: -1, QueueSize: 4, DiscardOldest: true, Filter: Filter{Trigger: ua.DataChangeTriggerStatusValue, Deadband: 1}},
		{ID: ev, ClientHandle: 12, QueueSize: 5, Events: f},
	}, []status.Code{status.Good, status.Good})
	require.Equal(t, status.Good, code)
	good([]status.Code{mod[0].StatusCode, mod[1].StatusCode}, code)
	check()

	// Values pushed, sampled and emitted; Publishes answered, some acknowledged, some
	// not, so that the retransmission queue of s1 overflows.
	var lastSeq uint32
	for cycle := range 8 {
		v := float64(cycle*2 + 1)
		r.write(1, v)
		r.write(2, v+0.25)
		r.vals[node(3)] = codec.DataValue{Value: codec.DoubleVariant(v)}
		r.write(4, v)
		r.e.Emit(sevEvent(uint16(200+cycle*100)), notifierA, serverNode)
		var acks []ua.SubscriptionAcknowledgement
		if cycle%3 == 2 && lastSeq > 0 {
			acks = append(acks, ua.SubscriptionAcknowledgement{SubscriptionId: s1, SequenceNumber: lastSeq})
		}
		p := publish(a, acks...)
		publish(a)
		r.advance(iv)
		for _, g := range p.got {
			if g.sub == s1 && !g.isEmpty {
				lastSeq = g.seq
			}
		}
	}
	require.Equal(t, status.Good, r.e.Republish(a, s1, lastSeq, func(*ua.NotificationMessage) {}))
	check()

	// From here on a second journal follows: the state first, then the changes.
	stopMid := r.e.Follow(run.mid.Record)
	t.Cleanup(stopMid)
	good(r.e.DeleteItems(a, s1, []uint32{d3}))
	_, rem, code := r.e.SetTriggering(a, s1, d1, nil, []uint32{d2})
	good(rem, code)
	add, _, code = r.e.SetTriggering(a, s1, ev, []uint32{d1}, nil)
	good(add, code)
	good(r.e.SetMonitoringMode(a, s1, ua.MonitoringModeReporting, []uint32{d2}))
	good(r.e.SetPublishingMode(a, true, []uint32{s3}), status.Good)
	r.write(2, 100)
	check()

	// Session a ends without deleting its subscriptions; b takes two of them over, the
	// third runs out its lifetime.
	r.e.SessionEnded(a, false)
	t.Cleanup(r.e.Follow(run.detached.Record))
	check()
	for _, tr := range r.e.Transfer(b, journalOwner, []uint32{s1, s2}, true) {
		require.Equal(t, status.Good, tr.StatusCode)
	}
	check()
	for cycle := range 8 {
		r.write(1, float64(100+cycle*5))
		r.e.Emit(sevEvent(900), notifierA, serverNode)
		p := publish(b, ua.SubscriptionAcknowledgement{SubscriptionId: s1, SequenceNumber: lastSeq})
		publish(b)
		r.advance(iv)
		for _, g := range p.got {
			if g.sub == s1 && !g.isEmpty {
				lastSeq = g.seq
			}
		}
	}
	require.NotContains(t, r.e.subs, s3, "s3 ran out of its lifetime")
	require.Equal(t, []status.Code{status.Good}, r.e.Delete(b, []uint32{s2}))

	// A session c that ends deleting its subscription.
	c := codec.NewNumericNodeId(1, 3)
	create(c, Params{PublishingInterval: 100, MaxKeepAliveCount: 2, LifetimeCount: 20})
	r.e.SessionEnded(c, true)
	check()
	return run
}

// serverNode is the Server object, the notifier above every other.
var serverNode = n0(id.Server)

// TestJournalReplay drives an engine through a realistic run, records its change stream
// (every change encoded to bytes and decoded again), replays it into a fresh engine and
// requires the two states to be equal; the same for a journal started in the middle of
// the run with Follow.
func TestJournalReplay(t *testing.T) {
	// Every change, as the observers get it, decodes from its encoding to an equal value.
	var enc codec.Encoder
	var dec codec.Decoder
	run := runJournal(t, func(c Change) {
		enc.Reset(nil)
		c.EncodeBinary(&enc)
		require.NoError(t, enc.Err())
		var back Change
		dec.Reset(enc.Bytes())
		back.DecodeBinary(&dec)
		require.NoError(t, dec.Err(), "%v", c.Kind)
		require.Zero(t, dec.Remaining())
		require.Equal(t, c, back)
	})
	require.NoError(t, run.full.Err())
	want := run.r.e.Snapshot()

	changes, err := run.full.Changes()
	require.NoError(t, err)
	seen := map[ChangeKind]int{}
	for _, c := range changes {
		seen[c.Kind]++
	}
	for k := ChangeCreated; k <= ChangeDropped; k++ {
		require.NotZero(t, seen[k], "the run makes no %v change", k)
	}
	// The state is not trivial: a subscription on b with data and event items, a
	// triggering link gone, and unacknowledged messages.
	require.Len(t, want, 1)
	require.Equal(t, run.b, want[0].Session)
	require.Len(t, want[0].Items, 3)
	require.NotEmpty(t, want[0].Retransmission)
	require.NotNil(t, want[0].Items[2].Events)

	// The full journal, change by change, passes through every checkpoint's state.
	fresh := newJournalRig(t)
	done := 0
	for _, p := range run.points {
		for ; done < p.n; done++ {
			require.NoError(t, fresh.e.Apply(changes[done]), "change %d", done)
		}
		require.Equal(t, p.state, fresh.e.Snapshot(), "after %d changes", p.n)
	}
	require.Equal(t, len(changes), done)

	// The journals that followed from the middle, one of them from when the
	// subscriptions were detached: their Replay ends in the same state.
	for _, j := range []*Journal{run.mid, run.detached} {
		fresh = newJournalRig(t)
		require.NoError(t, j.Replay(fresh.e))
		require.Equal(t, want, fresh.e.Snapshot())
		require.Less(t, j.Len(), run.full.Len())
	}

	// What an engine applies goes to its own observers: a journal of the replay replays
	// into a third engine with the same state.
	second, third := newJournalRig(t), newJournalRig(t)
	again := NewJournal(1 << 20)
	stop := second.e.Observe(again.Record)
	require.NoError(t, run.full.Replay(second.e))
	stop()
	require.Equal(t, run.full.Len(), again.Len())
	require.NoError(t, again.Replay(third.e))
	require.Equal(t, want, third.e.Snapshot())
}

// TestReplayedEngineIsLive: an engine rebuilt from a journal carries the subscription on
// where the other left it: the next Publish of its session gets the next sequence
// number, Republish returns the messages of the retransmission queue as the other engine
// does, and new subscriptions and items get the ids the other engine would give.
func TestReplayedEngineIsLive(t *testing.T) {
	run := runJournal(t)
	orig := run.r
	want := orig.e.Snapshot()[0]
	fresh := newJournalRig(t)
	require.NoError(t, run.full.Replay(fresh.e))

	for _, m := range want.Retransmission {
		var got, exp []byte
		require.Equal(t, status.Good, fresh.e.Republish(run.b, run.kept, m.SequenceNumber, func(nm *ua.NotificationMessage) { got = encodeMessage(t, nm) }))
		require.Equal(t, status.Good, orig.e.Republish(run.b, run.kept, m.SequenceNumber, func(nm *ua.NotificationMessage) { exp = encodeMessage(t, nm) }))
		require.Equal(t, exp, got, "message %d", m.SequenceNumber)
	}

	in := &inbox{}
	fresh.e.Publish(run.b, nil, nil, in, time.Time{})
	fresh.advance(want.Settings.PublishingInterval)
	require.Len(t, in.got, 1)
	require.Equal(t, run.kept, in.got[0].sub)
	require.Equal(t, want.NextSequenceNumber, in.got[0].seq)
	require.NotEmpty(t, in.got[0].items, "the items report their values again")
	var avail []uint32 // what the other engine keeps, and the new message, at most 3
	for _, m := range want.Retransmission {
		avail = append(avail, m.SequenceNumber)
	}
	avail = append(avail, want.NextSequenceNumber)
	require.Equal(t, avail[max(len(avail)-3, 0):], in.got[0].avail)

	p := Params{PublishingInterval: 100, MaxKeepAliveCount: 2, LifetimeCount: 20}
	s1, _, _ := orig.e.Create(run.b, journalOwner, p, true)
	s2, _, _ := fresh.e.Create(run.b, journalOwner, p, true)
	require.Equal(t, s1, s2)
	req := []ItemRequest{{Item: ua.ReadValueId{NodeId: node(9), AttributeId: 13}, Mode: ua.MonitoringModeReporting, QueueSize: 1, Push: true}}
	r1, _ := orig.e.CreateItems(run.b, s1, ua.TimestampsToReturnBoth, req, []status.Code{status.Good})
	r2, _ := fresh.e.CreateItems(run.b, s2, ua.TimestampsToReturnBoth, req, []status.Code{status.Good})
	require.Equal(t, r1[0].MonitoredItemId, r2[0].MonitoredItemId)
}

func encodeMessage(t *testing.T, nm *ua.NotificationMessage) []byte {
	var e codec.Encoder
	nm.EncodeBinary(&e)
	require.NoError(t, e.Err())
	return slices.Clone(e.Bytes())
}

// sentFirst is a Responder that checks that the observer saw each message it gets.
type sentFirst struct {
	t    *testing.T
	seen *[]uint32
	got  int
}

func (x *sentFirst) Respond(r *ua.PublishResponse) {
	if len(r.NotificationMessage.NotificationData) > 0 {
		require.Contains(x.t, *x.seen, r.NotificationMessage.SequenceNumber, "the observer saw the message before it left")
	}
	x.got++
}

// TestObserversSeeSentBeforeTheResponse: a ChangeSent reaches the observers before the
// Responder gets the message, whether a publishing cycle or Publish itself answers;
// after stop they see nothing.
func TestObserversSeeSentBeforeTheResponse(t *testing.T) {
	r := newRig(t, testLimits())
	var seen []uint32
	var kinds []ChangeKind
	stop := r.e.Observe(func(c Change) {
		kinds = append(kinds, c.Kind)
		if c.Kind == ChangeSent {
			seen = append(seen, c.Message.SequenceNumber)
		}
	})
	sub, _, _ := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30, MaxNotificationsPerPublish: 1}, true)
	r.monitor(sub, 1, 1, true, DefaultFilter)
	r.monitor(sub, 2, 1, true, DefaultFilter)
	x := &sentFirst{t: t, seen: &seen}
	r.e.Publish(r.ses, nil, nil, x, time.Time{})
	r.advance(100 * time.Millisecond) // a cycle answers: one value, more to come
	require.Equal(t, 1, x.got)
	r.e.Publish(r.ses, nil, nil, x, time.Time{}) // Publish itself answers the rest
	require.Equal(t, 2, x.got)
	require.Equal(t, []uint32{1, 2}, seen)
	require.Equal(t, []ChangeKind{ChangeCreated, ChangeItemsCreated, ChangeItemsCreated, ChangeSent, ChangeSent}, kinds)

	stop()
	stop() // a second stop does nothing
	r.e.Delete(r.ses, []uint32{sub})
	require.Len(t, kinds, 5, "nothing after stop")
}

// TestApplyRefuses: changes that do not fit the state fail with ErrNotApplicable and
// change nothing.
func TestApplyRefuses(t *testing.T) {
	run := runJournal(t)
	e := run.r.e
	before := e.Snapshot()
	sub := before[0]
	rec := func(id uint32, edit func(*SubscriptionRecord)) *SubscriptionRecord {
		r := SubscriptionRecord{ID: id, Session: run.b, Settings: Settings{PublishingInterval: time.Second, LifetimeCount: 3, MaxKeepAliveCount: 1}, NextSequenceNumber: 1}
		edit(&r)
		return &r
	}
	dataItem := ItemRecord{ID: 1, Mode: ua.MonitoringModeReporting, SamplingInterval: time.Second, QueueSize: 1}
	for _, c := range []Change{
		{Kind: ChangeCreated, Subscription: 99},
		{Kind: ChangeCreated, Subscription: sub.ID, Record: rec(sub.ID, func(*SubscriptionRecord) {})},
		{Kind: ChangeCreated, Subscription: 98, Record: rec(97, func(*SubscriptionRecord) {})},
		{Kind: ChangeCreated, Subscription: 99, Record: rec(99, func(r *SubscriptionRecord) { r.Settings.PublishingInterval = 0 })},
		{Kind: ChangeCreated, Subscription: 99, Record: rec(99, func(r *SubscriptionRecord) { r.NextSequenceNumber = 0 })},
		{Kind: ChangeCreated, Subscription: 99, Record: rec(99, func(r *SubscriptionRecord) { r.Items = []ItemRecord{dataItem, dataItem} })},
		{Kind: ChangeCreated, Subscription: 99, Record: rec(99, func(r *SubscriptionRecord) {
			it := dataItem
			it.QueueSize = 1 << 30
			r.Items = []ItemRecord{it}
		})},
		{Kind: ChangeCreated, Subscription: 99, Record: rec(99, func(r *SubscriptionRecord) {
			it := dataItem
			it.SamplingInterval = 0
			r.Items = []ItemRecord{it}
		})},
		{Kind: ChangeCreated, Subscription: 99, Record: rec(99, func(r *SubscriptionRecord) {
			it := dataItem
			it.Events = &ua.EventFilter{} // no select clauses
			r.Items = []ItemRecord{it}
		})},
		{Kind: ChangeCreated, Subscription: 99, Record: rec(99, func(r *SubscriptionRecord) {
			r.Retransmission = []ua.NotificationMessage{{SequenceNumber: 1, NotificationData: []codec.ExtensionObject{codec.NewExtensionObject(&ua.StatusChangeNotification{})}}}
		})},
		{Kind: ChangeModified, Subscription: 99, Settings: sub.Settings},
		{Kind: ChangeModified, Subscription: sub.ID},
		{Kind: ChangeDetached, Subscription: 99},
		{Kind: ChangeTransferred, Subscription: sub.ID},
		{Kind: ChangeItemsCreated, Subscription: sub.ID, Items: []ItemRecord{{ID: sub.Items[0].ID, Mode: ua.MonitoringModeReporting, SamplingInterval: time.Second, QueueSize: 1}}},
		{Kind: ChangeItemsCreated, Subscription: sub.ID},
		{Kind: ChangeItemsModified, Subscription: sub.ID, Items: []ItemRecord{{ID: 999, QueueSize: 1}}},
		{Kind: ChangeItemsModified, Subscription: sub.ID, Items: []ItemRecord{{ID: sub.Items[2].ID, QueueSize: 1}}}, // an event item without a filter
		{Kind: ChangeItemsDeleted, Subscription: sub.ID, ItemIDs: []uint32{sub.Items[0].ID, 999}},
		{Kind: ChangeItemsDeleted, Subscription: sub.ID, ItemIDs: []uint32{sub.Items[0].ID, sub.Items[0].ID}},
		{Kind: ChangeMonitoringMode, Subscription: sub.ID, Mode: 9, ItemIDs: []uint32{sub.Items[0].ID}},
		{Kind: ChangeTriggering, Subscription: sub.ID, Trigger: 999},
		{Kind: ChangeSent, Subscription: sub.ID, Message: ua.NotificationMessage{SequenceNumber: sub.NextSequenceNumber + 1}},
		{Kind: ChangeAcknowledged, Subscription: sub.ID, Sequence: sub.NextSequenceNumber},
		{Kind: ChangeDropped, Subscription: sub.ID, Sequence: 0},
		{Kind: ChangeKind(200), Subscription: sub.ID},
	} {
		err := e.Apply(c)
		require.ErrorIs(t, err, ErrNotApplicable, "%v", c.Kind)
		require.Equal(t, before, e.Snapshot(), "%v: %v", c.Kind, err)
	}

	// Without EventTypes an event item cannot be restored.
	bare := newRig(t, journalLimits())
	require.ErrorIs(t, run.full.Replay(bare.e), ErrNotApplicable)
}

// TestJournalFull: a journal that reaches its bound stops recording, says so, and
// refuses to replay a stream with a hole.
func TestJournalFull(t *testing.T) {
	r := newRig(t, testLimits())
	j := NewJournal(200)
	stop := r.e.Observe(j.Record)
	defer stop()
	sub := r.create(100*time.Millisecond, 10, 30)
	require.NoError(t, j.Err())
	require.Equal(t, 1, j.Len())
	size := j.Size()
	for n := uint32(1); n <= 5; n++ {
		r.monitor(sub, n, 1, true, DefaultFilter)
	}
	require.ErrorIs(t, j.Err(), ErrJournalFull)
	require.LessOrEqual(t, j.Size(), 200)
	require.Greater(t, j.Size(), size)
	n := j.Len()
	r.monitor(sub, 9, 1, true, DefaultFilter)
	require.Equal(t, n, j.Len(), "nothing recorded once full")
	_, err := j.Changes()
	require.ErrorIs(t, err, ErrJournalFull)
	require.ErrorIs(t, j.Replay(newRig(t, testLimits()).e), ErrJournalFull)
}
