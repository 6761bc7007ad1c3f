package server_test

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/tools/nodepeer"
)

// nodeRegisteringServer is a node-opcua server that registers itself with the discovery
// server at argv[3] (RegisterServerMethod.LDS), listening on port argv[2] with its PKI in
// argv[4]; it trusts the discovery server's certificate on first sight. With argv[5]
// "init" it only makes its certificate, reports the file and exits.
const nodeRegisteringServer = `
const { OPCUAServer, RegisterServerMethod } = require("node-opcua-server");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
(async () => {
  const [port, lds, pki, mode] = process.argv.slice(2);
  const serverCertificateManager = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true });
  const server = new OPCUAServer({
    port: Number(port), serverCertificateManager,
    serverInfo: { applicationUri: "urn:127.0.0.1:node-opcua:registering", applicationName: { text: "node-opcua registering" } },
    registerServerMethod: RegisterServerMethod.LDS, discoveryServerEndpointUrl: lds,
  });
  if (mode === "init") {
    await server.initialize();
    result({ certificate: server.certificateFile });
    process.exit(0);
  }
  await server.start();
  process.on("SIGINT", async () => { await server.shutdown(100); process.exit(0); });
  result({ ready: true, uri: server.serverInfo.applicationUri });
})().catch((e) => { console.error(e); process.exit(1); });
`

// nodeDiscoveringClient asks the discovery server at argv[2] for the servers, takes the
// uastack one (ApplicationUri argv[3]), gets its endpoints from its discovery URL, and
// connects to its None endpoint to read ServerStatus.State.
const nodeDiscoveringClient = `
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds } = require("node-opcua-client");
(async () => {
  const [lds, uri] = process.argv.slice(2);
  const probe = OPCUAClient.create({ endpointMustExist: false });
  await probe.connect(lds);
  const servers = await probe.findServers();
  const ldsEndpoints = await probe.getEndpoints();
  await probe.disconnect();
  const ours = servers.find((s) => s.applicationUri === uri);
  const url = ours.discoveryUrls[0];

  const client = OPCUAClient.create({ securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, endpointMustExist: true });
  await client.connect(url);
  const endpoints = await client.getEndpoints();
  const session = await client.createSession();
  const state = await session.read({ nodeId: "i=2259", attributeId: AttributeIds.Value });
  await session.close();
  await client.disconnect();
  result({
    servers: servers.map((s) => s.applicationUri),
    ldsEndpoints: ldsEndpoints.length,
    url, endpoints: endpoints.length, state: state.value.value,
  });
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestNodeOPCUAWithDiscovery: node-opcua's client finds a registered uastack server
// through the discovery service and connects with what it got there, and node-opcua's
// server registers itself with the discovery service and is found.
func TestNodeOPCUAWithDiscovery(t *testing.T) {
	t.Parallel()
	ldsDir := t.TempDir()
	d := runDiscovery(t, "127.0.0.1:0", ldsDir)
	cfg, _ := runRegistering(t, d, ldsDir)
	require.Eventually(t, func() bool {
		return slices.Contains(findServerURIs(t, d.url), cfg.Application.ApplicationURI)
	}, 10*time.Second, 50*time.Millisecond)

	out := nodepeer.Results(t, nodepeer.Run(t, nodeDiscoveringClient, d.url, cfg.Application.ApplicationURI))
	require.Len(t, out, 1)
	res := out[0]
	require.Equal(t, []any{"urn:test:lds", cfg.Application.ApplicationURI}, res["servers"])
	require.Equal(t, 5.0, res["ldsEndpoints"])
	require.Equal(t, cfg.Endpoint.EndpointURL, res["url"])
	require.Equal(t, 5.0, res["endpoints"])
	require.Equal(t, 0.0, res["state"], "ServerState Running")

	// node-opcua's server registers with RegisterServer2 over a secure channel; the
	// discovery service trusts it as an integrator would after inspecting rejected/.
	port := nodepeer.FreePort(t)
	nodePKI := filepath.Join(t.TempDir(), "pki")

	// The integrator trusts node-opcua's certificate before it first registers (node-opcua
	// would otherwise wait minutes before it tries again).
	init := nodepeer.Results(t, nodepeer.Run(t, nodeRegisteringServer, strconv.Itoa(port), d.url, nodePKI, "init"))
	require.Len(t, init, 1)
	certPEM, err := os.ReadFile(init[0]["certificate"].(string))
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block, "node-opcua writes its certificate as PEM")
	trustCert(t, ldsDir, block.Bytes, "node-opcua")
	require.NoError(t, d.svc.ReloadTrust())

	p := nodepeer.Start(t, nodeRegisteringServer, strconv.Itoa(port), d.url, nodePKI)
	uri := p.Ready["uri"].(string)
	require.Eventually(t, func() bool {
		return slices.Contains(findServerURIs(t, d.url), uri)
	}, 30*time.Second, 100*time.Millisecond, "node-opcua's server registers")

	// It unregisters when it shuts down.
	p.Stop()
	require.NotContains(t, findServerURIs(t, d.url), uri)
}
