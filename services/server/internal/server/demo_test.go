package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	uaus "uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

func demoNode(name string) *ua.NodeID { return ua.NewStringNodeID(1, name) }

// demoWrites are a value other than the initial one for every Scalar_ and Array_
// variable of the demo namespace, as gopcua types.
var demoWrites = []struct {
	typ    string
	scalar any
	array  any
}{
	{"Boolean", false, []bool{false, false, true}},
	{"SByte", int8(-100), []int8{-100, 100}},
	{"Byte", byte(200), ua.ByteArray{200, 201}},
	{"Int16", int16(-30000), []int16{-30000, 30000}},
	{"UInt16", uint16(60000), []uint16{60000, 1}},
	{"Int32", int32(-2000000000), []int32{-2000000000, 7}},
	{"UInt32", uint32(4000000000), []uint32{4000000000, 8}},
	{"Int64", int64(-9000000000000000000), []int64{-9000000000000000000, 9}},
	{"UInt64", uint64(18000000000000000000), []uint64{18000000000000000000, 10}},
	{"Float", float32(-0.25), []float32{-0.25, 0.5}},
	{"Double", 1e300, []float64{1e300, -1e-300}},
	{"String", "grüße", []string{"grüße", "", "x"}},
	{"DateTime", time.Date(2025, 6, 1, 12, 30, 0, 100, time.UTC), []time.Time{time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC)}},
	{"Guid", ua.NewGUID("72962B91-FA75-4AE6-8D28-B404DC7DAF63"), []*ua.GUID{ua.NewGUID("72962B91-FA75-4AE6-8D28-B404DC7DAF63")}},
	// gopcua v0.8.0 encodes an array of ByteString without its elements (8f 02000000 for
	// two), which our decoder rightly refuses; TestDemoNamespace writes it with our own
	// client role instead.
	{"ByteString", []byte{0, 1, 2}, nil},
	{"XmlElement", ua.XMLElement("<x>1</x>"), []ua.XMLElement{"<x>1</x>", "<y/>"}},
	{"NodeId", ua.NewStringNodeID(1, "Demo.Add"), []*ua.NodeID{ua.NewStringNodeID(1, "Demo.Add"), ua.NewNumericNodeID(0, 2253)}},
	{"ExpandedNodeId", ua.NewExpandedNodeID(ua.NewStringNodeID(1, "x"), "", 0), []*ua.ExpandedNodeID{ua.NewExpandedNodeID(ua.NewNumericNodeID(0, 2253), "", 0)}},
	{"StatusCode", ua.StatusBadTypeMismatch, []ua.StatusCode{ua.StatusBadTypeMismatch, ua.StatusOK}},
	{"QualifiedName", &ua.QualifiedName{NamespaceIndex: 1, Name: "q"}, []*ua.QualifiedName{{NamespaceIndex: 1, Name: "q"}, {Name: "r"}}},
	{"LocalizedText", ua.NewLocalizedTextWithLocale("hallo", "de"), []*ua.LocalizedText{ua.NewLocalizedTextWithLocale("hallo", "de"), ua.NewLocalizedText("hi")}},
}

func writeValue(node *ua.NodeID, v any) *ua.WriteValue {
	return &ua.WriteValue{
		NodeID:      node,
		AttributeID: ua.AttributeIDValue,
		Value:       &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)},
	}
}

