package redundancy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLevelRanges checks each Health against its subrange of Part 4 Table 109 at the
// ends of the load and beyond them (clamped), and NaN as full load.
func TestLevelRanges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		h    Health
		load float64
		want byte
	}{
		{Healthy, 0, 255},
		{Healthy, -3, 255},
		{Healthy, 0.5, 228}, // 255 - 27.5
		{Healthy, 1, 200},
		{Healthy, 7, 200},
		{Healthy, math.NaN(), 200},
		{Healthy, math.Inf(1), 200},
		{Healthy, math.Inf(-1), 255},
		{Degraded, 0, 199},
		{Degraded, 0.5, 101}, // 199 - 98.5
		{Degraded, 1, 2},
		{Degraded, math.NaN(), 2},
		{NoData, 0, 1},
		{NoData, 1, 1},
		{Maintenance, 0, 0},
		{Maintenance, 1, 0},
		{Health(9), 0, 1},
	}
	for _, c := range cases {
		require.Equal(t, c.want, Level(c.h, c.load), "%v at load %v", c.h, c.load)
	}
}

// TestLevelMonotonic walks the load from 0 to 1: each subrange is kept whatever the
// load, the level never rises with load, and every level of the subrange is reached.
func TestLevelMonotonic(t *testing.T) {
	t.Parallel()
	for _, r := range []struct {
		h           Health
		top, bottom byte
	}{{Healthy, 255, 200}, {Degraded, 199, 2}, {NoData, 1, 1}, {Maintenance, 0, 0}} {
		seen := map[byte]bool{}
		prev := byte(255)
		const steps = 20000
		for i := 0; i <= steps; i++ {
			l := Level(r.h, float64(i)/steps)
			if l > prev || l < r.bottom || l > r.top {
				t.Fatalf("%v at load %d/%d: %d after %d, subrange %d..%d", r.h, i, steps, l, prev, r.bottom, r.top)
			}
			prev = l
			seen[l] = true
		}
		require.Len(t, seen, int(r.top-r.bottom)+1, "%v reaches every level of its subrange", r.h)
	}
	// A server with a session or two of a hundred still shows its top.
	require.Equal(t, byte(255), Level(Healthy, 0.01))
	require.Equal(t, byte(199), Level(Degraded, 0.005))
}

func TestHealthString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Healthy", Healthy.String())
	require.Equal(t, "Degraded", Degraded.String())
	require.Equal(t, "NoData", NoData.String())
	require.Equal(t, "Maintenance", Maintenance.String())
	require.Equal(t, "Health(12)", Health(12).String())
}
