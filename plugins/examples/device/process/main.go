// Command process is the simulated device as a plugin process:
//
//	go build -o device-plugin ./plugins/examples/device/process
//
// mounted by an entry of addressSpace.nodeManagers with type process. It serves the
// same nodes as the WASM module (./plugins/examples/device/wasm) and the built-in
// manager named device, so that the three can be measured side by side
// (bench/cmd/plugins).
package main

import (
	"uastack.dev/plugins/examples/device"
	"uastack.dev/plugins/sdk/process"
)

func main() { process.Serve(device.Factory) }
