package nodemgr

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// Sample values: one of each shape the encodings must carry, NaN, null and empty
// strings, arrays, matrices and decoded ExtensionObjects included.
var (
	sampleNode  = codec.NewStringNodeId(2, "Boiler1.Temperature")
	sampleTime  = codec.DateTimeOf(time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC))
	sampleRoles = []codec.NodeId{
		codec.NewNumericNodeId(0, id.WellKnownRole_AuthenticatedUser),
		codec.NewNumericNodeId(0, id.WellKnownRole_Operator),
	}
	samplePrincipal = Principal{
		SessionID:  codec.NewGuidNodeId(1, codec.Guid{Data1: 0xdeadbeef, Data4: [8]byte{1, 2, 3}}),
		UserName:   "operator",
		Thumbprint: codec.EmptyString,
		Roles:      sampleRoles,
	}
)

func sampleVariants() []codec.Variant {
	matrix, err := codec.NewMatrix([]int32{1, 2, 3, 4, 5, 6}, []int32{2, 3})
	if err != nil {
		panic(err)
	}
	return []codec.Variant{
		{},
		codec.Int32Variant(-5),
		codec.DoubleVariant(math.NaN()),
		codec.StringVariant("Grüße"),
		codec.StringVariant(codec.EmptyString),
		codec.ByteStringVariant([]byte{}),
		codec.MustVariant([]float64{1, math.Inf(-1), math.NaN()}),
		matrix,
		codec.MustVariant(codec.LocalizedText{Locale: "en", Text: "hot"}),
		codec.MustVariant(codec.NewExtensionObject(&ua.Argument{Name: "setpoint", DataType: codec.NewNumericNodeId(0, id.Double), ValueRank: -1})),
		codec.MustVariant([]codec.Variant{codec.BooleanVariant(true), codec.NodeIdVariant(sampleNode)}),
	}
}

func sampleDataValues() []codec.DataValue {
	var out []codec.DataValue
	for i, v := range sampleVariants() {
		dv := codec.DataValue{Value: v}
		if i%2 == 1 {
			dv.Status = status.UncertainLastUsableValue
			dv.SourceTimestamp, dv.SourcePicoseconds = sampleTime, 10
			dv.ServerTimestamp = sampleTime + 1
		}
		out = append(out, dv)
	}
	return append(out, codec.DataValue{Status: status.BadNodeIdUnknown})
}

func sampleReadItems() []ua.ReadValueId {
	return []ua.ReadValueId{
		{NodeId: sampleNode, AttributeId: uint32(attr.Value)},
		{NodeId: codec.NewNumericNodeId(0, id.Server_ServerStatus_CurrentTime), AttributeId: uint32(attr.Value), IndexRange: "0:1",
			DataEncoding: codec.QualifiedName{Name: "Default Binary"}},
		{NodeId: codec.NewOpaqueNodeId(3, []byte{0xff, 0}), AttributeId: 999},
	}
}

func sampleWriteItems() []ua.WriteValue {
	var out []ua.WriteValue
	for i, dv := range sampleDataValues() {
		out = append(out, ua.WriteValue{NodeId: codec.NewNumericNodeId(2, uint32(i)), AttributeId: uint32(attr.Value), Value: dv})
	}
	return out
}

func sampleBrowseItems() []ua.BrowseDescription {
	return []ua.BrowseDescription{
		{NodeId: sampleNode, BrowseDirection: ua.BrowseDirectionBoth, ReferenceTypeId: codec.NewNumericNodeId(0, id.HierarchicalReferences),
			IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)},
		{NodeId: codec.NewNumericNodeId(0, id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionInverse, NodeClassMask: 1},
	}
}

func sampleBrowseResults() []BrowseResult {
	return []BrowseResult{
		{References: []ua.ReferenceDescription{{
			ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes),
			IsForward:       true,
			NodeId:          codec.ExpandedNodeId{NodeId: sampleNode},
			BrowseName:      codec.QualifiedName{NamespaceIndex: 2, Name: "Temperature"},
			DisplayName:     codec.LocalizedText{Text: "Temperature"},
			NodeClass:       ua.NodeClassVariable,
			TypeDefinition:  codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, id.BaseDataVariableType)},
		}, {
			NodeId: codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, 1), NamespaceURI: "urn:elsewhere", ServerIndex: 2},
		}}},
		{Status: status.BadNodeIdUnknown},
		{References: []ua.ReferenceDescription{}},
	}
}

