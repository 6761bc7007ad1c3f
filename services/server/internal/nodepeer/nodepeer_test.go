package nodepeer_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/nodepeer"
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
