package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCPUTime burns 200 ms of CPU (however long a loaded machine takes to grant it) and
// checks that the /proc clock sees it too.
func TestCPUTime(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	require.NoError(t, err)
	userBefore, _, err := CPUTimes(os.Getpid())
	require.NoError(t, err)
	self := SelfCPU()
	deadline := time.Now().Add(20 * time.Second)
	x := 0
	for SelfCPU()-self < 200*time.Millisecond {
		require.True(t, time.Now().Before(deadline), "no 200 ms of CPU within 20 s")
		for range 100000 {
			x++
		}
	}
	require.Positive(t, x)
	after, err := CPUTime(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, after-before, 150*time.Millisecond, "/proc ticks are 10 ms")
	userAfter, _, err := CPUTimes(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, userAfter-userBefore, 150*time.Millisecond, "the loop burns user time")
	_, err = CPUTime(1 << 30)
	require.Error(t, err)

	m, err := Start(0)
	require.NoError(t, err)
	d, err := m.Stop()
	require.NoError(t, err)
	require.GreaterOrEqual(t, d, time.Duration(0))
	u, s, err := m.StopSplit()
	require.NoError(t, err)
	require.GreaterOrEqual(t, u, time.Duration(0))
	require.GreaterOrEqual(t, s, time.Duration(0))
}

// TestTree: a child process is below this one, and the tree's CPU time holds its own.
func TestTree(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	require.Contains(t, Descendants(os.Getpid()), cmd.Process.Pid)
	require.NotContains(t, Descendants(cmd.Process.Pid), os.Getpid())
	m, err := StartTree(os.Getpid())
	require.NoError(t, err)
	for range 2_000_000 {
		_ = os.Getpid() // a system call: CPU time for this process
	}
	d, err := m.Stop()
	require.NoError(t, err)
	require.Positive(t, d)
}