func sampleCallItems() []ua.CallMethodRequest {
	return []ua.CallMethodRequest{
		{ObjectId: sampleNode, MethodId: codec.NewStringNodeId(2, "Boiler1.Reset"), InputArguments: sampleVariants()},
		{ObjectId: sampleNode, MethodId: codec.NewStringNodeId(2, "Boiler1.Stop")},
	}
}

func sampleCallResults() []ua.CallMethodResult {
	return []ua.CallMethodResult{
		{OutputArguments: []codec.Variant{codec.UInt32Variant(7)}},
		{StatusCode: status.BadInvalidArgument, InputArgumentResults: []status.Code{status.Good, status.BadTypeMismatch},
			InputArgumentDiagnosticInfos: []codec.DiagnosticInfo{{Mask: codec.HasSymbolicID | codec.HasAdditionalInfo,
				SymbolicID: 3, AdditionalInfo: "out of range"}}},
	}
}

func sampleEvents() []Event {
	return []Event{{
		EventType:  codec.NewNumericNodeId(0, id.AlarmConditionType),
		SourceNode: sampleNode,
		Notifiers:  []codec.NodeId{codec.NewStringNodeId(2, "Boiler1")},
		Fields: []EventField{
			{BrowsePath: []codec.QualifiedName{{Name: "Message"}}, Value: codec.MustVariant(codec.LocalizedText{Text: "too hot"})},
			{BrowsePath: []codec.QualifiedName{{Name: "Severity"}}, Value: codec.UInt16Variant(800)},
			{BrowsePath: []codec.QualifiedName{{Name: "ActiveState"}, {Name: "Id"}}, Value: codec.BooleanVariant(true)},
		},
	}, {}}
}

// sampleHistoryValues are values of two nodes, one of each shape sampleDataValues has.
func sampleHistoryValues() []history.Value {
	var out []history.Value
	for i, dv := range sampleDataValues() {
		n := sampleNode
		if i%2 == 0 {
			n = codec.NewNumericNodeId(0, id.Server_ServerStatus_CurrentTime)
		}
		out = append(out, history.Value{Node: n, Value: dv})
	}
	return out
}

// sampleHistoryEvents are stored events: fields of every sample variant, and none.
func sampleHistoryEvents() []history.Event {
	var fields []history.EventField
	for i, v := range sampleVariants() {
		fields = append(fields, history.EventField{Key: "0:Field" + string(rune('A'+i)), Value: v})
	}
	return []history.Event{
		{Notifier: sampleNode, Time: sampleTime, Type: codec.NewNumericNodeId(0, id.BaseEventType), Fields: fields},
		{Fields: []history.EventField{}},
	}
}

// namedFrame is a frame to round-trip.
type namedFrame struct {
	name  string
	frame Frame
}

