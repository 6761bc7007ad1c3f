package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/nodepeer"
	"uastack.dev/services/server/internal/servertest"
)

// nodeOPCUAPrologue is shared by the node-opcua scripts: it loads the client, runs main
// and turns any uncaught failure into a non-zero exit with the stack on stderr.
const nodeOPCUAPrologue = `
const opcua = require("node-opcua-client");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const { OPCUAClient, MessageSecurityMode, SecurityPolicy,
  AttributeIds, BrowseDirection, DataType, UserTokenType } = opcua;
const [url, pki, user, password] = process.argv.slice(2);

async function newClient(securityMode, securityPolicy) {
  const clientCertificateManager = new OPCUACertificateManager({
    rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  await clientCertificateManager.initialize();
  return OPCUAClient.create({
    applicationName: "uastack-nodeopcua-test",
    securityMode, securityPolicy, clientCertificateManager,
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 30000,
  });
}

function statusOf(dv) { return dv.statusCode.name; }

process.on("unhandledRejection", (e) => { console.error(e); process.exit(2); });
`

// TestNodeOPCUANoneAnonymous drives the server with node-opcua's client over
// SecurityPolicy None with an anonymous session: ServerStatus and CurrentTime with their
// types, a browse of the Objects folder, an unknown node, an invalid attribute, then close.
func TestNodeOPCUANoneAnonymous(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	out := nodepeer.Run(t, nodeOPCUAPrologue+`
(async () => {
  const client = await newClient(MessageSecurityMode.None, SecurityPolicy.None);
  await client.connect(url);
  const session = await client.createSession();
  result({ step: "session", policy: client.securityPolicy, mode: MessageSecurityMode[client.securityMode] });

  const dvs = await session.read([
    { nodeId: "ns=0;i=2256", attributeId: AttributeIds.Value },
    { nodeId: "ns=0;i=2258", attributeId: AttributeIds.Value },
    { nodeId: "ns=0;i=99999", attributeId: AttributeIds.Value },
    { nodeId: "ns=0;i=2258", attributeId: 999 },
  ]);
  const st = dvs[0].value.value;
  result({ step: "serverStatus", status: statusOf(dvs[0]), dataType: DataType[dvs[0].value.dataType],
    type: st && st.constructor.name, state: st && st.state, productUri: st && st.buildInfo.productUri,
    currentTime: st && st.currentTime.toISOString(), startTime: st && st.startTime.toISOString() });
  const now = dvs[1].value.value;
  result({ step: "currentTime", status: statusOf(dvs[1]), dataType: DataType[dvs[1].value.dataType],
    isDate: now instanceof Date, value: now instanceof Date ? now.toISOString() : String(now) });
  result({ step: "unknownNode", status: statusOf(dvs[2]) });
  result({ step: "badAttribute", status: statusOf(dvs[3]) });

  const br = await session.browse({ nodeId: "ns=0;i=85", browseDirection: BrowseDirection.Forward,
    referenceTypeId: "HierarchicalReferences", includeSubtypes: true, resultMask: 63 });
  result({ step: "browse", status: br.statusCode.name,
    names: br.references.map((r) => r.browseName.name),
    server: br.references.filter((r) => r.browseName.name === "Server").map((r) => r.nodeId.toString()) });

  await session.close();
  await client.disconnect();
  result({ step: "closed" });
})();
`, ts.URL, t.TempDir())

	res := byStep(t, nodepeer.Results(t, out))
	require.Equal(t, "None", res["session"]["mode"])
	require.Equal(t, "http://opcfoundation.org/UA/SecurityPolicy#None", res["session"]["policy"])

	st := res["serverStatus"]
	require.Equal(t, "Good", st["status"])
	require.Equal(t, "ExtensionObject", st["dataType"])
	require.Equal(t, "ServerStatusDataType", st["type"])
	require.EqualValues(t, 0, st["state"]) // Running
	require.Equal(t, "urn:uastack.dev:server", st["productUri"])
	current := parseTime(t, st["currentTime"])
	require.WithinDuration(t, time.Now(), current, 10*time.Second)
	require.False(t, parseTime(t, st["startTime"]).After(current))

	ct := res["currentTime"]
	require.Equal(t, "Good", ct["status"])
	require.Equal(t, "DateTime", ct["dataType"])
	require.Equal(t, true, ct["isDate"])
	require.WithinDuration(t, time.Now(), parseTime(t, ct["value"]), 10*time.Second)

	require.Equal(t, "BadNodeIdUnknown", res["unknownNode"]["status"])
	require.Equal(t, "BadAttributeIdInvalid", res["badAttribute"]["status"])

	br := res["browse"]
	require.Equal(t, "Good", br["status"])
	require.Contains(t, br["names"], "Server")
	require.Equal(t, []any{"ns=0;i=2253"}, br["server"])
	require.Contains(t, res, "closed")
}

