package server_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/servertest"
	"uastack.dev/tools/nodepeer"
)

// pluginsNodeScript drives both example plugins with node-opcua's client in one node
// process: it browses, reads, writes and calls, then subscribes to Plant.Temperature and
// Device.Sine and reports {step: "subscribed", ...} with everything so far once the
// first temperature has arrived. The test then changes the simulator's register; the
// script waits for that value and for three different Sine values and reports
// {step: "done"}. A step that throws reports {step: "error"}.
// Arguments: url, client PKI folder, the device's and the plant's namespace URIs.
const pluginsNodeScript = `
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, BrowseDirection, DataType,
  ClientSubscription, ClientMonitoredItem, TimestampsToReturn } = require("node-opcua-client");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const [url, pki, deviceUri, plantUri] = process.argv.slice(2);
const until = async (what, cond, ms) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 5));
  }
};
const plain = (v) => (v instanceof Float32Array || ArrayBuffer.isView(v)) ? Array.from(v) : v;
(async () => {
  const clientCertificateManager = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  await clientCertificateManager.initialize();
  const client = OPCUAClient.create({ applicationName: "uastack-plugins", clientCertificateManager,
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 } });
  await client.connect(url);
  const session = await client.createSession();
  const r = {};

  const [nsArray] = await session.read([{ nodeId: "ns=0;i=2255", attributeId: AttributeIds.Value }]);
  const dev = nsArray.value.value.indexOf(deviceUri), plant = nsArray.value.value.indexOf(plantUri);
  r.namespaces = [dev, plant];
  const d = (name) => "ns=" + dev + ";s=Device." + name;
  const p = (name) => "ns=" + plant + ";s=Plant." + name;

  const browse = async (nodeId) => {
    const res = await session.browse({ nodeId, browseDirection: BrowseDirection.Forward,
      referenceTypeId: "HierarchicalReferences", includeSubtypes: true, resultMask: 63 });
    const out = {};
    for (const ref of res.references) out[ref.browseName.name] = ref.nodeId.toString();
    return { status: res.statusCode.name, refs: out };
  };
  r.browse = { objects: await browse("ns=0;i=85"), device: await browse("ns=" + dev + ";s=Device"),
    plant: await browse("ns=" + plant + ";s=Plant") };

  const read = async (ids) => (await session.read(ids.map((nodeId) => ({ nodeId, attributeId: AttributeIds.Value }))))
    .map((dv) => ({ status: dv.statusCode.name, type: DataType[dv.value.dataType], value: plain(dv.value.value) }));
  r.read = await read([p("Temperature"), p("Setpoint"), p("Gain"), p("Pump"), p("Valve"), p("DoorClosed"),
    d("Sine"), d("Setpoint")]);

  const wv = (nodeId, dataType, value) => ({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType, value } } });
  r.write = (await session.write([wv(p("Setpoint"), DataType.UInt16, 4321), wv(p("Gain"), DataType.Float, -1.5),
    wv(p("Valve"), DataType.Boolean, true), wv(p("DoorClosed"), DataType.Boolean, false), wv(d("Setpoint"), DataType.Double, 10)]))
    .map((s) => s.name);
  r.readBack = await read([p("Setpoint"), p("Gain"), p("Valve"), d("Setpoint")]);

  const call = await session.call({ objectId: "ns=" + dev + ";s=Device", methodId: d("Step"),
    inputArguments: [{ dataType: DataType.Double, value: -2.5 }] });
  r.call = { status: call.statusCode.name, out: call.outputArguments.map((v) => [DataType[v.dataType], v.value]) };

  const sub = ClientSubscription.create(session, { requestedPublishingInterval: 50, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 10, maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 1 });
  await new Promise((resolve, reject) => { sub.on("started", resolve); sub.on("internal_error", reject); });
  const watch = (nodeId) => {
    const values = [];
    const item = ClientMonitoredItem.create(sub, { nodeId, attributeId: AttributeIds.Value },
      { samplingInterval: 50, discardOldest: true, queueSize: 10 }, TimestampsToReturn.Both);
    item.on("changed", (dv) => values.push({ status: dv.statusCode.name, value: dv.value.value }));
    return values;
  };
  const temps = watch(p("Temperature")), sines = watch(d("Sine"));
  await until("the first temperature", () => temps.length >= 1, 5000);
  r.firstTemperature = temps[0];
  result({ step: "subscribed", ...r });

  await until("the temperature the test sets", () => temps.some((v) => v.value === 230), 5000);
  await until("three Sine values", () => new Set(sines.map((v) => v.value)).size >= 3, 5000);
  result({ step: "done", temperatures: temps, sines });
  await sub.terminate();
  await session.close();
  await client.disconnect();
})().catch((e) => { result({ step: "error", error: String(e && e.stack || e) }); process.exit(1); });
`

