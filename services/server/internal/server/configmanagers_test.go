package server

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
)

// TestConfiguredManagersRefused: a node manager named in the configuration that cannot be
// loaded stops the start with the setting and the file named, instead of a server that
// silently lacks the namespace.
func TestConfiguredManagersRefused(t *testing.T) {
	cfg := config.Default()
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	cfg.AddressSpace.NodeManagers = []config.NodeManager{{Name: "plc", Type: config.NodeManagerWasm, NamespaceURI: "urn:plc", Path: "plc.wasm"}}
	require.NoError(t, cfg.Validate())
	_, err := New(cfg, Options{})
	require.ErrorContains(t, err, `addressSpace.nodeManagers[0] ("plc", type wasm): wasmhost "plc": plc.wasm: no such file or directory`)
}
