package processhost

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
	"uastack.dev/pkg/nodemgr"
)

// TestHistoryConformance runs the store conformance kit against the store of a plugin
// process (the test plugin's history option): a historian behind a process plugin.
// Each test opens a process of its own, for an empty store.
func TestHistoryConformance(t *testing.T) {
	historytest.Run(t, func(t *testing.T) history.Store {
		m := open(t, Config{Setup: nodemgr.Setup{Options: []byte(`{"history":true}`)}}, newHost(nil))
		st, ok := m.Served().(history.Store)
		require.True(t, ok, "the guest is a history.Store")
		_, ok = m.Served().(history.EventStore)
		require.True(t, ok, "the guest is a history.EventStore")
		return st
	})
	t.Run("NoStore", func(t *testing.T) {
		_, ok := open(t, Config{}, newHost(nil)).Served().(history.Store)
		require.False(t, ok, "the plain test plugin keeps no history")
	})
}

// BenchmarkHistoryReadRaw reads 10,000 raw values in pages of 1,000 from a historian:
// in a plugin process, through the host (the served manager's history.Store), and the
// same in-memory store called directly, to show what the boundary costs per value.
func BenchmarkHistoryReadRaw(b *testing.B) {
	const n, page = 10_000, 1_000
	node := codec.NewStringNodeId(2, "Level")
	vals := make([]history.Value, n)
	for i := range vals {
		at := historytest.T0 + codec.DateTime(i)*historytest.Sec
		vals[i] = history.Value{Node: node, Value: codec.DataValue{Value: codec.DoubleVariant(float64(i)), SourceTimestamp: at, ServerTimestamp: at}}
	}
	readAll := func(b *testing.B, st history.Store) {
		ctx := context.Background()
		require.NoError(b, st.Append(ctx, vals))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			q := history.RawRead{Node: node, Start: historytest.T0, End: historytest.T0 + n*historytest.Sec, Max: page}
			got := 0
			for {
				op := &history.ReadRawOp{Items: []history.RawRead{q}, Results: make([]history.RawResult, 1)}
				if err := st.ReadRaw(ctx, op); err != nil || op.Results[0].Status.IsBad() {
					b.Fatal(err, op.Results[0].Status)
				}
				got += len(op.Results[0].Values)
				if q.Position = op.Results[0].Next; q.Position == nil {
					break
				}
			}
			if got != n {
				b.Fatalf("read %d values, want %d", got, n)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "values/s")
	}
	b.Run("process", func(b *testing.B) {
		m := open(b, Config{Setup: nodemgr.Setup{Options: []byte(`{"history":true}`)}}, newHost(nil))
		readAll(b, m.Served().(history.Store))
	})
	b.Run("direct", func(b *testing.B) {
		readAll(b, history.NewMemory(history.MemoryLimits{PerNode: 100_000, Total: 1_000_000}))
	})
}
