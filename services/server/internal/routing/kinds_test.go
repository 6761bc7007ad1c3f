package routing

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/services/server/internal/config"
)

// checked is a manager that validates itself with err.
type checked struct {
	plain
	err error
}

func (c checked) Validate() error { return c.err }

// TestKinds: a kind provisions the entries of its type in order; a type registered twice,
// an entry of a kind the build lacks, a failed provision or validation and a manager that
// does not serve the entry's namespace are errors naming the setting.
func TestKinds(t *testing.T) {
	t.Parallel()
	var ks Kinds
	var seen []config.NodeManager
	require.NoError(t, ks.Register(Kind{Type: config.NodeManagerBuiltin, Provision: func(nm config.NodeManager) (nodemgr.Manager, error) {
		seen = append(seen, nm)
		switch nm.Name {
		case "broken":
			return nil, errors.New("no such device")
		case "invalid":
			return checked{plain(nm.NamespaceURI), errors.New("option rate: below 1")}, nil
		case "elsewhere":
			return plain("urn:other"), nil
		}
		return checked{plain: plain(nm.NamespaceURI)}, nil
	}}))
	require.ErrorContains(t, ks.Register(Kind{Type: config.NodeManagerBuiltin, Provision: func(config.NodeManager) (nodemgr.Manager, error) { return nil, nil }}), "registered twice")
	require.Error(t, ks.Register(Kind{Type: "x"}), "a kind needs a Provision")

	entries := []config.NodeManager{
		{Name: "a", Type: config.NodeManagerBuiltin, NamespaceURI: "urn:a"},
		{Name: "b", Type: config.NodeManagerBuiltin, NamespaceURI: "urn:b"},
	}
	ms, err := ks.Provision(entries)
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, []string{"urn:b"}, ms[1].Manager.Namespaces())
	require.Equal(t, "b", ms[1].Name, "named by its entry")
	require.Equal(t, entries, seen, "provisioned in order, with their entries")

	for _, tc := range []struct {
		entry config.NodeManager
		err   string
	}{
		{config.NodeManager{Name: "plc", Type: config.NodeManagerWasm, NamespaceURI: "urn:plc", Path: "plc.wasm"},
			`addressSpace.nodeManagers[0] ("plc", type wasm): this build cannot load wasm node managers`},
		{config.NodeManager{Name: "broken", Type: config.NodeManagerBuiltin}, `addressSpace.nodeManagers[0] ("broken", type builtin): no such device`},
		{config.NodeManager{Name: "invalid", Type: config.NodeManagerBuiltin, NamespaceURI: "urn:i"}, "option rate: below 1"},
		{config.NodeManager{Name: "elsewhere", Type: config.NodeManagerBuiltin, NamespaceURI: "urn:e"}, `serves ["urn:other"], not namespaceUri "urn:e"`},
	} {
		_, err := ks.Provision([]config.NodeManager{tc.entry})
		require.ErrorContains(t, err, tc.err)
	}
}

// released is a manager that counts its releases.
type released struct {
	plain
	n *int
}

func (r released) Release(context.Context) error { *r.n++; return nil }

// TestKindsReleaseOnFailure: when an entry fails, the managers provisioned before it, and
// the failing one when it was built, are released: nothing a plugin took stays behind.
func TestKindsReleaseOnFailure(t *testing.T) {
	t.Parallel()
	n := 0
	var ks Kinds
	require.NoError(t, ks.Register(Kind{Type: config.NodeManagerBuiltin, Provision: func(nm config.NodeManager) (nodemgr.Manager, error) {
		if nm.Name == "wrong" {
			return released{plain("urn:other"), &n}, nil
		}
		return released{plain(nm.NamespaceURI), &n}, nil
	}}))
	_, err := ks.Provision([]config.NodeManager{
		{Name: "a", Type: config.NodeManagerBuiltin, NamespaceURI: "urn:a"},
		{Name: "b", Type: config.NodeManagerBuiltin, NamespaceURI: "urn:b"},
		{Name: "wrong", Type: config.NodeManagerBuiltin, NamespaceURI: "urn:w"},
	})
	require.ErrorContains(t, err, "not namespaceUri")
	require.Equal(t, 3, n)

	n = 0
	ms, err := ks.Provision([]config.NodeManager{{Name: "a", Type: config.NodeManagerBuiltin, NamespaceURI: "urn:a"}})
	require.NoError(t, err)
	require.Zero(t, n, "nothing released when all are provisioned")
	require.NoError(t, Release(ms))
	require.Equal(t, 1, n)
}
