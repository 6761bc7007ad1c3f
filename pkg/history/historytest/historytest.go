// Package historytest is the conformance kit of history.Store: one set of tests that
// every store passes, the in-memory one, the server's durable one and a plugin's.
package historytest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Open returns an empty store for one test; the kit closes nothing.
type Open func(t *testing.T) history.Store

// T0 is the time of the first value the kit writes; value i is at T0+i seconds.
var T0 = codec.DateTime(133_000_000_000_000_000)

// Sec is one second as a DateTime.
const Sec = codec.DateTime(10_000_000)

// Node is the node the kit writes.
var Node = codec.NewStringNodeId(1, "historytest")

// dv is value v at T0+sec seconds.
func dv(sec int, v float64) codec.DataValue {
	ts := T0 + codec.DateTime(sec)*Sec
	return codec.DataValue{Value: codec.DoubleVariant(v), SourceTimestamp: ts, ServerTimestamp: ts}
}

// fill appends the values 0..n-1 at T0+0..n-1 s (value i is float i).
func fill(t *testing.T, s history.Store, n int) {
	vals := make([]history.Value, n)
	for i := range vals {
		vals[i] = history.Value{Node: Node, Value: dv(i, float64(i))}
	}
	require.NoError(t, s.Append(context.Background(), vals))
}

func readRaw(t *testing.T, s history.Store, q history.RawRead) history.RawResult {
	t.Helper()
	q.Node = Node
	op := &history.ReadRawOp{Items: []history.RawRead{q}, Results: make([]history.RawResult, 1)}
	require.NoError(t, s.ReadRaw(context.Background(), op))
	return op.Results[0]
}

func numbers(vals []codec.DataValue) []float64 {
	out := make([]float64, len(vals))
	for i := range vals {
		if vals[i].Status == status.BadBoundNotFound {
			out[i] = -1
			continue
		}
		out[i] = vals[i].Value.Value().(float64)
	}
	return out
}

func at(sec int) codec.DateTime { return T0 + codec.DateTime(sec)*Sec }

