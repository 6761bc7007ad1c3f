package server_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	devicemgr "uastack.dev/plugins/examples/device"
	"uastack.dev/services/server/internal/servertest"
)

// TestPluginsGopcua is issue 17's proof for gopcua's client: a server started from
// configuration with the device as a WASM module and the Modbus driver as a plugin
// process. The client browses both from the Objects folder, reads the simulator's
// registers and coils through the plugin, writes a register, a float and a coil and
// finds them in the simulator, writes the device's Setpoint and calls Step, which
// returns the new Setpoint; a subscription sees the temperature the test sets in the
// simulator, and Sine changing.
func TestPluginsGopcua(t *testing.T) {
	t.Parallel()
	s := startPlantSim(t)
	ts := servertest.New(t, servertest.Options{Configure: examplePlugins(t, s.Addr())})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	dev := namespaceIndex(t, ctx, c, deviceURI)
	plant := namespaceIndex(t, ctx, c, plantURI)
	devNode := func(name string) *ua.NodeID { return ua.NewStringNodeID(dev, "Device."+name) }
	plantNode := func(name string) *ua.NodeID { return ua.NewStringNodeID(plant, plantName+"."+name) }

	// Browse: both Objects hang below the Objects folder, their variables below them.
	browse := func(node *ua.NodeID) map[string]string {
		t.Helper()
		resp, err := c.Browse(ctx, &ua.BrowseRequest{NodesToBrowse: []*ua.BrowseDescription{hierarchicalFrom(node)}})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, resp.Results[0].StatusCode)
		got := map[string]string{}
		for _, r := range resp.Results[0].References {
			got[r.BrowseName.Name] = r.NodeID.NodeID.String()
		}
		return got
	}
	objects := browse(ua.NewNumericNodeID(0, 85))
	require.Equal(t, ua.NewStringNodeID(dev, "Device").String(), objects["Device"])
	require.Equal(t, ua.NewStringNodeID(plant, plantName).String(), objects[plantName])
	device := browse(ua.NewStringNodeID(dev, "Device"))
	for _, name := range []string{"Sine", "Ramp", "Counter", "Setpoint", "Step"} {
		require.Equal(t, devNode(name).String(), device[name], "Device/%s", name)
	}
	// The model the device's WASM guest ships (nodemgr.Modeler) is in the address
	// space: its type below BaseObjectType, with the type's variables.
	types := namespaceIndex(t, ctx, c, devicemgr.TypesURI)
	deviceType := ua.NewNumericNodeID(types, 1001)
	require.Equal(t, ua.NewNumericNodeID(0, 58).String(), supertypeOf(t, ctx, c, deviceType))
	typeVars := browse(deviceType)
	for i, name := range []string{"Sine", "Ramp", "Counter", "Setpoint"} {
		require.Equal(t, ua.NewNumericNodeID(types, uint32(6001+i)).String(), typeVars[name], "SimulatedDeviceType/%s", name)
	}
	points := browse(ua.NewStringNodeID(plant, plantName))
	for _, name := range []string{"Temperature", "Setpoint", "Gain", "Pump", "Valve", "DoorClosed"} {
		require.Equal(t, plantNode(name).String(), points[name], "%s/%s", plantName, name)
	}

	// Read: the Modbus values are the simulator's.
	read := func(nodes ...*ua.NodeID) []any {
		t.Helper()
		req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth}
		for _, n := range nodes {
			req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue})
		}
		resp, err := c.Read(ctx, req)
		require.NoError(t, err)
		require.Len(t, resp.Results, len(nodes))
		out := make([]any, len(nodes))
		for i, r := range resp.Results {
			require.Equal(t, ua.StatusOK, r.Status, "read %s", nodes[i])
			out[i] = r.Value.Value()
		}
		return out
	}
	got := read(plantNode("Temperature"), plantNode("Setpoint"), plantNode("Gain"), plantNode("Pump"),
		plantNode("Valve"), plantNode("DoorClosed"), devNode("Sine"), devNode("Setpoint"), devNode("Counter"))
	require.Equal(t, []any{int16(215), uint16(1234), float32(3.14), true, false, true}, got[:6])
	sine, ok := got[6].(float64)
	require.True(t, ok, "Sine is %T", got[6])
	require.LessOrEqual(t, math.Abs(sine), 1.0)
	require.Equal(t, 0.0, got[7])
	require.InDelta(t, time.Now().Unix(), got[8], 5, "Counter counts seconds since the epoch")

	// Write: a register, a float and a coil reach the simulator; the device's Setpoint
	// reads back.
	wresp, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{
		writeValue(plantNode("Setpoint"), uint16(777)),
		writeValue(plantNode("Gain"), float32(2.5)),
		writeValue(plantNode("Pump"), false),
		writeValue(plantNode("Temperature"), int16(1)),
		writeValue(devNode("Setpoint"), 20.5),
	}})
	require.NoError(t, err)
	require.Equal(t, []ua.StatusCode{ua.StatusOK, ua.StatusOK, ua.StatusOK, ua.StatusBadNotWritable, ua.StatusOK}, wresp.Results)
	require.Equal(t, []uint16{777, 0x4020, 0}, s.Holding(0, 3))
	require.Equal(t, []bool{false, false}, s.Coils(0, 2))
	require.Equal(t, []uint16{215}, s.Input(0, 1))
	require.Equal(t, []any{uint16(777), float32(2.5), false, 20.5},
		read(plantNode("Setpoint"), plantNode("Gain"), plantNode("Pump"), devNode("Setpoint")))

	// Call: Step adds its argument to the Setpoint and returns the new one.
	cresp, err := c.Call(ctx, &ua.CallMethodRequest{ObjectID: ua.NewStringNodeID(dev, "Device"), MethodID: devNode("Step"),
		InputArguments: []*ua.Variant{ua.MustVariant(1.5)}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, cresp.StatusCode)
	require.Len(t, cresp.OutputArguments, 1)
	require.Equal(t, 22.0, cresp.OutputArguments[0].Value())
	require.Equal(t, []any{22.0}, read(devNode("Setpoint")))

	// Subscribe: the temperature the simulator reports reaches the monitored item, and
	// Sine changes from sample to sample. See TestSubscriptionGopcua for the pause.
	time.Sleep(300 * time.Millisecond)
	ch := make(chan *opcua.PublishNotificationData, 64)
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 50 * time.Millisecond}, ch)
	require.NoError(t, err)
	notes := collect(ctx, t, ch, 2)
	temp := opcua.NewMonitoredItemCreateRequestWithDefaults(plantNode("Temperature"), ua.AttributeIDValue, 1)
	wave := opcua.NewMonitoredItemCreateRequestWithDefaults(devNode("Sine"), ua.AttributeIDValue, 2)
	for _, it := range []*ua.MonitoredItemCreateRequest{temp, wave} {
		it.RequestedParameters.SamplingInterval = 50
	}
	mresp, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, temp, wave)
	require.NoError(t, err)
	for i, r := range mresp.Results {
		require.Equal(t, ua.StatusOK, r.StatusCode, "item %d", i)
	}
	first := notes.next(1, 5*time.Second)
	require.Equal(t, ua.StatusOK, first.status)
	require.Equal(t, int16(215), first.value)
	s.SetInput(0, 230)
	changed := notes.next(1, 5*time.Second)
	require.Equal(t, ua.StatusOK, changed.status)
	require.Equal(t, int16(230), changed.value)

	seen := map[float64]bool{}
	for len(seen) < 3 {
		n := notes.next(2, 5*time.Second)
		require.Equal(t, ua.StatusOK, n.status)
		v, ok := n.value.(float64)
		require.True(t, ok, "Sine is %T", n.value)
		require.LessOrEqual(t, math.Abs(v), 1.0)
		seen[v] = true
	}
}

// supertypeOf returns the NodeId of the type node is a subtype of (an inverse
// HasSubtype).
func supertypeOf(t *testing.T, ctx context.Context, c *opcua.Client, node *ua.NodeID) string {
	t.Helper()
	resp, err := c.Browse(ctx, &ua.BrowseRequest{NodesToBrowse: []*ua.BrowseDescription{{
		NodeID: node, BrowseDirection: ua.BrowseDirectionInverse, ReferenceTypeID: ua.NewNumericNodeID(0, 45),
		ResultMask: uint32(ua.BrowseResultMaskAll)}}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, resp.Results[0].StatusCode)
	require.Len(t, resp.Results[0].References, 1)
	return resp.Results[0].References[0].NodeID.NodeID.String()
}
