package history_test

import (
	"context"
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
	"uastack.dev/pkg/status"
)

// FuzzScan reads a store of 50 values with any times, limit, bounds and position: a
// read never panics, never returns more than its limit, returns its values in the
// order of its direction, and a position it returns resumes it.
func FuzzScan(f *testing.F) {
	f.Add(int64(0), int64(60), 0, true, []byte(nil))
	f.Add(int64(60), int64(-5), 3, true, []byte(nil))
	f.Add(int64(10), int64(0), 4, false, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3})
	f.Add(int64(0), int64(20), 2, true, []byte{1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(int64(5), int64(5), 1, false, []byte{2})
	m := history.NewMemory(history.MemoryLimits{})
	node := codec.NewStringNodeId(1, "fuzz")
	var vals []history.Value
	for i := range 50 {
		ts := historytest.T0 + codec.DateTime(i/2)*historytest.Sec // two values per time
		vals = append(vals, history.Value{Node: node, Value: codec.DataValue{Value: codec.Int32Variant(int32(i)), SourceTimestamp: ts}})
	}
	if err := m.Append(context.Background(), vals); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, start, end int64, max int, bounds bool, pos []byte) {
		at := func(s int64) codec.DateTime {
			if s == 0 {
				return 0
			}
			return historytest.T0 + codec.DateTime(s%1000)*historytest.Sec
		}
		max = max % 100
		if max < 0 {
			max = -max
		}
		q := history.RawRead{Node: node, Start: at(start), End: at(end), Max: max, Bounds: bounds, Position: pos}
		for pages := 0; pages < 200; pages++ {
			op := &history.ReadRawOp{Items: []history.RawRead{q}, Results: make([]history.RawResult, 1)}
			if err := m.ReadRaw(context.Background(), op); err != nil {
				t.Fatal(err)
			}
			r := op.Results[0]
			if max > 0 && len(r.Values) > max {
				t.Fatalf("%d values for a limit of %d", len(r.Values), max)
			}
			reverse := history.Reverse(q.Start, q.End)
			for i := 1; i < len(r.Values); i++ {
				a, b := r.Values[i-1], r.Values[i]
				if a.Status == status.BadBoundNotFound || b.Status == status.BadBoundNotFound {
					continue
				}
				if !reverse && b.SourceTimestamp < a.SourceTimestamp || reverse && b.SourceTimestamp > a.SourceTimestamp {
					t.Fatalf("out of order: %v then %v", a.SourceTimestamp, b.SourceTimestamp)
				}
			}
			if r.Next == nil {
				return
			}
			q.Position = r.Next
		}
		t.Fatal("a read that never ends")
	})
}
