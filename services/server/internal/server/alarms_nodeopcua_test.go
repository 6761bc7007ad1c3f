package server_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/servertest"
	"uastack.dev/tools/nodepeer"
)

// alarmNodeScript: node-opcua's alarm API (installAlarmMonitoring, ClientAlarm's
// acknowledge and confirm) acknowledges and confirms the demo's exclusive limit alarm
// and reports the states its events showed; then a second client, on a new session and
// subscription, calls ConditionRefresh and reports the event types it got in order and
// the conditions between RefreshStart and RefreshEnd.
const alarmNodeScript = `
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, ClientSubscription, ClientMonitoredItem,
  TimestampsToReturn, constructEventFilter, installAlarmMonitoring, uninstallAlarmMonitoring,
  callConditionRefresh } = require("node-opcua-client");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const [url, pki] = process.argv.slice(2);
const until = async (cond, ms, what) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out: " + what);
    await new Promise((r) => setTimeout(r, 10));
  }
};
const exclusive = "ns=1;s=Demo.Simulation.SineExclusiveAlarm";
const id = (f) => f && f.value !== undefined && f.value !== null ? f.value : undefined;
(async () => {
  const clientCertificateManager = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  await clientCertificateManager.initialize();
  const connect = async () => {
    const client = OPCUAClient.create({ applicationName: "uastack-alarms", clientCertificateManager,
      securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, endpointMustExist: false,
      connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 } });
    await client.connect(url);
    return [client, await client.createSession()];
  };

  // 1. Acknowledge and confirm through the alarm list.
  let [client, session] = await connect();
  const list = await installAlarmMonitoring(session);
  const seen = [];
  list.on("alarmChanged", (a) => seen.push({ condition: a.conditionId.toString(),
    acked: id(a.fields.ackedState && a.fields.ackedState.id), confirmed: id(a.fields.confirmedState && a.fields.confirmedState.id) }));
  list.on("newAlarm", (a) => seen.push({ condition: a.conditionId.toString(), new: true,
    acked: id(a.fields.ackedState && a.fields.ackedState.id), confirmed: id(a.fields.confirmedState && a.fields.confirmedState.id) }));
  const find = () => list.alarms().find((a) => a.conditionId.toString() === exclusive);
  const settle = async (what, field) => {
    let code;
    for (let i = 0; i < 50; i++) {
      await until(() => find() && id(find().fields[field].id) === false, 15000, "unsettled " + field);
      code = await find()[what](session, what + " from node-opcua");
      if (code.name !== "BadEventIdUnknown") break; // a newer event overtook ours: again
      await new Promise((r) => setTimeout(r, 20));
    }
    return code.name;
  };
  const ack = await settle("acknowledge", "ackedState");
  await until(() => seen.some((s) => s.condition === exclusive && s.acked === true), 5000, "acked event");
  const confirm = await settle("confirm", "confirmedState");
  await until(() => seen.some((s) => s.condition === exclusive && s.confirmed === true), 5000, "confirmed event");
  await uninstallAlarmMonitoring(session);
  await session.close();
  await client.disconnect();

  // 2. Reconnect: a new session and subscription replay the retained conditions.
  [client, session] = await connect();
  const sub = ClientSubscription.create(session, { requestedPublishingInterval: 50, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 10, maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 1 });
  await new Promise((resolve, reject) => { sub.on("started", resolve); sub.on("internal_error", reject); });
  const filter = constructEventFilter(["EventType", "ConditionId", "Retain"]);
  const item = ClientMonitoredItem.create(sub, { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
    { queueSize: 1000, discardOldest: false, filter }, TimestampsToReturn.Neither);
  const events = [];
  item.on("changed", (f) => events.push({ type: f[0].value.toString(), condition: f[1].value ? f[1].value.toString() : null, retain: f[2].value }));
  await new Promise((resolve, reject) => { item.on("initialized", resolve); item.on("err", reject); });
  await new Promise((r) => setTimeout(r, 200));
  events.length = 0;
  const refresh = await callConditionRefresh(session, sub.subscriptionId);
  await until(() => events.some((e) => e.type === "ns=0;i=2788"), 5000, "RefreshEndEvent");
  const start = events.findIndex((e) => e.type === "ns=0;i=2787"), end = events.findIndex((e) => e.type === "ns=0;i=2788");
  const between = events.slice(start + 1, end);
  result({ ack, confirm, seen, refresh: refresh.name, start, end,
    replayed: between.filter((e) => e.condition).map((e) => ({ condition: e.condition, retain: e.retain })) });
  await sub.terminate();
  await session.close();
  await client.disconnect();
})().catch((e) => { result({ error: String(e && e.stack || e) }); process.exit(1); });
`

// TestAlarmsNodeOPCUA: node-opcua's alarm API acknowledges and confirms a demo alarm and
// sees the changes as events; ConditionRefresh after a reconnect replays the retained
// conditions between RefreshStart and RefreshEnd.
func TestAlarmsNodeOPCUA(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	out := nodepeer.Run(t, alarmNodeScript, ts.URL, filepath.Join(t.TempDir(), "pki"))
	res := nodepeer.Results(t, out)
	require.Len(t, res, 1)
	r := res[0]
	require.NotContains(t, r, "error")
	require.Equal(t, "Good", r["ack"])
	require.Equal(t, "Good", r["confirm"])
	var acked, confirmed bool
	for _, e := range r["seen"].([]any) {
		ev := e.(map[string]any)
		if ev["condition"] == "ns=1;s=Demo.Simulation.SineExclusiveAlarm" {
			acked = acked || ev["acked"] == true
			confirmed = confirmed || ev["confirmed"] == true
		}
	}
	require.True(t, acked, "an event showed AckedState/Id true")
	require.True(t, confirmed, "an event showed ConfirmedState/Id true")
	require.Equal(t, "Good", r["refresh"])
	require.GreaterOrEqual(t, r["start"].(float64), 0.0, "a RefreshStartEvent")
	require.Greater(t, r["end"].(float64), r["start"].(float64), "RefreshEnd after RefreshStart")
	replayed := map[string]bool{}
	for _, e := range r["replayed"].([]any) {
		ev := e.(map[string]any)
		require.Equal(t, true, ev["retain"], "only retained conditions are replayed: %v", ev)
		replayed[ev["condition"].(string)] = true
	}
	// Nobody acknowledged the non-exclusive alarm since it went active: it is retained.
	require.True(t, replayed["ns=1;s=Demo.Simulation.SineNonExclusiveAlarm"], "%v", r["replayed"])
}
