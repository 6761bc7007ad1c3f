package routing

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/telemetry"
)

// histManager is a manager of one namespace with a history store; how says how the
// store's ReadRaw behaves.
type histManager struct {
	uri string
	how string
	*history.Memory
}

func (m *histManager) Namespaces() []string { return []string{m.uri} }

func (m *histManager) ReadRaw(ctx context.Context, op *history.ReadRawOp) error {
	switch m.how {
	case "panics":
		panic("a historian's bug")
	case "fails":
		return status.BadOutOfService
	}
	return m.Memory.ReadRaw(ctx, op)
}

// failingStore is the server's store failing as a whole.
type failingStore struct{ *history.Memory }

func (failingStore) ReadRaw(context.Context, *history.ReadRawOp) error {
	return status.BadResourceUnavailable
}

func memory() *history.Memory {
	return history.NewMemory(history.MemoryLimits{PerNode: 100, Total: 1000, EventsPerNotifier: 10})
}

// TestHistoryScatter: one ReadRaw across the server's store, a manager's store, a
// manager without a store, a store that fails and one that panics answers each item
// from its owner, in request order; the server's own store failing fails the whole.
func TestHistoryScatter(t *testing.T) {
	t.Parallel()
	good := &histManager{uri: "urn:good", Memory: memory()}
	r, panics := routesOf(t, good, &panicReader{uri: "urn:plain"},
		&histManager{uri: "urn:fails", how: "fails", Memory: memory()}, &histManager{uri: "urn:panics", how: "panics", Memory: memory()})
	local := memory()
	h := r.History(local, local)
	ctx := context.Background()
	at := codec.DateTime(133_000_000_000_000_000)
	localNode, goodNode := codec.NewNumericNodeId(0, 1), nodeIn(t, r, "urn:good")
	require.NoError(t, local.Append(ctx, []history.Value{{Node: localNode, Value: codec.DataValue{Value: codec.Int32Variant(1), SourceTimestamp: at}}}))
	require.NoError(t, good.Append(ctx, []history.Value{{Node: goodNode, Value: codec.DataValue{Value: codec.Int32Variant(2), SourceTimestamp: at}}}))

	nodes := []codec.NodeId{goodNode, nodeIn(t, r, "urn:plain"), localNode, nodeIn(t, r, "urn:fails"), nodeIn(t, r, "urn:panics"), goodNode}
	op := &history.ReadRawOp{Results: make([]history.RawResult, len(nodes))}
	for _, n := range nodes {
		op.Items = append(op.Items, history.RawRead{Node: n, Start: at, End: at + 1})
	}
	require.NoError(t, h.ReadRaw(ctx, op))
	value := func(k int) int64 {
		require.Equal(t, status.Good, op.Results[k].Status, "item %d", k)
		require.Len(t, op.Results[k].Values, 1, "item %d", k)
		return int64(op.Results[k].Values[0].Value.Bits())
	}
	require.EqualValues(t, 2, value(0))
	require.Equal(t, status.BadHistoryOperationUnsupported, op.Results[1].Status)
	require.EqualValues(t, 1, value(2))
	require.Equal(t, status.BadOutOfService, op.Results[3].Status)
	require.Equal(t, status.BadInternalError, op.Results[4].Status)
	require.EqualValues(t, 2, value(5))
	require.EqualValues(t, 1, panics.Count(telemetry.PlaceNodeManager), "the historian's panic is reported")

	require.True(t, h.Serves(goodNode, true))
	require.False(t, h.Serves(nodeIn(t, r, "urn:plain"), false))
	require.True(t, h.Serves(localNode, false))
	require.False(t, r.History(nil, nil).Serves(localNode, false), "the server keeps no history")

	broken := r.History(failingStore{local}, nil)
	op = &history.ReadRawOp{Items: op.Items[:3], Results: make([]history.RawResult, 3)}
	require.ErrorIs(t, broken.ReadRaw(ctx, op), status.BadResourceUnavailable)
}