// sampleFrames returns a frame of every kind: with a zero body, with an empty one where
// that differs, and with a full one.
func sampleFrames() []namedFrame {
	dcs := []DataChange{{NodeId: sampleNode, AttributeId: uint32(attr.Value), Value: sampleDataValues()[3]}, {}}
	out := []namedFrame{
		{"Info", Frame{Kind: KindInfo, ID: 1, Body: &Setup{Name: "boiler", NamespaceURI: "urn:boiler", Options: []byte(`{"host":"10.0.0.7"}`)}}},
		{"Info reply", Frame{Kind: KindInfo | KindReply, ID: 1, Body: &Info{Namespaces: []string{"urn:boiler", codec.EmptyString}, Capabilities: CapRead | CapWatch}}},
		{"Mount", Frame{Kind: KindMount, ID: 2, Body: &MountRequest{Indexes: []uint16{2, 0xffff}}}},
		{"Mount reply", Frame{Kind: KindMount | KindReply, ID: 2, Body: &Mounts{Mounts: []Mount{{
			SourceId: codec.NewNumericNodeId(0, id.ObjectsFolder), ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes), TargetId: sampleNode}}}}},
		{"Start", Frame{Kind: KindStart, ID: 3, Body: &StartParams{Namespaces: []string{"urn:boiler"}, NamespaceIndexes: []uint16{2},
			LogLevel: -4}}},
		{"Start reply", Frame{Kind: KindStart | KindReply, ID: 3, Body: &Outcome{Status: status.BadCommunicationError, Message: "no answer from 10.0.0.7"}}},
		{"Close", Frame{Kind: KindClose, ID: 4}},
		{"Close reply", Frame{Kind: KindClose | KindReply, ID: 4, Body: &Outcome{}}},
		{"Read", Frame{Kind: KindRead, ID: 5, Body: &ReadOp{Principal: samplePrincipal, MaxAge: 500, Timestamps: ua.TimestampsToReturnBoth,
			Items: sampleReadItems(), Now: sampleTime}}},
		{"Read reply", Frame{Kind: KindRead | KindReply, ID: 5, Body: &ReadResults{Results: sampleDataValues()}}},
		{"Write", Frame{Kind: KindWrite, ID: 6, Body: &WriteOp{Principal: Principal{Anonymous: true}, Items: sampleWriteItems()}}},
		{"Write reply", Frame{Kind: KindWrite | KindReply, ID: 6, Body: &WriteResults{Results: []status.Code{status.Good, status.BadNotWritable, status.BadUserAccessDenied}}}},
		{"Browse", Frame{Kind: KindBrowse, ID: 7, Body: &BrowseOp{Principal: samplePrincipal, View: ua.ViewDescription{ViewId: sampleNode, Timestamp: sampleTime, ViewVersion: 3},
			Items: sampleBrowseItems()}}},
		{"Browse reply", Frame{Kind: KindBrowse | KindReply, ID: 7, Body: &BrowseResults{Results: sampleBrowseResults()}}},
		{"Call", Frame{Kind: KindCall, ID: 8, Body: &CallOp{Principal: samplePrincipal, Items: sampleCallItems()}}},
		{"Call reply", Frame{Kind: KindCall | KindReply, ID: 8, Body: &CallResults{Results: sampleCallResults()}}},
		{"Watch", Frame{Kind: KindWatch, Body: &WatchSet{
			Add:    []WatchItem{{NodeId: sampleNode, AttributeId: uint32(attr.Value), SamplingInterval: 250}, {NodeId: sampleNode, AttributeId: uint32(attr.DisplayName)}},
			Remove: []WatchKey{{NodeId: codec.NewStringNodeId(2, "Boiler1.Pressure"), AttributeId: uint32(attr.Value)}}}}},
		{"Watch reply", Frame{Kind: KindWatch | KindReply}},
		{"Health", Frame{Kind: KindHealth, ID: 9}},
		{"Health reply", Frame{Kind: KindHealth | KindReply, ID: 9, Body: &Health{Status: status.UncertainLastUsableValue, Message: "PLC slow", Time: sampleTime}}},
		{"Models", Frame{Kind: KindModels, ID: 10}},
		{"Models reply", Frame{Kind: KindModels | KindReply, ID: 10, Body: &Models{Models: []Model{
			{Name: "device.xml", NodeSet: []byte("<UANodeSet/>")}, {Name: "empty.xml"}}}}},
		{"HistoryAppend", Frame{Kind: KindHistoryAppend, ID: 11, Body: &HistoryValues{Values: sampleHistoryValues()}}},
		{"HistoryAppend reply", Frame{Kind: KindHistoryAppend | KindReply, ID: 11, Body: &Outcome{}}},
		{"HistoryReadRaw", Frame{Kind: KindHistoryReadRaw, ID: 12, Body: &HistoryReadRaw{Items: []history.RawRead{
			{Node: sampleNode, Start: sampleTime, End: sampleTime + 10_000_000, Max: 1000, Bounds: true, Position: []byte{1, 2, 3}},
			{Node: sampleNode, End: sampleTime, Max: 1<<31 - 1, Modified: true, Position: []byte{}}}}}},
		{"HistoryReadRaw reply", Frame{Kind: KindHistoryReadRaw | KindReply, ID: 12, Body: &HistoryRawResults{Results: []history.RawResult{
			{Values: sampleDataValues(), Next: []byte("next")},
			{Values: sampleDataValues()[:2], Modifications: []ua.ModificationInfo{
				{ModificationTime: sampleTime, UpdateType: ua.HistoryUpdateTypeReplace, UserName: "operator"}, {UpdateType: ua.HistoryUpdateTypeDelete}}},
			{Status: status.BadNoData}}}}},
		{"HistoryUpdate", Frame{Kind: KindHistoryUpdate, ID: 13, Body: &HistoryUpdate{User: "operator", Time: sampleTime, Items: []history.Update{
			{Node: sampleNode, Kind: ua.PerformUpdateTypeUpdate, Values: sampleDataValues()}, {Kind: ua.PerformUpdateTypeInsert}}}}},
		{"HistoryUpdate reply", Frame{Kind: KindHistoryUpdate | KindReply, ID: 13, Body: &HistoryItemResults{Results: []history.ItemResult{
			{Operations: []status.Code{status.GoodEntryInserted, status.GoodEntryReplaced, status.BadEntryExists}}, {Status: status.BadNoData}}}}},
		{"HistoryDeleteRaw", Frame{Kind: KindHistoryDeleteRaw, ID: 14, Body: &HistoryDeleteRaw{User: codec.EmptyString, Time: sampleTime, Items: []history.DeleteRaw{
			{Node: sampleNode, Start: sampleTime, End: sampleTime + 1, Modified: true}, {}}}}},
		{"HistoryDeleteAtTime", Frame{Kind: KindHistoryDeleteAtTime, ID: 15, Body: &HistoryDeleteAtTime{User: "u", Items: []history.DeleteAtTime{
			{Node: sampleNode, Times: []codec.DateTime{sampleTime, 0, sampleTime + 5}}, {Times: []codec.DateTime{}}}}}},
		{"HistoryAppendEvents", Frame{Kind: KindHistoryAppendEvents, ID: 16, Body: &HistoryEvents{Events: sampleHistoryEvents()}}},
		{"HistoryReadEvents", Frame{Kind: KindHistoryReadEvents, ID: 17, Body: &HistoryReadEvents{Items: []history.EventRead{
			{Notifier: sampleNode, Start: sampleTime, End: sampleTime + 1, Max: 10, Position: []byte{9}}, {}}}}},
		{"HistoryReadEvents reply", Frame{Kind: KindHistoryReadEvents | KindReply, ID: 17, Body: &HistoryEventResults{Results: []history.EventResult{
			{Events: sampleHistoryEvents(), Next: []byte{1}}, {Status: status.BadHistoryOperationUnsupported}}}}},
		{"Cancel", Frame{Kind: KindCancel, ID: 5}},
		{"DataChanges", Frame{Kind: KindDataChanges, Body: &DataChanges{Changes: dcs}}},
		{"Events", Frame{Kind: KindEvents, Body: &Events{Events: sampleEvents()}}},
		{"Fault", Frame{Kind: KindFault, ID: 0xffffffff, Body: &Outcome{Status: status.BadServiceUnsupported, Message: "kind 0x42"}}},
	}
	// Every body kind once more with its zero value: nil slices, null strings.
	for k := range 256 {
		if b, ok := NewBody(Kind(k)); ok && b != nil {
			out = append(out, namedFrame{Kind(k).String() + " zero", Frame{Kind: Kind(k), Body: b}})
		}
	}
	// And the operations with empty (not nil) items, which the encoding tells apart.
	out = append(out,
		namedFrame{"Read empty", Frame{Kind: KindRead, Body: &ReadOp{Items: []ua.ReadValueId{}}}},
		namedFrame{"Write empty", Frame{Kind: KindWrite, Body: &WriteOp{Items: []ua.WriteValue{}}}},
		namedFrame{"Browse empty", Frame{Kind: KindBrowse, Body: &BrowseOp{Items: []ua.BrowseDescription{}}}},
		namedFrame{"Call empty", Frame{Kind: KindCall, Body: &CallOp{Items: []ua.CallMethodRequest{}}}},
		namedFrame{"Read results empty", Frame{Kind: KindRead | KindReply, Body: &ReadResults{Results: []codec.DataValue{}}}},
	)
	return out
}