func connectDemo(t *testing.T, ctx context.Context, configure func(*config.Config)) *opcua.Client {
	t.Helper()
	ts := servertest.New(t, servertest.Options{Configure: configure})
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// TestDemoNamespace checks the NamespaceArray, the Demo folder under Objects and the
// attributes of every Scalar_ and Array_ variable, then writes a new value to each
// through gopcua and reads it back.
func TestDemoNamespace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := servertest.New(t, servertest.Options{})
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer func() { _ = c.Close(ctx) }()

	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{readValueID(2255, ua.AttributeIDValue)}})
	require.NoError(t, err)
	require.Equal(t, []string{"http://opcfoundation.org/UA/", "urn:uastack:demo"}, resp.Results[0].Value.Value())

	br, err := c.Browse(ctx, &ua.BrowseRequest{NodesToBrowse: []*ua.BrowseDescription{{
		NodeID: ua.NewNumericNodeID(0, 85), BrowseDirection: ua.BrowseDirectionForward,
		ReferenceTypeID: ua.NewNumericNodeID(0, 35), ResultMask: uint32(ua.BrowseResultMaskAll),
	}}})
	require.NoError(t, err)
	found := false
	for _, r := range br.Results[0].References {
		if r.BrowseName.Name == "Demo" {
			found = true
			require.Equal(t, "ns=1;s=Demo", r.NodeID.NodeID.String())
			require.Equal(t, uint16(1), r.BrowseName.NamespaceIndex)
			require.Equal(t, ua.NodeClassObject, r.NodeClass)
			require.Equal(t, uint32(61), r.TypeDefinition.NodeID.IntID()) // FolderType
		}
	}
	require.True(t, found, "Demo not organized under Objects")

	// Attributes: DataType, ValueRank, ArrayDimensions, AccessLevel.
	var reads []*ua.ReadValueID
	for _, w := range demoWrites {
		for _, name := range []string{"Demo.Scalar_" + w.typ, "Demo.Array_" + w.typ} {
			for _, a := range []ua.AttributeID{ua.AttributeIDDataType, ua.AttributeIDValueRank, ua.AttributeIDArrayDimensions, ua.AttributeIDAccessLevel} {
				reads = append(reads, &ua.ReadValueID{NodeID: demoNode(name), AttributeID: a})
			}
		}
	}
	resp, err = c.Read(ctx, &ua.ReadRequest{NodesToRead: reads})
	require.NoError(t, err)
	for i, w := range demoWrites {
		for j, rank := range []int32{-1, 1} {
			r := resp.Results[i*8+j*4:]
			for k := range 4 {
				require.Equal(t, ua.StatusOK, r[k].Status, "%s rank %d attribute %d", w.typ, rank, k)
			}
			dt := r[0].Value.Value().(*ua.NodeID)
			require.Equal(t, uint32(i+1), dt.IntID(), w.typ) // built-in type ids 1..21 in order
			require.Equal(t, rank, r[1].Value.Value(), w.typ)
			if rank == -1 {
				require.Empty(t, r[2].Value.Value(), w.typ)
			} else {
				require.Equal(t, []uint32{0}, r[2].Value.Value(), w.typ)
			}
			require.Equal(t, byte(3), r[3].Value.Value(), w.typ) // CurrentRead|CurrentWrite
		}
	}

	// Write every variable, then read each back.
	var writes []*ua.WriteValue
	reads = reads[:0]
	for _, w := range demoWrites {
		array := w.array
		if array == nil {
			array = w.scalar // a scalar to an array variable: BadTypeMismatch
		}
		writes = append(writes, writeValue(demoNode("Demo.Scalar_"+w.typ), w.scalar), writeValue(demoNode("Demo.Array_"+w.typ), array))
		reads = append(reads, &ua.ReadValueID{NodeID: demoNode("Demo.Scalar_" + w.typ), AttributeID: ua.AttributeIDValue},
			&ua.ReadValueID{NodeID: demoNode("Demo.Array_" + w.typ), AttributeID: ua.AttributeIDValue})
	}
	wr, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: writes})
	require.NoError(t, err)
	require.Len(t, wr.Results, len(writes))
	for i, code := range wr.Results {
		if writes[i].NodeID.StringID() == "Demo.Array_ByteString" {
			require.Equal(t, ua.StatusBadTypeMismatch, code)
			continue
		}
		require.Equal(t, ua.StatusOK, code, "write %s", writes[i].NodeID)
	}
	byteStrings := [][]byte{{0, 1}, {2}, {3, 4, 5}}
	ch := dialNone(t, ctx, ts)
	token := activate(t, ctx, ch)
	raw, err := ch.Request(ctx, &uaus.WriteRequest{
		RequestHeader: uaus.RequestHeader{AuthenticationToken: token},
		NodesToWrite: []uaus.WriteValue{{
			NodeId: codec.NewStringNodeId(1, "Demo.Array_ByteString"), AttributeId: 13,
			Value: codec.DataValue{Value: codec.MustVariant(byteStrings)},
		}},
	})
	require.NoError(t, err)
	require.Equal(t, []status.Code{status.Good}, raw.(*uaus.WriteResponse).Results)
	resp, err = c.Read(ctx, &ua.ReadRequest{NodesToRead: reads})
	require.NoError(t, err)
	for i, w := range demoWrites {
		for j, want := range []any{w.scalar, w.array} {
			if want == nil {
				want = byteStrings
			}
			got := resp.Results[2*i+j]
			require.Equal(t, ua.StatusOK, got.Status, w.typ)
			if tm, ok := want.(time.Time); ok {
				// DateTime has 100 ns ticks.
				require.True(t, tm.Truncate(100*time.Nanosecond).Equal(got.Value.Value().(time.Time)), "%s: %v", w.typ, got.Value.Value())
				continue
			}
			if want, ok := want.([]time.Time); ok {
				gotT := got.Value.Value().([]time.Time)
				require.Len(t, gotT, len(want))
				for k := range want {
					require.True(t, want[k].Equal(gotT[k]), w.typ)
				}
				continue
			}
			require.Equal(t, canonical(want), canonical(got.Value.Value()), "%s (%s)", w.typ, reads[2*i+j].NodeID)
		}
	}
}

