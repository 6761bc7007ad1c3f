// Package wasmhost runs node managers that are WebAssembly modules, under wazero: the
// guests of ABI.md (package sdk/wasm), built from Go with GOOS=wasip1 GOARCH=wasm or
// from any language that implements the ABI.
//
// Open compiles the module once, with wazero's compilation cache on disk so that a
// restart does not compile again, and returns a remote.Manager whose guests are
// instances of it. An instance is not safe for concurrent use: the Manager keeps a pool
// of Config.Instances, each carrying one batch of operations at a time. An instance that
// traps, or runs past the deadline of the operations it carries, is closed and replaced
// by a fresh one; its operations are answered BadInternalError or BadTimeout.
//
// A guest sees nothing of the host unless its configuration grants it (Config.Grants):
// no file system, environment variables, arguments or network. Its wall clock is the
// server's (Config.Now), its randomness the host's crypto/rand, and its memory is
// bounded by Config.MemoryLimit.
package wasmhost

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/plugins/internal/remote"
	"uastack.dev/plugins/sdk/wasm"
)

// DefaultMemoryLimit is the memory limit of an instance when Config.MemoryLimit is 0.
const DefaultMemoryLimit = 64 << 20

// pageSize is the size of a WebAssembly memory page.
const pageSize = 64 << 10

// Config says which module to run and what it may see.
type Config struct {
	// Name is the manager's name in configuration, for logs and errors.
	Name string
	// Path is the .wasm file.
	Path string
	// Setup is what every instance is set up with first (KindInfo): the name, the
	// namespace URI the configuration mounts the manager at, and its options as JSON.
	// An empty Setup.Name takes Name.
	Setup nodemgr.Setup
	// Instances is the size of the pool; 0 means 1. Each instance has its own guest
	// state (its own linear memory and globals): it is set up, mounted and started on
	// its own, and a guest that keeps state (a counter, a setpoint) keeps one per
	// instance. Several instances serve concurrent batches in parallel.
	Instances int
	// MemoryLimit bounds the linear memory of each instance, in bytes, rounded up to
	// 64 KiB pages; 0 means DefaultMemoryLimit. A guest that needs more fails to grow
	// its memory (a Go guest then dies: a trap) and is replaced.
	MemoryLimit int64
	// CacheDir is where compiled modules are kept between runs; "" means
	// os.UserCacheDir()/uastack/wazero. NoCache turns the disk cache off: every Open
	// compiles.
	CacheDir string
	NoCache  bool
	// Grants is what the guest may see of the host; nothing by default.
	Grants Grants
	// MaxOutstanding bounds the operations queued or in flight, CallTimeout a call whose
	// operations have no deadline (remote.Config); zero takes remote's defaults.
	MaxOutstanding int
	CallTimeout    time.Duration
	// Logger is the manager's logger: the guests' log lines, their stdout and stderr,
	// and their traps are logged on it. Nil discards.
	Logger *slog.Logger
	// Reload reloads the instances from the file when it is replaced (remote.Config's
	// Watch): the new module is compiled, and each instance is replaced by one of it
	// as soon as that is set up. A file that does not compile leaves the old serving.
	Reload bool
	// Now is the server's clock, the guest's `now` import and its WASI wall clock; nil
	// means time.Now.
	Now func() time.Time
}

// Grants is what a guest may see of the host. The zero value grants nothing.
type Grants struct {
	// Env lists environment variables of the guest: "NAME=value" sets one, "NAME"
	// passes the host's value of NAME (nothing when the host has none).
	Env []string
	// Dirs mounts host directories read-only into the guest's file system.
	Dirs []DirGrant
}

// DirGrant mounts the host directory Host read-only at Guest, an absolute path in the
// guest's file system.
type DirGrant struct {
	Host, Guest string
}

// Open compiles the module at cfg.Path, instantiates and sets up its first instance,
// and returns the Manager that serves it; Manager.Served is what the server mounts.
// Errors name the manager and the file: the file is missing, it is not a WebAssembly
// module, it lacks an export of the ABI, it speaks another ABI version, its
// _initialize trapped, or its setup failed. Closing the Manager closes the instances,
// the runtime and the cache.
func Open(ctx context.Context, cfg Config) (*remote.Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Setup.Name == "" {
		cfg.Setup.Name = cfg.Name
	}
	fail := func(err error) error { return fmt.Errorf("wasmhost %q: %s: %w", cfg.Name, cfg.Path, err) }
	code, err := os.ReadFile(cfg.Path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in fail's message already
		}
		return nil, fail(err)
	}
	modCfg, err := moduleConfig(&cfg)
	if err != nil {
		return nil, fail(err)
	}
	d := &dialer{cfg: cfg, modCfg: modCfg, conns: map[api.Module]*conn{}}
	if err := d.compile(ctx, code); err != nil {
		d.release(ctx)
		return nil, fail(err)
	}
	m, err := remote.Open(ctx, d, remote.Config{
		Name:           cfg.Name,
		Setup:          cfg.Setup,
		Conns:          max(cfg.Instances, 1),
		LanesPerConn:   1, // an instance runs one call at a time
		MaxOutstanding: cfg.MaxOutstanding,
		CallTimeout:    cfg.CallTimeout,
		Logger:         cfg.Logger,
		Release:        d.release,
		Watch:          watched(cfg.Reload, cfg.Path),
	})
	if err != nil {
		d.release(ctx)
		return nil, fail(err)
	}
	return m, nil
}

