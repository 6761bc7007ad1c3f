package subscription

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/telemetry"
)

// panicValue is a Structure of a node manager whose binary encoding panics: a filter
// that compares it by its encoding panics.
type panicValue struct{}

var panicValueType = &codec.TypeInfo{Name: "PanicValue", DataType: codec.NewNumericNodeId(2, 9001),
	BinaryEncoding: codec.NewNumericNodeId(2, 9002), New: func() codec.Structure { return new(panicValue) }}

func (*panicValue) EncodeBinary(*codec.Encoder)   { panic("a value that cannot be encoded") }
func (*panicValue) DecodeBinary(*codec.Decoder)   {}
func (*panicValue) EncodeJSON(*codec.JSONEncoder) {}
func (*panicValue) DecodeJSON(*codec.JSONDecoder) {}
func (*panicValue) TypeInfo() *codec.TypeInfo     { return panicValueType }

// withPanics has r's engine report to a fresh Telemetry's Panics.
func (r *rig) withPanics() *telemetry.Panics {
	tel, err := telemetry.New(telemetry.Config{})
	require.NoError(r.t, err)
	r.t.Cleanup(func() { require.NoError(r.t, tel.Shutdown(context.Background())) })
	r.e.SetPanics(tel.Panics())
	return tel.Panics()
}

// TestDataChangeFilterPanics: a value whose encoding panics, which the filter tries
// before the value may reach a queue, reaches its item as BadInternalError (once for
// two such values in a row); the item's next value and another item's values are
// published as before.
func TestDataChangeFilterPanics(t *testing.T) {
	t.Parallel()
	r := newRig(t, testLimits())
	panics := r.withPanics()
	iv := 100 * time.Millisecond
	sub := r.create(iv, 10, 30)
	r.monitor(sub, 1, 10, true, DefaultFilter)
	r.monitor(sub, 2, 10, true, DefaultFilter)
	r.advance(iv)
	r.publish() // the initial values

	bad := codec.DataValue{Value: codec.MustVariant(&panicValue{}), SourceTimestamp: 42}
	r.e.Changed(node(1), &bad)
	r.e.Changed(node(1), &bad) // BadInternalError again: no change
	r.write(2, 7)
	r.write(1, 8)
	p := r.publish()
	r.advance(iv)
	require.Len(t, p.got, 1)
	byItem := map[uint32][]codec.DataValue{}
	for _, n := range p.got[0].items {
		byItem[n.ClientHandle] = append(byItem[n.ClientHandle], n.Value)
	}
	require.Len(t, byItem[1], 2)
	require.Equal(t, codec.DataValue{Status: status.BadInternalError}, byItem[1][0], "TimestampsToReturn Neither")
	require.Equal(t, codec.DoubleVariant(8), byItem[1][1].Value)
	require.Equal(t, []codec.DataValue{{Value: codec.DoubleVariant(7)}}, byItem[2])
	require.EqualValues(t, 2, panics.Count(telemetry.PlaceFilter))
}

// TestEventFilterPanics: an event whose field panics, in a where clause's comparison or
// as a selected field, is skipped by that item and reported; the events after it pass
// as before.
func TestEventFilterPanics(t *testing.T) {
	t.Parallel()
	r := newRig(t, testLimits())
	panics := r.withPanics()
	sub := r.create(100*time.Millisecond, 10, 30)
	// Or(Message = an Argument, Severity > 0): every element is evaluated.
	r.eventItem(sub, notifierA, 7, 10, true,
		el(ua.FilterOperatorOr, elem(1), elem(2)),
		el(ua.FilterOperatorEquals, fld("Message"), lit(codec.MustVariant(&ua.Argument{Name: "x"}))),
		el(ua.FilterOperatorGreaterThan, fld("Severity"), lit(codec.Int32Variant(0))))
	// Without a where clause: the poisoned field is selected.
	r.eventItem(sub, notifierA, 8, 10, true)
	in := &eventInbox{}
	r.e.Publish(r.ses, nil, nil, in, time.Time{})
	poisoned := sevEvent(300)
	poisoned.Fields[KeyMessage] = codec.MustVariant(&panicValue{})
	r.e.Emit(sevEvent(100), notifierA)
	r.e.Emit(poisoned, notifierA)
	r.e.Emit(sevEvent(200), notifierA)
	r.advance(100 * time.Millisecond)
	require.Len(t, in.events, 1)
	byItem := map[uint32][]ua.EventFieldList{}
	for _, e := range in.events[0] {
		byItem[e.ClientHandle] = append(byItem[e.ClientHandle], e)
	}
	require.Equal(t, []uint16{100, 200}, severities(byItem[7]))
	require.Equal(t, []uint16{100, 200}, severities(byItem[8]))
	require.EqualValues(t, 2, panics.Count(telemetry.PlaceFilter))
}

