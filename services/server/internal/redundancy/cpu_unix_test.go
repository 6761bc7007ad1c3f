//go:build unix

package redundancy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProcessCPU reads the process's own CPU time where the system gives it: it does
// not go back, and it grows with work.
func TestProcessCPU(t *testing.T) {
	t.Parallel()
	before, ok := ProcessCPU()
	require.True(t, ok)
	x := 0
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
		x++
	}
	after, ok := ProcessCPU()
	require.True(t, ok)
	require.Greater(t, after, before, "after %d spins", x)
}
