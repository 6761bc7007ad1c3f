package server_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/tools/nodepeer"
)

// interopNodeScript runs every check of issue 4 with node-opcua's client in one node
// process and reports each step with result(); a step that throws reports its error.
// Arguments: url, url of the server whose certificate token names Basic256Sha256, the
// client PKI folder, the application certificate and key (PEM) and their ApplicationUri,
// the user certificate (DER) and key (PEM), user name and password, and an untrusted user
// certificate (DER) for the same key.
const interopNodeScript = `
const fs = require("fs");
const opcua = require("node-opcua-client");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, BrowseDirection, DataType,
  VariantArrayType, UserTokenType, StatusCodes, coerceNodeId, coerceExpandedNodeId,
  coerceQualifiedName, coerceLocalizedText } = opcua;
const [url, urlNoneX509, pki, appCert, appKey, appUri, userCert, userKey, user, password, strangerCert] = process.argv.slice(2);
const perNode = 5, maxBrowse = 10, maxCPs = 10, maxRead = 100, maxWrite = 50;

process.on("unhandledRejection", (e) => { console.error(e); process.exit(2); });

async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    result({ step: name + " failed", error: String((e && e.stack) || e) });
  }
}

// norm turns a value into plain JSON so that what was written and what was read back
// compare as text.
function norm(v, upper) {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) return "hex:" + v.toString("hex");
  if (v instanceof Date) return v.toISOString();
  if (ArrayBuffer.isView(v) || Array.isArray(v)) return Array.from(v).map((x) => norm(x, upper));
  if (typeof v === "string") return upper ? v.toUpperCase() : v;
  if (typeof v === "object") return v.toString();
  return v;
}

const hierarchical = (nodeId) => ({ nodeId, browseDirection: BrowseDirection.Forward,
  referenceTypeId: "HierarchicalReferences", includeSubtypes: true, resultMask: 63 });
const canon = (id) => id.startsWith("ns=0;") ? id.slice(5) : id;

async function demoIndex(session) {
  const [dv] = await session.read([{ nodeId: "ns=0;i=2255", attributeId: AttributeIds.Value }]);
  const i = dv.value.value.indexOf("urn:uastack:demo");
  if (i < 0) throw new Error("urn:uastack:demo not in NamespaceArray " + dv.value.value);
  return i;
}

// browseChecks browses everything reachable from Root with perNode references per node,
// then checks the continuation point limit, release and reuse after release.
async function browseChecks(session) {
  session.requestedMaxReferencesPerNode = perNode;
  const visited = new Set(["i=84"]);
  const queue = ["ns=0;i=84"];
  const bad = [];
  let nexts = 0, cps = [];
  const take = (r) => {
    if (r.statusCode.name !== "Good") bad.push(r.statusCode.name);
    if (r.references.length > perNode) bad.push("more than perNode references");
    for (const ref of r.references) {
      const id = ref.nodeId.toString();
      if (!visited.has(canon(id))) { visited.add(canon(id)); queue.push(id); }
    }
    if (r.continuationPoint && r.continuationPoint.length > 0) cps.push(r.continuationPoint);
  };
  while (queue.length > 0) {
    const batch = queue.splice(0, maxBrowse);
    cps = [];
    (await session.browse(batch.map(hierarchical))).forEach(take);
    while (cps.length > 0) {
      const held = cps;
      cps = [];
      nexts++;
      (await session.browseNext(held, false)).forEach(take);
    }
  }
  result({ step: "browseAll", visited: [...visited], nexts, bad });

  session.requestedMaxReferencesPerNode = 1;
  const roots = (n) => session.browse(Array.from({ length: n }, () => hierarchical("ns=0;i=84")));
  const held = await roots(maxCPs);
  const [over] = await roots(1);
  const cp = held.map((r) => r.continuationPoint);
  const released = await session.browseNext(cp, true);
  const [reused] = await session.browseNext([cp[0]], false);
  const again = await roots(maxCPs);
  await session.browseNext(again.map((r) => r.continuationPoint), true);
  result({ step: "continuationPoints",
    held: held.map((r) => [r.statusCode.name, r.references.length, r.continuationPoint ? r.continuationPoint.length : 0]),
    over: over.statusCode.name,
    released: released.map((r) => [r.statusCode.name, r.references.length]),
    reused: reused.statusCode.name,
    again: again.map((r) => r.statusCode.name) });
}

// serviceChecks writes and reads back every demo variable, calls Demo/Add and collects
// the StatusCodes of the error cases.
async function serviceChecks(session) {
  const ns = await demoIndex(session);
  const n = (name) => "ns=" + ns + ";s=" + name;
  const values = [
    ["Boolean", DataType.Boolean, false, [false, false, true]],
    ["SByte", DataType.SByte, -100, [-100, 100]],
    ["Byte", DataType.Byte, 200, [200, 201]],
    ["Int16", DataType.Int16, -30000, [-30000, 30000]],
    ["UInt16", DataType.UInt16, 60000, [60000, 1]],
    ["Int32", DataType.Int32, -2000000000, [-2000000000, 7]],
    ["UInt32", DataType.UInt32, 4000000000, [4000000000, 8]],
    ["Int64", DataType.Int64, [0xffffffff, 0xffffff00], [[0xffffffff, 0xffffff00], [0, 9]]], // [high, low]
    ["UInt64", DataType.UInt64, [0xf0000000, 1], [[0xf0000000, 1], [0, 10]]],
    ["Float", DataType.Float, -0.25, [-0.25, 0.5]],
    ["Double", DataType.Double, 1e300, [1e300, -1e-300]],
    ["String", DataType.String, "grüße", ["grüße", "", "x"]],
    ["DateTime", DataType.DateTime, new Date("2025-06-01T12:30:00.123Z"), [new Date("2025-06-01T12:30:00Z")]],
    ["Guid", DataType.Guid, "72962b91-fa75-4ae6-8d28-b404dc7daf63", ["72962B91-FA75-4AE6-8D28-B404DC7DAF63", "00000000-0000-0000-0000-000000000001"]],
    ["ByteString", DataType.ByteString, Buffer.from([0, 1, 2]), [Buffer.from([0, 1]), Buffer.from([2]), Buffer.from([3, 4, 5])]],
    ["XmlElement", DataType.XmlElement, "<x>1</x>", ["<x>1</x>", "<y/>"]],
    ["NodeId", DataType.NodeId, coerceNodeId(n("Demo.Add")), [coerceNodeId(n("Demo.Add")), coerceNodeId("ns=0;i=2253")]],
    ["ExpandedNodeId", DataType.ExpandedNodeId, coerceExpandedNodeId(n("x")), [coerceExpandedNodeId("ns=0;i=2253")]],
    ["StatusCode", DataType.StatusCode, StatusCodes.BadTypeMismatch, [StatusCodes.BadTypeMismatch, StatusCodes.Good]],
    ["QualifiedName", DataType.QualifiedName, coerceQualifiedName({ namespaceIndex: ns, name: "q" }), [coerceQualifiedName({ namespaceIndex: ns, name: "q" }), coerceQualifiedName({ namespaceIndex: 0, name: "r" })]],
    ["LocalizedText", DataType.LocalizedText, coerceLocalizedText({ locale: "de", text: "hallo" }), [coerceLocalizedText({ locale: "de", text: "hallo" }), coerceLocalizedText({ text: "hi" })]],
  ];
  const vars = [];
  for (const [type, dataType, scalar, array] of values) {
    vars.push({ name: "Demo.Scalar_" + type, type, value: { dataType, arrayType: VariantArrayType.Scalar, value: scalar } });
    vars.push({ name: "Demo.Array_" + type, type, value: { dataType, arrayType: VariantArrayType.Array, value: array } });
  }
  const reads = vars.map((v) => ({ nodeId: n(v.name), attributeId: AttributeIds.Value }));
  const before = await session.read(reads);
  const writes = await session.write(vars.map((v) => ({ nodeId: n(v.name), attributeId: AttributeIds.Value, value: { value: v.value } })));
  const after = await session.read(reads);
  result({ step: "demo", items: vars.map((v, i) => {
    const upper = v.type === "Guid";
    return { name: v.name, write: writes[i].name, read: after[i].statusCode.name,
      dataType: DataType[after[i].value.dataType], arrayType: VariantArrayType[after[i].value.arrayType],
      beforeDataType: DataType[before[i].value.dataType], beforeArrayType: VariantArrayType[before[i].value.arrayType],
      before: norm(before[i].value.value, upper), wrote: norm(v.value.value, upper), got: norm(after[i].value.value, upper) };
  }) });

  const add = (b) => ({ objectId: n("Demo"), methodId: n("Demo.Add"), inputArguments: [
    { dataType: DataType.Double, value: 2.5 }, b] });
  const [good, wrongType] = await session.call([add({ dataType: DataType.Double, value: 4 }), add({ dataType: DataType.String, value: "4" })]);
  result({ step: "call", status: good.statusCode.name, out: good.outputArguments.map((v) => [DataType[v.dataType], v.value]),
    wrongType: wrongType.statusCode.name, wrongTypeArgs: (wrongType.inputArgumentResults || []).map((s) => s.name) });

  const errs = await session.read([
    { nodeId: n("Demo.Nope"), attributeId: AttributeIds.Value },
    { nodeId: n("Demo.Scalar_Int32"), attributeId: 999 },
    { nodeId: n("Demo"), attributeId: AttributeIds.Value },
    { nodeId: n("Demo.Array_Int32"), attributeId: AttributeIds.Value, indexRange: "1:0" },
    { nodeId: n("Demo.Array_Int32"), attributeId: AttributeIds.Value, indexRange: "5:7" },
    { nodeId: n("Demo.Array_Int32"), attributeId: AttributeIds.Value, indexRange: "1" },
  ]);
  const int32s = (value, indexRange) => ({ nodeId: n("Demo.Array_Int32"), attributeId: AttributeIds.Value, indexRange,
    value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value } } });
  const werrs = await session.write([
    { nodeId: n("Demo.Nope"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 1 } } },
    { nodeId: n("Demo.Scalar_Int32"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.String, value: "x" } } },
    { nodeId: n("Demo.Scalar_Int32"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int64, arrayType: VariantArrayType.Scalar, value: [0, 1] } } },
    int32s([1, 2], "1:0"),
    int32s([1, 2], "5:6"),
    int32s([8], "1"),
  ]);
  result({ step: "errors", read: errs.map((dv) => dv.statusCode.name), ranged: norm(errs[5].value.value),
    write: werrs.map((s) => s.name) });

  const tooMany = async (fn) => {
    try { await fn(); return "accepted"; } catch (e) { return String(e && e.message); }
  };
  const status = { nodeId: "ns=0;i=2259", attributeId: AttributeIds.Value };
  session.requestedMaxReferencesPerNode = 0;
  result({ step: "tooMany",
    read: await tooMany(() => session.read(Array.from({ length: maxRead + 1 }, () => status))),
    readAtLimit: (await session.read(Array.from({ length: maxRead }, () => status))).length,
    write: await tooMany(() => session.write(Array.from({ length: maxWrite + 1 }, () => int32s([1], "0")))),
    browse: await tooMany(() => session.browse(Array.from({ length: maxBrowse + 1 }, () => hierarchical("ns=0;i=85")))) });
}

(async () => {
  const clientCertificateManager = new OPCUACertificateManager({
    rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  await clientCertificateManager.initialize();
  const channels = [
    ["None", MessageSecurityMode.None, SecurityPolicy.None],
    ["Basic256Sha256_SignAndEncrypt", MessageSecurityMode.SignAndEncrypt, SecurityPolicy.Basic256Sha256],
    ["Aes256Sha256RsaPss_Sign", MessageSecurityMode.Sign, SecurityPolicy.Aes256_Sha256_RsaPss],
  ];
  const logins = [
    ["anonymous", { type: UserTokenType.Anonymous }],
    ["username", { type: UserTokenType.UserName, userName: user, password }],
    ["x509", { type: UserTokenType.Certificate, certificateData: fs.readFileSync(userCert),
      privateKey: fs.readFileSync(userKey, "utf8") }],
  ];
  for (const [ci, [cname, securityMode, securityPolicy]] of channels.entries()) {
    for (const [li, [lname, identity]] of logins.entries()) {
      const name = cname + "/" + lname;
      await step(name, async () => {
        const client = OPCUAClient.create({
          applicationName: "uastack-interop", applicationUri: appUri,
          certificateFile: appCert, privateKeyFile: appKey, clientCertificateManager,
          securityMode, securityPolicy, endpointMustExist: false,
          connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
          requestedSessionTimeout: 30000,
        });
        // The default certificate token takes the channel's policy, which None cannot
        // sign with; that case goes to the server whose token names Basic256Sha256.
        await client.connect(ci === 0 && lname === "x509" ? urlNoneX509 : url);
        try {
          const session = await client.createSession(identity);
          const [dv, now] = await session.read([{ nodeId: "ns=0;i=2256", attributeId: AttributeIds.Value },
            { nodeId: "ns=0;i=2258", attributeId: AttributeIds.Value }]);
          const st = dv.value.value;
          // Polling: the same request again but for its Timestamp and RequestHandle.
          const polled = [];
          for (let k = 0; k < 3; k++) {
            await new Promise((r) => setTimeout(r, 5));
            const [p] = await session.read([{ nodeId: "ns=0;i=2258", attributeId: AttributeIds.Value }]);
            polled.push(p.value.value instanceof Date ? p.value.value.toISOString() : null);
          }
          result({ step: name, policy: client.securityPolicy, mode: MessageSecurityMode[client.securityMode], polled,
            status: dv.statusCode.name, type: st && st.constructor.name, state: st && st.state,
            productUri: st && st.buildInfo.productUri, currentTime: st && st.currentTime.toISOString(),
            startTime: st && st.startTime.toISOString(), nowStatus: now.statusCode.name,
            nowType: DataType[now.value.dataType], now: now.value.value instanceof Date ? now.value.value.toISOString() : null });
          if (ci === 1 && li === 1) await step("browse", () => browseChecks(session));
          if (ci === 2 && li === 2) await step("services", () => serviceChecks(session));
          await session.close();
          if (ci === 2 && li === 2) {
            await step("untrustedX509", async () => {
              try {
                const bad = await client.createSession({ ...identity, certificateData: fs.readFileSync(strangerCert) });
                await bad.close();
                result({ step: "untrustedX509", accepted: true });
              } catch (e) {
                result({ step: "untrustedX509", accepted: false, message: String(e && e.message) });
              }
            });
          }
          if (ci === 1 && li === 1) {
            await step("wrongPassword", async () => {
              try {
                const bad = await client.createSession({ type: UserTokenType.UserName, userName: user, password: "wrong" });
                await bad.close();
                result({ step: "wrongPassword", accepted: true });
              } catch (e) {
                result({ step: "wrongPassword", accepted: false, message: String(e && e.message) });
              }
            });
          }
        } finally {
          await client.disconnect();
        }
      });
    }
  }
  result({ step: "done" });
})();
`

