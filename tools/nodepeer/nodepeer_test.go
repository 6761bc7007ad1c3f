package nodepeer_test

import (
	"os"
	"path/filepath"
	"syscall"
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

// TestStartProcess is Start without a testing.TB: the process is found by its pid while
// it runs, and a script that dies before it is ready is an error carrying its stderr.
func TestStartProcess(t *testing.T) {
	p, err := nodepeer.StartProcess(t.TempDir(), `
result({ready: true});
setInterval(() => {}, 1000);
`)
	require.NoError(t, err)
	proc, err := os.FindProcess(p.Pid())
	require.NoError(t, err)
	require.NoError(t, proc.Signal(syscall.Signal(0)), "node runs as pid %d", p.Pid())
	p.Stop()
	stdout, _ := p.Output()
	require.Contains(t, stdout, `"ready":true`)

	p, err = nodepeer.StartProcess(t.TempDir(), `console.error("no luck"); process.exit(3);`)
	require.ErrorContains(t, err, "no luck")
	require.NotNil(t, p)
}
