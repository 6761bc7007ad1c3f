package driver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/examples/modbus/driver"
)

func TestParseOptions(t *testing.T) {
	t.Parallel()
	good, err := driver.ParseOptions([]byte(`{
		"address": "127.0.0.1:5020", "unitId": 7, "timeout": "250ms", "minPollInterval": "50ms",
		"wordOrder": "low-first",
		"points": [
			{"name": "Temperature", "table": "input", "address": 0, "type": "int16"},
			{"name": "Setpoint", "table": "holding", "address": 10, "type": "float32", "writable": true},
			{"name": "Pump", "table": "coil", "address": 3, "writable": true},
			{"name": "Door", "table": "discrete", "address": 65535},
			{"name": "Count", "table": "holding", "address": 20}
		]}`))
	require.NoError(t, err)
	require.Equal(t, driver.Options{
		Address: "127.0.0.1:5020", UnitID: 7, Timeout: 250 * time.Millisecond,
		MinPollInterval: 50 * time.Millisecond, WordOrder: driver.LowFirst,
		Points: []driver.Point{
			{Name: "Temperature", Table: driver.Input, Address: 0, Type: driver.Int16},
			{Name: "Setpoint", Table: driver.Holding, Address: 10, Type: driver.Float32, Writable: true},
			{Name: "Pump", Table: driver.Coil, Address: 3, Type: driver.Bool, Writable: true},
			{Name: "Door", Table: driver.Discrete, Address: 65535, Type: driver.Bool},
			{Name: "Count", Table: driver.Holding, Address: 20, Type: driver.Uint16},
		},
	}, good)

	defaults, err := driver.ParseOptions([]byte(`{"address": "plc:502", "points": [{"name": "a", "table": "holding", "address": 1}]}`))
	require.NoError(t, err)
	require.Equal(t, uint8(1), defaults.UnitID)
	require.Equal(t, time.Second, defaults.Timeout)
	require.Equal(t, 100*time.Millisecond, defaults.MinPollInterval)
	require.Equal(t, driver.HighFirst, defaults.WordOrder)

	point := func(p string) string {
		return `{"address": "127.0.0.1:502", "points": [` + p + `]}`
	}
	for _, tc := range []struct {
		name, json, want string
	}{
		{"unknown top field", `{"address": "127.0.0.1:502", "port": 5, "points": [{"name": "a", "table": "coil", "address": 0}]}`, `unknown field "port"`},
		{"unknown point field", point(`{"name": "a", "table": "coil", "address": 0, "scale": 2}`), `unknown field "scale"`},
		{"no address", `{"points": [{"name": "a", "table": "coil", "address": 0}]}`, "no address"},
		{"address without port", `{"address": "127.0.0.1", "points": [{"name": "a", "table": "coil", "address": 0}]}`, "missing port"},
		{"unit id too big", `{"address": "h:1", "unitId": 256, "points": [{"name": "a", "table": "coil", "address": 0}]}`, "unitId 256"},
		{"bad timeout", `{"address": "h:1", "timeout": "soon", "points": [{"name": "a", "table": "coil", "address": 0}]}`, "timeout"},
		{"zero poll interval", `{"address": "h:1", "minPollInterval": "0s", "points": [{"name": "a", "table": "coil", "address": 0}]}`, "minPollInterval"},
		{"bad word order", `{"address": "h:1", "wordOrder": "middle", "points": [{"name": "a", "table": "coil", "address": 0}]}`, `wordOrder "middle"`},
		{"no points", `{"address": "h:1"}`, "no points"},
		{"trailing data", `{"address": "h:1", "points": [{"name": "a", "table": "coil", "address": 0}]} {}`, "after the JSON"},
		{"no name", point(`{"table": "coil", "address": 0}`), "point 0 has no name"},
		{"duplicate name", point(`{"name": "a", "table": "coil", "address": 0}, {"name": "a", "table": "coil", "address": 1}`), `point "a": the name is also point 0's`},
		{"bad table", point(`{"name": "a", "table": "eeprom", "address": 0}`), `point "a": table "eeprom"`},
		{"no table", point(`{"name": "a", "address": 0}`), `point "a": no table`},
		{"bad type", point(`{"name": "a", "table": "holding", "type": "float64", "address": 0}`), `point "a": type "float64"`},
		{"bool register", point(`{"name": "a", "table": "holding", "type": "bool", "address": 0}`), `point "a": type bool does not fit the holding table`},
		{"numeric coil", point(`{"name": "a", "table": "coil", "type": "uint16", "address": 0}`), `point "a": type uint16 does not fit`},
		{"no register address", point(`{"name": "a", "table": "holding"}`), `point "a": no address`},
		{"negative address", point(`{"name": "a", "table": "holding", "address": -1}`), `point "a": address -1`},
		{"address too big", point(`{"name": "a", "table": "holding", "address": 65536}`), `point "a": address 65536`},
		{"32 bits past the end", point(`{"name": "a", "table": "input", "type": "uint32", "address": 65535}`), `point "a": uint32 at address 65535 runs past`},
		{"writable input", point(`{"name": "a", "table": "input", "address": 0, "writable": true}`), `point "a": the input table is read-only`},
		{"writable discrete", point(`{"name": "a", "table": "discrete", "address": 0, "writable": true}`), `point "a": the discrete table is read-only`},
		{"overlapping writable registers", point(`{"name": "a", "table": "holding", "type": "int32", "address": 4, "writable": true},
			{"name": "b", "table": "holding", "address": 5, "writable": true}`), `point "b": writable, and holding 5 is also written by point "a"`},
		{"overlapping writable coils", point(`{"name": "a", "table": "coil", "address": 4, "writable": true},
			{"name": "b", "table": "coil", "address": 4, "writable": true}`), `point "b": writable, and coil 4`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := driver.ParseOptions([]byte(tc.json))
			require.ErrorContains(t, err, tc.want)
		})
	}

	// Overlaps are fine when at most one of the points is written, and across tables.
	_, err = driver.ParseOptions([]byte(point(`{"name": "a", "table": "holding", "type": "uint32", "address": 4, "writable": true},
		{"name": "a.low", "table": "holding", "address": 5},
		{"name": "b", "table": "coil", "address": 4, "writable": true}`)))
	require.NoError(t, err)
}

