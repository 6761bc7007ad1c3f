package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/bench/internal/report"
)

// TestSmoke runs the suite at a tiny scale: the server with the device mounted three
// ways and the blocking plugin, every row with sane numbers, the bars noted.
func TestSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	o, err := parse([]string{"-clients", "2", "-outstanding", "2", "-warmup", "100ms", "-duration", "200ms", "-rounds", "1",
		"-batch", "3", "-block-clients", "1", "-block-outstanding", "2", "-wasm-instances", "2", "-quiet"})
	require.NoError(t, err)
	r, err := run(ctx, o, t.TempDir(), report.NewProgress(true))
	require.NoError(t, err)
	var names []string
	for _, row := range r.Rows {
		names = append(names, row.Name)
	}
	require.Equal(t, []string{
		"namespace 0, 1 node/Read", rowBlocked, "device in-process, 1 node/Read", "device WASM, 1 node/Read", "device process, 1 node/Read",
		"namespace 0, 3 nodes/Read", "device in-process, 3 nodes/Read", "device WASM, 3 nodes/Read", "device process, 3 nodes/Read",
	}, names)
	for _, row := range r.Rows {
		for _, col := range []string{colRate, colServerCPU, colClientCPU, colP50, colP99} {
			v, ok := row.Get(col)
			require.True(t, ok, "%s: %s", row.Name, col)
			require.Positive(t, v, "%s: %s", row.Name, col)
		}
		rate, _ := row.Get(colRate)
		values, _ := row.Get(colValues)
		per := 1.0
		if strings.HasSuffix(row.Name, "3 nodes/Read") {
			per = 3
		}
		require.InDelta(t, per*rate, values, 1e-6*values, row.Name)
	}
	md := r.Markdown()
	for _, want := range []string{
		"WASM/in-process, 1 node/Read: Reads/s **", "process/in-process, 1 node/Read: Reads/s **",
		"WASM/in-process, 3 nodes/Read: Reads/s **", "process/in-process, 3 nodes/Read: Reads/s **",
		"Namespace 0 p99 beside the blocking plugin / without its load: **",
		"instances: 2",
		// The blocking load ran for a second before the target's load: some of its
		// Reads were answered, and none failed. (Their latency is 1 s, or 2 s for a
		// Read queued behind a batch that blocks.)
		"Reads answered Good (latency p50 ", ", none failed.",
	} {
		require.Contains(t, md, want)
	}

	out := t.TempDir()
	paths, err := r.WriteAll(out)
	require.NoError(t, err)
	require.Len(t, paths, 2)
	for _, p := range []string{"plugins.md", "plugins.json"} {
		fi, err := os.Stat(filepath.Join(out, p))
		require.NoError(t, err)
		require.Positive(t, fi.Size())
	}
}

func TestOnly(t *testing.T) {
	t.Parallel()
	targets := []target{{name: "namespace 0, 1 node/Read"}, {name: "device WASM, 1 node/Read"}, {name: "device WASM, 10 nodes/Read"}}
	got, err := only(targets, regexp.MustCompile("^device WASM, 1 "))
	require.NoError(t, err)
	require.Equal(t, []target{{name: "device WASM, 1 node/Read"}}, got)
	_, err = only(targets, regexp.MustCompile("process"))
	require.Error(t, err)
	got, err = only(targets, nil)
	require.NoError(t, err)
	require.Len(t, got, 3)
}

func TestParse(t *testing.T) {
	t.Parallel()
	o, err := parse(nil)
	require.NoError(t, err)
	require.Equal(t, 10, o.clients)
	require.Equal(t, 100, o.outstanding)
	require.Equal(t, 10, o.batch)
	_, err = parse([]string{"-block-clients", "0"})
	require.Error(t, err)
	_, err = parse([]string{"-batch", "-1"})
	require.Error(t, err)
	_, err = parse([]string{"-only", "("})
	require.Error(t, err)
}

func TestNodeManagers(t *testing.T) {
	t.Parallel()
	o, err := parse([]string{"-wasm-instances", "3"})
	require.NoError(t, err)
	b := outstandingBounds(o)
	require.Equal(t, bounds{device: 2000, blocker: 200}, b, "room for 10 × 100 Reads and 4 × 25 blocking ones, twice")
	s, err := nodeManagers("/m.wasm", "/dev", "/block", o.wasmInstances, b)
	require.NoError(t, err)
	require.Equal(t, `addressSpace.nodeManagers=[{"name":"device","namespaceUri":"urn:uastack:bench:device:builtin","type":"builtin"},`+
		`{"instances":3,"maxOutstanding":2000,"name":"device-wasm","namespaceUri":"urn:uastack:bench:device:wasm","path":"/m.wasm","type":"wasm"},`+
		`{"maxOutstanding":2000,"name":"device-process","namespaceUri":"urn:uastack:bench:device:process","path":"/dev","type":"process"},`+
		`{"maxOutstanding":200,"name":"blocker","namespaceUri":"urn:uastack:bench:blocker","path":"/block","type":"process"}]`, s)
	o.maxOutstanding = 256
	require.Equal(t, 256, outstandingBounds(o).device)
}
