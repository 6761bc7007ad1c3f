package nodepeer_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/tools/nodepeer"
)

// TestRun installs (or reuses) the pinned client and checks that a script loads it, gets
// its arguments and has its results returned apart from node-opcua's own output.
func TestRun(t *testing.T) {
	dir, err := nodepeer.Dir()
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(dir))
	out := nodepeer.Run(t, `
const pkg = require("node-opcua-client/package.json");
require("node-opcua-client");
console.log("not a result");
result({version: pkg.version, arg: process.argv[2]});
result({line: new Error().stack.split("\n")[1].match(/:(\d+):\d+\)?$/)[1]});
`, "hello")
	require.Equal(t, []map[string]any{
		{"version": nodepeer.Version, "arg": "hello"},
		{"line": "6"}, // the prelude shares the script's first line
	}, nodepeer.Results(t, out))
}

// TestStart leaves a script running that loads the pinned server package, returns once
// it is ready, and stops it with SIGINT, which the script sees.
func TestStart(t *testing.T) {
	p := nodepeer.Start(t, `
const pkg = require("node-opcua-server/package.json");
require("node-opcua-server");
process.on("SIGINT", () => { result({bye: true}); process.exit(0); });
result({version: pkg.version, arg: process.argv[2]});
setInterval(() => {}, 1000);
`, "hello")
	require.Equal(t, map[string]any{"version": nodepeer.Version, "arg": "hello"}, p.Ready)
	p.Stop()
	require.Equal(t, []map[string]any{p.Ready, {"bye": true}}, p.Results(t))
}
