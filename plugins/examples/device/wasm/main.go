//go:build wasip1

// Command wasm is the simulated device as a WASM node manager:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o device.wasm ./plugins/examples/device/wasm
//
// and mounted by an entry of addressSpace.nodeManagers with type wasm (see the README).
package main

import (
	"uastack.dev/plugins/examples/device"
	"uastack.dev/plugins/sdk/wasm"
)

func init() { wasm.Register(device.Factory) }

// main is not run: the module is a reactor, set up by _initialize (the init above).
func main() {}
