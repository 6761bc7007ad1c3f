package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/plugintest"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// TestHistoryFromPlugin: a plugin process that is a historian (the test plugin's
// history option) keeps the history of its nodes: gopcua inserts values through
// HistoryUpdate, reads them back raw in pages and processed.
func TestHistoryFromPlugin(t *testing.T) {
	t.Parallel()
	const uri = "urn:uastack:test:historian-plugin"
	exe := plugintest.Process(t, "uastack.dev/plugins/plugintest/testplugin")
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.AddressSpace.NodeManagers = append(c.AddressSpace.NodeManagers, config.NodeManager{
			Name: "historian", Type: config.NodeManagerProcess, Path: exe, NamespaceURI: uri, Options: map[string]any{"history": true}})
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	node := ua.NewStringNodeID(namespaceIndex(t, ctx, c, uri), "Level")

	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	insert := &ua.UpdateDataDetails{NodeID: node, PerformInsertReplace: ua.PerformUpdateTypeInsert}
	for i := range 6 {
		insert.UpdateValues = append(insert.UpdateValues, &ua.DataValue{EncodingMask: ua.DataValueValue | ua.DataValueSourceTimestamp,
			Value: ua.MustVariant(float64(10 * i)), SourceTimestamp: t0.Add(time.Duration(i) * time.Second)})
	}
	res := historyUpdate(t, ctx, c, insert)
	require.Equal(t, ua.StatusOK, res[0].StatusCode)
	require.Len(t, res[0].OperationResults, 6)
	for _, code := range res[0].OperationResults {
		require.Equal(t, ua.StatusGoodEntryInserted, code)
	}

	paged := &ua.ReadRawModifiedDetails{StartTime: t0, EndTime: t0.Add(time.Minute), NumValuesPerNode: 4}
	var got []float64
	var cp []byte
	for pages := 1; ; pages++ {
		require.LessOrEqual(t, pages, 2)
		r, vals := historyValues(t, ctx, c, node, paged, cp)
		require.Equal(t, ua.StatusOK, r.StatusCode)
		for _, v := range vals {
			got = append(got, v.Value.Value().(float64))
		}
		if cp = r.ContinuationPoint; cp == nil {
			break
		}
	}
	require.Equal(t, []float64{0, 10, 20, 30, 40, 50}, got)

	pr, err := c.HistoryReadProcessed(ctx, []*ua.HistoryReadValueID{hv(node, nil)}, &ua.ReadProcessedDetails{
		StartTime: t0, EndTime: t0.Add(6 * time.Second), ProcessingInterval: 3000,
		AggregateType:          []*ua.NodeID{ua.NewNumericNodeID(0, id.AggregateFunction_Maximum)},
		AggregateConfiguration: &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, pr.Results[0].StatusCode)
	var max []any
	for _, v := range pr.Results[0].HistoryData.Value.(*ua.HistoryData).DataValues {
		max = append(max, v.Value.Value())
	}
	require.Equal(t, []any{20.0, 50.0}, max)
}
