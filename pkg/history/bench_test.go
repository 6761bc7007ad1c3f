package history_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
)

// The memory store's benchmarks match the durable store's (historystore/bench_test.go):
// a tick of 10,000 nodes appended, one node's 100,000 values read in pages of 10,000;
// the bare ones do the same with a slice per node and a copy, the library the store
// stands on.
const (
	benchNodes  = 10_000
	benchSeries = 100_000
)

func BenchmarkMemoryAppend(b *testing.B) {
	m := history.NewMemory(history.MemoryLimits{PerNode: 100})
	ids := make([]codec.NodeId, benchNodes)
	for i := range ids {
		ids[i] = codec.NewNumericNodeId(1, uint32(1000+i))
	}
	batch := make([]history.Value, benchNodes)
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		ts := historytest.T0 + codec.DateTime(n)*1_000_000
		for i, id := range ids {
			batch[i] = history.Value{Node: id, Value: codec.DataValue{Value: codec.DoubleVariant(float64(n)), SourceTimestamp: ts, ServerTimestamp: ts}}
		}
		if err := m.Append(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchNodes)/b.Elapsed().Seconds(), "values/s")
}

// BenchmarkSliceAppend appends to a slice per node found in a map, dropping the oldest
// beyond 100 as the store's PerNode does.
func BenchmarkSliceAppend(b *testing.B) {
	type item struct {
		t   codec.DateTime
		seq uint64
		v   codec.DataValue
	}
	series := make(map[codec.NodeId][]item)
	ids := make([]codec.NodeId, benchNodes)
	for i := range ids {
		ids[i] = codec.NewNumericNodeId(1, uint32(1000+i))
	}
	var seq uint64
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		ts := historytest.T0 + codec.DateTime(n)*1_000_000
		for _, id := range ids {
			seq++
			s := append(series[id], item{ts, seq, codec.DataValue{Value: codec.DoubleVariant(float64(n)), SourceTimestamp: ts, ServerTimestamp: ts}})
			if len(s) > 100 {
				s = s[1:]
			}
			series[id] = s
		}
	}
	b.ReportMetric(float64(b.N*benchNodes)/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkMemoryReadRaw(b *testing.B) {
	m := history.NewMemory(history.MemoryLimits{})
	node := codec.NewNumericNodeId(1, 1000)
	batch := make([]history.Value, benchSeries)
	for i := range batch {
		ts := historytest.T0 + codec.DateTime(i)*1_000_000
		batch[i] = history.Value{Node: node, Value: codec.DataValue{Value: codec.DoubleVariant(float64(i)), SourceTimestamp: ts, ServerTimestamp: ts}}
	}
	require.NoError(b, m.Append(context.Background(), batch))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		q := history.RawRead{Node: node, Start: historytest.T0, End: historytest.T0 + benchSeries*1_000_000, Max: 10_000}
		got := 0
		for {
			op := &history.ReadRawOp{Items: []history.RawRead{q}, Results: make([]history.RawResult, 1)}
			require.NoError(b, m.ReadRaw(context.Background(), op))
			got += len(op.Results[0].Values)
			if q.Position = op.Results[0].Next; q.Position == nil {
				break
			}
		}
		if got != benchSeries {
			b.Fatalf("read %d", got)
		}
	}
	b.ReportMetric(float64(b.N*benchSeries)/b.Elapsed().Seconds(), "values/s")
}

// BenchmarkSliceCopy copies the values out of a slice in pages of 10,000, each page
// found by a binary search, as a read needs to hand them over.
func BenchmarkSliceCopy(b *testing.B) {
	vals := make([]codec.DataValue, benchSeries)
	for i := range vals {
		ts := historytest.T0 + codec.DateTime(i)*1_000_000
		vals[i] = codec.DataValue{Value: codec.DoubleVariant(float64(i)), SourceTimestamp: ts, ServerTimestamp: ts}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for k := 0; k < benchSeries; k += 10_000 {
			lo := search(vals, vals[k].SourceTimestamp)
			page := make([]codec.DataValue, 10_000)
			copy(page, vals[lo:lo+10_000])
		}
	}
	b.ReportMetric(float64(b.N*benchSeries)/b.Elapsed().Seconds(), "values/s")
}

func search(vals []codec.DataValue, t codec.DateTime) int {
	lo, hi := 0, len(vals)
	for lo < hi {
		m := (lo + hi) / 2
		if vals[m].SourceTimestamp < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
