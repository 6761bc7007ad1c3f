package modbus

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/nodemgr/nodemgrtest"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/examples/modbus/driver"
	"uastack.dev/plugins/examples/modbus/sim"
)

// testOptions maps a few points of the simulator at addr.
func testOptions(addr string) []byte {
	return fmt.Appendf(nil, `{
	  "address": %q, "timeout": "300ms", "minPollInterval": "20ms",
	  "points": [
	    {"name": "Temperature", "table": "input", "address": 0, "type": "int16"},
	    {"name": "Setpoint", "table": "holding", "address": 0, "type": "uint16", "writable": true},
	    {"name": "Gain", "table": "holding", "address": 1, "type": "float32", "writable": true},
	    {"name": "Pump", "table": "coil", "address": 0, "writable": true}
	  ]}`, addr)
}

func startSim(t *testing.T) *sim.Simulator {
	t.Helper()
	s, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	s.SetInput(0, 215)
	s.SetHolding(0, 40)
	return s
}

func node(name string) codec.NodeId { return codec.NewStringNodeId(2, "Plant."+name) }

func TestConformance(t *testing.T) {
	s := startSim(t)
	nodemgrtest.Run(t, nodemgrtest.Fixture{
		New: func(t testing.TB) nodemgr.Manager {
			m, err := Factory(nodemgr.Setup{Name: "Plant", NamespaceURI: "urn:test:modbus", Options: testOptions(s.Addr())})
			require.NoError(t, err)
			return m
		},
		NamespaceIndexes: []uint16{2},
		Capabilities: nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapMount | nodemgr.CapStart |
			nodemgr.CapClose | nodemgr.CapWatch | nodemgr.CapHealth,
		Readable:    node("Temperature"),
		Writable:    node("Setpoint"),
		WriteValue:  codec.UInt16Variant(55),
		NotWritable: node("Temperature"),
		Browsable:   codec.NewStringNodeId(2, "Plant"),
		Unknown:     node("NoSuchPoint"),
		Changing: &nodemgrtest.Changing{Node: node("Temperature"), Change: func(t testing.TB, _ nodemgr.Manager) {
			s.SetInput(0, uint16(time.Now().UnixNano()%1000))
		}},
		Slow: func(nodemgr.Manager) func() { return s.Stall() },
	})
}

// TestReadWrite: values come from the simulator's registers and a write reaches it; a
// value of the wrong type or out of range is refused without I/O.
func TestReadWrite(t *testing.T) {
	s := startSim(t)
	m, err := New("Plant", "urn:test:modbus", mustOptions(t, s.Addr()))
	require.NoError(t, err)
	m.Mount([]uint16{2})
	t.Cleanup(func() { _ = m.Close(context.Background()) })

	read := func(maxAge float64, names ...string) []codec.DataValue {
		op := &nodemgr.ReadOp{MaxAge: maxAge, Timestamps: ua.TimestampsToReturnBoth}
		for _, n := range names {
			op.Items = append(op.Items, ua.ReadValueId{NodeId: node(n), AttributeId: 13})
		}
		op.Results = make([]codec.DataValue, len(op.Items))
		ch := make(chan struct{})
		m.Read(context.Background(), op, func() { close(ch) })
		<-ch
		return op.Results
	}
	rs := read(0, "Temperature", "Setpoint", "Pump")
	require.Equal(t, codec.Int16Variant(215), rs[0].Value)
	require.Equal(t, codec.UInt16Variant(40), rs[1].Value)
	require.Equal(t, codec.BooleanVariant(false), rs[2].Value)

	write := func(name string, v codec.Variant) status.Code {
		op := &nodemgr.WriteOp{Items: []ua.WriteValue{{NodeId: node(name), AttributeId: 13, Value: codec.DataValue{Value: v}}}, Results: make([]status.Code, 1)}
		ch := make(chan struct{})
		m.Write(context.Background(), op, func() { close(ch) })
		<-ch
		return op.Results[0]
	}
	require.Equal(t, status.Good, write("Setpoint", codec.UInt16Variant(77)))
	require.Equal(t, []uint16{77}, s.Holding(0, 1))
	require.Equal(t, status.Good, write("Pump", codec.BooleanVariant(true)))
	require.Equal(t, []bool{true}, s.Coils(0, 1))
	require.Equal(t, status.BadTypeMismatch, write("Setpoint", codec.Int32Variant(1)))
	require.Equal(t, status.BadNotWritable, write("Temperature", codec.Int16Variant(1)))

	// A MaxAge the last value satisfies answers without asking the device.
	before := s.TotalRequests()
	rs = read(60_000, "Setpoint")
	require.Equal(t, codec.UInt16Variant(40), rs[0].Value, "the value last read, not the one written since")
	require.Equal(t, before, s.TotalRequests())

	// A device that does not answer: BadTimeout or BadCommunicationError, and then
	// values again.
	release := s.Stall()
	rs = read(0, "Temperature")
	require.Contains(t, []status.Code{status.BadTimeout, status.BadCommunicationError}, rs[0].Status)
	release()
	require.Eventually(t, func() bool { return read(0, "Temperature")[0].Status == status.Good }, 5*time.Second, 10*time.Millisecond)
}

func mustOptions(t *testing.T, addr string) driver.Options {
	t.Helper()
	o, err := driver.ParseOptions(testOptions(addr))
	require.NoError(t, err)
	return o
}
