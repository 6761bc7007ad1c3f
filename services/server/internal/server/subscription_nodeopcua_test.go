package server_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/servertest"
	"uastack.dev/tools/nodepeer"
)

// subscriptionNodeScript subscribes to the demo Int32 with node-opcua's
// ClientSubscription, waits for the initial value, writes 42 and reports what the
// monitored item saw and how long the write took to arrive.
const subscriptionNodeScript = `
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, ClientSubscription,
  ClientMonitoredItem, TimestampsToReturn, DataType } = require("node-opcua-client");
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
  const client = OPCUAClient.create({ applicationName: "uastack-subscription", clientCertificateManager,
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 } });
  await client.connect(url);
  const session = await client.createSession();
  const nodeId = "ns=1;s=Demo.Scalar_Int32";
  await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 7 } } });
  const sub = ClientSubscription.create(session, { requestedPublishingInterval: 50, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 10, maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 1 });
  await new Promise((resolve, reject) => { sub.on("started", resolve); sub.on("internal_error", reject); });
  const item = ClientMonitoredItem.create(sub, { nodeId, attributeId: AttributeIds.Value },
    { samplingInterval: 50, discardOldest: true, queueSize: 10 }, TimestampsToReturn.Both);
  const values = [];
  item.on("changed", (dv) => values.push({ value: dv.value.value, status: dv.statusCode.name }));
  await until(() => values.length >= 1, 5000);
  const t0 = Date.now();
  await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 42 } } });
  await until(() => values.some((v) => v.value === 42), 5000);
  result({ interval: sub.publishingInterval, values, elapsedMs: Date.now() - t0 });
  await sub.terminate();
  await session.close();
  await client.disconnect();
})().catch((e) => { result({ error: String(e && e.stack || e) }); process.exit(1); });
`

// TestSubscriptionNodeOPCUA: node-opcua's client creates a subscription with a monitored
// item on the demo Int32, receives its initial value and the change a write makes.
func TestSubscriptionNodeOPCUA(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	out := nodepeer.Run(t, subscriptionNodeScript, ts.URL, filepath.Join(t.TempDir(), "pki"))
	res := nodepeer.Results(t, out)
	require.Len(t, res, 1)
	r := res[0]
	require.NotContains(t, r, "error")
	require.EqualValues(t, 50, r["interval"])
	values := r["values"].([]any)
	require.GreaterOrEqual(t, len(values), 2)
	require.Equal(t, map[string]any{"value": 7.0, "status": "Good"}, values[0])
	require.Equal(t, map[string]any{"value": 42.0, "status": "Good"}, values[len(values)-1])
	require.Less(t, r["elapsedMs"].(float64), 1000.0)
}
