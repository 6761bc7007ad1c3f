package addrspace

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

func n0(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }

// readOne reads one attribute through the nodemgr contract and checks that done is
// called exactly once before Read returns.
func readOne(t testing.TB, s *Space, item ua.ReadValueId, ts ua.TimestampsToReturn) codec.DataValue {
	t.Helper()
	op := &nodemgr.ReadOp{Timestamps: ts, Items: []ua.ReadValueId{item}, Results: make([]codec.DataValue, 1)}
	calls := 0
	s.Read(context.Background(), op, func() { calls++ })
	require.Equal(t, 1, calls)
	return op.Results[0]
}

func readAttr(t testing.TB, s *Space, n codec.NodeId, a attr.ID) codec.DataValue {
	return readOne(t, s, ua.ReadValueId{NodeId: n, AttributeId: uint32(a)}, ua.TimestampsToReturnBoth)
}

// value reads a Good attribute value.
func value(t testing.TB, s *Space, n codec.NodeId, a attr.ID) *codec.Variant {
	t.Helper()
	dv := readAttr(t, s, n, a)
	require.Equal(t, status.Good, dv.Status)
	return &dv.Value
}

// demo adds a namespace-1 test fixture to s.
func demo(t testing.TB, s *Space) {
	t.Helper()
	folder := codec.NewStringNodeId(1, "Demo")
	require.NoError(t, s.AddNode(Node{
		NodeId: folder, NodeClass: ua.NodeClassObject, BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "Demo"},
		DisplayName: codec.LocalizedText{Text: "Demo"}, WriteMask: uint32(ua.AttributeWriteMaskDisplayName),
		References: []Reference{
			{ReferenceTypeId: n0(id.Organizes), TargetId: n0(id.ObjectsFolder), IsForward: false},
			{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.FolderType), IsForward: true},
		},
	}))
	matrix, err := codec.NewMatrix([]int32{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}, []int32{3, 4})
	require.NoError(t, err)
	vars := []struct {
		name string
		dt   uint32
		rank int32
		val  codec.Variant
	}{
		{"Int32Array", id.Int32, 1, codec.MustVariant([]int32{10, 11, 12, 13, 14})},
		{"Matrix", id.Int32, 2, matrix},
		{"String", id.String, -1, codec.StringVariant("héllo")},
		{"Bytes", id.ByteString, -1, codec.ByteStringVariant([]byte{1, 2, 3, 4})},
		{"Strings", id.String, 1, codec.MustVariant([]string{"abc", "defg"})},
		{"Number", id.Number, -1, codec.DoubleVariant(1.5)},
		{"Time", id.UtcTime, -1, codec.DateTimeVariant(1)},
		{"State", id.ServerState, -1, codec.Int32Variant(0)},
		{"Scalar", id.Int32, -1, codec.Int32Variant(7)},
		{"Any", id.BaseDataType, -2, codec.Int32Variant(7)},
	}
	for _, v := range vars {
		require.NoError(t, s.AddNode(Node{
			NodeId: codec.NewStringNodeId(1, v.name), NodeClass: ua.NodeClassVariable,
			BrowseName:  codec.QualifiedName{NamespaceIndex: 1, Name: v.name},
			DisplayName: codec.LocalizedText{Text: v.name},
			DataType:    n0(v.dt), ValueRank: v.rank, Value: v.val,
			AccessLevel: uint8(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite),
			References: []Reference{
				{ReferenceTypeId: n0(id.HasComponent), TargetId: folder, IsForward: false},
				{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.BaseDataVariableType), IsForward: true},
			},
		}))
	}
	require.NoError(t, s.AddNode(Node{
		NodeId: codec.NewStringNodeId(1, "WriteOnly"), NodeClass: ua.NodeClassVariable,
		BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "WriteOnly"}, DataType: n0(id.Int32), ValueRank: -1,
		AccessLevel: uint8(ua.AccessLevelTypeCurrentWrite),
	}))
	require.NoError(t, s.AddNode(Node{
		NodeId: codec.NewStringNodeId(1, "View"), NodeClass: ua.NodeClassView,
		BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "View"}, ContainsNoLoops: true,
		References: []Reference{{ReferenceTypeId: n0(id.Organizes), TargetId: n0(id.ViewsFolder), IsForward: false}},
	}))
}

