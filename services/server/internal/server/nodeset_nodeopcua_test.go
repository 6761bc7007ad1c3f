package server_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/tools/nodepeer"
)

// nodesetNodeScript drives the server that loaded DI and the pump model with
// node-opcua's client: it browses Objects -> DeviceSet -> Pump1, reads the properties
// and the PumpSettings value, which node-opcua decodes by itself from the DataType's
// DataTypeDefinition, monitors Speed while it writes it, and writes a PumpSettings it
// built from the same definition.
const nodesetNodeScript = `
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, BrowseDirection, DataType,
  ClientSubscription, ClientMonitoredItem, TimestampsToReturn, coerceNodeId } = require("node-opcua-client");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const [url, pki] = process.argv.slice(2);
const until = async (cond, ms) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
};
(async () => {
  const clientCertificateManager = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  await clientCertificateManager.initialize();
  const client = OPCUAClient.create({ applicationName: "uastack-nodeset", clientCertificateManager,
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 } });
  await client.connect(url);
  const session = await client.createSession();
  const out = {};
  const [ns] = await session.read([{ nodeId: "i=2255", attributeId: AttributeIds.Value }]);
  out.namespaces = ns.value.value;
  const children = async (nodeId) => {
    const r = await session.browse({ nodeId, browseDirection: BrowseDirection.Forward,
      referenceTypeId: "HierarchicalReferences", includeSubtypes: true, resultMask: 63 });
    const m = {};
    for (const ref of r.references) m[ref.browseName.name] = ref.nodeId.toString();
    return m;
  };
  const objects = await children("i=85");
  out.deviceSet = objects.DeviceSet;
  const devices = await children(objects.DeviceSet);
  out.pump = devices.Pump1;
  const props = await children(devices.Pump1);
  out.props = Object.keys(props).sort();
  const type = await session.browse({ nodeId: devices.Pump1, browseDirection: BrowseDirection.Forward,
    referenceTypeId: "HasTypeDefinition", resultMask: 63 });
  out.typeDefinition = type.references[0].browseName.toString();
  const dis = await session.read([{ nodeId: "ns=2;i=1002", attributeId: AttributeIds.BrowseName },
    { nodeId: "ns=2;i=1002", attributeId: AttributeIds.IsAbstract }]);
  out.deviceType = [dis[0].value.value.toString(), dis[1].value.value];

  const values = await session.read([props.SerialNumber, props.Manufacturer, props.RevisionCounter, props.Settings]
    .map((nodeId) => ({ nodeId, attributeId: AttributeIds.Value })));
  out.statuses = values.map((v) => v.statusCode.name);
  out.serial = values[0].value.value;
  out.manufacturer = values[1].value.value.text;
  out.revision = values[2].value.value;
  const s = values[3].value.value;
  out.settings = { type: s.constructor.name, speed: s.speed, label: s.label, limits: s.limits && { low: s.limits.low, high: s.limits.high },
    mode: s.mode, health: s.health, setpoints: Array.from(s.setpoints || []) };

  const sub = ClientSubscription.create(session, { requestedPublishingInterval: 50, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 10, maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 1 });
  await new Promise((resolve, reject) => { sub.on("started", resolve); sub.on("internal_error", reject); });
  const seen = [];
  const item = ClientMonitoredItem.create(sub, { nodeId: props.Speed, attributeId: AttributeIds.Value },
    { samplingInterval: 0, queueSize: 10, discardOldest: true }, TimestampsToReturn.Both);
  item.on("changed", (dv) => seen.push(dv.value.value));
  await new Promise((resolve, reject) => { item.on("initialized", resolve); item.on("err", reject); });
  await until(() => seen.length >= 1, 5000);
  out.writeSpeed = (await session.write({ nodeId: props.Speed, attributeId: AttributeIds.Value,
    value: { value: { dataType: DataType.Double, value: 77.25 } } })).name;
  await until(() => seen.includes(77.25), 5000);
  out.speeds = seen;
  out.writeTemperature = (await session.write({ nodeId: props.Temperature, attributeId: AttributeIds.Value,
    value: { value: { dataType: DataType.Double, value: 1 } } })).name;

  const built = await session.constructExtensionObject(coerceNodeId("ns=3;i=3001"), { speed: 5.5, label: "from node-opcua",
    limits: { low: 1, high: 2 }, mode: 1, health: 3, setpoints: [7, 8, 9] });
  out.writeSettings = (await session.write({ nodeId: props.Settings, attributeId: AttributeIds.Value,
    value: { value: { dataType: DataType.ExtensionObject, value: built } } })).name;
  const [again] = await session.read([{ nodeId: props.Settings, attributeId: AttributeIds.Value }]);
  const a = again.value.value;
  out.settingsAfter = { speed: a.speed, label: a.label, limits: { low: a.limits.low, high: a.limits.high }, mode: a.mode,
    health: a.health, setpoints: Array.from(a.setpoints) };
  result(out);
  await sub.terminate();
  await session.close();
  await client.disconnect();
})().catch((e) => { result({ error: String(e && e.stack || e) }); process.exit(1); });
`

// TestNodesetNodeOPCUA: node-opcua's client browses and reads DI and the pump model,
// decodes the model's structure by itself, and writes and monitors imported variables.
func TestNodesetNodeOPCUA(t *testing.T) {
	t.Parallel()
	ts := nodesetServer(t)
	out := nodepeer.Run(t, nodesetNodeScript, ts.URL, filepath.Join(t.TempDir(), "pki"))
	res := nodepeer.Results(t, out)
	require.Len(t, res, 1)
	r := res[0]
	require.NotContains(t, r, "error")
	require.Equal(t, []any{"http://opcfoundation.org/UA/", "urn:uastack:demo", "http://opcfoundation.org/UA/DI/", "urn:uastack:test:pump"}, r["namespaces"])
	require.Equal(t, "ns=2;i=5001", r["deviceSet"])
	require.Equal(t, "ns=3;i=6001", r["pump"])
	require.Equal(t, []any{"DeviceHealth", "Manufacturer", "RevisionCounter", "SerialNumber", "Settings", "Speed", "Temperature"}, r["props"])
	require.Equal(t, "3:PumpType", r["typeDefinition"])
	require.Equal(t, []any{"2:DeviceType", true}, r["deviceType"])
	require.Equal(t, []any{"Good", "Good", "Good", "Good"}, r["statuses"])
	require.Equal(t, "SN-0042", r["serial"])
	require.Equal(t, "uastack pumps", r["manufacturer"])
	require.Equal(t, 3.0, r["revision"])
	require.Equal(t, map[string]any{"type": "PumpSettings", "speed": 1450.5, "label": "main pump",
		"limits": map[string]any{"low": 0.0, "high": 3000.0}, "mode": 2.0, "health": 0.0,
		"setpoints": []any{100.0, 200.25}}, r["settings"])
	require.Equal(t, "Good", r["writeSpeed"])
	require.Equal(t, []any{1450.5, 77.25}, r["speeds"])
	require.Equal(t, "BadNotWritable", r["writeTemperature"])
	require.Equal(t, "Good", r["writeSettings"])
	require.Equal(t, map[string]any{"speed": 5.5, "label": "from node-opcua", "limits": map[string]any{"low": 1.0, "high": 2.0},
		"mode": 1.0, "health": 3.0, "setpoints": []any{7.0, 8.0, 9.0}}, r["settingsAfter"])
}
