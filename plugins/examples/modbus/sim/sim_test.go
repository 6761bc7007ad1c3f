package sim_test

import (
	"io"
	"log"
	"testing"
	"time"

	"github.com/simonvetter/modbus"
	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/examples/modbus/sim"
)

// client returns a connected client of the library for s, closed when the test ends.
func client(t *testing.T, s *sim.Simulator, timeout time.Duration) *modbus.ModbusClient {
	t.Helper()
	c, err := modbus.NewClient(&modbus.ClientConfiguration{URL: "tcp://" + s.Addr(), Timeout: timeout, Logger: log.New(io.Discard, "", 0)})
	require.NoError(t, err)
	require.NoError(t, c.Open())
	t.Cleanup(func() { c.Close() })
	return c
}

func startSim(t *testing.T) *sim.Simulator {
	t.Helper()
	s, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestTables(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	require.Regexp(t, `^127\.0\.0\.1:[1-9][0-9]*$`, s.Addr())
	c := client(t, s, time.Second)

	s.SetHolding(65534, 1, 2, 3) // the last is past the end
	s.SetInput(7, 70)
	s.SetCoils(3, true, true)
	s.SetDiscrete(65535, true)
	regs, err := c.ReadRegisters(65534, 2, modbus.HOLDING_REGISTER)
	require.NoError(t, err)
	require.Equal(t, []uint16{1, 2}, regs)
	v, err := c.ReadRegister(7, modbus.INPUT_REGISTER)
	require.NoError(t, err)
	require.Equal(t, uint16(70), v)
	bits, err := c.ReadCoils(2, 3)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, true}, bits)
	bit, err := c.ReadDiscreteInput(65535)
	require.NoError(t, err)
	require.True(t, bit)

	require.NoError(t, c.WriteRegister(5, 55))
	require.NoError(t, c.WriteRegisters(6, []uint16{66, 77}))
	require.NoError(t, c.WriteCoil(0, true))
	require.NoError(t, c.WriteCoils(10, []bool{true, false, true}))
	require.Equal(t, []uint16{55, 66, 77}, s.Holding(5, 3))
	require.Equal(t, []bool{true}, s.Coils(0, 1))
	require.Equal(t, []bool{true, false, true}, s.Coils(10, 3))
	require.Equal(t, []uint16{1, 2}, s.Holding(65534, 5), "Get stops at the end of the table")
	require.Equal(t, []uint16{70}, s.Input(7, 1))
	require.Equal(t, []bool{true}, s.Discrete(65535, 1))

	for f, n := range map[sim.Function]int{
		sim.ReadHoldingRegisters: 1, sim.ReadInputRegisters: 1, sim.ReadCoils: 1,
		sim.ReadDiscreteInputs: 1, sim.WriteHoldingRegisters: 2, sim.WriteCoils: 2,
	} {
		require.Equal(t, n, s.Requests(f), "%d", f)
	}
	require.Equal(t, 8, s.TotalRequests())
	s.ResetRequests()
	require.Zero(t, s.TotalRequests())
}

func TestExceptionStallRestart(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	c := client(t, s, 100*time.Millisecond)

	s.SetException(sim.ReadInputRegisters, modbus.ErrIllegalDataAddress)
	_, err := c.ReadRegister(0, modbus.INPUT_REGISTER)
	require.ErrorIs(t, err, modbus.ErrIllegalDataAddress)
	_, err = c.ReadRegister(0, modbus.HOLDING_REGISTER)
	require.NoError(t, err, "only that function fails")
	s.SetException(sim.ReadInputRegisters, nil)
	_, err = c.ReadRegister(0, modbus.INPUT_REGISTER)
	require.NoError(t, err)

	release := s.Stall()
	_, err = c.ReadRegister(0, modbus.HOLDING_REGISTER)
	require.ErrorIs(t, err, modbus.ErrRequestTimedOut)
	release()
	release()
	c.Close()
	require.NoError(t, c.Open())
	_, err = c.ReadRegister(0, modbus.HOLDING_REGISTER)
	require.NoError(t, err)

	s.SetHolding(0, 9)
	require.NoError(t, s.Stop())
	require.NoError(t, s.Stop())
	_, err = c.ReadRegister(0, modbus.HOLDING_REGISTER)
	require.Error(t, err)
	c.Close()
	require.Error(t, c.Open(), "nobody listens")
	require.NoError(t, s.Restart())
	require.NoError(t, c.Open())
	v, err := c.ReadRegister(0, modbus.HOLDING_REGISTER)
	require.NoError(t, err)
	require.Equal(t, uint16(9), v, "the tables outlive a restart")
}

func TestCloseReleasesStalls(t *testing.T) {
	t.Parallel()
	s, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	c := client(t, s, time.Second)
	s.Stall()
	done := make(chan error, 1)
	go func() {
		_, err := c.ReadRegister(0, modbus.HOLDING_REGISTER)
		done <- err
	}()
	require.Eventually(t, func() bool { return s.TotalRequests() == 1 }, time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.Error(t, <-done)
	require.NoError(t, s.Close())
	require.Error(t, s.Restart())
}

func TestSimulateTemperature(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SimulateTemperature(3, time.Millisecond)
	seen := map[int16]bool{}
	for deadline := time.Now().Add(time.Second); len(seen) < 5 && time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		v := int16(s.Input(3, 1)[0])
		require.InDelta(t, 215, v, 30)
		seen[v] = true
	}
	require.GreaterOrEqual(t, len(seen), 5, "the temperature changes")
	s.SimulateTemperature(3, 0)
	time.Sleep(5 * time.Millisecond)
	v := s.Input(3, 1)
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, v, s.Input(3, 1), "stopped")
}
