package device_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/nodemgr/nodemgrtest"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/examples/device"
	"uastack.dev/plugins/plugintest"
	"uastack.dev/plugins/processhost"
	"uastack.dev/plugins/wasmhost"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// TestConformanceAsWASM runs the conformance kit against the device built as a WASM
// module and served by the WASM host: the same rules the device passes in-process.
func TestConformanceAsWASM(t *testing.T) {
	path := plugintest.WASM(t, "uastack.dev/plugins/examples/device/wasm")
	nodemgrtest.Run(t, hostedFixture(func(t testing.TB) nodemgr.Manager {
		m, err := wasmhost.Open(context.Background(), wasmhost.Config{Name: "device", Path: path,
			Setup: nodemgr.Setup{NamespaceURI: "urn:test:device"}})
		require.NoError(t, err)
		return m.Served()
	}))
}

// TestConformanceAsProcess runs the same kit against the device built as a plugin
// executable (./process) and served by the process host.
func TestConformanceAsProcess(t *testing.T) {
	path := plugintest.Process(t, "uastack.dev/plugins/examples/device/process")
	nodemgrtest.Run(t, hostedFixture(func(t testing.TB) nodemgr.Manager {
		m, err := processhost.Open(context.Background(), processhost.Config{Name: "device", Path: path,
			Setup: nodemgr.Setup{NamespaceURI: "urn:test:device"}})
		require.NoError(t, err)
		return m.Served()
	}))
}

// hostedFixture is the kit's fixture of the device behind a host, built by newManager.
func hostedFixture(newManager func(t testing.TB) nodemgr.Manager) nodemgrtest.Fixture {
	node := func(name string) codec.NodeId { return device.NodeID(2, name) }
	return nodemgrtest.Fixture{
		New:              newManager,
		NamespaceIndexes: []uint16{2},
		// The host adds Close (it holds the instances or the process) and answers for the capabilities
		// a guest lacks with the server's Bad codes.
		Capabilities: nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapCall |
			nodemgr.CapMount | nodemgr.CapStart | nodemgr.CapClose | nodemgr.CapHealth,
		Principal:   nodemgr.Principal{Anonymous: true},
		Readable:    node(device.NameSine),
		Writable:    node(device.NameSetpoint),
		WriteValue:  codec.DoubleVariant(21.5),
		NotWritable: node(device.NameSine),
		Browsable:   node(device.NameDevice),
		Unknown:     node("NoSuchNode"),
		Call: &ua.CallMethodRequest{ObjectId: node(device.NameDevice), MethodId: node(device.NameStep),
			InputArguments: []codec.Variant{codec.DoubleVariant(0.5)}},
	}
}