// largeFrames returns operations and results near the sizes a busy server sends: many
// items, and values as long as the default limits allow.
func largeFrames() []namedFrame {
	const n = 20000
	reads := make([]ua.ReadValueId, n)
	results := make([]codec.DataValue, n)
	for i := range reads {
		reads[i] = ua.ReadValueId{NodeId: codec.NewNumericNodeId(2, uint32(i)), AttributeId: uint32(attr.Value)}
		results[i] = codec.DataValue{Value: codec.DoubleVariant(float64(i)), SourceTimestamp: sampleTime}
	}
	big := make([]byte, codec.DefaultLimits.MaxByteStringLength)
	for i := range big {
		big[i] = byte(i)
	}
	refs := make([]ua.ReferenceDescription, n)
	for i := range refs {
		refs[i] = ua.ReferenceDescription{ReferenceTypeId: codec.NewNumericNodeId(0, id.HasComponent), IsForward: true,
			NodeId: codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(2, uint32(i))}}
	}
	return []namedFrame{
		{"Read large", Frame{Kind: KindRead, Body: &ReadOp{Principal: samplePrincipal, Items: reads}}},
		{"Read reply large", Frame{Kind: KindRead | KindReply, Body: &ReadResults{Results: results}}},
		{"Write large value", Frame{Kind: KindWrite, Body: &WriteOp{Items: []ua.WriteValue{
			{NodeId: sampleNode, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: codec.ByteStringVariant(big)}},
			{NodeId: sampleNode, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: codec.StringVariant(strings.Repeat("x", codec.DefaultLimits.MaxStringLength))}},
		}}}},
		{"Browse reply large", Frame{Kind: KindBrowse | KindReply, Body: &BrowseResults{Results: []BrowseResult{{References: refs}}}}},
		{"DataChanges large", Frame{Kind: KindDataChanges, Body: &DataChanges{Changes: func() []DataChange {
			out := make([]DataChange, n)
			for i := range out {
				out[i] = DataChange{NodeId: reads[i].NodeId, AttributeId: uint32(attr.Value), Value: results[i]}
			}
			return out
		}()}}},
	}
}

