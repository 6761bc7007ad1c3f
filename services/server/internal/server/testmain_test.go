package server

import (
	"testing"

	"uastack.dev/plugins/plugintest"
)

// TestMain removes the plugins that the tests of issue 17 build (plugintest) when the
// package's tests are done; the external test package shares it.
func TestMain(m *testing.M) { plugintest.Main(m) }
