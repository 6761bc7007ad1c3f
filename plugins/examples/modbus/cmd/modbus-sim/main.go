// Command modbus-sim runs a Modbus TCP device in memory, to try the Modbus plugin
// without a PLC:
//
//	go run ./plugins/examples/modbus/cmd/modbus-sim -listen 127.0.0.1:5020
//
// It preloads a few registers and coils, makes input register 0 a temperature that
// wanders around 21.5 °C (in tenths of a degree), and prints where it listens and the
// plugin options that map what it serves. It runs until interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"uastack.dev/plugins/examples/modbus/sim"
)

// options are the plugin options that map what main preloads; %s is the address.
const options = `{
  "address": %q,
  "points": [
    {"name": "Temperature", "table": "input", "address": 0, "type": "int16"},
    {"name": "Setpoint", "table": "holding", "address": 0, "type": "uint16", "writable": true},
    {"name": "Gain", "table": "holding", "address": 1, "type": "float32", "writable": true},
    {"name": "Offset", "table": "holding", "address": 10, "type": "int16", "writable": true},
    {"name": "Pump", "table": "coil", "address": 0, "writable": true},
    {"name": "Valve", "table": "coil", "address": 1, "writable": true},
    {"name": "DoorClosed", "table": "discrete", "address": 0}
  ]
}`

func main() {
	listen := flag.String("listen", "127.0.0.1:5020", "the TCP address to serve Modbus on")
	period := flag.Duration("temperature-period", 500*time.Millisecond, "how often the temperature changes; 0 keeps it still")
	flag.Parse()
	if err := run(*listen, *period); err != nil {
		fmt.Fprintln(os.Stderr, "modbus-sim:", err)
		os.Exit(1)
	}
}

func run(listen string, period time.Duration) error {
	s, err := sim.Start(listen)
	if err != nil {
		return err
	}
	defer s.Close()
	preload(s, period)

	fmt.Printf("modbus-sim: serving Modbus TCP on %s (any unit id)\n", s.Addr())
	fmt.Printf("modbus-sim: plugin options for what it serves:\n"+options+"\n", s.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	fmt.Println("modbus-sim: stopping")
	return nil
}

// preload sets what options map.
func preload(s *sim.Simulator, period time.Duration) {
	gain := math.Float32bits(3.14)
	s.SetHolding(0, 1234, uint16(gain>>16), uint16(gain))
	s.SetHolding(10, uint16(0xffff-4)) // -5 as an int16
	s.SetCoils(0, true, false)
	s.SetDiscrete(0, true)
	s.SimulateTemperature(0, period)
}