// classAttrs lists, per NodeClass, the attributes Part 3 §5 gives it (besides the
// base attributes NodeId..UserWriteMask and AccessRestrictions that every class has).
var classAttrs = map[ua.NodeClass][]attr.ID{
	ua.NodeClassObject:        {attr.EventNotifier},
	ua.NodeClassVariable:      {attr.Value, attr.DataType, attr.ValueRank, attr.ArrayDimensions, attr.AccessLevel, attr.UserAccessLevel, attr.MinimumSamplingInterval, attr.Historizing, attr.AccessLevelEx},
	ua.NodeClassMethod:        {attr.Executable, attr.UserExecutable},
	ua.NodeClassObjectType:    {attr.IsAbstract},
	ua.NodeClassVariableType:  {attr.Value, attr.DataType, attr.ValueRank, attr.ArrayDimensions, attr.IsAbstract},
	ua.NodeClassReferenceType: {attr.IsAbstract, attr.Symmetric, attr.InverseName},
	ua.NodeClassDataType:      {attr.IsAbstract, attr.DataTypeDefinition},
	ua.NodeClassView:          {attr.ContainsNoLoops, attr.EventNotifier},
}

func TestReadEveryAttributeOfEveryClass(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	demo(t, s)
	base := []attr.ID{attr.NodeId, attr.NodeClass, attr.BrowseName, attr.DisplayName, attr.Description, attr.WriteMask, attr.UserWriteMask, attr.AccessRestrictions}
	// Optional attributes the node does not have answer BadAttributeIdInvalid.
	absent := map[attr.ID]bool{attr.RolePermissions: true, attr.UserRolePermissions: true}
	cases := []struct {
		name  string
		node  codec.NodeId
		class ua.NodeClass
		// absent lists optional class attributes this node lacks.
		absent []attr.ID
	}{
		{"ObjectsFolder", n0(id.ObjectsFolder), ua.NodeClassObject, nil},
		{"Server", n0(id.Server), ua.NodeClassObject, nil},
		{"ServerStatus", n0(id.Server_ServerStatus), ua.NodeClassVariable, nil},
		{"GetMonitoredItems", n0(id.Server_GetMonitoredItems), ua.NodeClassMethod, nil},
		{"FolderType", n0(id.FolderType), ua.NodeClassObjectType, nil},
		{"BaseDataVariableType", n0(id.BaseDataVariableType), ua.NodeClassVariableType, nil},
		{"Organizes", n0(id.Organizes), ua.NodeClassReferenceType, nil},
		{"ServerStatusDataType", n0(id.ServerStatusDataType), ua.NodeClassDataType, nil},
		{"Double", n0(id.Double), ua.NodeClassDataType, []attr.ID{attr.DataTypeDefinition}},
		{"DemoView", codec.NewStringNodeId(1, "View"), ua.NodeClassView, nil},
		{"DemoVariable", codec.NewStringNodeId(1, "Scalar"), ua.NodeClassVariable, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := map[attr.ID]status.Code{}
			for a := attr.ID(0); a <= 28; a++ {
				want[a] = status.BadAttributeIdInvalid
			}
			for _, a := range base {
				want[a] = status.Good
			}
			for _, a := range classAttrs[tc.class] {
				want[a] = status.Good
			}
			for _, a := range tc.absent {
				want[a] = status.BadAttributeIdInvalid
			}
			for a := range absent {
				want[a] = status.BadAttributeIdInvalid
			}
			for a := attr.ID(0); a <= 28; a++ {
				dv := readAttr(t, s, tc.node, a)
				require.Equal(t, want[a], dv.Status, "attribute %v", a)
				if dv.Status == status.Good && a != attr.Value {
					require.False(t, dv.Value.IsNull(), "attribute %v", a)
					require.Zero(t, dv.SourceTimestamp, "attribute %v", a)
					require.NotZero(t, dv.ServerTimestamp, "attribute %v", a)
				}
				if dv.Status.IsBad() {
					require.True(t, dv.Value.IsNull())
				}
			}
			require.Equal(t, int32(tc.class), int32(value(t, s, tc.node, attr.NodeClass).Bits()))
			require.Equal(t, tc.node, value(t, s, tc.node, attr.NodeId).NodeId())
		})
	}
}

