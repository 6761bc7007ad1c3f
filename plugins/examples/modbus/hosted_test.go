package modbus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/nodemgr/nodemgrtest"
	"uastack.dev/plugins/plugintest"
	"uastack.dev/plugins/processhost"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// TestConformanceAsProcess runs the conformance kit against the Modbus driver built as a
// plugin executable and served by the process host, with the simulator behind it.
func TestConformanceAsProcess(t *testing.T) {
	path := plugintest.Process(t, "uastack.dev/plugins/examples/modbus/plugin")
	s := startSim(t)
	nodemgrtest.Run(t, nodemgrtest.Fixture{
		New: func(t testing.TB) nodemgr.Manager {
			m, err := processhost.Open(context.Background(), processhost.Config{Name: "Plant", Path: path,
				Setup: nodemgr.Setup{NamespaceURI: "urn:test:modbus", Options: testOptions(s.Addr())}})
			require.NoError(t, err)
			return m.Served()
		},
		NamespaceIndexes: []uint16{2},
		Capabilities: nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapMount |
			nodemgr.CapStart | nodemgr.CapClose | nodemgr.CapWatch | nodemgr.CapHealth,
		Readable:    node("Temperature"),
		Writable:    node("Setpoint"),
		WriteValue:  codec.UInt16Variant(55),
		NotWritable: node("Temperature"),
		Browsable:   codec.NewStringNodeId(2, "Plant"),
		Unknown:     node("NoSuchPoint"),
		Changing: &nodemgrtest.Changing{Node: node("Temperature"), Change: func(t testing.TB, _ nodemgr.Manager) {
			s.SetInput(0, uint16(time.Now().UnixNano()%1000))
		}},
		Slow:    func(nodemgr.Manager) func() { return s.Stall() },
		Timeout: 10 * time.Second,
	})
}
