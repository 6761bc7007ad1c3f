package routing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/services/server/internal/config"
)

// Kind is a kind of node manager that the configuration names by type
// (addressSpace.nodeManagers[].type), as Caddy's modules are named: a factory that turns
// one configuration entry into a manager.
type Kind struct {
	// Type is the configuration's name of the kind ("builtin", "wasm", "process").
	Type string
	// Provision builds the manager of entry nm: it reads the entry's name, path and
	// options and fails with an error that says what is wrong with them.
	Provision func(nm config.NodeManager) (nodemgr.Manager, error)
}

// Validator is a provisioned manager that checks itself before it is mounted; an error
// stops the start.
type Validator interface {
	Validate() error
}

// Releaser is a provisioned manager that holds resources from Provision on (a plugin's
// guest, a process): when the server does not start after all, it is released without
// having been started. Release may follow Close, and does nothing then.
type Releaser interface {
	Release(ctx context.Context) error
}

// Kinds is the registry of the node-manager kinds a build can load. Register kinds before
// Provision; a Kinds is not safe for concurrent registration.
type Kinds struct {
	byType map[string]Kind
}

// Register adds k; a type registered twice is an error.
func (ks *Kinds) Register(k Kind) error {
	if k.Type == "" || k.Provision == nil {
		return fmt.Errorf("routing: node manager kind %q: a type and a Provision are needed", k.Type)
	}
	if _, dup := ks.byType[k.Type]; dup {
		return fmt.Errorf("routing: node manager kind %q registered twice", k.Type)
	}
	if ks.byType == nil {
		ks.byType = make(map[string]Kind)
	}
	ks.byType[k.Type] = k
	return nil
}

// Has reports whether a kind of type t is registered.
func (ks *Kinds) Has(t string) bool {
	_, ok := ks.byType[t]
	return ok
}

// Provision builds the managers the configuration names, in order, through their kinds:
// each is provisioned, validated (Validator) and checked to serve the namespace its
// entry names. An entry of a kind this build lacks, or one that fails, is an error that
// names the setting.
func (ks *Kinds) Provision(entries []config.NodeManager) (_ []Named, err error) {
	var out []Named
	defer func() {
		if err != nil {
			Release(out)
		}
	}()
	for i, nm := range entries {
		setting := fmt.Sprintf("addressSpace.nodeManagers[%d] (%q, type %s)", i, nm.Name, nm.Type)
		k, ok := ks.byType[nm.Type]
		if !ok {
			return nil, fmt.Errorf("%s: this build cannot load %s node managers; remove the entry (the demo namespace is addressSpace.demoNamespace)", setting, nm.Type)
		}
		m, err := k.Provision(nm)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting, err)
		}
		out = append(out, Named{Name: nm.Name, Manager: m, Setting: setting})
		if v, ok := m.(Validator); ok {
			if err := v.Validate(); err != nil {
				return nil, fmt.Errorf("%s: %w", setting, err)
			}
		}
		if nm.NamespaceURI != "" && !slices.Contains(m.Namespaces(), nm.NamespaceURI) {
			return nil, fmt.Errorf("%s: the manager serves %q, not namespaceUri %q", setting, m.Namespaces(), nm.NamespaceURI)
		}
	}
	return out, nil
}

// releaseTimeout bounds how long Release waits for the managers.
const releaseTimeout = 30 * time.Second

// Release releases the managers of ms that are Releasers, when the server does not
// start after all; it returns the errors joined.
func Release(ms []Named) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	var errs []error
	for _, m := range ms {
		if r, ok := m.Manager.(Releaser); ok {
			if err := r.Release(ctx); err != nil {
				errs = append(errs, fmt.Errorf("node manager %s: release: %w", m.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}