// canonical maps node ids to their text: gopcua's NewNumericNodeID always uses the
// numeric encoding where the server picks the compact one, for the same node.
func canonical(v any) any {
	switch v := v.(type) {
	case *ua.NodeID:
		return v.String()
	case *ua.ExpandedNodeID:
		return v.String()
	case []*ua.NodeID:
		out := make([]string, len(v))
		for i := range v {
			out[i] = v[i].String()
		}
		return out
	case []*ua.ExpandedNodeID:
		out := make([]string, len(v))
		for i := range v {
			out[i] = v[i].String()
		}
		return out
	}
	return v
}

// TestDemoWriteErrors checks the per-item codes of Write: the wrong type, a scalar to an
// array, a read-only node (ServerStatus CurrentTime, Sine), an unknown node.
func TestDemoWriteErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connectDemo(t, ctx, nil)
	wr, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{
		writeValue(demoNode("Demo.Scalar_Int32"), "x"),
		writeValue(demoNode("Demo.Scalar_Int32"), int64(1)),
		writeValue(demoNode("Demo.Array_Int32"), int32(1)),
		writeValue(demoNode("Demo.Scalar_Int32"), []int32{1}),
		writeValue(ua.NewNumericNodeID(0, 2258), time.Now()), // Server_ServerStatus_CurrentTime
		writeValue(demoNode("Demo.Simulation.Sine"), 0.5),
		writeValue(demoNode("Demo.Nope"), int32(1)),
		writeValue(demoNode("Demo.Scalar_Int32"), int32(42)),
	}})
	require.NoError(t, err)
	require.Equal(t, []ua.StatusCode{
		ua.StatusBadTypeMismatch, ua.StatusBadTypeMismatch, ua.StatusBadTypeMismatch, ua.StatusBadTypeMismatch,
		ua.StatusBadNotWritable, ua.StatusBadNotWritable, ua.StatusBadNodeIDUnknown, ua.StatusOK,
	}, wr.Results)
}

