package historystore_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
	"uastack.dev/services/server/internal/historystore"
)

// The ingest benchmarks write what one 100 ms tick of 10,000 historizing variables
// records: 10,000 values of distinct nodes in one batch. The read benchmarks read one
// node's 100,000 values. Each store benchmark has a bare one beside it doing the same
// with the library alone (Pebble batches and iterators over prebuilt keys and value
// bytes), so that the store's overhead on top of the library is a ratio of one run:
//
//	go test -run '^$' -bench . -benchmem ./services/server/internal/historystore ./pkg/history
const (
	benchNodes  = 10_000
	benchSeries = 100_000
)

func benchNodeIDs() []codec.NodeId {
	ids := make([]codec.NodeId, benchNodes)
	for i := range ids {
		ids[i] = codec.NewNumericNodeId(1, uint32(1000+i))
	}
	return ids
}

func tick(ids []codec.NodeId, batch []history.Value, n int) {
	ts := historytest.T0 + codec.DateTime(n)*1_000_000
	for i, id := range ids {
		batch[i] = history.Value{Node: id, Value: codec.DataValue{Value: codec.DoubleVariant(float64(n)), SourceTimestamp: ts, ServerTimestamp: ts}}
	}
}

func BenchmarkDurableAppend(b *testing.B) {
	s, err := historystore.Open(b.TempDir(), historystore.Options{})
	require.NoError(b, err)
	defer s.Close()
	ids := benchNodeIDs()
	batch := make([]history.Value, len(ids))
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		tick(ids, batch, n)
		if err := s.Append(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(ids))/b.Elapsed().Seconds(), "values/s")
}

// bareKey is a key as long as the store's for a numeric NodeId: kind, length, NodeId,
// time and sequence.
func bareKey(buf []byte, node uint32, ts int64, seq uint64) []byte {
	buf = append(buf[:0], 'r', 0, 7, 2, 1, 0)
	buf = binary.LittleEndian.AppendUint32(buf, node)
	buf = binary.BigEndian.AppendUint64(buf, uint64(ts)^(1<<63))
	return binary.BigEndian.AppendUint64(buf, seq)
}

// bareValue is as long as a stored Double DataValue with two timestamps.
var bareValue = make([]byte, 1+1+8+8+8)

func BenchmarkPebblePut(b *testing.B) {
	db, err := pebble.Open(b.TempDir(), &pebble.Options{Logger: quiet{}, MemTableSize: historystore.MemTableSize})
	require.NoError(b, err)
	defer db.Close()
	key := make([]byte, 0, 32)
	var seq uint64
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		batch := db.NewBatch()
		ts := int64(historytest.T0) + int64(n)*1_000_000
		for i := range benchNodes {
			seq++
			key = bareKey(key, uint32(1000+i), ts, seq)
			if err := batch.Set(key, bareValue, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Commit(pebble.NoSync); err != nil {
			b.Fatal(err)
		}
		_ = batch.Close()
	}
	b.ReportMetric(float64(b.N*benchNodes)/b.Elapsed().Seconds(), "values/s")
}

var node = codec.NewNumericNodeId(1, 1000)

func fillSeries(b *testing.B, s history.Store) {
	batch := make([]history.Value, 10_000)
	for k := 0; k < benchSeries; k += len(batch) {
		for i := range batch {
			ts := historytest.T0 + codec.DateTime(k+i)*1_000_000
			batch[i] = history.Value{Node: node, Value: codec.DataValue{Value: codec.DoubleVariant(float64(k + i)), SourceTimestamp: ts, ServerTimestamp: ts}}
		}
		require.NoError(b, s.Append(context.Background(), batch))
	}
}

// readPages reads the series in pages of 10,000 values, as the server does with the
// default history.maxValuesPerRead.
func readPages(b *testing.B, s history.Store) {
	q := history.RawRead{Node: node, Start: historytest.T0, End: historytest.T0 + benchSeries*1_000_000, Max: 10_000}
	got := 0
	for {
		op := &history.ReadRawOp{Items: []history.RawRead{q}, Results: make([]history.RawResult, 1)}
		require.NoError(b, s.ReadRaw(context.Background(), op))
		got += len(op.Results[0].Values)
		if q.Position = op.Results[0].Next; q.Position == nil {
			break
		}
	}
	if got != benchSeries {
		b.Fatalf("read %d values", got)
	}
}

func BenchmarkDurableReadRaw(b *testing.B) {
	s, err := historystore.Open(b.TempDir(), historystore.Options{})
	require.NoError(b, err)
	defer s.Close()
	fillSeries(b, s)
	require.NoError(b, s.Flush())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		readPages(b, s)
	}
	b.ReportMetric(float64(b.N*benchSeries)/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkPebbleIterate(b *testing.B) {
	db, err := pebble.Open(b.TempDir(), &pebble.Options{Logger: quiet{}, MemTableSize: historystore.MemTableSize})
	require.NoError(b, err)
	defer db.Close()
	key := make([]byte, 0, 32)
	for k := 0; k < benchSeries; k += 10_000 {
		batch := db.NewBatch()
		for i := k; i < k+10_000; i++ {
			key = bareKey(key, 1000, int64(historytest.T0)+int64(i)*1_000_000, uint64(i))
			require.NoError(b, batch.Set(key, bareValue, nil))
		}
		require.NoError(b, batch.Commit(pebble.NoSync))
	}
	require.NoError(b, db.Flush())
	lo, hi := bareKey(nil, 1000, 0, 0), bareKey(nil, 1001, 0, 0)
	out := make([][]byte, 0, benchSeries)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		require.NoError(b, err)
		out = out[:0]
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, append([]byte(nil), v...)) // the bytes outlive the iterator, as values must
		}
		require.NoError(b, it.Close())
		if len(out) != benchSeries {
			b.Fatalf("read %d values", len(out))
		}
	}
	b.ReportMetric(float64(b.N*benchSeries)/b.Elapsed().Seconds(), "values/s")
}

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(format string, args ...any) {
	panic(format)
}