// TestNodeOPCUABasic256Sha256UserName connects node-opcua over Basic256Sha256
// SignAndEncrypt with its own PKI (the server auto-accepts the client certificate, the
// client trusts the server's), logs in by user name, reads ServerStatus, and then is
// refused with BadUserAccessDenied for a wrong password.
func TestNodeOPCUABasic256Sha256UserName(t *testing.T) {
	t.Parallel()
	hash, err := cheapHash("s3cret")
	require.NoError(t, err)
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.AutoAcceptUntrusted = true
		c.Security.Users = []config.User{{Name: "alice", PasswordHash: hash}}
	}})
	out := nodepeer.Run(t, nodeOPCUAPrologue+`
(async () => {
  const client = await newClient(MessageSecurityMode.SignAndEncrypt, SecurityPolicy.Basic256Sha256);
  await client.connect(url);
  result({ step: "connected", policy: client.securityPolicy, mode: MessageSecurityMode[client.securityMode] });

  const session = await client.createSession({ type: UserTokenType.UserName, userName: user, password });
  const [dv] = await session.read([{ nodeId: "ns=0;i=2256", attributeId: AttributeIds.Value }]);
  const st = dv.value.value;
  result({ step: "serverStatus", status: statusOf(dv), type: st && st.constructor.name, state: st && st.state });
  await session.close();

  try {
    const bad = await client.createSession({ type: UserTokenType.UserName, userName: user, password: "wrong" });
    result({ step: "wrongPassword", accepted: true });
    await bad.close();
  } catch (e) {
    result({ step: "wrongPassword", accepted: false, message: String(e && e.message) });
  }
  await client.disconnect();
  result({ step: "closed" });
})();
`, ts.URL, t.TempDir(), "alice", "s3cret")

	res := byStep(t, nodepeer.Results(t, out))
	require.Equal(t, "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256", res["connected"]["policy"])
	require.Equal(t, "SignAndEncrypt", res["connected"]["mode"])
	st := res["serverStatus"]
	require.Equal(t, "Good", st["status"])
	require.Equal(t, "ServerStatusDataType", st["type"])
	require.EqualValues(t, 0, st["state"])
	wrong := res["wrongPassword"]
	require.Equal(t, false, wrong["accepted"])
	require.Contains(t, wrong["message"], "BadUserAccessDenied")
	require.Contains(t, res, "closed")
}

// byStep indexes the script's results by their "step" field; a step reported twice
// fails the test.
func byStep(t *testing.T, results []map[string]any) map[string]map[string]any {
	t.Helper()
	m := make(map[string]map[string]any, len(results))
	for _, r := range results {
		step, ok := r["step"].(string)
		require.True(t, ok, "result without a step: %v", r)
		require.NotContains(t, m, step, "step %q reported twice", step)
		m[step] = r
	}
	return m
}

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "time is %T", v)
	tm, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return tm
}
