package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/plugintest"
)

// TestServerKilledLeavesNoPlugin is issue 17's last isolation proof, with the server as
// a process of its own: started from a YAML file that mounts the test plugin as a
// process, killed with SIGKILL, it leaves no plugin process behind.
func TestServerKilledLeavesNoPlugin(t *testing.T) {
	t.Parallel()
	bin := plugintest.Process(t, "uastack.dev/services/server")
	plugin := plugintest.Process(t, "uastack.dev/plugins/plugintest/testplugin")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `addressSpace:
  nodeManagers:
    - name: orphan
      type: process
      path: %q
      namespaceUri: urn:uastack:test:orphan
`, plugin), 0o600))
	cmd := exec.Command(bin, "--config", cfg, "--listen", "127.0.0.1:0", "--endpoint", "opc.tcp://127.0.0.1:0",
		"--pki", filepath.Join(dir, "pki"), "--set", "endpoint.hostnames=127.0.0.1,localhost")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var logs lockedLines
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.add(sc.Text())
			if strings.Contains(sc.Text(), "msg=listening") {
				close(listening)
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case <-listening:
	case <-exited:
		t.Fatalf("the server exited before listening:\n%s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the server is not listening after 30 s:\n%s", logs.String())
	}

	children := childrenOf(t, cmd.Process.Pid)
	require.Len(t, children, 1, "the plugin is the server's one child process")
	pid := children[0]
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	require.NoError(t, err)
	require.Equal(t, plugin, exe)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-exited
	require.Eventually(t, func() bool { return !alive(pid) }, 2*time.Second, 10*time.Millisecond,
		"the plugin process %d outlived its server", pid)
}

// childrenOf returns the processes whose parent is pid, from /proc.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		if state, ppid, ok := statOf(b); ok && ppid == pid && state != "Z" {
			child, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			require.NoError(t, err)
			out = append(out, child)
		}
	}
	return out
}

// alive says whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	state, _, ok := statOf(b)
	return ok && state != "Z"
}

// statOf returns the state and parent pid of a /proc/<pid>/stat line: "pid (comm) state
// ppid ...", where comm may hold spaces and parentheses.
func statOf(b []byte) (state string, ppid int, ok bool) {
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return fields[0], ppid, err == nil
}

// lockedLines collects log lines from a reader goroutine.
type lockedLines struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (l *lockedLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
