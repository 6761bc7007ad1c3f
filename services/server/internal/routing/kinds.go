package routing

import (
	"fmt"
	"slices"

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

// Provision builds the managers the configuration names, in order, through their kinds:
// each is provisioned, validated (Validator) and checked to serve the namespace its
// entry names. An entry of a kind this build lacks, or one that fails, is an error that
// names the setting.
func (ks *Kinds) Provision(entries []config.NodeManager) ([]Named, error) {
	var out []Named
	for i, nm := range entries {
		setting := fmt.Sprintf("addressSpace.nodeManagers[%d] (%q, type %s)", i, nm.Name, nm.Type)
		k, ok := ks.byType[nm.Type]
		if !ok {
			return nil, fmt.Errorf("%s: this build cannot load %s node managers yet; remove the entry (the demo namespace is addressSpace.demoNamespace)", setting, nm.Type)
		}
		m, err := k.Provision(nm)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting, err)
		}
		if v, ok := m.(Validator); ok {
			if err := v.Validate(); err != nil {
				return nil, fmt.Errorf("%s: %w", setting, err)
			}
		}
		if nm.NamespaceURI != "" && !slices.Contains(m.Namespaces(), nm.NamespaceURI) {
			return nil, fmt.Errorf("%s: the manager serves %q, not namespaceUri %q", setting, m.Namespaces(), nm.NamespaceURI)
		}
		out = append(out, Named{Name: nm.Name, Manager: m})
	}
	return out, nil
}
