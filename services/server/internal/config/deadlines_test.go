package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTransportLimitsLoad reads the transport's deadlines and reassembly budget from a file
// and the environment: durations, 0 for no bound, byte counts; untouched ones keep their
// defaults.
func TestTransportLimitsLoad(t *testing.T) {
	t.Parallel()
	file := writeYAML(t, `
limits:
  handshakeTimeout: 2s
  chunkTimeout: 0s
  maxRetainedBytes: 67108864
  maxRetainedBytesPerChannel: 1048576
`)
	c, err := Load([]string{"--config", file}, []string{"UASTACK_LIMITS_WRITETIMEOUT=45s"})
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, c.Limits.HandshakeTimeout)
	require.Zero(t, c.Limits.ChunkTimeout)
	require.Equal(t, time.Minute, c.Limits.AssemblyTimeout)
	require.Equal(t, 45*time.Second, c.Limits.WriteTimeout)
	require.Equal(t, 64<<20, c.Limits.MaxRetainedBytes)
	require.Equal(t, 1<<20, c.Limits.MaxRetainedBytesPerChannel)
}
