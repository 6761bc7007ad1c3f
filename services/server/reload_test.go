//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/plugintest"
)

// TestMain runs the server itself when the test binary is started as one of the
// servers of a test (serveEnv, failover_test.go).
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(serveEnv); ok {
		os.Exit(serveChild(args))
	}
	plugintest.Main(m)
}

// TestRunReloadsOnSIGHUP: SIGHUP reloads the plugin node managers of a running server,
// as replacing their files does.
func TestRunReloadsOnSIGHUP(t *testing.T) {
	wasm := plugintest.WASM(t, "uastack.dev/plugins/examples/device/wasm")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "server.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `addressSpace:
  nodeManagers:
    - name: device
      type: wasm
      path: %q
      namespaceUri: urn:test:device
      noReload: true
`, wasm), 0o644))
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0", "--endpoint", "opc.tcp://127.0.0.1:0",
			"--pki", filepath.Join(dir, "pki")}, nil, &logs, func(a net.Addr) { ready <- a })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("run returned before ready: %v\n%s", err, logs.String())
	case <-time.After(3 * time.Minute): // a first compile of the module under -race
		t.Fatal("not ready")
	}
	require.NotContains(t, logs.String(), "guest reloaded")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "guest reloaded") }, 30*time.Second, 10*time.Millisecond,
		"the module was reloaded:\n%s", logs.String())
	require.Contains(t, logs.String(), "SIGHUP: reloading the plugin node managers")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("not stopped")
	}
}
