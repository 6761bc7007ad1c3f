package history_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
)

func TestMemoryConformance(t *testing.T) {
	historytest.Run(t, func(*testing.T) history.Store { return history.NewMemory(history.MemoryLimits{}) })
}

// TestMemoryBounds checks that the bounds drop the oldest values: a node's own for
// PerNode, the oldest of all for Total.
func TestMemoryBounds(t *testing.T) {
	a, b := codec.NewStringNodeId(1, "a"), codec.NewStringNodeId(1, "b")
	val := func(n codec.NodeId, sec int) history.Value {
		return history.Value{Node: n, Value: codec.DataValue{Value: codec.Int32Variant(int32(sec)), SourceTimestamp: historytest.T0 + codec.DateTime(sec)*historytest.Sec}}
	}
	m := history.NewMemory(history.MemoryLimits{PerNode: 3, Total: 5})
	ctx := context.Background()
	require.NoError(t, m.Append(ctx, []history.Value{val(a, 1), val(a, 2), val(a, 3), val(a, 4)}))
	require.Equal(t, 3, m.Len(), "PerNode")
	require.NoError(t, m.Append(ctx, []history.Value{val(b, 0), val(b, 5), val(b, 6), val(b, 7)}))
	require.Equal(t, 5, m.Len(), "Total")
	op := &history.ReadRawOp{Items: []history.RawRead{{Node: a, Start: 1}, {Node: b, Start: 1}}, Results: make([]history.RawResult, 2)}
	op.Items[0].Max, op.Items[1].Max = 10, 10
	require.NoError(t, m.ReadRaw(ctx, op))
	secs := func(r history.RawResult) (out []int32) {
		for _, v := range r.Values {
			out = append(out, v.Value.Value().(int32))
		}
		return out
	}
	// a held 2,3,4 and b 0,5,6,7: the two oldest of all (b's 0, a's 2) went.
	require.Equal(t, []int32{3, 4}, secs(op.Results[0]))
	require.Equal(t, []int32{5, 6, 7}, secs(op.Results[1]))
}
