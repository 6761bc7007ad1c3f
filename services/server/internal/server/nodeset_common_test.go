package server_test

import (
	"path/filepath"
	"testing"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// The models of the nodeset tests, from package nodeset's testdata: DI, and the pump
// model built on it (a DeviceType instance and a structure of its own).
var (
	diNodeset   = filepath.Join("..", "..", "..", "..", "pkg", "nodeset", "testdata", "Opc.Ua.Di.NodeSet2.xml")
	pumpNodeset = filepath.Join("..", "..", "..", "..", "pkg", "nodeset", "testdata", "uastack.Pump.NodeSet2.xml")
)

// With the demo namespace at 1, DI is loaded at 2 and the pump model at 3.
const (
	nsDI   = 2
	nsPump = 3
)

// nodesetServer starts a server that loads DI and the pump model.
func nodesetServer(t *testing.T) *servertest.Server {
	t.Helper()
	return servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.AddressSpace.Nodesets = []string{diNodeset, pumpNodeset}
	}})
}
