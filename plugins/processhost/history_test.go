package processhost

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
	"uastack.dev/pkg/nodemgr"
)

// TestHistoryConformance runs the store conformance kit against the store of a plugin
// process (the test plugin's history option): a historian behind a process plugin.
// Each test opens a process of its own, for an empty store.
func TestHistoryConformance(t *testing.T) {
	historytest.Run(t, func(t *testing.T) history.Store {
		m := open(t, Config{Setup: nodemgr.Setup{Options: []byte(`{"history":true}`)}}, newHost(nil))
		st, ok := m.Served().(history.Store)
		require.True(t, ok, "the guest is a history.Store")
		_, ok = m.Served().(history.EventStore)
		require.True(t, ok, "the guest is a history.EventStore")
		return st
	})
	t.Run("NoStore", func(t *testing.T) {
		_, ok := open(t, Config{}, newHost(nil)).Served().(history.Store)
		require.False(t, ok, "the plain test plugin keeps no history")
	})
}
