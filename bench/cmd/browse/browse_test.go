package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/bench/internal/report"
)

// TestSmoke walks the address space twice with a small page size, so that continuation
// points are certain, and checks the walk found the standard nodes.
func TestSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := parse([]string{"-repeat", "2", "-max-refs", "3", "-batch", "50", "-quiet"})
	require.NoError(t, err)
	r, err := run(ctx, o, t.TempDir(), report.NewProgress(true))
	require.NoError(t, err)
	row, ok := r.Row("uastack None, full address space")
	require.True(t, ok, r.Markdown())
	nodes, _ := row.Get("nodes")
	refs, _ := row.Get("references")
	cps, _ := row.Get("continuation points")
	elapsed, _ := row.Get("time")
	allocs, _ := row.Get("client allocs")
	// The standard address space alone has over a thousand nodes under Server and Types.
	require.Greater(t, nodes, 1000.0)
	require.GreaterOrEqual(t, refs, nodes-1)
	require.Positive(t, cps)
	require.Positive(t, elapsed)
	require.Positive(t, allocs)
}
