// Command plugin is the Modbus TCP driver as a plugin process:
//
//	go build -o modbus-plugin ./plugins/examples/modbus/plugin
//
// mounted by an entry of addressSpace.nodeManagers with type process, whose options map
// the device's registers and coils to variables (see package driver and the README).
package main

import (
	"uastack.dev/plugins/examples/modbus"
	"uastack.dev/plugins/sdk/process"
)

func main() { process.Serve(modbus.Factory) }