// TestPluginsNodeOPCUA is TestPluginsGopcua for node-opcua's client, in one node process
// that does every step: browse, read, write, call and subscribe, against the device as a
// WASM module and the Modbus driver as a plugin process.
func TestPluginsNodeOPCUA(t *testing.T) {
	t.Parallel()
	s := startPlantSim(t)
	ts := servertest.New(t, servertest.Options{Configure: examplePlugins(t, s.Addr())})
	p := nodepeer.Start(t, pluginsNodeScript, ts.URL, filepath.Join(t.TempDir(), "pki"), deviceURI, plantURI)
	r := p.Ready
	require.Equal(t, "subscribed", r["step"], "%v", r)

	ns := r["namespaces"].([]any)
	dev, plant := ns[0].(float64), ns[1].(float64)
	require.Positive(t, dev)
	require.Positive(t, plant)
	id := func(ns float64, s string) string { return "ns=" + itoa(ns) + ";s=" + s }
	browse := r["browse"].(map[string]any)
	refs := func(which string) map[string]any {
		b := browse[which].(map[string]any)
		require.Equal(t, "Good", b["status"], which)
		return b["refs"].(map[string]any)
	}
	require.Equal(t, id(dev, "Device"), refs("objects")["Device"])
	require.Equal(t, id(plant, "Plant"), refs("objects")["Plant"])
	for _, name := range []string{"Sine", "Ramp", "Counter", "Setpoint", "Step"} {
		require.Equal(t, id(dev, "Device."+name), refs("device")[name], name)
	}
	for _, name := range []string{"Temperature", "Setpoint", "Gain", "Pump", "Valve", "DoorClosed"} {
		require.Equal(t, id(plant, "Plant."+name), refs("plant")[name], name)
	}

	read := r["read"].([]any)
	want := []map[string]any{
		{"status": "Good", "type": "Int16", "value": 215.0},
		{"status": "Good", "type": "UInt16", "value": 1234.0},
		{"status": "Good", "type": "Float", "value": float64(float32(3.14))},
		{"status": "Good", "type": "Boolean", "value": true},
		{"status": "Good", "type": "Boolean", "value": false},
		{"status": "Good", "type": "Boolean", "value": true},
	}
	for i, w := range want {
		require.Equal(t, any(w), read[i], "read %d", i)
	}
	sine := read[6].(map[string]any)
	require.Equal(t, "Good", sine["status"])
	require.Equal(t, "Double", sine["type"])
	require.InDelta(t, 0, sine["value"], 1)
	require.Equal(t, map[string]any{"status": "Good", "type": "Double", "value": 0.0}, read[7])

	// The writes reached the simulator; the read-only discrete input was refused.
	require.Equal(t, []any{"Good", "Good", "Good", "BadNotWritable", "Good"}, r["write"])
	require.Equal(t, []uint16{4321, 0xbfc0, 0}, s.Holding(0, 3)) // -1.5 as a float32, high word first
	require.Equal(t, []bool{true, true}, s.Coils(0, 2))
	require.Equal(t, []bool{true}, s.Discrete(0, 1))
	require.Equal(t, []any{
		map[string]any{"status": "Good", "type": "UInt16", "value": 4321.0},
		map[string]any{"status": "Good", "type": "Float", "value": -1.5},
		map[string]any{"status": "Good", "type": "Boolean", "value": true},
		map[string]any{"status": "Good", "type": "Double", "value": 10.0},
	}, r["readBack"])
	require.Equal(t, map[string]any{"status": "Good", "out": []any{[]any{"Double", 7.5}}}, r["call"])
	require.Equal(t, map[string]any{"status": "Good", "value": 215.0}, r["firstTemperature"])

	// The monitored temperature follows the simulator's register.
	s.SetInput(0, 230)
	var done map[string]any
	require.Eventually(t, func() bool {
		for _, res := range p.Results(t) {
			if res["step"] == "done" || res["step"] == "error" {
				done = res
				return true
			}
		}
		return false
	}, 15*time.Second, 10*time.Millisecond, "the script did not finish")
	require.Equal(t, "done", done["step"], "%v", done)
	temps := done["temperatures"].([]any)
	require.Equal(t, map[string]any{"status": "Good", "value": 230.0}, temps[len(temps)-1])
	for _, v := range done["sines"].([]any) {
		require.Equal(t, "Good", v.(map[string]any)["status"])
	}
}

func itoa(f float64) string { return strconv.Itoa(int(f)) }