// TestInteropNodeOPCUA is issue 4's interoperability proof for node-opcua's client, in one
// node process: each of the three channels with each of the three logins reads
// ServerStatus; on Basic256Sha256 the client browses all of namespace 0 from Root
// through continuation points and is refused a wrong password; on Aes256_Sha256_RsaPss it
// writes and reads back every demo variable, calls Demo/Add and checks the StatusCode of
// each error case. The full browse must reach what gopcua reaches without a limit.
func TestInteropNodeOPCUA(t *testing.T) {
	t.Parallel()
	id := newInteropIdentity(t)
	ts := interopServer(t, id)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(id.appKey)
	require.NoError(t, err)
	keyPEM := write("key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	stranger, _ := userIdentity(t, "untrusted user", id.appKey)
	cert, err := x509.ParseCertificate(id.appDER)
	require.NoError(t, err)
	require.Len(t, cert.URIs, 1)
	out := nodepeer.Run(t, interopNodeScript, ts.URL, ts.URL, filepath.Join(dir, "pki"),
		write("app.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: id.appDER})), keyPEM, cert.URIs[0].String(),
		write("user.der", id.userDER), keyPEM, interopUser, interopPassword, write("stranger.der", stranger))
	res := byStep(t, nodepeer.Results(t, out))
	for step, r := range res {
		require.NotContains(t, r, "error", "step %s", step)
	}
	require.Contains(t, res, "done")

	policies := map[string]string{
		"None":                          ua.SecurityPolicyURINone,
		"Basic256Sha256_SignAndEncrypt": ua.SecurityPolicyURIBasic256Sha256,
		"Aes256Sha256RsaPss_Sign":       ua.SecurityPolicyURIAes256Sha256RsaPss,
	}
	modes := map[string]string{"None": "None", "Basic256Sha256_SignAndEncrypt": "SignAndEncrypt", "Aes256Sha256RsaPss_Sign": "Sign"}
	for ch, pol := range policies {
		for _, login := range []string{"anonymous", "username", "x509"} {
			r, ok := res[ch+"/"+login]
			require.True(t, ok, "%s/%s did not report", ch, login)
			require.Equal(t, pol, r["policy"], ch)
			require.Equal(t, modes[ch], r["mode"], ch)
			require.Equal(t, "Good", r["status"], ch)
			require.Equal(t, "ServerStatusDataType", r["type"], ch)
			require.EqualValues(t, 0, r["state"], ch) // Running
			require.Equal(t, "urn:uastack.dev:server", r["productUri"], ch)
			current := parseTime(t, r["currentTime"])
			require.WithinDuration(t, time.Now(), current, time.Minute, ch)
			require.False(t, parseTime(t, r["startTime"]).After(current), ch)
			require.Equal(t, "Good", r["nowStatus"], ch)
			require.Equal(t, "DateTime", r["nowType"], ch)
			require.WithinDuration(t, time.Now(), parseTime(t, r["now"]), time.Minute, ch)
			polled, ok := r["polled"].([]any)
			require.True(t, ok, "polled is %T", r["polled"])
			require.Len(t, polled, 3, ch)
			for k := 1; k < len(polled); k++ {
				require.True(t, parseTime(t, polled[k]).After(parseTime(t, polled[k-1])), "%s: polled %v", ch, polled)
			}
		}
	}

	wrong := res["wrongPassword"]
	require.Equal(t, false, wrong["accepted"])
	require.Contains(t, wrong["message"], "BadUserAccessDenied")
	untrusted := res["untrustedX509"]
	require.Equal(t, false, untrusted["accepted"])
	require.Contains(t, untrusted["message"], "BadIdentityTokenRejected")

	// The full browse reaches exactly what the tables and gopcua without a limit reach.
	all := res["browseAll"]
	require.Empty(t, all["bad"], "browse results other than Good")
	require.Greater(t, all["nexts"], 100.0, "the browse should have needed BrowseNext")
	visited := map[string]bool{}
	for _, v := range all["visited"].([]any) {
		visited[v.(string)] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer func() { require.NoError(t, c.Close(ctx)) }()
	requireHierarchy(t, visited, gopcuaDemoIndex(t, ctx, c))
	unlimited, _ := interopWalk(t, ctx, c, 0)
	require.Equal(t, sortedKeys(unlimited), sortedKeys(visited))

	cps := res["continuationPoints"]
	for _, h := range cps["held"].([]any) {
		h := h.([]any)
		require.Equal(t, "Good", h[0], "a continuation point leaked from the full browse")
		require.EqualValues(t, 1, h[1])
		require.Greater(t, h[2], 0.0)
	}
	require.Len(t, cps["held"], interopMaxCPs)
	require.Equal(t, "BadNoContinuationPoints", cps["over"])
	for _, r := range cps["released"].([]any) {
		require.Equal(t, []any{"Good", 0.0}, r)
	}
	require.Equal(t, "BadContinuationPointInvalid", cps["reused"])
	require.Len(t, cps["again"], interopMaxCPs)
	for _, s := range cps["again"].([]any) {
		require.Equal(t, "Good", s, "released continuation points were not freed")
	}

	items := res["demo"]["items"].([]any)
	require.Len(t, items, 2*len(demoWrites))
	for _, it := range items {
		it := it.(map[string]any)
		name := it["name"]
		require.Equal(t, "Good", it["write"], name)
		require.Equal(t, "Good", it["read"], name)
		require.Equal(t, it["wrote"], it["got"], name)
		require.NotEqual(t, it["before"], it["got"], "%s: the write changed nothing", name)
		want := "Scalar"
		if strings.HasPrefix(name.(string), "Demo.Array_") {
			want = "Array"
		}
		require.Equal(t, want, it["arrayType"], name)
		require.Equal(t, strings.TrimPrefix(strings.TrimPrefix(name.(string), "Demo.Scalar_"), "Demo.Array_"), it["dataType"], name)
	}
	// The initial values match the variables' DataType and ValueRank as well.
	t.Run("initial values", func(t *testing.T) {
		for _, it := range items {
			it := it.(map[string]any)
			name := it["name"].(string)
			require.Equal(t, it["dataType"], it["beforeDataType"], name)
			require.Equal(t, it["arrayType"], it["beforeArrayType"], name)
		}
	})

	call := res["call"]
	require.Equal(t, "Good", call["status"])
	require.Equal(t, []any{[]any{"Double", 6.5}}, call["out"])
	require.Equal(t, "BadInvalidArgument", call["wrongType"])
	require.Equal(t, []any{"Good", "BadTypeMismatch"}, call["wrongTypeArgs"])

	errs := res["errors"]
	require.Equal(t, []any{"BadNodeIdUnknown", "BadAttributeIdInvalid", "BadAttributeIdInvalid",
		"BadIndexRangeInvalid", "BadIndexRangeNoData", "Good"}, errs["read"])
	require.Equal(t, []any{7.0}, errs["ranged"])
	require.Equal(t, []any{"BadNodeIdUnknown", "BadTypeMismatch", "BadTypeMismatch",
		"BadIndexRangeInvalid", "BadIndexRangeNoData", "Good"}, errs["write"])

	tooMany := res["tooMany"]
	for _, svc := range []string{"read", "write", "browse"} {
		require.Contains(t, tooMany[svc], "BadTooManyOperations", svc)
	}
	require.EqualValues(t, interopMaxRead, tooMany["readAtLimit"])
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