// watched is the file remote watches: path when reload is on.
func watched(reload bool, path string) string {
	if reload {
		return path
	}
	return ""
}

// runtimeConfig returns the wazero configuration of cfg, with its compilation cache.
func runtimeConfig(cfg *Config) (wazero.RuntimeConfig, wazero.CompilationCache, error) {
	limit := cfg.MemoryLimit
	if limit <= 0 {
		limit = DefaultMemoryLimit
	}
	pages := min((limit+pageSize-1)/pageSize, 1<<16)
	// The dialer chooses WithCloseOnContextDone: off for a metered module (meter.go).
	rc := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(uint32(pages)).
		WithCloseOnContextDone(true)
	if cfg.NoCache {
		return rc, nil, nil
	}
	dir := cfg.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, nil, fmt.Errorf("no cache directory (set CacheDir, or NoCache): %w", err)
		}
		dir = filepath.Join(base, "uastack", "wazero")
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("compilation cache: %w", err)
	}
	return rc.WithCompilationCache(cache), cache, nil
}

// moduleConfig returns the configuration every instance starts from: the grants and
// the clock, without stdout and stderr (each instance has its own).
func moduleConfig(cfg *Config) (wazero.ModuleConfig, error) {
	now := cfg.Now
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous: instances of one module coexist in the runtime
		WithStartFunctions("_initialize").
		WithRandSource(rand.Reader).
		WithWalltime(func() (int64, int32) {
			t := now()
			return t.Unix(), int32(t.Nanosecond())
		}, sys.ClockResolution(time.Microsecond)).
		WithSysNanotime().
		WithSysNanosleep()
	for _, e := range cfg.Grants.Env {
		name, value, set := strings.Cut(e, "=")
		if name == "" {
			return nil, fmt.Errorf("grants: env %q has no name", e)
		}
		if !set {
			if value, set = os.LookupEnv(name); !set {
				continue
			}
		}
		mc = mc.WithEnv(name, value)
	}
	if len(cfg.Grants.Dirs) > 0 {
		fsc := wazero.NewFSConfig()
		for _, g := range cfg.Grants.Dirs {
			if !strings.HasPrefix(g.Guest, "/") {
				return nil, fmt.Errorf("grants: dir %q: the guest path %q is not absolute", g.Host, g.Guest)
			}
			if st, err := os.Stat(g.Host); err != nil || !st.IsDir() {
				return nil, fmt.Errorf("grants: dir %q is not a directory", g.Host)
			}
			fsc = fsc.WithReadOnlyDirMount(g.Host, g.Guest)
		}
		mc = mc.WithFSConfig(fsc)
	}
	return mc, nil
}

// The exports of ABI.md, with their signatures.
var exports = []struct {
	name            string
	params, results []api.ValueType
}{
	{"uastack_abi_version", nil, []api.ValueType{api.ValueTypeI32}},
	{"uastack_alloc", []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	{"uastack_call", []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}},
}

// checkExports checks that m exports what ABI.md asks, with the right signatures.
func checkExports(m wazero.CompiledModule) error {
	fns := m.ExportedFunctions()
	for _, want := range exports {
		fn, ok := fns[want.name]
		if !ok {
			return fmt.Errorf("the module does not export %s (ABI version %d)", want.name, wasm.ABIVersion)
		}
		if !equalTypes(fn.ParamTypes(), want.params) || !equalTypes(fn.ResultTypes(), want.results) {
			return fmt.Errorf("the module's %s has the signature %v -> %v, ABI version %d wants %v -> %v",
				want.name, typeNames(fn.ParamTypes()), typeNames(fn.ResultTypes()), wasm.ABIVersion,
				typeNames(want.params), typeNames(want.results))
		}
	}
	if _, ok := m.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("the module does not export its memory as \"memory\"")
	}
	return nil
}

func equalTypes(a, b []api.ValueType) bool {
	return string(a) == string(b) // api.ValueType is a byte
}

func typeNames(ts []api.ValueType) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = api.ValueTypeName(t)
	}
	return names
}
