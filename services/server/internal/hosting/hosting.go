// Package hosting gives the server the node-manager kinds that come from the plugins
// module: "wasm" (a WASM module run by wazero in the server's process), "process" (a
// plugin executable run by go-plugin) and "builtin" (managers compiled in: the example
// device, for one). Each turns an entry of addressSpace.nodeManagers into a started
// guest, so that a file that is missing, a module that does not speak the ABI or a
// plugin that refuses its options stops the server's start with an error that names
// the entry and the file.
package hosting

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/plugins/examples/device"
	"uastack.dev/plugins/processhost"
	"uastack.dev/plugins/wasmhost"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/routing"
)

// openTimeout bounds loading one plugin: compiling a module (seconds for a Go guest the
// first time, far longer in a build with the race detector; later starts take it from
// the cache), starting a process and setting it up.
const openTimeout = 2 * time.Minute

// builtins are the managers compiled in, by the name of their entry.
var builtins = map[string]func(nm config.NodeManager, options []byte) (nodemgr.Manager, error){
	"device": func(nm config.NodeManager, options []byte) (nodemgr.Manager, error) {
		return device.New(nm.NamespaceURI, options)
	},
}

// Kinds returns the kinds, whose managers log on log (with the manager's name) and read
// the server's clock now.
func Kinds(log *slog.Logger, now func() time.Time) []routing.Kind {
	named := func(nm config.NodeManager) *slog.Logger { return log.With("nodeManager", nm.Name) }
	return []routing.Kind{
		{Type: config.NodeManagerWasm, Provision: func(nm config.NodeManager) (nodemgr.Manager, error) {
			setup, err := setupOf(nm)
			if err != nil {
				return nil, err
			}
			cfg := wasmhost.Config{
				Name: nm.Name, Path: nm.Path, Setup: setup, Instances: nm.Instances,
				MemoryLimit: int64(nm.MemoryLimitMiB) << 20, MaxOutstanding: nm.MaxOutstanding,
				Grants: wasmhost.Grants{Env: nm.Grants.Env}, Reload: !nm.NoReload,
				Logger: named(nm), Now: now,
			}
			for _, guest := range slices.Sorted(maps.Keys(nm.Grants.Dirs)) {
				cfg.Grants.Dirs = append(cfg.Grants.Dirs, wasmhost.DirGrant{Guest: guest, Host: nm.Grants.Dirs[guest]})
			}
			ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
			defer cancel()
			m, err := wasmhost.Open(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return m.Served(), nil
		}},
		{Type: config.NodeManagerProcess, Provision: func(nm config.NodeManager) (nodemgr.Manager, error) {
			setup, err := setupOf(nm)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
			defer cancel()
			m, err := processhost.Open(ctx, processhost.Config{
				Name: nm.Name, Path: nm.Path, Args: nm.Args, Setup: setup,
				MaxOutstanding: nm.MaxOutstanding, Reload: !nm.NoReload, Logger: named(nm),
			})
			if err != nil {
				return nil, err
			}
			return m.Served(), nil
		}},
		{Type: config.NodeManagerBuiltin, Provision: func(nm config.NodeManager) (nodemgr.Manager, error) {
			build, ok := builtins[nm.Name]
			if !ok {
				return nil, fmt.Errorf("no built-in node manager is called %q (there are: %v)", nm.Name, slices.Sorted(maps.Keys(builtins)))
			}
			options, err := optionsOf(nm)
			if err != nil {
				return nil, err
			}
			return build(nm, options)
		}},
	}
}

// setupOf is what a plugin is told of its entry.
func setupOf(nm config.NodeManager) (nodemgr.Setup, error) {
	options, err := optionsOf(nm)
	return nodemgr.Setup{Name: nm.Name, NamespaceURI: nm.NamespaceURI, Options: options}, err
}

// optionsOf encodes the entry's options as JSON; nil for none.
func optionsOf(nm config.NodeManager) ([]byte, error) {
	if len(nm.Options) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(nm.Options)
	if err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	return b, nil
}
