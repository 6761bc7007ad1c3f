package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/examples/modbus/driver"
	"uastack.dev/plugins/examples/modbus/sim"
)

// TestPrintedOptions checks that the options modbus-sim prints parse and map what it
// preloads.
func TestPrintedOptions(t *testing.T) {
	s, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	defer s.Close()
	preload(s, time.Hour)

	opts, err := driver.ParseOptions(fmt.Appendf(nil, options, s.Addr()))
	require.NoError(t, err)
	d, err := driver.NewDevice(opts)
	require.NoError(t, err)
	defer d.Close()
	vals, err := d.ReadPoints(context.Background(), []int{0, 1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	got := make([]any, len(vals))
	for i, v := range vals {
		require.NoError(t, v.Err)
		got[i] = v.Value
	}
	require.Equal(t, []any{int16(215), uint16(1234), float32(3.14), int16(-5), true, false, true}, got)
}
