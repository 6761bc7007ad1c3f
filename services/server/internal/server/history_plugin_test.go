package server_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/plugintest"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
	"uastack.dev/tools/nodepeer"
)

// pluginHistoryScript reads the raw history and the Maximum of a plugin's node with
// node-opcua's client (session.readHistoryValue, session.readAggregateValue), and the
// raw history of a node of a plugin without a store.
const pluginHistoryScript = `
const { OPCUAClient, MessageSecurityMode, SecurityPolicy } = require("node-opcua-client");
const { AggregateFunction } = require("node-opcua-constants");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const [url, pki, node, plain, from, to] = process.argv.slice(2);
(async () => {
  const clientCertificateManager = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  await clientCertificateManager.initialize();
  const client = OPCUAClient.create({ applicationName: "uastack-plugin-history", clientCertificateManager,
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 } });
  await client.connect(url);
  const session = await client.createSession();
  const start = new Date(from), end = new Date(to);
  const raw = await session.readHistoryValue(node, start, end);
  const agg = await session.readAggregateValue([{ nodeId: node }], start, end, [AggregateFunction.Maximum], 3000);
  const none = await session.readHistoryValue(plain, start, end);
  result({
    raw: { status: raw.statusCode.name, values: raw.historyData.dataValues.filter((v) => v.statusCode.value === 0).map((v) => v.value.value) },
    maximum: { status: agg[0].statusCode.name, values: agg[0].historyData.dataValues.map((v) => v.value.value) },
    plain: none.statusCode.name,
  });
  await session.close();
  await client.disconnect();
})().catch((e) => { result({ error: String(e && e.stack || e) }); process.exit(1); });
`

// TestHistoryFromPlugin: a plugin process that is a historian (the test plugin's
// history option) keeps the history of its nodes: gopcua inserts values through
// HistoryUpdate, reads them back raw in pages and processed; node-opcua reads them raw
// and processed too, and gets BadHistoryOperationUnsupported from a plugin without a
// store.
func TestHistoryFromPlugin(t *testing.T) {
	t.Parallel()
	const uri, plainURI = "urn:uastack:test:historian-plugin", "urn:uastack:test:plain-plugin"
	exe := plugintest.Process(t, "uastack.dev/plugins/plugintest/testplugin")
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.AddressSpace.NodeManagers = append(c.AddressSpace.NodeManagers,
			config.NodeManager{Name: "historian", Type: config.NodeManagerProcess, Path: exe, NamespaceURI: uri, Options: map[string]any{"history": true}},
			config.NodeManager{Name: "plain", Type: config.NodeManagerProcess, Path: exe, NamespaceURI: plainURI})
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

	plain := ua.NewStringNodeID(namespaceIndex(t, ctx, c, plainURI), "Level")
	out := nodepeer.Run(t, pluginHistoryScript, ts.URL, filepath.Join(t.TempDir(), "pki"), node.String(), plain.String(),
		t0.Format(time.RFC3339Nano), t0.Add(6*time.Second).Format(time.RFC3339Nano))
	peer := nodepeer.Results(t, out)
	require.Len(t, peer, 1)
	r := peer[0]
	require.NotContains(t, r, "error")
	raw := r["raw"].(map[string]any)
	require.Equal(t, "Good", raw["status"])
	require.Equal(t, []any{0.0, 10.0, 20.0, 30.0, 40.0, 50.0}, raw["values"])
	mx := r["maximum"].(map[string]any)
	require.Equal(t, "Good", mx["status"])
	require.Equal(t, []any{20.0, 50.0}, mx["values"])
	require.Equal(t, "BadHistoryOperationUnsupported", r["plain"])
}