func TestReadAttributeValues(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	require.Equal(t, codec.QualifiedName{Name: "Objects"}, value(t, s, n0(id.ObjectsFolder), attr.BrowseName).Value())
	require.Equal(t, codec.LocalizedText{Text: "Objects"}, value(t, s, n0(id.ObjectsFolder), attr.DisplayName).Value())
	require.Equal(t, n0(id.ServerStatusDataType), value(t, s, n0(id.Server_ServerStatus), attr.DataType).NodeId())
	require.Equal(t, int32(-1), int32(value(t, s, n0(id.Server_ServerStatus), attr.ValueRank).Bits()))
	require.Equal(t, uint64(1), value(t, s, n0(id.Server_ServerStatus), attr.AccessLevel).Bits())
	require.Equal(t, uint64(1), value(t, s, n0(id.Server_ServerStatus), attr.UserAccessLevel).Bits())
	require.Equal(t, codec.LocalizedText{Text: "OrganizedBy"}, value(t, s, n0(id.Organizes), attr.InverseName).Value())
	require.Equal(t, uint64(0), value(t, s, n0(id.Organizes), attr.Symmetric).Bits())
	require.Equal(t, uint64(1), value(t, s, n0(id.References), attr.IsAbstract).Bits())
	require.Equal(t, uint64(1), value(t, s, n0(id.Server_GetMonitoredItems), attr.Executable).Bits())
	require.Equal(t, uint64(1), value(t, s, n0(id.Server_GetMonitoredItems), attr.UserExecutable).Bits())
	def := readAttr(t, s, n0(id.ServerStatusDataType), attr.DataTypeDefinition)
	require.Equal(t, status.Good, def.Status)
	require.Equal(t, codec.TypeExtensionObject, def.Value.Type())
	dims := readAttr(t, s, n0(id.Server_NamespaceArray), attr.ArrayDimensions)
	require.Equal(t, status.Good, dims.Status)
	require.True(t, dims.Value.IsArray())
	// A Variable without a value in the nodeset reads as a null Good value.
	v := readAttr(t, s, n0(id.Server_ServerStatus), attr.Value)
	require.Equal(t, status.Good, v.Status)
	require.True(t, v.Value.IsNull())
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	demo(t, s)
	bin := codec.QualifiedName{Name: "Default Binary"}
	xml := codec.QualifiedName{Name: "Default XML"}
	cases := []struct {
		name string
		item ua.ReadValueId
		want status.Code
	}{
		{"unknown numeric", ua.ReadValueId{NodeId: n0(999999), AttributeId: uint32(attr.Value)}, status.BadNodeIdUnknown},
		{"unknown string", ua.ReadValueId{NodeId: codec.NewStringNodeId(1, "nope"), AttributeId: uint32(attr.NodeId)}, status.BadNodeIdUnknown},
		{"unknown namespace", ua.ReadValueId{NodeId: codec.NewNumericNodeId(7, id.ObjectsFolder), AttributeId: uint32(attr.NodeId)}, status.BadNodeIdUnknown},
		{"attribute 0", ua.ReadValueId{NodeId: n0(id.ObjectsFolder), AttributeId: 0}, status.BadAttributeIdInvalid},
		{"attribute 99", ua.ReadValueId{NodeId: n0(id.ObjectsFolder), AttributeId: 99}, status.BadAttributeIdInvalid},
		{"value of object", ua.ReadValueId{NodeId: n0(id.ObjectsFolder), AttributeId: uint32(attr.Value)}, status.BadAttributeIdInvalid},
		{"not readable", ua.ReadValueId{NodeId: codec.NewStringNodeId(1, "WriteOnly"), AttributeId: uint32(attr.Value)}, status.BadNotReadable},
		{"binary encoding of scalar", ua.ReadValueId{NodeId: codec.NewStringNodeId(1, "Scalar"), AttributeId: uint32(attr.Value), DataEncoding: bin}, status.Good},
		{"xml encoding of scalar", ua.ReadValueId{NodeId: codec.NewStringNodeId(1, "Scalar"), AttributeId: uint32(attr.Value), DataEncoding: xml}, status.BadDataEncodingInvalid},
		{"encoding of non-value", ua.ReadValueId{NodeId: codec.NewStringNodeId(1, "Scalar"), AttributeId: uint32(attr.DisplayName), DataEncoding: bin}, status.BadDataEncodingInvalid},
		{"unknown encoding", ua.ReadValueId{NodeId: codec.NewStringNodeId(1, "Scalar"), AttributeId: uint32(attr.Value), DataEncoding: codec.QualifiedName{NamespaceIndex: 3, Name: "X"}}, status.BadDataEncodingInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dv := readOne(t, s, tc.item, ua.TimestampsToReturnBoth)
			require.Equal(t, tc.want, dv.Status)
			if tc.want.IsBad() {
				require.True(t, dv.Value.IsNull())
				require.Zero(t, dv.SourceTimestamp)
				require.Zero(t, dv.ServerTimestamp)
			}
		})
	}
	// An ExtensionObject value: binary is fine, XML and JSON are not supported.
	eo := codec.MustVariant(codec.ExtensionObject{TypeID: n0(id.Argument_Encoding_DefaultBinary), Encoding: 1, Body: []byte{}})
	require.True(t, s.SetValue(codec.NewStringNodeId(1, "Any"), codec.DataValue{Value: eo}))
	for enc, want := range map[string]status.Code{"Default Binary": status.Good, "Default XML": status.BadDataEncodingUnsupported, "Default JSON": status.BadDataEncodingUnsupported} {
		dv := readOne(t, s, ua.ReadValueId{NodeId: codec.NewStringNodeId(1, "Any"), AttributeId: uint32(attr.Value), DataEncoding: codec.QualifiedName{Name: enc}}, ua.TimestampsToReturnBoth)
		require.Equal(t, want, dv.Status, enc)
	}
}

