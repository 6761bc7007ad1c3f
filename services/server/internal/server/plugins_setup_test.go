package server

import (
	"context"
	"sync"
	"testing"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/plugins/plugintest"
	"uastack.dev/plugins/wasmhost"
)

// warmed are the WASM modules compiled into wazero's cache by this test binary, by
// path.
var warmed sync.Map // string → *warming

type warming struct {
	once sync.Once
	err  error
}

// pluginWASM returns the WASM module built from package pkg (plugintest.WASM), compiled
// once into wazero's cache on disk as the server compiles it. The server bounds the
// loading of a plugin (compiling, instantiating, setting up) by a deadline that a first
// compile under the race detector can outrun on a loaded machine; the tests compile
// without one, so that the servers they start find the module compiled.
func pluginWASM(tb testing.TB, pkg string) string {
	tb.Helper()
	path := plugintest.WASM(tb, pkg)
	w, _ := warmed.LoadOrStore(path, &warming{})
	wm := w.(*warming)
	wm.once.Do(func() {
		ctx := context.Background()
		m, err := wasmhost.Open(ctx, wasmhost.Config{Name: "warm", Path: path,
			Setup: nodemgr.Setup{NamespaceURI: "urn:uastack:test:warm"}})
		if err == nil {
			err = m.Close(ctx)
		}
		wm.err = err
	})
	if wm.err != nil {
		tb.Fatalf("compiling %s: %v", pkg, wm.err)
	}
	return path
}

// PluginWASM is pluginWASM for the external tests of the package.
var PluginWASM = pluginWASM