// TestDemoOperationLimits checks BadTooManyOperations for Write
// (maxNodesPerWrite) and Call (maxNodesPerMethodCall).
func TestDemoOperationLimits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.OperationLimits.MaxNodesPerWrite = 2
		c.OperationLimits.MaxNodesPerMethodCall = 1
	}})
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer func() { _ = c.Close(ctx) }()
	w := writeValue(demoNode("Demo.Scalar_Int32"), int32(1))
	_, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{w, w, w}})
	require.ErrorIs(t, err, ua.StatusBadTooManyOperations)
	wr, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{w, w}})
	require.NoError(t, err)
	require.Equal(t, []ua.StatusCode{ua.StatusOK, ua.StatusOK}, wr.Results)

	// gopcua's Call sends one method; two go through our own client role.
	ch := dialNone(t, ctx, ts)
	token := activate(t, ctx, ch)
	add := uaus.CallMethodRequest{
		ObjectId: codec.NewStringNodeId(1, "Demo"), MethodId: codec.NewStringNodeId(1, "Demo.Add"),
		InputArguments: []codec.Variant{codec.DoubleVariant(1), codec.DoubleVariant(2)},
	}
	resp, err := ch.Request(ctx, &uaus.CallRequest{
		RequestHeader: uaus.RequestHeader{AuthenticationToken: token, RequestHandle: 7},
		MethodsToCall: []uaus.CallMethodRequest{add, add},
	})
	requireFault(t, resp, err, status.BadTooManyOperations, 7)
	resp, err = ch.Request(ctx, &uaus.CallRequest{
		RequestHeader: uaus.RequestHeader{AuthenticationToken: token},
		MethodsToCall: []uaus.CallMethodRequest{add},
	})
	require.NoError(t, err)
	cr := resp.(*uaus.CallResponse)
	require.Equal(t, status.Good, cr.Results[0].StatusCode)
	require.Equal(t, []codec.Variant{codec.DoubleVariant(3)}, cr.Results[0].OutputArguments)
}