func TestReadTimestampsAndMaxAge(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	demo(t, s)
	item := ua.ReadValueId{NodeId: codec.NewStringNodeId(1, "Scalar"), AttributeId: uint32(attr.Value)}
	cases := []struct {
		ts             ua.TimestampsToReturn
		want           status.Code
		source, server bool
	}{
		{ua.TimestampsToReturnSource, status.Good, true, false},
		{ua.TimestampsToReturnServer, status.Good, false, true},
		{ua.TimestampsToReturnBoth, status.Good, true, true},
		{ua.TimestampsToReturnNeither, status.Good, false, false},
		{ua.TimestampsToReturnInvalid, status.BadTimestampsToReturnInvalid, false, false},
		{ua.TimestampsToReturn(-1), status.BadTimestampsToReturnInvalid, false, false},
	}
	for _, tc := range cases {
		dv := readOne(t, s, item, tc.ts)
		require.Equal(t, tc.want, dv.Status, "%v", tc.ts)
		require.Equal(t, tc.source, dv.SourceTimestamp != 0, "%v", tc.ts)
		require.Equal(t, tc.server, dv.ServerTimestamp != 0, "%v", tc.ts)
		if tc.want == status.Good {
			require.Equal(t, int32(7), int32(dv.Value.Bits()))
		}
	}
	for _, tc := range []struct {
		maxAge float64
		want   status.Code
	}{{0, status.Good}, {1e9, status.Good}, {-1, status.BadMaxAgeInvalid}} {
		op := &nodemgr.ReadOp{MaxAge: tc.maxAge, Items: []ua.ReadValueId{item}, Results: make([]codec.DataValue, 1)}
		s.Read(context.Background(), op, func() {})
		require.Equal(t, tc.want, op.Results[0].Status)
	}
}

