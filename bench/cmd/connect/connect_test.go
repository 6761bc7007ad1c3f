package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/bench/internal/report"
)

// TestSmoke runs the suite briefly: every policy and mode connects, the RSA ceiling is
// timed, and the bar's ratio is computed.
func TestSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := parse([]string{"-concurrency", "2", "-warmup", "0s", "-duration", "700ms", "-rsa-ops", "3", "-quiet"})
	require.NoError(t, err)
	r, err := run(ctx, o, t.TempDir(), report.NewProgress(true))
	require.NoError(t, err)
	for _, m := range modes {
		row, ok := r.Row(m.name)
		require.True(t, ok, "row %q in\n%s", m.name, r.Markdown())
		for _, col := range []string{colRate, colClientCPU, colAllocs, colP50} {
			v, _ := row.Get(col)
			require.Positive(t, v, "%s: %s", m.name, col)
		}
		if m.name != "None" {
			v, _ := row.Get(colRatio)
			require.Positive(t, v, "%s: ratio to the RSA ceiling", m.name)
		}
	}
	require.Contains(t, r.Markdown(), "server CPU per connect / raw RSA cost = **")
}

func TestRSACeiling(t *testing.T) {
	t.Parallel()
	c, err := rsaCeiling(2048, 2)
	require.NoError(t, err)
	require.Len(t, c.ops, 8)
	for _, op := range c.ops {
		require.Positive(t, op.micros, op.name)
	}
	require.Contains(t, c.formula, "2 OAEP decrypts + 2 OAEP encrypts")
	require.Len(t, c.perConnect, 2)
}