// withResults returns the frame a decode of f gives: operations get a zero result per
// item, which is what a manager across the boundary fills.
func withResults(f Frame) Frame {
	switch op := f.Body.(type) {
	case *ReadOp:
		c := *op
		c.Results = make([]codec.DataValue, len(op.Items))
		f.Body = &c
	case *WriteOp:
		c := *op
		c.Results = make([]status.Code, len(op.Items))
		f.Body = &c
	case *BrowseOp:
		c := *op
		c.Results = make([]BrowseResult, len(op.Items))
		f.Body = &c
	case *CallOp:
		c := *op
		c.Results = make([]ua.CallMethodResult, len(op.Items))
		f.Body = &c
	}
	return f
}

func encodeFrame(t testing.TB, f *Frame) []byte {
	t.Helper()
	b, err := f.AppendBinary(nil)
	require.NoError(t, err)
	return b
}

// TestFrameRoundTrip: every frame decodes to the value it was made from and
// re-encodes to the same bytes; every truncation fails with BadDecodingError.
func TestFrameRoundTrip(t *testing.T) {
	t.Parallel()
	frames := append(sampleFrames(), largeFrames()...)
	for _, tc := range frames {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := encodeFrame(t, &tc.frame)
			var got Frame
			require.NoError(t, got.Decode(b, codec.Limits{}))
			want := withResults(tc.frame)
			require.True(t, equalBits(want, got), "decoded frame differs\nwant: %+v\ngot:  %+v", want, got)
			require.Equal(t, b, encodeFrame(t, &got), "re-encoding differs")

			for _, n := range truncations(len(b)) {
				var f Frame
				require.ErrorIs(t, f.Decode(b[:n], codec.Limits{}), status.BadDecodingError, "truncated to %d of %d bytes", n, len(b))
			}
		})
	}
}

