// Package plugintest builds plugins for tests with the Go toolchain, as the test setup of
// every package that runs a real guest does: WASM guests (GOOS=wasip1, a reactor) and
// plugin executables, each once per test binary, into a directory Main removes.
//
//	func TestMain(m *testing.M) { plugintest.Main(m) }
//
//	wasm := plugintest.WASM(t, "uastack.dev/plugins/examples/device/wasm")
//	exe := plugintest.Process(t, "uastack.dev/plugins/examples/modbus/plugin")
package plugintest

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex // guards dir, built
	dir   string
	built = map[string]*build{}
)

// build is one package's build, shared by the tests that want it.
type build struct {
	once sync.Once
	path string
	err  error
}

// Main runs the tests and removes what was built.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	mu.Unlock()
	os.Exit(code)
}

// WASM returns the path of the WASM module built from package pkg (an import path).
func WASM(tb testing.TB, pkg string) string {
	tb.Helper()
	return get(tb, pkg, true)
}

// Process returns the path of the executable built from package pkg.
func Process(tb testing.TB, pkg string) string {
	tb.Helper()
	return get(tb, pkg, false)
}

func get(tb testing.TB, pkg string, wasm bool) string {
	tb.Helper()
	mu.Lock()
	if dir == "" {
		d, err := os.MkdirTemp("", "uastack-plugins-")
		if err != nil {
			mu.Unlock()
			tb.Fatal(err)
		}
		dir = d
	}
	key := fmt.Sprint(pkg, wasm)
	b := built[key]
	if b == nil {
		b = &build{}
		built[key] = b
	}
	out := fmt.Sprintf("%s/%d-%s", dir, len(built), path.Base(pkg))
	mu.Unlock()
	b.once.Do(func() {
		args := []string{"build", "-o", out}
		env := os.Environ()
		if wasm {
			out += ".wasm"
			args = []string{"build", "-buildmode=c-shared", "-o", out}
			env = append(env, "GOOS=wasip1", "GOARCH=wasm")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Env = env
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
			return
		}
		b.path = out
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}
