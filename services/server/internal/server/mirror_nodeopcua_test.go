package server_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/tools/nodepeer"
)

// reactivateNodeScript creates a session on the server at argv[2] with node-opcua's
// client, then activates that session on the server at argv[3] by hand from a second
// client (reactivateSession, Part 4 §6.6.2: the client of a HotAndMirrored set moves by
// activating its session on a backup), and reads the ServerArray through it: its first
// entry names the server that answers.
const reactivateNodeScript = `
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds } = require("node-opcua-client");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const [urlA, urlB, pki] = process.argv.slice(2);
(async () => {
  const clientCertificateManager = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  await clientCertificateManager.initialize();
  const options = { applicationName: "uastack-reactivate", clientCertificateManager,
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 } };
  const a = OPCUAClient.create(options);
  await a.connect(urlA);
  const session = await a.createSession();
  const before = await session.read({ nodeId: "ns=0;i=2254", attributeId: AttributeIds.Value });
  const support = await session.read({ nodeId: "ns=0;i=3709", attributeId: AttributeIds.Value });
  const id = session.sessionId.toString();
  // node-opcua reactivates a session only on the endpoint its client has; a client
  // whose server is gone lets the session go from that client first, by hand.
  a._removeSession(session);
  const b = OPCUAClient.create(options);
  await b.connect(urlB);
  await b.reactivateSession(session);
  const after = await session.read({ nodeId: "ns=0;i=2254", attributeId: AttributeIds.Value });
  result({ sessionBefore: id, sessionAfter: session.sessionId.toString(), support: support.value.value,
    serverBefore: before.value.value[0], serverAfter: after.value.value[0], status: after.statusCode.name });
  await session.close();
  await b.disconnect();
  await a.disconnect();
})().catch((e) => { result({ error: String(e && e.stack || e) }); process.exit(1); });
`

// TestMirrorNodeOPCUAReactivate: a third-party client moves its session to another
// server of the set by hand: node-opcua creates a session on A and reactivates it on B,
// which takes it over; the same session then reads B's ServerArray.
func TestMirrorNodeOPCUAReactivate(t *testing.T) {
	t.Parallel()
	nats := startNATS(t)
	key := newClusterKey(t)
	c := newMirrorClient(t)
	a := startMirrorNode(t, nats.ClientURL(), "nodeopcua", key, "A", c)
	b := startMirrorNode(t, nats.ClientURL(), "nodeopcua", key, "B", c)
	res := nodepeer.Results(t, nodepeer.Run(t, reactivateNodeScript, a.ts.URL, b.ts.URL, filepath.Join(t.TempDir(), "pki")))
	require.Len(t, res, 1)
	r := res[0]
	require.NotContains(t, r, "error")
	require.Equal(t, r["sessionBefore"], r["sessionAfter"])
	require.EqualValues(t, 5, r["support"], "RedundancySupport HotAndMirrored")
	require.Equal(t, "urn:127.0.0.1:uastack:mirrortest:A", r["serverBefore"])
	require.Equal(t, "urn:127.0.0.1:uastack:mirrortest:B", r["serverAfter"])
	require.Equal(t, "Good", r["status"])
}
