package clienttest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/tools/nodepeer"
)

// nodeCounterServer is a node-opcua server on port argv[2] with a writable Int32
// ns=1;s=Counter and anonymous access (its endpoints include None).
const nodeCounterServer = `
const { OPCUAServer } = require("node-opcua-server");
const { DataType } = require("node-opcua-client");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
(async () => {
  const [port, pki] = process.argv.slice(2);
  const serverCertificateManager = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  const server = new OPCUAServer({
    port: Number(port), serverCertificateManager, allowAnonymous: true,
    serverInfo: { applicationUri: "urn:127.0.0.1:node-opcua:counter" },
  });
  await server.initialize();
  const ns = server.engine.addressSpace.getOwnNamespace();
  ns.addVariable({
    organizedBy: server.engine.addressSpace.rootFolder.objects, browseName: "Counter", nodeId: "s=Counter",
    dataType: "Int32", value: { dataType: DataType.Int32, value: 0 },
    accessLevel: "CurrentRead | CurrentWrite", userAccessLevel: "CurrentRead | CurrentWrite",
  });
  await server.start();
  process.on("SIGINT", async () => { await server.shutdown(100); process.exit(0); });
  result({ ready: true });
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestSubscriptionNodeOPCUA runs the reconnect scenario against node-opcua's server: the
// TCP connection is cut while values are written, the session is re-activated, and
// every value arrives, in order.
func TestSubscriptionNodeOPCUA(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	port := nodepeer.FreePort(t)
	nodepeer.Start(t, nodeCounterServer, strconv.Itoa(port), t.TempDir())
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p := newProxy(t, addr)
	none := client.Security(policy.URINone, ua.MessageSecurityModeNone)
	c := dial(t, ctx, p.URL(), none, fastBackoff)
	w := dial(t, ctx, "opc.tcp://"+addr, none)
	counter := codec.NewStringNodeId(1, "Counter")
	sess := c.SessionID()

	rec := newRecorder(3)
	sub, err := c.Subscribe(ctx, client.SubscriptionParams{Interval: 100 * time.Millisecond, Notify: rec.notify})
	require.NoError(t, err)
	res, err := sub.Monitor(ctx, client.MonitorItem{Node: counter, Handle: 3, QueueSize: 1000, SamplingInterval: client.FastestSampling})
	require.NoError(t, err)
	require.True(t, res[0].Status.IsGood(), res[0].Status)
	rec.waitFor(t, 0, 10*time.Second)
	// node-opcua samples its variables: write slower than it samples, so that every
	// value is seen.
	gap := max(3*res[0].RevisedSamplingInterval, 30*time.Millisecond)
	t.Logf("revised sampling interval %v", res[0].RevisedSamplingInterval)

	const n = 30
	cuts := 0
	for v := int32(1); v <= n; v++ {
		code, err := w.WriteValue(ctx, counter, codec.Int32Variant(v))
		require.NoError(t, err)
		require.True(t, code.IsGood(), code)
		if v%10 == 5 {
			cuts += p.Drop()
		}
		time.Sleep(gap)
	}
	require.GreaterOrEqual(t, cuts, 2)
	rec.waitFor(t, n, 30*time.Second)
	// node-opcua resends the current value of every item after each ActivateSession
	// (server_session.js resendMonitoredItemInitialValues), re-activation on a new
	// channel included: the value before a cut may come twice, in two messages. Nothing
	// else may repeat, and nothing may be missing.
	vals := rec.values()
	got := slices.Compact(slices.Clone(vals))
	require.Equal(t, sequence(n), got, "every value, in order: %v", rec)
	require.LessOrEqual(t, len(vals)-len(got), cuts, "repeats only after a re-activation: %v", rec)
	require.Equal(t, sess, c.SessionID(), "the session was re-activated")
	st := sub.Stats()
	require.Zero(t, st.Lost)
	require.Zero(t, st.Recreated)
	t.Logf("stats: %+v", st)
}