// panicResponder is a Responder that panics.
type panicResponder struct{}

func (panicResponder) Respond(*ua.PublishResponse) { panic("a responder's bug") }

// TestObserverAndResponderPanics: an observer that panics does not keep the change from
// the others nor leave the engine locked; a Responder that panics does not keep the
// other Publishes of the cycle from their answers.
func TestObserverAndResponderPanics(t *testing.T) {
	t.Parallel()
	r := newRig(t, testLimits())
	panics := r.withPanics()
	var seen atomic.Int32
	r.e.Observe(func(Change) { panic("an observer's bug") })
	r.e.Observe(func(Change) { seen.Add(1) })
	iv := 100 * time.Millisecond
	sub := r.create(iv, 10, 30)
	require.Positive(t, seen.Load(), "the next observer got the change")
	require.EqualValues(t, seen.Load(), panics.Count(telemetry.PlaceObserver))

	other := codec.NewNumericNodeId(1, 2)
	_, _, code := r.e.Create(other, "anonymous", Params{PublishingInterval: durationMs(iv), MaxKeepAliveCount: 10, LifetimeCount: 30}, true)
	require.Equal(t, status.Good, code, "the engine is not left locked")
	r.monitor(sub, 1, 10, true, DefaultFilter)
	r.e.Publish(r.ses, nil, nil, panicResponder{}, time.Time{})
	in := &inbox{}
	r.e.Publish(other, nil, nil, in, time.Time{})
	r.advance(iv)
	require.Len(t, in.got, 1, "the other session's Publish is answered")
	require.EqualValues(t, 1, panics.Count(telemetry.PlacePublish))
	r.write(1, 3)
	p := r.publish()
	r.advance(iv)
	require.Len(t, p.got, 1)
	require.Equal(t, []float64{3}, doubles(p.got[0].items), "the subscription publishes on")
}

// panicSampler panics on its first Sample, then answers 5.
type panicSampler struct{ calls atomic.Int32 }

func (s *panicSampler) Sample(items []ua.ReadValueId, out []codec.DataValue, done func()) {
	if s.calls.Add(1) == 1 {
		panic("a sampler's bug")
	}
	for i := range out {
		out[i] = codec.DataValue{Value: codec.DoubleVariant(5)}
	}
	done()
}

