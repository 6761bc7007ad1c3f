package server_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/servertest"
	"uastack.dev/tools/nodepeer"
)

// eventNodeScript monitors Demo/Events with node-opcua's ClientMonitoredItem on the
// EventNotifier attribute, an EventFilter from constructEventFilter and a where clause
// Severity > 500, calls Demo/Events/Emit three times and reports the events it got.
const eventNodeScript = `
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, ClientSubscription,
  ClientMonitoredItem, TimestampsToReturn, DataType, constructEventFilter, ContentFilter, FilterOperator,
  LiteralOperand, SimpleAttributeOperand, resolveNodeId, Variant } = require("node-opcua-client");
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
  const client = OPCUAClient.create({ applicationName: "uastack-events", clientCertificateManager,
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 } });
  await client.connect(url);
  const session = await client.createSession();
  const sub = ClientSubscription.create(session, { requestedPublishingInterval: 50, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 10, maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 1 });
  await new Promise((resolve, reject) => { sub.on("started", resolve); sub.on("internal_error", reject); });
  const filter = constructEventFilter(["EventType", "Severity", "Message", "SourceName"]);
  filter.whereClause = new ContentFilter({ elements: [{ filterOperator: FilterOperator.GreaterThan, filterOperands: [
    new SimpleAttributeOperand({ typeDefinitionId: resolveNodeId("BaseEventType"),
      browsePath: [{ namespaceIndex: 0, name: "Severity" }], attributeId: AttributeIds.Value }),
    new LiteralOperand({ value: new Variant({ dataType: DataType.UInt16, value: 500 }) }) ] }] });
  const source = "ns=1;s=Demo.Events";
  const item = ClientMonitoredItem.create(sub, { nodeId: source, attributeId: AttributeIds.EventNotifier },
    { queueSize: 100, discardOldest: true, filter }, TimestampsToReturn.Neither);
  const events = [];
  item.on("changed", (fields) => events.push({ type: fields[0].value.toString(), severity: fields[1].value,
    message: fields[2].value.text, source: fields[3].value }));
  await new Promise((resolve, reject) => { item.on("initialized", resolve); item.on("err", reject); });
  const emit = (severity, message) => ({ objectId: source, methodId: "ns=1;s=Demo.Events.Emit", inputArguments: [
    { dataType: DataType.UInt16, value: severity }, { dataType: DataType.String, value: message }] });
  const calls = await session.call([emit(200, "node low"), emit(800, "node high"), emit(600, "node mid")]);
  await until(() => events.filter((e) => e.message.startsWith("node")).length >= 2, 5000);
  await new Promise((r) => setTimeout(r, 200)); // room for a wrongly passed event to arrive
  result({ calls: calls.map((c) => c.statusCode.name), events });
  await sub.terminate();
  await session.close();
  await client.disconnect();
})().catch((e) => { result({ error: String(e && e.stack || e) }); process.exit(1); });
`

// TestEventsNodeOPCUA: node-opcua's client receives only the demo events its where
// clause lets through.
func TestEventsNodeOPCUA(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	out := nodepeer.Run(t, eventNodeScript, ts.URL, filepath.Join(t.TempDir(), "pki"))
	res := nodepeer.Results(t, out)
	require.Len(t, res, 1)
	r := res[0]
	require.NotContains(t, r, "error")
	require.Equal(t, []any{"Good", "Good", "Good"}, r["calls"])
	var mine []string
	for _, e := range r["events"].([]any) {
		ev := e.(map[string]any)
		require.Greater(t, ev["severity"].(float64), 500.0, "%v", ev)
		require.Equal(t, "Demo/Events", ev["source"])
		require.Equal(t, "ns=1;s=DemoEventType", ev["type"])
		if msg := ev["message"].(string); strings.HasPrefix(msg, "node") {
			mine = append(mine, msg)
		}
	}
	require.Equal(t, []string{"node high", "node mid"}, mine)
}
