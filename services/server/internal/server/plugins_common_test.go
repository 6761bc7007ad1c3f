package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/examples/modbus/sim"
	"uastack.dev/plugins/plugintest"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
)

// The example plugins of issue 17 as the tests mount them: the simulated device as a
// WASM module and the Modbus driver as a plugin process, each at a namespace of its own.
const (
	deviceURI  = "urn:uastack:test:device"
	plantURI   = "urn:uastack:test:plant"
	devicePkg  = "uastack.dev/plugins/examples/device/wasm"
	modbusPkg  = "uastack.dev/plugins/examples/modbus/plugin"
	plantName  = "Plant"
	deviceName = "device"
)

// plantOptions are the Modbus plugin's options for a simulator at addr: the points that
// cmd/modbus-sim prints, polled every 50 ms at the fastest.
const plantOptions = `{
  "address": %q,
  "minPollInterval": "50ms",
  "points": [
    {"name": "Temperature", "table": "input", "address": 0, "type": "int16"},
    {"name": "Setpoint", "table": "holding", "address": 0, "type": "uint16", "writable": true},
    {"name": "Gain", "table": "holding", "address": 1, "type": "float32", "writable": true},
    {"name": "Pump", "table": "coil", "address": 0, "writable": true},
    {"name": "Valve", "table": "coil", "address": 1, "writable": true},
    {"name": "DoorClosed", "table": "discrete", "address": 0}
  ]
}`

// startPlantSim starts a Modbus simulator on loopback preloaded as cmd/modbus-sim does,
// with the temperature held still (the tests change it).
func startPlantSim(t *testing.T) *sim.Simulator {
	t.Helper()
	s, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	s.SetInput(0, 215)                    // 21.5 °C
	s.SetHolding(0, 1234, 0x4048, 0xf5c3) // Setpoint, and Gain 3.14 as a float32, high word first
	s.SetCoils(0, true, false)            // Pump on, Valve closed
	s.SetDiscrete(0, true)                // DoorClosed
	return s
}

// examplePlugins returns a Configure that mounts both example plugins, the Modbus
// driver talking to the simulator at simAddr.
func examplePlugins(t *testing.T, simAddr string) func(*config.Config) {
	t.Helper()
	wasm := server.PluginWASM(t, devicePkg)
	exe := plugintest.Process(t, modbusPkg)
	var plant map[string]any
	require.NoError(t, json.Unmarshal(fmt.Appendf(nil, plantOptions, simAddr), &plant))
	return func(c *config.Config) {
		c.AddressSpace.NodeManagers = append(c.AddressSpace.NodeManagers,
			config.NodeManager{Name: deviceName, Type: config.NodeManagerWasm, Path: wasm, NamespaceURI: deviceURI,
				Options: map[string]any{"period": "2s"}},
			config.NodeManager{Name: plantName, Type: config.NodeManagerProcess, Path: exe, NamespaceURI: plantURI,
				Options: plant})
	}
}

// namespaceIndex returns the index of uri in the server's NamespaceArray.
func namespaceIndex(t *testing.T, ctx context.Context, c *opcua.Client, uri string) uint16 {
	t.Helper()
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{readValueID(2255, ua.AttributeIDValue)}})
	require.NoError(t, err)
	uris, ok := resp.Results[0].Value.Value().([]string)
	require.True(t, ok, "NamespaceArray is %T", resp.Results[0].Value.Value())
	for i, u := range uris {
		if u == uri {
			return uint16(i)
		}
	}
	t.Fatalf("%s not in NamespaceArray %v", uri, uris)
	return 0
}