// TestRunPanics: a Step that panics (here in its Sampler) does not end Run: the
// publishing timers go on, and pushed values keep reaching their Publishes.
func TestRunPanics(t *testing.T) {
	t.Parallel()
	sampler := &panicSampler{}
	e := New(testLimits(), nil, sampler)
	tel, err := telemetry.New(telemetry.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	e.SetPanics(tel.Panics())
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })

	ses := codec.NewNumericNodeId(1, 1)
	sub, _, code := e.Create(ses, "anonymous", Params{PublishingInterval: 20, MaxKeepAliveCount: 10, LifetimeCount: 300}, true)
	require.Equal(t, status.Good, code)
	res, code := e.CreateItems(ses, sub, ua.TimestampsToReturnNeither, []ItemRequest{
		{Item: ua.ReadValueId{NodeId: node(1), AttributeId: 13}, Mode: ua.MonitoringModeReporting, ClientHandle: 1, SamplingInterval: 10, QueueSize: 10, Filter: DefaultFilter},
		{Item: ua.ReadValueId{NodeId: node(2), AttributeId: 13}, Mode: ua.MonitoringModeReporting, ClientHandle: 2, SamplingInterval: -1, QueueSize: 10, Filter: DefaultFilter, Push: true},
	}, []status.Code{status.Good, status.Good})
	require.Equal(t, status.Good, code)
	require.Equal(t, status.Good, res[0].StatusCode)
	require.Eventually(t, func() bool { return tel.Panics().Count(telemetry.PlacePublish) == 1 }, 5*time.Second, time.Millisecond)
	for v := range 3 {
		dv := codec.DataValue{Value: codec.DoubleVariant(float64(10 + v))}
		e.Changed(node(2), &dv)
		in := &inbox{}
		e.Publish(ses, nil, nil, in, time.Time{})
		require.Eventually(t, func() bool { return in.count() == 1 }, 5*time.Second, time.Millisecond)
		in.mu.Lock()
		var got []float64
		for _, n := range in.got[0].items {
			if n.ClientHandle == 2 {
				got = append(got, n.Value.Value.Value().(float64))
			}
		}
		in.mu.Unlock()
		require.Contains(t, got, float64(10+v), "published after the panic")
	}
}

// TestRunCoalesces: with a send barrier and a batch window, the publishing cycles due
// within a window of a batch sent through the barrier wait and go out together: two
// subscriptions due every 20 ms have their cycles answered in batches at least the
// window apart, every Publish is answered, and an item sampled every 10 ms is sampled
// on time meanwhile.
func TestRunCoalesces(t *testing.T) {
	t.Parallel()
	const window = 100 * time.Millisecond
	sampler := &countingSampler{}
	e := New(testLimits(), nil, sampler)
	var mu sync.Mutex // guards calls
	var calls []time.Time
	e.SetSendBarrier(func() {
		mu.Lock()
		calls = append(calls, time.Now())
		mu.Unlock()
	}, window)
	ses := codec.NewNumericNodeId(1, 1)
	var subs []uint32
	for range 2 {
		sub, _, code := e.Create(ses, "anonymous", Params{PublishingInterval: 20, MaxKeepAliveCount: 1, LifetimeCount: 300}, true)
		require.Equal(t, status.Good, code)
		subs = append(subs, sub)
	}
	_, code := e.CreateItems(ses, subs[0], ua.TimestampsToReturnNeither, []ItemRequest{
		{Item: ua.ReadValueId{NodeId: node(1), AttributeId: 13}, Mode: ua.MonitoringModeSampling, ClientHandle: 1, SamplingInterval: 10, QueueSize: 1, Filter: DefaultFilter},
	}, []status.Code{status.Good})
	require.Equal(t, status.Good, code)
	in := &inbox{}
	for range 12 {
		e.Publish(ses, nil, nil, in, time.Time{})
	}
	// Each new subscription answers its first Publish at once, on the caller's
	// goroutine; the rest are Run's.
	mu.Lock()
	first := len(calls)
	mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	start := time.Now()
	go func() { defer close(ran); e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
	require.Eventually(t, func() bool { return in.count() == 12 }, 5*time.Second, time.Millisecond, "every Publish answered")
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	calls = calls[first:]
	require.GreaterOrEqual(t, len(calls), 2)
	require.Less(t, len(calls), 12, "cycles due within a window go out together")
	for i := 1; i < len(calls); i++ {
		require.GreaterOrEqual(t, calls[i].Sub(calls[i-1]), window, "batch %d", i)
	}
	require.Greater(t, int(sampler.calls.Load()), int(took/(20*time.Millisecond)), "sampled every 10 ms, not held with the cycles")
}

// countingSampler counts its Samples and answers 5.
type countingSampler struct{ calls atomic.Int32 }

func (s *countingSampler) Sample(items []ua.ReadValueId, out []codec.DataValue, done func()) {
	s.calls.Add(1)
	for i := range out {
		out[i] = codec.DataValue{Value: codec.DoubleVariant(5)}
	}
	done()
}