// Run runs the conformance tests against the stores open makes.
func Run(t *testing.T, open Open) {
	t.Run("RawForward", func(t *testing.T) {
		s := open(t)
		fill(t, s, 10)
		r := readRaw(t, s, history.RawRead{Start: at(2), End: at(5)})
		require.Equal(t, status.Good, r.Status)
		require.Equal(t, []float64{2, 3, 4}, numbers(r.Values), "start included, end not")
		r = readRaw(t, s, history.RawRead{Start: at(2), End: at(5), Bounds: true})
		require.Equal(t, []float64{2, 3, 4, 5}, numbers(r.Values), "a value at start is its own bound")
		r = readRaw(t, s, history.RawRead{Start: at(2) + 1, End: at(5) - 1, Bounds: true})
		require.Equal(t, []float64{2, 3, 4, 5}, numbers(r.Values), "bounds are the values outside")
		r = readRaw(t, s, history.RawRead{Start: at(-5), End: at(20), Bounds: true})
		require.Equal(t, []float64{-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1}, numbers(r.Values), "BadBoundNotFound past the ends")
		require.Equal(t, at(-5), r.Values[0].SourceTimestamp)
		r = readRaw(t, s, history.RawRead{Start: at(7), Max: 5})
		require.Equal(t, []float64{7, 8, 9}, numbers(r.Values), "from start to the newest")
		require.Nil(t, r.Next)
		r = readRaw(t, s, history.RawRead{Start: at(3), End: at(3)})
		require.Equal(t, []float64{3}, numbers(r.Values), "equal times read the values at that time")
		r = readRaw(t, s, history.RawRead{Start: at(20), End: at(30)})
		require.Equal(t, status.GoodNoData, r.Status)
		require.Empty(t, r.Values)
	})
	t.Run("RawReverse", func(t *testing.T) {
		s := open(t)
		fill(t, s, 10)
		r := readRaw(t, s, history.RawRead{Start: at(5), End: at(2)})
		require.Equal(t, []float64{5, 4, 3}, numbers(r.Values), "start included, end not, newest first")
		r = readRaw(t, s, history.RawRead{Start: at(5) - 1, End: at(2) + 1, Bounds: true})
		require.Equal(t, []float64{5, 4, 3, 2}, numbers(r.Values))
		r = readRaw(t, s, history.RawRead{End: at(3), Max: 10})
		require.Equal(t, []float64{3, 2, 1, 0}, numbers(r.Values), "only end: backward from it")
	})
	t.Run("Pages", func(t *testing.T) {
		s := open(t)
		fill(t, s, 25)
		for _, q := range []history.RawRead{
			{Start: at(0), End: at(30), Bounds: true},
			{Start: at(30), End: at(0) - 1, Bounds: true},
			{Start: at(3), End: at(17)},
		} {
			whole := readRaw(t, s, q)
			var paged []codec.DataValue
			q.Max = 4
			for pages := 0; ; pages++ {
				require.Less(t, pages, 20)
				r := readRaw(t, s, q)
				require.Equal(t, status.Good, r.Status)
				require.LessOrEqual(t, len(r.Values), 4)
				paged = append(paged, r.Values...)
				if r.Next == nil {
					break
				}
				q.Position = r.Next
			}
			require.Equal(t, numbers(whole.Values), numbers(paged))
		}
		r := readRaw(t, s, history.RawRead{Start: at(0), Position: []byte{1, 2, 3}})
		require.Equal(t, status.BadContinuationPointInvalid, r.Status)
	})
	t.Run("SameTime", func(t *testing.T) {
		s := open(t)
		v := dv(1, 1)
		w := v
		w.Value = codec.DoubleVariant(2)
		require.NoError(t, s.Append(context.Background(), []history.Value{{Node: Node, Value: v}, {Node: Node, Value: w}}))
		r := readRaw(t, s, history.RawRead{Start: at(0), End: at(5)})
		require.Equal(t, []float64{1, 2}, numbers(r.Values), "values of one time in the order they came")
		r = readRaw(t, s, history.RawRead{Start: at(0), End: at(5), Max: 1})
		require.NotNil(t, r.Next)
		r = readRaw(t, s, history.RawRead{Start: at(0), End: at(5), Max: 1, Position: r.Next})
		require.Equal(t, []float64{2}, numbers(r.Values))
	})
	t.Run("Update", func(t *testing.T) {
		s := open(t)
		fill(t, s, 3)
		op := &history.UpdateOp{User: "op", Time: at(100), Results: make([]history.ItemResult, 3), Items: []history.Update{
			{Node: Node, Kind: ua.PerformUpdateTypeInsert, Values: []codec.DataValue{dv(1, 10), dv(5, 50)}},
			{Node: Node, Kind: ua.PerformUpdateTypeReplace, Values: []codec.DataValue{dv(2, 20), dv(6, 60)}},
			{Node: Node, Kind: ua.PerformUpdateTypeUpdate, Values: []codec.DataValue{dv(0, 5), dv(7, 70), {Value: codec.DoubleVariant(1)}}},
		}}
		require.NoError(t, s.Update(context.Background(), op))
		require.Equal(t, []status.Code{status.BadEntryExists, status.GoodEntryInserted}, op.Results[0].Operations)
		require.Equal(t, []status.Code{status.GoodEntryReplaced, status.BadNoEntryExists}, op.Results[1].Operations)
		require.Equal(t, []status.Code{status.GoodEntryReplaced, status.GoodEntryInserted, status.BadInvalidTimestamp}, op.Results[2].Operations)
		r := readRaw(t, s, history.RawRead{Start: at(0), End: at(10)})
		require.Equal(t, []float64{5, 1, 20, 50, 70}, numbers(r.Values))
		m := readRaw(t, s, history.RawRead{Start: at(0), End: at(10), Modified: true})
		require.Equal(t, []float64{0, 2, 50, 70}, numbers(m.Values), "replaced values and inserted ones")
		require.Len(t, m.Modifications, 4)
		require.Equal(t, ua.HistoryUpdateTypeUpdate, m.Modifications[0].UpdateType)
		require.Equal(t, ua.HistoryUpdateTypeReplace, m.Modifications[1].UpdateType)
		require.Equal(t, ua.HistoryUpdateTypeInsert, m.Modifications[2].UpdateType)
		require.Equal(t, "op", m.Modifications[1].UserName)
		require.Equal(t, at(100), m.Modifications[1].ModificationTime)
		bad := &history.UpdateOp{Results: make([]history.ItemResult, 1), Items: []history.Update{{Node: Node, Kind: ua.PerformUpdateTypeRemove}}}
		require.NoError(t, s.Update(context.Background(), bad))
		require.Equal(t, status.BadHistoryOperationInvalid, bad.Results[0].Status)
	})
	t.Run("Delete", func(t *testing.T) {
		s := open(t)
		fill(t, s, 10)
		d := &history.DeleteRawOp{User: "op", Time: at(100), Results: make([]history.ItemResult, 2), Items: []history.DeleteRaw{
			{Node: Node, Start: at(2), End: at(4)},
			{Node: Node, Start: at(20), End: at(30)},
		}}
		require.NoError(t, s.DeleteRaw(context.Background(), d))
		require.Equal(t, status.Good, d.Results[0].Status)
		require.Equal(t, status.BadNoData, d.Results[1].Status)
		a := &history.DeleteAtTimeOp{Results: make([]history.ItemResult, 1), Items: []history.DeleteAtTime{{Node: Node, Times: []codec.DateTime{at(7), at(3), at(8) + 1}}}}
		require.NoError(t, s.DeleteAtTime(context.Background(), a))
		require.Equal(t, []status.Code{status.Good, status.BadNoEntryExists, status.BadNoEntryExists}, a.Results[0].Operations)
		r := readRaw(t, s, history.RawRead{Start: at(0), End: at(10)})
		require.Equal(t, []float64{0, 1, 4, 5, 6, 8, 9}, numbers(r.Values))
		m := readRaw(t, s, history.RawRead{Start: at(0), End: at(10), Modified: true})
		require.Equal(t, []float64{2, 3, 7}, numbers(m.Values))
		require.Equal(t, ua.HistoryUpdateTypeDelete, m.Modifications[0].UpdateType)
		dm := &history.DeleteRawOp{Results: make([]history.ItemResult, 1), Items: []history.DeleteRaw{{Node: Node, Start: at(0), End: at(5), Modified: true}}}
		require.NoError(t, s.DeleteRaw(context.Background(), dm))
		m = readRaw(t, s, history.RawRead{Start: at(0), End: at(10), Modified: true})
		require.Equal(t, []float64{7}, numbers(m.Values))
	})
	t.Run("Events", func(t *testing.T) {
		s := open(t)
		es, ok := s.(history.EventStore)
		if !ok {
			t.Fatalf("%T keeps no events", s)
		}
		notifier := codec.NewStringNodeId(1, "notifier")
		var evs []history.Event
		for i := range 6 {
			evs = append(evs, history.Event{Notifier: notifier, Time: at(i), Type: codec.NewNumericNodeId(0, 2041),
				Fields: []history.EventField{{Key: "0:Severity", Value: codec.UInt16Variant(uint16(100 + i))}}})
		}
		require.NoError(t, es.AppendEvents(context.Background(), evs))
		read := func(q history.EventRead) history.EventResult {
			q.Notifier = notifier
			op := &history.ReadEventsOp{Items: []history.EventRead{q}, Results: make([]history.EventResult, 1)}
			require.NoError(t, es.ReadEvents(context.Background(), op))
			return op.Results[0]
		}
		r := read(history.EventRead{Start: at(1), End: at(4)})
		require.Len(t, r.Events, 3)
		require.Equal(t, at(1), r.Events[0].Time)
		require.Equal(t, codec.UInt16Variant(101), r.Events[0].Fields[0].Value)
		require.Equal(t, "0:Severity", r.Events[0].Fields[0].Key)
		r = read(history.EventRead{Start: at(5), End: at(0), Max: 2})
		require.Len(t, r.Events, 2)
		require.Equal(t, at(5), r.Events[0].Time)
		r = read(history.EventRead{Start: at(5), End: at(0), Max: 2, Position: r.Next})
		require.Equal(t, at(3), r.Events[0].Time)
		r = read(history.EventRead{Start: at(10), End: at(20)})
		require.Equal(t, status.GoodNoData, r.Status)
	})
}
