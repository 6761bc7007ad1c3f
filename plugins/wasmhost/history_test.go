package wasmhost

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
)

// TestHistoryConformance runs the store conformance kit against the store of a WASM
// guest (the misbehave guest's history option): a historian in the sandbox. Each test
// opens an instance of its own, for an empty store.
func TestHistoryConformance(t *testing.T) {
	historytest.Run(t, func(t *testing.T) history.Store {
		g := start(t, nil, func(c *Config) { c.Setup.Options = []byte(`{"history": true}`) })
		st, ok := g.m.Served().(history.Store)
		require.True(t, ok, "the guest is a history.Store")
		_, ok = g.m.Served().(history.EventStore)
		require.True(t, ok, "the guest is a history.EventStore")
		return st
	})
	t.Run("NoStore", func(t *testing.T) {
		_, ok := start(t, nil, nil).m.Served().(history.Store)
		require.False(t, ok, "without the option the guest keeps no history")
	})
}
