package server_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/servertest"
	"uastack.dev/tools/nodepeer"
)

// historyNodeScript reads the demo's Sine with node-opcua's client: its raw history
// (session.readHistoryValue), a first page of two values, its Average and Maximum over
// one-second intervals (session.readAggregateValue), and the history of Demo/Events
// after calling Emit (a HistoryReadRequest with ReadEventDetails and an EventFilter).
const historyNodeScript = `
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, DataType, HistoryReadRequest, ReadEventDetails,
  TimestampsToReturn, constructEventFilter } = require("node-opcua-client");
const { AggregateFunction } = require("node-opcua-constants");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const [url, pki] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  const clientCertificateManager = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  await clientCertificateManager.initialize();
  const client = OPCUAClient.create({ applicationName: "uastack-history", clientCertificateManager,
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 } });
  await client.connect(url);
  const session = await client.createSession();
  const sine = "ns=1;s=Demo.Simulation.Sine";
  const from = new Date(Date.now() - 3600 * 1000);
  let raw;
  for (let i = 0; i < 200; i++) {
    raw = await session.readHistoryValue(sine, from, new Date(Date.now() + 3600 * 1000));
    // readHistoryValue asks for the bounds: none is found an hour away from the data.
    if (raw.historyData && raw.historyData.dataValues && raw.historyData.dataValues.length >= 14) break;
    await sleep(100);
  }
  const values = raw.historyData.dataValues.filter((v) => v.statusCode.value === 0);
  const bounds = raw.historyData.dataValues.filter((v) => v.statusCode.value !== 0);
  const start = values[0].sourceTimestamp, end = new Date(values[values.length - 1].sourceTimestamp.getTime() + 1);
  const page = await session.readHistoryValue(sine, start, end, { numValuesPerNode: 2 });
  const agg = await session.readAggregateValue([{ nodeId: sine }, { nodeId: sine }], start, end,
    [AggregateFunction.Average, AggregateFunction.Maximum], 1000);
  const emitted = new Date(Date.now() - 1000);
  await session.call({ objectId: "ns=1;s=Demo.Events", methodId: "ns=1;s=Demo.Events.Emit", inputArguments: [
    { dataType: DataType.UInt16, value: 700 }, { dataType: DataType.String, value: "node history" }] });
  let events = [];
  for (let i = 0; i < 100 && !events.some((e) => e.message === "node history"); i++) {
    await sleep(100);
    const res = await session.historyRead(new HistoryReadRequest({
      historyReadDetails: new ReadEventDetails({ startTime: emitted, endTime: new Date(Date.now() + 1000), numValuesPerNode: 0,
        filter: constructEventFilter(["Message", "Severity", "SourceName"]) }),
      timestampsToReturn: TimestampsToReturn.Both, nodesToRead: [{ nodeId: "ns=1;s=Demo.Events" }] }));
    const r = res.results[0];
    events = (r.historyData.events || []).map((e) => ({ message: e.eventFields[0].value.text,
      severity: e.eventFields[1].value, source: e.eventFields[2].value, status: r.statusCode.name }));
  }
  const dv = (v) => ({ value: v.value.value, status: v.statusCode.value, time: v.sourceTimestamp.toISOString() });
  result({
    raw: { status: raw.statusCode.name, values: values.map(dv), bounds: bounds.map(dv), from: from.toISOString() },
    page: { status: page.statusCode.name, count: page.historyData.dataValues.length, continuation: !!page.continuationPoint },
    average: { status: agg[0].statusCode.name, values: agg[0].historyData.dataValues.map(dv) },
    maximum: { status: agg[1].statusCode.name, values: agg[1].historyData.dataValues.map(dv) },
    events,
  });
  await session.close();
  await client.disconnect();
})().catch((e) => { result({ error: String(e && e.stack || e) }); process.exit(1); });
`

// TestHistoryNodeOPCUA: node-opcua's client reads the raw and processed history of the
// demo's Sine and the history of the demo events. The aggregates are checked against
// the raw values node-opcua read.
func TestHistoryNodeOPCUA(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	out := nodepeer.Run(t, historyNodeScript, ts.URL, filepath.Join(t.TempDir(), "pki"))
	res := nodepeer.Results(t, out)
	require.Len(t, res, 1)
	r := res[0]
	require.NotContains(t, r, "error")

	raw := r["raw"].(map[string]any)
	require.Equal(t, "Good", raw["status"])
	bounds := raw["bounds"].([]any)
	require.Len(t, bounds, 2, "node-opcua asks for the bounds")
	require.Equal(t, float64(0x80D70000), bounds[0].(map[string]any)["status"], "BadBoundNotFound")
	require.Equal(t, raw["from"], bounds[0].(map[string]any)["time"], "at the start time")
	values := raw["values"].([]any)
	require.GreaterOrEqual(t, len(values), 12)
	type point struct {
		x float64
		t string
	}
	var pts []point
	for _, v := range values {
		m := v.(map[string]any)
		require.Equal(t, 0.0, m["status"])
		pts = append(pts, point{m["value"].(float64), m["time"].(string)})
		if len(pts) > 1 {
			require.Greater(t, pts[len(pts)-1].t, pts[len(pts)-2].t, "oldest first")
		}
	}

	page := r["page"].(map[string]any)
	require.Equal(t, 2.0, page["count"])
	require.Equal(t, true, page["continuation"])

	// Every raw value lies in one of the one-second intervals from the first value's
	// time: the averages' mean weighted by nothing, and the maxima's maximum, match.
	avg := r["average"].(map[string]any)
	require.Equal(t, "Good", avg["status"])
	maxs := r["maximum"].(map[string]any)["values"].([]any)
	avgs := avg["values"].([]any)
	require.Equal(t, len(avgs), len(maxs))
	require.GreaterOrEqual(t, len(avgs), 2)
	first := avgs[0].(map[string]any)
	require.Equal(t, pts[0].t, first["time"], "each interval is stamped with its start")
	require.Equal(t, float64(0x0401), first["status"], "Good with the Calculated bit")
	best := -2.0
	for _, m := range maxs {
		if x, ok := m.(map[string]any)["value"].(float64); ok && x > best {
			best = x
		}
	}
	want := -2.0
	for _, p := range pts {
		want = max(want, p.x)
	}
	require.Equal(t, want, best)

	var mine []map[string]any
	for _, e := range r["events"].([]any) {
		ev := e.(map[string]any)
		if ev["message"] == "node history" {
			mine = append(mine, ev)
		}
	}
	require.Len(t, mine, 1)
	require.Equal(t, 700.0, mine[0]["severity"])
	require.Equal(t, "Demo/Events", mine[0]["source"])
	require.Equal(t, "Good", mine[0]["status"])
}
