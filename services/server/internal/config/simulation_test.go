package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSimulation checks the addressSpace.simulation keys: off by default, set through
// --set, and refused when negative, without the demo namespace or with no interval.
func TestSimulation(t *testing.T) {
	cfg, err := Load(nil, nil)
	require.NoError(t, err)
	require.Equal(t, Simulation{Interval: time.Second}, cfg.AddressSpace.Simulation)

	cfg, err = Load([]string{"--set", "addressSpace.simulation.count=1000", "--set", "addressSpace.simulation.interval=100ms"}, nil)
	require.NoError(t, err)
	require.Equal(t, Simulation{Count: 1000, Interval: 100 * time.Millisecond}, cfg.AddressSpace.Simulation)

	for _, bad := range [][]string{
		{"--set", "addressSpace.simulation.count=-1"},
		{"--set", "addressSpace.simulation.count=5", "--set", "addressSpace.demoNamespace=false"},
		{"--set", "addressSpace.simulation.count=5", "--set", "addressSpace.simulation.interval=0s"},
	} {
		_, err := Load(bad, nil)
		require.ErrorContains(t, err, "addressSpace.simulation", bad)
	}
}