// truncations returns the lengths to cut an n-byte encoding to: every one for short
// encodings, a spread of them for long ones.
func truncations(n int) []int {
	if n <= 512 {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	var out []int
	for i := range 64 {
		out = append(out, i, n-1-i, i*(n/64))
	}
	return out
}

// TestFrameReuse: decoding into a frame that already holds a body of the kind reuses
// it, so that a host can decode results into the slots of the operation it sent; a body
// of another kind is replaced.
func TestFrameReuse(t *testing.T) {
	t.Parallel()
	want := sampleDataValues()
	b := encodeFrame(t, &Frame{Kind: KindRead | KindReply, ID: 9, Body: &ReadResults{Results: want}})

	slots := make([]codec.DataValue, len(want))
	for i := range slots {
		slots[i] = codec.DataValue{Status: status.BadInternalError, Value: codec.StringVariant("stale")}
	}
	f := Frame{Body: &ReadResults{Results: slots[:0]}}
	require.NoError(t, f.Decode(b, codec.Limits{}))
	got := f.Body.(*ReadResults).Results
	require.Same(t, &slots[0], &got[0], "results decoded into the slots handed in")
	require.True(t, equalBits(want, slots))

	f = Frame{Body: &WriteResults{}}
	require.NoError(t, f.Decode(b, codec.Limits{}))
	require.IsType(t, &ReadResults{}, f.Body)

	// Decoding an operation reuses and clears its results.
	op := &ReadOp{Results: []codec.DataValue{{Status: status.BadInternalError}, {}, {}, {}, {}}}
	b = encodeFrame(t, &Frame{Kind: KindRead, Body: &ReadOp{Items: sampleReadItems()}})
	f = Frame{Body: op}
	require.NoError(t, f.Decode(b, codec.Limits{}))
	require.Len(t, op.Results, len(sampleReadItems()))
	require.Equal(t, codec.DataValue{}, op.Results[0])
}

// TestFrameErrors: what a frame decoder refuses, each with its StatusCode.
func TestFrameErrors(t *testing.T) {
	t.Parallel()
	read := encodeFrame(t, &Frame{Kind: KindRead, ID: 1, Body: &ReadOp{Items: sampleReadItems()}})
	many := encodeFrame(t, &Frame{Kind: KindRead, Body: &ReadOp{Items: make([]ua.ReadValueId, 101)}})
	tests := []struct {
		name   string
		b      []byte
		limits codec.Limits
		want   status.Code
	}{
		{"empty", nil, codec.Limits{}, status.BadDecodingError},
		{"header only", read[:6], codec.Limits{}, status.BadDecodingError},
		{"version 0", append([]byte{0}, read[1:]...), codec.Limits{}, status.BadProtocolVersionUnsupported},
		{"version 2", append([]byte{2}, read[1:]...), codec.Limits{}, status.BadProtocolVersionUnsupported},
		{"unknown kind", []byte{Version, 0x42, 0, 0, 0, 0}, codec.Limits{}, status.BadServiceUnsupported},
		{"reply to a one-way kind", []byte{Version, byte(KindCancel | KindReply), 0, 0, 0, 0}, codec.Limits{}, status.BadServiceUnsupported},
		{"trailing byte", append(append([]byte(nil), read...), 0), codec.Limits{}, status.BadDecodingError},
		{"trailing byte without body", []byte{Version, byte(KindClose), 0, 0, 0, 0, 0}, codec.Limits{}, status.BadDecodingError},
		{"array over limit", many, codec.Limits{MaxArrayLength: 100}, status.BadEncodingLimitsExceeded},
		{"message over limit", many, codec.Limits{MaxMessageSize: len(many) - 1}, status.BadEncodingLimitsExceeded},
		{"array longer than the bytes", []byte{Version, byte(KindMount), 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0}, codec.Limits{}, status.BadDecodingError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var f Frame
			require.ErrorIs(t, f.Decode(tc.b, tc.limits), tc.want)
		})
	}
}

// TestFrameEncodeErrors: a frame whose body does not fit its kind is not encoded.
func TestFrameEncodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frame Frame
	}{
		{"unknown kind", Frame{Kind: 0x42}},
		{"missing body", Frame{Kind: KindRead}},
		{"body of another kind", Frame{Kind: KindRead, Body: &WriteOp{}}},
		{"results as request", Frame{Kind: KindRead, Body: &ReadResults{}}},
		{"body where none belongs", Frame{Kind: KindClose, Body: &Outcome{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prefix := []byte("keep")
			b, err := tc.frame.AppendBinary(prefix)
			require.ErrorIs(t, err, status.BadEncodingError)
			require.Equal(t, []byte("keep"), b)
		})
	}
}

// TestAppendBinaryKeepsPrefix: AppendBinary appends, within b's capacity or beyond it.
func TestAppendBinaryKeepsPrefix(t *testing.T) {
	t.Parallel()
	f := Frame{Kind: KindHealth | KindReply, ID: 7, Body: &Health{Status: status.Good, Message: "ok"}}
	alone := encodeFrame(t, &f)
	for _, spare := range []int{0, 3, 1024} {
		b := append(make([]byte, 0, 2+spare), 0xaa, 0xbb)
		b, err := f.AppendBinary(b)
		require.NoError(t, err)
		require.Equal(t, append([]byte{0xaa, 0xbb}, alone...), b, "spare capacity %d", spare)
	}
}

func TestKindString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Read", KindRead.String())
	require.Equal(t, "Read reply", (KindRead | KindReply).String())
	require.Equal(t, "Fault", KindFault.String())
	require.Equal(t, "Kind(0x42)", Kind(0x42).String())
	require.Equal(t, "Kind(0x42) reply", Kind(0xc2).String())
}