func TestNewDeviceChecksOptions(t *testing.T) {
	t.Parallel()
	_, err := driver.NewDevice(driver.Options{Address: "127.0.0.1:1", Points: []driver.Point{
		{Name: "a", Table: driver.Holding, Type: driver.Bool},
	}})
	require.ErrorContains(t, err, `point "a": type bool does not fit the holding table`)

	d, err := driver.NewDevice(driver.Options{Address: "127.0.0.1:1", Points: []driver.Point{
		{Name: "a", Table: driver.Holding, Type: driver.Uint16},
	}})
	require.NoError(t, err)
	require.Equal(t, driver.DefaultTimeout, d.Options().Timeout)
	require.Equal(t, driver.DefaultMinPollInterval, d.Options().MinPollInterval)
}

// FuzzParseOptions checks that ParseOptions never panics and that what it accepts keeps
// the promises NewDevice relies on.
func FuzzParseOptions(f *testing.F) {
	for _, seed := range []string{
		`{"address": "127.0.0.1:502", "points": [{"name": "a", "table": "holding", "address": 1}]}`,
		`{"address": "h:1", "unitId": 3, "timeout": "2s", "minPollInterval": "10ms", "wordOrder": "low-first",
		  "points": [{"name": "t", "table": "input", "address": 0, "type": "float32"},
		             {"name": "c", "table": "coil", "address": 65535, "writable": true},
		             {"name": "w", "table": "holding", "type": "int32", "address": 7, "writable": true}]}`,
		`{"address": "h:1", "points": [{"name": "a", "table": "holding", "address": 1, "writable": true}, {"name": "b", "table": "holding", "type": "uint32", "address": 0, "writable": true}]}`,
		`{"address": "h:1", "points": []}`,
		`{"address": 5}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := driver.ParseOptions(b)
		if err != nil {
			return
		}
		require.NotEmpty(t, o.Points)
		require.Positive(t, o.Timeout)
		require.Positive(t, o.MinPollInterval)
		names := map[string]bool{}
		for _, p := range o.Points {
			require.NotEmpty(t, p.Name)
			require.False(t, names[p.Name], "duplicate %q", p.Name)
			names[p.Name] = true
			require.LessOrEqual(t, int(p.Address)+int(p.Width()), 0x10000)
		}
		_, err = driver.NewDevice(o)
		require.NoError(t, err)
	})
}