// TestDemoCall calls Demo/Add and Demo/Echo through gopcua: a good call, missing, extra
// and mistyped arguments, unknown objects and methods, and a namespace 0 method without
// a handler.
func TestDemoCall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connectDemo(t, ctx, nil)
	call := func(object, method *ua.NodeID, args ...any) *ua.CallMethodResult {
		t.Helper()
		in := make([]*ua.Variant, len(args))
		for i, a := range args {
			in[i] = ua.MustVariant(a)
		}
		res, err := c.Call(ctx, &ua.CallMethodRequest{ObjectID: object, MethodID: method, InputArguments: in})
		require.NoError(t, err)
		return res
	}
	demo, add, echo := demoNode("Demo"), demoNode("Demo.Add"), demoNode("Demo.Echo")

	res := call(demo, add, 2.0, 3.0)
	require.Equal(t, ua.StatusOK, res.StatusCode)
	require.Len(t, res.OutputArguments, 1)
	require.Equal(t, 5.0, res.OutputArguments[0].Value())

	res = call(demo, echo, "hello")
	require.Equal(t, ua.StatusOK, res.StatusCode)
	require.Equal(t, "hello", res.OutputArguments[0].Value())
	res = call(demo, echo, []int32{1, 2})
	require.Equal(t, ua.StatusOK, res.StatusCode)
	require.Equal(t, []int32{1, 2}, res.OutputArguments[0].Value())

	for _, tc := range []struct {
		name           string
		object, method *ua.NodeID
		args           []any
		code           ua.StatusCode
		argResults     []ua.StatusCode
	}{
		{"missing argument", demo, add, []any{2.0}, ua.StatusBadArgumentsMissing, nil},
		{"extra argument", demo, add, []any{2.0, 3.0, 4.0}, ua.StatusBadTooManyArguments, nil},
		{"string for double", demo, add, []any{2.0, "3"}, ua.StatusBadInvalidArgument, []ua.StatusCode{ua.StatusOK, ua.StatusBadTypeMismatch}},
		{"float for double", demo, add, []any{float32(2), 3.0}, ua.StatusBadInvalidArgument, []ua.StatusCode{ua.StatusBadTypeMismatch, ua.StatusOK}},
		{"array for scalar", demo, add, []any{[]float64{2}, []float64{3}}, ua.StatusBadInvalidArgument, []ua.StatusCode{ua.StatusBadTypeMismatch, ua.StatusBadTypeMismatch}},
		{"unknown method", demo, demoNode("Demo.Nope"), nil, ua.StatusBadMethodInvalid, nil},
		{"variable as method", demo, demoNode("Demo.Scalar_Int32"), nil, ua.StatusBadMethodInvalid, nil},
		{"method of another object", ua.NewNumericNodeID(0, 85), add, []any{2.0, 3.0}, ua.StatusBadMethodInvalid, nil},
		{"unknown object", demoNode("Demo.Nope"), add, []any{2.0, 3.0}, ua.StatusBadNodeIDUnknown, nil},
		{"variable as object", demoNode("Demo.Scalar_Int32"), add, []any{2.0, 3.0}, ua.StatusBadNodeIDInvalid, nil},
		// Server.GetMonitoredItems exists in namespace 0 but has no handler yet.
		{"no handler", ua.NewNumericNodeID(0, 2253), ua.NewNumericNodeID(0, 11492), []any{uint32(1)}, ua.StatusBadNotImplemented, nil},
	} {
		res := call(tc.object, tc.method, tc.args...)
		require.Equal(t, tc.code, res.StatusCode, tc.name)
		require.Equal(t, tc.argResults, res.InputArgumentResults, tc.name)
		require.Empty(t, res.OutputArguments, tc.name)
	}

	// The argument Properties are readable and hold Argument structures.
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{
		{NodeID: demoNode("Demo.Add/InputArguments"), AttributeID: ua.AttributeIDValue},
		{NodeID: demoNode("Demo.Add/OutputArguments"), AttributeID: ua.AttributeIDValue},
	}})
	require.NoError(t, err)
	for i, want := range [][]string{{"a", "b"}, {"sum"}} {
		require.Equal(t, ua.StatusOK, resp.Results[i].Status)
		eos, ok := resp.Results[i].Value.Value().([]*ua.ExtensionObject)
		require.True(t, ok, "%T", resp.Results[i].Value.Value())
		var names []string
		for _, eo := range eos {
			a, ok := eo.Value.(*ua.Argument)
			require.True(t, ok, "%T", eo.Value)
			require.Equal(t, uint32(11), a.DataType.IntID()) // Double
			require.Equal(t, int32(-1), a.ValueRank)
			names = append(names, a.Name)
		}
		require.Equal(t, want, names)
	}
}

// TestDemoSimulation reads Simulation/Sine twice, 1.2 s apart: it changes and stays in
// [-1, 1].
func TestDemoSimulation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connectDemo(t, ctx, nil)
	read := func() (float64, time.Time) {
		t.Helper()
		resp, err := c.Read(ctx, &ua.ReadRequest{
			TimestampsToReturn: ua.TimestampsToReturnBoth,
			NodesToRead:        []*ua.ReadValueID{{NodeID: demoNode("Demo.Simulation.Sine"), AttributeID: ua.AttributeIDValue}},
		})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, resp.Results[0].Status)
		v, ok := resp.Results[0].Value.Value().(float64)
		require.True(t, ok, "%T", resp.Results[0].Value.Value())
		require.True(t, v >= -1 && v <= 1, "%v", v)
		return v, resp.Results[0].SourceTimestamp
	}
	v1, ts1 := read()
	time.Sleep(1200 * time.Millisecond)
	v2, ts2 := read()
	require.NotEqual(t, v1, v2)
	require.True(t, ts2.After(ts1), "%v then %v", ts1, ts2)
}
