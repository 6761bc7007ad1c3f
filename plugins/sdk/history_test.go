package sdk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/plugins/sdk"
)

// keeper is a store that keeps the slices it is given, as a store may.
type keeper struct {
	history.Store
	kept [][]history.Value
}

func (k *keeper) Namespaces() []string { return []string{"urn:k"} }

func (k *keeper) Append(_ context.Context, values []history.Value) error {
	k.kept = append(k.kept, values)
	return nil
}

func (k *keeper) ReadRaw(_ context.Context, op *history.ReadRawOp) error {
	for i := range op.Results {
		op.Results[i] = history.RawResult{Status: status.GoodNoData}
	}
	return nil
}

// TestGuestHistory: the guest answers the history kinds from its manager's store: the
// values a store keeps are not overwritten by the next request, a read answers a
// result per item, and a guest without an EventStore refuses the event kinds.
func TestGuestHistory(t *testing.T) {
	ctx := context.Background()
	k := &keeper{}
	g := sdk.NewGuest(func(nodemgr.Setup) (nodemgr.Manager, error) { return k, nil }, nopLink{})
	r := serve(t, ctx, g, nodemgr.Frame{Kind: nodemgr.KindInfo, Body: &nodemgr.Setup{NamespaceURI: "urn:k"}})
	require.Equal(t, nodemgr.CapHistory, r[0].Body.(*nodemgr.Info).Capabilities&(nodemgr.CapHistory|nodemgr.CapHistoryEvents))

	node := codec.NewStringNodeId(2, "x")
	appendOf := func(v float64) nodemgr.Frame {
		return nodemgr.Frame{Kind: nodemgr.KindHistoryAppend, Body: &nodemgr.HistoryValues{Values: []history.Value{
			{Node: node, Value: codec.DataValue{Value: codec.DoubleVariant(v)}}}}}
	}
	for _, v := range []float64{1, 2} {
		r = serve(t, ctx, g, appendOf(v))
		require.Equal(t, nodemgr.KindHistoryAppend|nodemgr.KindReply, r[0].Kind)
		require.Equal(t, status.Good, r[0].Body.(*nodemgr.Outcome).Status)
	}
	require.Len(t, k.kept, 2)
	require.Equal(t, 1.0, k.kept[0][0].Value.Value.Value(), "the first append's values are the store's")
	require.Equal(t, 2.0, k.kept[1][0].Value.Value.Value())

	r = serve(t, ctx, g, nodemgr.Frame{Kind: nodemgr.KindHistoryReadRaw, ID: 7, Body: &nodemgr.HistoryReadRaw{Items: make([]history.RawRead, 3)}},
		nodemgr.Frame{Kind: nodemgr.KindHistoryReadEvents, ID: 8, Body: &nodemgr.HistoryReadEvents{Items: make([]history.EventRead, 1)}})
	require.Equal(t, nodemgr.KindHistoryReadRaw|nodemgr.KindReply, r[0].Kind)
	require.Len(t, r[0].Body.(*nodemgr.HistoryRawResults).Results, 3)
	require.Equal(t, status.BadServiceUnsupported, faultOf(t, r[1]), "no EventStore")
	require.Equal(t, uint32(8), r[1].ID)
}
