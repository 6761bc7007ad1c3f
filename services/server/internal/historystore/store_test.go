package historystore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/historystore"
)

func open(t *testing.T, dir string) *historystore.Store {
	t.Helper()
	s, err := historystore.Open(dir, historystore.Options{})
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	historytest.Run(t, func(t *testing.T) history.Store {
		s := open(t, t.TempDir())
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

// TestReopen checks that values, modified values, events and the order of values of
// one time survive closing and opening the store again.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	node := codec.NewStringNodeId(1, "reopen")
	ts := historytest.T0
	dv := func(x float64, at codec.DateTime) codec.DataValue {
		return codec.DataValue{Value: codec.DoubleVariant(x), SourceTimestamp: at}
	}
	s := open(t, dir)
	require.NoError(t, s.Append(ctx, []history.Value{{Node: node, Value: dv(1, ts)}, {Node: node, Value: dv(2, ts+historytest.Sec)}}))
	up := &history.UpdateOp{User: "u", Time: ts, Results: make([]history.ItemResult, 1),
		Items: []history.Update{{Node: node, Kind: ua.PerformUpdateTypeReplace, Values: []codec.DataValue{dv(20, ts+historytest.Sec)}}}}
	require.NoError(t, s.Update(ctx, up))
	require.NoError(t, s.AppendEvents(ctx, []history.Event{{Notifier: node, Time: ts, Fields: []history.EventField{{Key: "0:Message", Value: codec.StringVariant("kept")}}}}))
	require.NoError(t, s.Close())

	s = open(t, dir)
	// A value stored after the restart at a time already held sorts after the old one.
	require.NoError(t, s.Append(ctx, []history.Value{{Node: node, Value: dv(3, ts)}}))
	op := &history.ReadRawOp{Results: make([]history.RawResult, 2), Items: []history.RawRead{
		{Node: node, Start: ts, End: ts + 10*historytest.Sec},
		{Node: node, Start: ts, End: ts + 10*historytest.Sec, Modified: true},
	}}
	require.NoError(t, s.ReadRaw(ctx, op))
	var got []float64
	for _, v := range op.Results[0].Values {
		got = append(got, v.Value.Value().(float64))
	}
	require.Equal(t, []float64{1, 3, 20}, got)
	require.Len(t, op.Results[1].Values, 1)
	require.Equal(t, 2.0, op.Results[1].Values[0].Value.Value().(float64))
	require.Equal(t, ua.HistoryUpdateTypeReplace, op.Results[1].Modifications[0].UpdateType)
	ev := &history.ReadEventsOp{Items: []history.EventRead{{Notifier: node, Start: ts, End: ts + 1}}, Results: make([]history.EventResult, 1)}
	require.NoError(t, s.ReadEvents(ctx, ev))
	require.Len(t, ev.Results[0].Events, 1)
	require.Equal(t, codec.StringVariant("kept"), ev.Results[0].Events[0].Fields[0].Value)
	require.NoError(t, s.Close())
}

// TestRetention checks that values and events older than the retention go when the
// store opens.
func TestRetention(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	node := codec.NewStringNodeId(1, "retention")
	now := historytest.T0.Time()
	old, fresh := codec.DateTimeOf(now.Add(-2*time.Hour)), codec.DateTimeOf(now.Add(-time.Minute))
	s := open(t, dir)
	require.NoError(t, s.Append(ctx, []history.Value{
		{Node: node, Value: codec.DataValue{Value: codec.Int32Variant(1), SourceTimestamp: old}},
		{Node: node, Value: codec.DataValue{Value: codec.Int32Variant(2), SourceTimestamp: fresh}},
	}))
	require.NoError(t, s.AppendEvents(ctx, []history.Event{{Notifier: node, Time: old}, {Notifier: node, Time: fresh}}))
	require.NoError(t, s.Close())

	s, err := historystore.Open(dir, historystore.Options{Retention: time.Hour, Now: func() time.Time { return now }})
	require.NoError(t, err)
	defer s.Close()
	require.Eventually(t, func() bool {
		op := &history.ReadRawOp{Items: []history.RawRead{{Node: node, Start: old - 1, End: fresh + 1}}, Results: make([]history.RawResult, 1)}
		require.NoError(t, s.ReadRaw(ctx, op))
		return len(op.Results[0].Values) == 1 && op.Results[0].Values[0].SourceTimestamp == fresh
	}, 5*time.Second, 10*time.Millisecond)
	ev := &history.ReadEventsOp{Items: []history.EventRead{{Notifier: node, Start: old - 1, End: fresh + 1}}, Results: make([]history.EventResult, 1)}
	require.NoError(t, s.ReadEvents(ctx, ev))
	require.Len(t, ev.Results[0].Events, 1)
}
