package driver_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/simonvetter/modbus"
	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/examples/modbus/driver"
	"uastack.dev/plugins/examples/modbus/sim"
)

// startSim starts a simulator on a free port of 127.0.0.1, closed when the test ends.
func startSim(t *testing.T) *sim.Simulator {
	t.Helper()
	s, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// newDevice returns a Device for the simulator with the given points and a short
// timeout, closed when the test ends.
func newDevice(t *testing.T, s *sim.Simulator, order driver.WordOrder, points ...driver.Point) *driver.Device {
	t.Helper()
	d, err := driver.NewDevice(driver.Options{
		Address:         s.Addr(),
		UnitID:          1,
		Timeout:         200 * time.Millisecond,
		MinPollInterval: 20 * time.Millisecond,
		WordOrder:       order,
		Points:          points,
	})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func values(t *testing.T, vals []driver.Value) []any {
	t.Helper()
	out := make([]any, len(vals))
	for i, v := range vals {
		require.NoError(t, v.Err, "point %d", v.Point)
		out[i] = v.Value
	}
	return out
}

func TestReadPointsGroupsRequests(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SetHolding(0, 7, 0xfffe, 0x0001, 0x0002, 0, 0, 0, 0, 0, 0, 99)
	s.SetInput(0, 215)
	s.SetCoils(0, true, false, true)
	s.SetDiscrete(5, true)
	d := newDevice(t, s, driver.HighFirst,
		driver.Point{Name: "h0", Table: driver.Holding, Address: 0, Type: driver.Uint16},
		driver.Point{Name: "h1", Table: driver.Holding, Address: 1, Type: driver.Int16},
		driver.Point{Name: "h2", Table: driver.Holding, Address: 2, Type: driver.Uint32},
		driver.Point{Name: "h10", Table: driver.Holding, Address: 10, Type: driver.Uint16},
		driver.Point{Name: "i0", Table: driver.Input, Address: 0, Type: driver.Int16},
		driver.Point{Name: "c0", Table: driver.Coil, Address: 0, Type: driver.Bool},
		driver.Point{Name: "c2", Table: driver.Coil, Address: 2, Type: driver.Bool},
		driver.Point{Name: "c1", Table: driver.Coil, Address: 1, Type: driver.Bool},
		driver.Point{Name: "d5", Table: driver.Discrete, Address: 5, Type: driver.Bool},
	)
	ctx := context.Background()

	vals, err := d.ReadPoints(ctx, []int{8, 7, 6, 5, 4, 3, 2, 1, 0, 3})
	require.NoError(t, err)
	require.Equal(t, []any{true, false, true, true, int16(215), uint16(99), uint32(0x00010002), int16(-2), uint16(7), uint16(99)}, values(t, vals))
	for k, i := range []int{8, 7, 6, 5, 4, 3, 2, 1, 0, 3} {
		require.Equal(t, i, vals[k].Point)
		require.False(t, vals[k].Time.IsZero())
	}
	// Holding 0..3 in one request and 10 in another (the gap is not read); the three
	// coils in one; one each for the input register and the discrete input.
	require.Equal(t, 2, s.Requests(sim.ReadHoldingRegisters))
	require.Equal(t, 1, s.Requests(sim.ReadCoils))
	require.Equal(t, 1, s.Requests(sim.ReadInputRegisters))
	require.Equal(t, 1, s.Requests(sim.ReadDiscreteInputs))
	require.Equal(t, 5, s.TotalRequests())

	vals, err = d.ReadPoints(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, vals)
	_, err = d.ReadPoints(ctx, []int{0, 9})
	require.ErrorContains(t, err, "no point 9")
	require.Equal(t, 5, s.TotalRequests(), "nothing is sent for an empty or a bad list")
}

func TestWordOrder(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	points := []driver.Point{
		{Name: "u", Table: driver.Holding, Address: 0, Type: driver.Uint32, Writable: true},
		{Name: "i", Table: driver.Holding, Address: 2, Type: driver.Int32, Writable: true},
		{Name: "f", Table: driver.Holding, Address: 4, Type: driver.Float32, Writable: true},
		{Name: "fi", Table: driver.Input, Address: 0, Type: driver.Float32},
	}
	hi := newDevice(t, s, driver.HighFirst, points...)
	lo := newDevice(t, s, driver.LowFirst, points...)
	ctx := context.Background()

	f := math.Float32bits(-1.5)
	s.SetHolding(0, 0x1234, 0x5678, 0xffff, 0xfffe, uint16(f>>16), uint16(f))
	s.SetInput(0, uint16(f>>16), uint16(f))
	vals, err := hi.ReadPoints(ctx, []int{0, 1, 2, 3})
	require.NoError(t, err)
	require.Equal(t, []any{uint32(0x12345678), int32(-2), float32(-1.5), float32(-1.5)}, values(t, vals))
	vals, err = lo.ReadPoints(ctx, []int{0, 1})
	require.NoError(t, err)
	require.Equal(t, []any{uint32(0x56781234), int32(-65537)}, values(t, vals))

	require.NoError(t, hi.WritePoint(ctx, 0, uint32(0xcafebabe)))
	require.Equal(t, []uint16{0xcafe, 0xbabe}, s.Holding(0, 2))
	require.NoError(t, lo.WritePoint(ctx, 0, uint32(0xcafebabe)))
	require.Equal(t, []uint16{0xbabe, 0xcafe}, s.Holding(0, 2))
	require.NoError(t, hi.WritePoint(ctx, 1, -3))
	require.Equal(t, []uint16{0xffff, 0xfffd}, s.Holding(2, 2))
	require.NoError(t, lo.WritePoint(ctx, 1, 13))
	require.Equal(t, []uint16{13, 0}, s.Holding(2, 2))

	g := math.Float32bits(3.25)
	require.NoError(t, hi.WritePoint(ctx, 2, float32(3.25)))
	require.Equal(t, []uint16{uint16(g >> 16), uint16(g)}, s.Holding(4, 2))
	require.NoError(t, lo.WritePoint(ctx, 2, 3.25))
	require.Equal(t, []uint16{uint16(g), uint16(g >> 16)}, s.Holding(4, 2))
	vals, err = lo.ReadPoints(ctx, []int{2})
	require.NoError(t, err)
	require.Equal(t, []any{float32(3.25)}, values(t, vals))
	// A 32-bit value goes in one Write Multiple Registers, so that no reader sees half.
	require.Equal(t, 6, s.Requests(sim.WriteHoldingRegisters))
}

func TestWritePoint(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	d := newDevice(t, s, driver.HighFirst,
		driver.Point{Name: "u", Table: driver.Holding, Address: 0, Type: driver.Uint16, Writable: true},
		driver.Point{Name: "i", Table: driver.Holding, Address: 1, Type: driver.Int16, Writable: true},
		driver.Point{Name: "pump", Table: driver.Coil, Address: 9, Type: driver.Bool, Writable: true},
		driver.Point{Name: "ro", Table: driver.Holding, Address: 2, Type: driver.Uint16},
		driver.Point{Name: "in", Table: driver.Input, Address: 0, Type: driver.Uint16},
	)
	ctx := context.Background()

	require.NoError(t, d.WritePoint(ctx, 0, uint16(65535)))
	require.NoError(t, d.WritePoint(ctx, 1, -300))
	require.Equal(t, []uint16{65535, uint16(0x10000 - 300)}, s.Holding(0, 2))
	require.NoError(t, d.WritePoint(ctx, 2, true))
	require.Equal(t, []bool{true}, s.Coils(9, 1))
	require.NoError(t, d.WritePoint(ctx, 2, false))
	require.Equal(t, []bool{false}, s.Coils(9, 1))
	require.Equal(t, 2, s.Requests(sim.WriteHoldingRegisters))
	require.Equal(t, 2, s.Requests(sim.WriteCoils))

	var re *driver.RangeError
	err := d.WritePoint(ctx, 0, 65536)
	require.ErrorAs(t, err, &re)
	require.Equal(t, "u", re.Point)
	require.ErrorAs(t, d.WritePoint(ctx, 1, 40000), &re)
	require.ErrorAs(t, d.WritePoint(ctx, 0, -1), &re)

	var te *driver.TypeError
	require.ErrorAs(t, d.WritePoint(ctx, 0, "7"), &te)
	require.ErrorAs(t, d.WritePoint(ctx, 0, 1.5), &te)
	require.ErrorAs(t, d.WritePoint(ctx, 0, true), &te)
	require.ErrorAs(t, d.WritePoint(ctx, 2, 1), &te)
	require.Equal(t, "pump", te.Point)

	require.ErrorIs(t, d.WritePoint(ctx, 3, 1), driver.ErrNotWritable)
	require.ErrorIs(t, d.WritePoint(ctx, 4, 1), driver.ErrNotWritable)
	require.ErrorContains(t, d.WritePoint(ctx, 5, 1), "no point 5")

	require.Equal(t, 4, s.TotalRequests(), "a write that is refused sends nothing")
	require.Equal(t, []uint16{65535, uint16(0x10000 - 300), 0}, s.Holding(0, 3))
}

func TestExceptions(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SetCoils(0, true)
	d := newDevice(t, s, driver.HighFirst,
		driver.Point{Name: "h", Table: driver.Holding, Address: 0, Type: driver.Uint16, Writable: true},
		driver.Point{Name: "c", Table: driver.Coil, Address: 0, Type: driver.Bool},
	)
	ctx := context.Background()
	s.SetException(sim.ReadHoldingRegisters, modbus.ErrIllegalDataAddress)
	s.SetException(sim.WriteHoldingRegisters, modbus.ErrServerDeviceBusy)

	vals, err := d.ReadPoints(ctx, []int{0, 1})
	require.NoError(t, err, "an exception fails its points, not the call")
	var ee *driver.ExceptionError
	require.ErrorAs(t, vals[0].Err, &ee)
	require.ErrorIs(t, vals[0].Err, modbus.ErrIllegalDataAddress)
	require.Equal(t, driver.Holding, ee.Table)
	require.Nil(t, vals[0].Value)
	require.NoError(t, vals[1].Err)
	require.Equal(t, true, vals[1].Value)

	err = d.WritePoint(ctx, 0, 1)
	require.ErrorAs(t, err, &ee)
	require.True(t, ee.Write)
	require.ErrorIs(t, err, modbus.ErrServerDeviceBusy)

	h := d.Health()
	require.False(t, h.Failing, "the device answered")
	require.ErrorIs(t, h.LastErr, modbus.ErrServerDeviceBusy)
	require.False(t, h.LastOK.IsZero())

	s.SetException(sim.ReadHoldingRegisters, nil)
	vals, err = d.ReadPoints(ctx, []int{0})
	require.NoError(t, err)
	require.NoError(t, vals[0].Err)
}

func TestTimeoutAndRecovery(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SetHolding(0, 42)
	d := newDevice(t, s, driver.HighFirst, driver.Point{Name: "h", Table: driver.Holding, Address: 0, Type: driver.Uint16})
	ctx := context.Background()
	_, err := d.ReadPoints(ctx, []int{0})
	require.NoError(t, err)
	before := d.Health()
	require.False(t, before.Failing)
	require.Nil(t, before.LastErr)

	release := s.Stall()
	start := time.Now()
	_, err = d.ReadPoints(ctx, []int{0})
	took := time.Since(start)
	var ce *driver.CommError
	require.ErrorAs(t, err, &ce)
	require.True(t, ce.Timeout(), "%v", err)
	require.GreaterOrEqual(t, took, 150*time.Millisecond, "the timeout is 200ms")
	require.Less(t, took, time.Second)
	h := d.Health()
	require.True(t, h.Failing)
	require.ErrorAs(t, h.LastErr, &ce)
	require.Equal(t, before.LastOK, h.LastOK)

	// While one caller waits on the stalled device, another gives up when its ctx ends.
	var wg sync.WaitGroup
	wg.Go(func() { d.ReadPoints(ctx, []int{0}) })
	time.Sleep(20 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err = d.ReadPoints(short, []int{0})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	wg.Wait()

	release()
	vals, err := d.ReadPoints(ctx, []int{0})
	require.NoError(t, err)
	require.Equal(t, []any{uint16(42)}, values(t, vals))
	h = d.Health()
	require.False(t, h.Failing)
	require.True(t, h.LastOK.After(before.LastOK))
}

func TestReconnect(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SetHolding(0, 1)
	d := newDevice(t, s, driver.HighFirst, driver.Point{Name: "h", Table: driver.Holding, Address: 0, Type: driver.Uint16, Writable: true})
	ctx := context.Background()
	_, err := d.ReadPoints(ctx, []int{0})
	require.NoError(t, err)

	require.NoError(t, s.Stop())
	var ce *driver.CommError
	_, err = d.ReadPoints(ctx, []int{0})
	require.ErrorAs(t, err, &ce, "the connection is gone")
	require.ErrorAs(t, d.WritePoint(ctx, 0, 2), &ce, "and no new one can be made")
	require.True(t, d.Health().Failing)

	require.NoError(t, s.Restart())
	require.NoError(t, d.WritePoint(ctx, 0, 3))
	vals, err := d.ReadPoints(ctx, []int{0})
	require.NoError(t, err)
	require.Equal(t, []any{uint16(3)}, values(t, vals))
	require.False(t, d.Health().Failing)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	var points []driver.Point
	for i := range 8 {
		points = append(points, driver.Point{Name: string(rune('a' + i)), Table: driver.Holding, Address: uint16(i), Type: driver.Uint16, Writable: true})
	}
	d := newDevice(t, s, driver.HighFirst, points...)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Go(func() {
			for n := range 20 {
				if err := d.WritePoint(ctx, i, n); err != nil {
					errs <- err
					return
				}
				vals, err := d.ReadPoints(ctx, []int{i})
				if err == nil && vals[0].Value != uint16(n) {
					err = errors.New("read back another value")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, []uint16{19, 19, 19, 19, 19, 19, 19, 19}, s.Holding(0, 8))
}