func TestReadIndexRange(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	demo(t, s)
	mat := func(flat []int32, dims ...int32) codec.Variant {
		v, err := codec.NewMatrix(flat, dims)
		require.NoError(t, err)
		return v
	}
	cases := []struct {
		node, rng string
		want      status.Code
		val       codec.Variant
	}{
		{"Int32Array", "1", status.Good, codec.MustVariant([]int32{11})},
		{"Int32Array", "1:3", status.Good, codec.MustVariant([]int32{11, 12, 13})},
		{"Int32Array", "3:9", status.Good, codec.MustVariant([]int32{13, 14})},
		{"Int32Array", "4", status.Good, codec.MustVariant([]int32{14})},
		{"Int32Array", "5", status.BadIndexRangeNoData, codec.Variant{}},
		{"Int32Array", "5:7", status.BadIndexRangeNoData, codec.Variant{}},
		{"Int32Array", "3:3", status.BadIndexRangeInvalid, codec.Variant{}},
		{"Int32Array", "3:1", status.BadIndexRangeInvalid, codec.Variant{}},
		{"Int32Array", "-1", status.BadIndexRangeInvalid, codec.Variant{}},
		{"Int32Array", "a", status.BadIndexRangeInvalid, codec.Variant{}},
		{"Int32Array", "1:", status.BadIndexRangeInvalid, codec.Variant{}},
		{"Int32Array", "1,", status.BadIndexRangeInvalid, codec.Variant{}},
		{"Int32Array", " 1", status.BadIndexRangeInvalid, codec.Variant{}},
		{"Int32Array", "99999999999", status.BadIndexRangeInvalid, codec.Variant{}},
		{"Int32Array", "1,2,3", status.BadIndexRangeInvalid, codec.Variant{}},
		{"Matrix", "1:2,0:3", status.Good, mat([]int32{10, 11, 12, 13, 20, 21, 22, 23}, 2, 4)},
		{"Matrix", "0,1:2", status.Good, mat([]int32{1, 2}, 1, 2)},
		{"Matrix", "2,3", status.Good, mat([]int32{23}, 1, 1)},
		{"Matrix", "3,0", status.BadIndexRangeNoData, codec.Variant{}},
		{"Matrix", "1", status.BadIndexRangeInvalid, codec.Variant{}},
		{"String", "1:2", status.Good, codec.StringVariant("él")},
		{"String", "4", status.Good, codec.StringVariant("o")},
		{"String", "5", status.BadIndexRangeNoData, codec.Variant{}},
		{"Bytes", "1:2", status.Good, codec.ByteStringVariant([]byte{2, 3})},
		{"Bytes", "7", status.BadIndexRangeNoData, codec.Variant{}},
		{"Strings", "1", status.Good, codec.MustVariant([]string{"defg"})},
		{"Strings", "0:1,1:2", status.Good, codec.MustVariant([]string{"bc", "ef"})},
		{"Strings", "0:1,3", status.BadIndexRangeNoData, codec.Variant{}},
		{"Scalar", "0", status.BadIndexRangeNoData, codec.Variant{}},
	}
	for _, tc := range cases {
		t.Run(tc.node+"["+tc.rng+"]", func(t *testing.T) {
			dv := readOne(t, s, ua.ReadValueId{NodeId: codec.NewStringNodeId(1, tc.node), AttributeId: uint32(attr.Value), IndexRange: tc.rng}, ua.TimestampsToReturnBoth)
			require.Equal(t, tc.want, dv.Status)
			require.Equal(t, tc.val, dv.Value)
		})
	}
	// A namespace 0 array value and a non-Value array attribute.
	dv := readOne(t, s, ua.ReadValueId{NodeId: n0(7612), AttributeId: uint32(attr.Value), IndexRange: "1"}, ua.TimestampsToReturnBoth)
	require.Equal(t, status.Good, dv.Status)
	require.Equal(t, []codec.LocalizedText{{Text: "Failed"}}, dv.Value.Value())
	dv = readOne(t, s, ua.ReadValueId{NodeId: n0(id.Server_NamespaceArray), AttributeId: uint32(attr.ArrayDimensions), IndexRange: "5"}, ua.TimestampsToReturnBoth)
	require.Equal(t, status.BadIndexRangeNoData, dv.Status)
}

func TestStartup(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := NewNamespace0()
	dv := readAttr(t, s, n0(id.Server_ServerStatus_CurrentTime), attr.BrowseName)
	elapsed := time.Since(start)
	require.Equal(t, status.Good, dv.Status)
	t.Logf("NewNamespace0 and a first read: %v", elapsed)
	require.Less(t, elapsed, 300*time.Millisecond)
}

// TestSetEventNotifier: the EventNotifier of a namespace 0 object is replaced by
// SetEventNotifier; a variable has none to set.
func TestSetEventNotifier(t *testing.T) {
	sp := NewNamespace0()
	server := codec.NewNumericNodeId(0, id.Server)
	read := func() codec.Variant {
		op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: server, AttributeId: uint32(attr.EventNotifier)}}, Results: make([]codec.DataValue, 1)}
		sp.Read(context.Background(), op, func() {})
		return op.Results[0].Value
	}
	require.Equal(t, codec.ByteVariant(1), read())
	require.True(t, sp.SetEventNotifier(server, ua.EventNotifierTypeSubscribeToEvents|ua.EventNotifierTypeHistoryRead))
	require.Equal(t, codec.ByteVariant(5), read())
	require.False(t, sp.SetEventNotifier(codec.NewNumericNodeId(0, id.Server_ServiceLevel), ua.EventNotifierTypeHistoryRead))
}
