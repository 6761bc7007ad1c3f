package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/bench/internal/child"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
)

// TestMain lets the test binary serve as the suite's echo and gopcua children.
func TestMain(m *testing.M) {
	child.Dispatch()
	os.Exit(m.Run())
}

// TestSmoke runs the suite at a tiny scale against uastack (with our client and gopcua's)
// and the echo ceiling, and checks that every row has sane numbers and the ratios are
// noted. The peer servers are left to the full run: their start-up alone (about 5 s for
// gopcua's under -race, more for node-opcua's) would take most of the smoke budget.
func TestSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := parse([]string{"-clients", "2", "-outstanding", "2", "-warmup", "100ms", "-duration", "300ms", "-rounds", "1", "-sweep", "1,2", "-peers", "", "-quiet"})
	require.NoError(t, err)
	r, err := run(ctx, o, t.TempDir(), report.NewProgress(true))
	require.NoError(t, err)
	for _, name := range []string{rowUastackNone, rowUastackSaE, rowEchoNone, rowEchoSaE, rowGopcuaCli} {
		row, ok := r.Row(name)
		require.True(t, ok, "row %q in\n%s", name, r.Markdown())
		for _, col := range []string{colRate, colClientCPU, colP50, colP99} {
			v, ok := row.Get(col)
			require.True(t, ok, "%s: %s", name, col)
			require.Positive(t, v, "%s: %s", name, col)
		}
		cpu, ok := row.Get(colServerCPU)
		require.True(t, ok, "%s: server CPU measured", name)
		user, ok := row.Get(colServerUsr)
		require.True(t, ok, "%s: server user CPU measured", name)
		require.LessOrEqual(t, user, cpu, "%s: user CPU is part of the CPU", name)
	}
	require.Len(t, r.Charts, 1)
	require.Len(t, r.Charts[0].Series, 2)
	for _, s := range r.Charts[0].Series {
		require.Len(t, s.Points, 2, s.Name)
		require.Positive(t, s.Points[1].Y, s.Name)
	}
	md := r.Markdown()
	require.Contains(t, md, "uastack/echo Reads/s, None: **")
	require.Contains(t, md, "uastack server CPU per Read / echo server CPU per message, None: **")
	require.Contains(t, md, "pkg/client CPU per Read / gopcua client CPU per Read")
	require.Contains(t, md, "Server user CPU per Read, None: uastack ")

	out := t.TempDir()
	paths, err := r.WriteAll(out)
	require.NoError(t, err)
	require.Len(t, paths, 3)
	for _, p := range []string{"read.md", "read.json", "read-sweep.svg"} {
		fi, err := os.Stat(filepath.Join(out, p))
		require.NoError(t, err)
		require.Positive(t, fi.Size())
	}
}

func TestParseSweep(t *testing.T) {
	t.Parallel()
	n, err := parseSweep("1, 2,10")
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 10}, n)
	_, err = parseSweep("1,0")
	require.Error(t, err)
}

func TestFrameSizes(t *testing.T) {
	t.Parallel()
	require.Equal(t, 128, frameNone(104))
	// 8 + 104 + 1 + 32 = 145 → 160 encrypted, plus 16 B of plain headers.
	require.Equal(t, 176, frameSignAndEncrypt(104))
	require.Equal(t, 0, frameSignAndEncrypt(103)%16)
}

// TestAgainst runs an A/B at a tiny scale: this build against another binary (here the
// same server, built once more) measures just the two and the None ceiling, leaving out
// the peer it is asked for, and notes their ratio.
func TestAgainst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bin, err := uaserver.Build(ctx, t.TempDir())
	require.NoError(t, err)
	o, err := parse([]string{"-clients", "2", "-outstanding", "2", "-warmup", "100ms", "-duration", "300ms", "-rounds", "1", "-peers", "gopcua", "-quiet", "-against", bin})
	require.NoError(t, err)
	r, err := run(ctx, o, t.TempDir(), report.NewProgress(true))
	require.NoError(t, err)
	var names []string
	for _, row := range r.Rows {
		names = append(names, row.Name)
	}
	require.Equal(t, []string{rowUastackNone, rowAgainst, rowEchoNone}, names)
	row, _ := r.Row(rowAgainst)
	v, ok := row.Get(colServerCPU)
	require.True(t, ok)
	require.Positive(t, v)
	require.Contains(t, r.Markdown(), "This build / the -against build, None: server CPU per Read ")
}
