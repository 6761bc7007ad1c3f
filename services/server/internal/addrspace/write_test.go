package addrspace

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

func writeOne(t testing.TB, s *Space, w ua.WriteValue) status.Code {
	t.Helper()
	op := &nodemgr.WriteOp{Items: []ua.WriteValue{w}, Results: make([]status.Code, 1)}
	calls := 0
	s.Write(context.Background(), op, func() { calls++ })
	require.Equal(t, 1, calls)
	return op.Results[0]
}

func TestWrite(t *testing.T) {
	t.Parallel()
	d1 := func(name string) codec.NodeId { return codec.NewStringNodeId(1, name) }
	val := func(v codec.Variant) codec.DataValue { return codec.DataValue{Value: v} }
	enabled := n0(id.Server_ServerDiagnostics_EnabledFlag)
	cases := []struct {
		name string
		w    ua.WriteValue
		want status.Code
		// read is the Value afterwards (for Good writes), read with IndexRange "".
		read codec.Variant
	}{
		{"bool to EnabledFlag", ua.WriteValue{NodeId: enabled, AttributeId: uint32(attr.Value), Value: val(codec.BooleanVariant(true))}, status.Good, codec.BooleanVariant(true)},
		{"int32 to EnabledFlag", ua.WriteValue{NodeId: enabled, AttributeId: uint32(attr.Value), Value: val(codec.Int32Variant(1))}, status.BadTypeMismatch, codec.Variant{}},
		{"array to scalar", ua.WriteValue{NodeId: enabled, AttributeId: uint32(attr.Value), Value: val(codec.MustVariant([]bool{true}))}, status.BadTypeMismatch, codec.Variant{}},
		{"null to Boolean", ua.WriteValue{NodeId: enabled, AttributeId: uint32(attr.Value)}, status.BadTypeMismatch, codec.Variant{}},
		{"CurrentTime", ua.WriteValue{NodeId: n0(id.Server_ServerStatus_CurrentTime), AttributeId: uint32(attr.Value), Value: val(codec.DateTimeVariant(5))}, status.BadNotWritable, codec.Variant{}},
		{"status not supported", ua.WriteValue{NodeId: enabled, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: codec.BooleanVariant(true), Status: status.BadInternalError}}, status.BadWriteNotSupported, codec.Variant{}},
		{"source timestamp not supported", ua.WriteValue{NodeId: enabled, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: codec.BooleanVariant(true), SourceTimestamp: 1}}, status.BadWriteNotSupported, codec.Variant{}},
		{"server timestamp not supported", ua.WriteValue{NodeId: enabled, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: codec.BooleanVariant(true), ServerTimestamp: 1}}, status.BadWriteNotSupported, codec.Variant{}},
		{"unknown node", ua.WriteValue{NodeId: n0(999999), AttributeId: uint32(attr.Value), Value: val(codec.Int32Variant(1))}, status.BadNodeIdUnknown, codec.Variant{}},
		{"invalid attribute", ua.WriteValue{NodeId: enabled, AttributeId: 99, Value: val(codec.Int32Variant(1))}, status.BadAttributeIdInvalid, codec.Variant{}},
		{"value of object", ua.WriteValue{NodeId: n0(id.Server), AttributeId: uint32(attr.Value), Value: val(codec.Int32Variant(1))}, status.BadAttributeIdInvalid, codec.Variant{}},
		{"ns0 DisplayName", ua.WriteValue{NodeId: n0(id.Server), AttributeId: uint32(attr.DisplayName), Value: val(codec.MustVariant(codec.LocalizedText{Text: "x"}))}, status.BadNotWritable, codec.Variant{}},
		{"BrowseName without WriteMask", ua.WriteValue{NodeId: d1("Demo"), AttributeId: uint32(attr.BrowseName), Value: val(codec.QualifiedNameVariant(codec.QualifiedName{Name: "x"}))}, status.BadNotWritable, codec.Variant{}},
		{"DisplayName with WriteMask", ua.WriteValue{NodeId: d1("Demo"), AttributeId: uint32(attr.DisplayName), Value: val(codec.MustVariant(codec.LocalizedText{Text: "Demo2"}))}, status.Good, codec.Variant{}},
		{"DisplayName wrong type", ua.WriteValue{NodeId: d1("Demo"), AttributeId: uint32(attr.DisplayName), Value: val(codec.StringVariant("x"))}, status.BadTypeMismatch, codec.Variant{}},
		{"Description without WriteMask", ua.WriteValue{NodeId: d1("Demo"), AttributeId: uint32(attr.Description), Value: val(codec.MustVariant(codec.LocalizedText{Text: "x"}))}, status.BadNotWritable, codec.Variant{}},
		{"Double to Number", ua.WriteValue{NodeId: d1("Number"), AttributeId: uint32(attr.Value), Value: val(codec.DoubleVariant(2.5))}, status.Good, codec.DoubleVariant(2.5)},
		{"Byte to Number", ua.WriteValue{NodeId: d1("Number"), AttributeId: uint32(attr.Value), Value: val(codec.ByteVariant(3))}, status.Good, codec.ByteVariant(3)},
		{"String to Number", ua.WriteValue{NodeId: d1("Number"), AttributeId: uint32(attr.Value), Value: val(codec.StringVariant("3"))}, status.BadTypeMismatch, codec.Variant{}},
		{"DateTime to UtcTime", ua.WriteValue{NodeId: d1("Time"), AttributeId: uint32(attr.Value), Value: val(codec.DateTimeVariant(99))}, status.Good, codec.DateTimeVariant(99)},
		{"Double to UtcTime", ua.WriteValue{NodeId: d1("Time"), AttributeId: uint32(attr.Value), Value: val(codec.DoubleVariant(1))}, status.BadTypeMismatch, codec.Variant{}},
		{"Int32 to enumeration", ua.WriteValue{NodeId: d1("State"), AttributeId: uint32(attr.Value), Value: val(codec.Int32Variant(2))}, status.Good, codec.Int32Variant(2)},
		{"UInt32 to enumeration", ua.WriteValue{NodeId: d1("State"), AttributeId: uint32(attr.Value), Value: val(codec.UInt32Variant(2))}, status.BadTypeMismatch, codec.Variant{}},
		{"anything to BaseDataType", ua.WriteValue{NodeId: d1("Any"), AttributeId: uint32(attr.Value), Value: val(codec.MustVariant([]string{"a"}))}, status.Good, codec.MustVariant([]string{"a"})},
		{"range write", ua.WriteValue{NodeId: d1("Int32Array"), AttributeId: uint32(attr.Value), IndexRange: "1:2", Value: val(codec.MustVariant([]int32{21, 22}))}, status.Good, codec.MustVariant([]int32{10, 21, 22, 13, 14})},
		{"range write wrong length", ua.WriteValue{NodeId: d1("Int32Array"), AttributeId: uint32(attr.Value), IndexRange: "1:2", Value: val(codec.MustVariant([]int32{21}))}, status.BadIndexRangeDataMismatch, codec.Variant{}},
		{"range write wrong type", ua.WriteValue{NodeId: d1("Int32Array"), AttributeId: uint32(attr.Value), IndexRange: "1:2", Value: val(codec.MustVariant([]int64{21, 22}))}, status.BadTypeMismatch, codec.Variant{}},
		{"range write beyond end", ua.WriteValue{NodeId: d1("Int32Array"), AttributeId: uint32(attr.Value), IndexRange: "4:5", Value: val(codec.MustVariant([]int32{1, 2}))}, status.BadIndexRangeNoData, codec.Variant{}},
		{"range write bad syntax", ua.WriteValue{NodeId: d1("Int32Array"), AttributeId: uint32(attr.Value), IndexRange: "2:1", Value: val(codec.MustVariant([]int32{1, 2}))}, status.BadIndexRangeInvalid, codec.Variant{}},
		{"range write to scalar", ua.WriteValue{NodeId: d1("Scalar"), AttributeId: uint32(attr.Value), IndexRange: "0", Value: val(codec.MustVariant([]int32{1}))}, status.BadIndexRangeInvalid, codec.Variant{}},
		{"write-only variable", ua.WriteValue{NodeId: d1("WriteOnly"), AttributeId: uint32(attr.Value), Value: val(codec.Int32Variant(1))}, status.Good, codec.Variant{}},
	}
	// Cases run in order on one Space: the range write depends on the initial array.
	s := NewNamespace0()
	demo(t, s)
	var mu sync.Mutex
	var changes []codec.NodeId
	s.OnChange(func(n codec.NodeId, dv *codec.DataValue) {
		mu.Lock()
		changes = append(changes, n)
		mu.Unlock()
	})
	for _, tc := range cases {
		mu.Lock()
		changes = changes[:0]
		mu.Unlock()
		require.Equal(t, tc.want, writeOne(t, s, tc.w), tc.name)
		mu.Lock()
		if tc.want == status.Good && tc.w.AttributeId == uint32(attr.Value) {
			require.Equal(t, []codec.NodeId{tc.w.NodeId}, changes, tc.name)
		} else {
			require.Empty(t, changes, tc.name)
		}
		mu.Unlock()
		if !tc.read.IsNull() {
			dv := readAttr(t, s, tc.w.NodeId, attr.Value)
			require.Equal(t, status.Good, dv.Status, tc.name)
			require.Equal(t, tc.read, dv.Value, tc.name)
			require.NotZero(t, dv.SourceTimestamp, tc.name)
		}
	}
	require.Equal(t, codec.LocalizedText{Text: "Demo2"}, value(t, s, d1("Demo"), attr.DisplayName).Value())
}

func TestSetValue(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	ns := codec.MustVariant([]string{NamespaceURI0, "urn:demo"})
	require.True(t, s.SetValue(n0(id.Server_NamespaceArray), codec.DataValue{Value: ns}))
	require.False(t, s.SetValue(n0(id.Server), codec.DataValue{Value: ns}))
	require.False(t, s.SetValue(n0(999999), codec.DataValue{Value: ns}))
	dv := readAttr(t, s, n0(id.Server_NamespaceArray), attr.Value)
	require.Equal(t, status.Good, dv.Status)
	require.Equal(t, ns, dv.Value)
	// Writing through the service is refused: NamespaceArray is read-only.
	require.Equal(t, status.BadNotWritable, writeOne(t, s, ua.WriteValue{NodeId: n0(id.Server_NamespaceArray), AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: ns}}))
	require.Error(t, s.AddNode(Node{NodeId: n0(id.Server)}))
	require.Error(t, s.AddNode(Node{}))
}

func TestValueFuncAndAddReference(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	demo(t, s)
	ct := n0(id.Server_ServerStatus_CurrentTime)
	require.True(t, s.SetValueFunc(ct, func(now codec.DateTime) codec.DataValue {
		return codec.DataValue{Value: codec.DateTimeVariant(now), SourceTimestamp: now}
	}))
	require.False(t, s.SetValueFunc(n0(id.Server), nil))
	require.False(t, s.SetValue(ct, codec.DataValue{Value: codec.DateTimeVariant(1)}))
	dv := readAttr(t, s, ct, attr.Value)
	require.Equal(t, status.Good, dv.Status)
	require.Equal(t, codec.TypeDateTime, dv.Value.Type())
	require.Equal(t, int64(dv.ServerTimestamp), int64(dv.Value.Bits()))

	// A Variable with a ValueFunc is not writable through the service.
	s2 := NewNamespace0()
	en := n0(id.Server_ServerDiagnostics_EnabledFlag)
	require.True(t, s2.SetValueFunc(en, func(codec.DateTime) codec.DataValue { return codec.DataValue{Value: codec.BooleanVariant(false)} }))
	require.Equal(t, status.BadNotWritable, writeOne(t, s2, ua.WriteValue{NodeId: en, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: codec.BooleanVariant(true)}}))

	require.NoError(t, s.AddReference(n0(id.Server), Reference{ReferenceTypeId: n0(id.HasComponent), TargetId: codec.NewStringNodeId(1, "Scalar"), IsForward: true}))
	require.Error(t, s.AddReference(n0(999999), Reference{ReferenceTypeId: n0(id.HasComponent), TargetId: n0(id.Server), IsForward: true}))
	require.Error(t, s.AddReference(n0(id.Server), Reference{ReferenceTypeId: n0(id.FolderType), TargetId: n0(id.Server), IsForward: true}))
	r := browseOne(t, s, ua.BrowseDescription{NodeId: codec.NewStringNodeId(1, "Scalar"), BrowseDirection: ua.BrowseDirectionInverse, ReferenceTypeId: n0(id.HasComponent), ResultMask: uint32(ua.BrowseResultMaskAll)})
	require.Equal(t, status.Good, r.Status)
	require.ElementsMatch(t, []string{"Demo", "Server"}, names(r.References))
}

// TestConcurrentReadWrite runs readers, writers and browsers together under -race.
func TestConcurrentReadWrite(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	demo(t, s)
	var notified sync.WaitGroup
	var mu sync.Mutex
	count := 0
	s.OnChange(func(codec.NodeId, *codec.DataValue) { mu.Lock(); count++; mu.Unlock() })
	scalar := codec.NewStringNodeId(1, "Scalar")
	const workers, iterations = 4, 200
	for w := range workers {
		notified.Add(2)
		go func() {
			defer notified.Done()
			for i := range iterations {
				op := &nodemgr.WriteOp{Items: []ua.WriteValue{{NodeId: scalar, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: codec.Int32Variant(int32(w*iterations + i))}}}, Results: make([]status.Code, 1)}
				s.Write(context.Background(), op, func() {})
				if op.Results[0] != status.Good {
					t.Errorf("write: %v", op.Results[0])
					return
				}
			}
		}()
		go func() {
			defer notified.Done()
			for range iterations {
				op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: scalar, AttributeId: uint32(attr.Value)}, {NodeId: n0(7612), AttributeId: uint32(attr.Value)}}, Results: make([]codec.DataValue, 2)}
				s.Read(context.Background(), op, func() {})
				if op.Results[0].Status != status.Good || op.Results[1].Status != status.Good {
					t.Errorf("read: %v %v", op.Results[0].Status, op.Results[1].Status)
					return
				}
				bop := &nodemgr.BrowseOp{Items: []ua.BrowseDescription{{NodeId: codec.NewStringNodeId(1, "Demo"), ResultMask: uint32(ua.BrowseResultMaskAll)}}, Results: make([]nodemgr.BrowseResult, 1)}
				s.Browse(context.Background(), bop, func() {})
				if bop.Results[0].Status != status.Good {
					t.Errorf("browse: %v", bop.Results[0].Status)
					return
				}
			}
		}()
	}
	notified.Wait()
	require.Equal(t, workers*iterations, count)
}

// TestWriteRoles checks Node.WriteRoles: a principal without one of the roles gets
// BadUserAccessDenied for the Value and for a WriteMask attribute, and reads
// UserAccessLevel and UserWriteMask without write bits; one with the role writes and
// reads them whole. AccessLevel and WriteMask stay the same for both.
func TestWriteRoles(t *testing.T) {
	t.Parallel()
	operator := n0(id.WellKnownRole_Operator)
	anonymous := []codec.NodeId{n0(id.WellKnownRole_Anonymous)}
	allowed := []codec.NodeId{n0(id.WellKnownRole_AuthenticatedUser), operator}
	s := NewNamespace0()
	sp := codec.NewStringNodeId(0, "Setpoint")
	rw := uint8(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite)
	require.NoError(t, s.AddNode(Node{
		NodeId: sp, NodeClass: ua.NodeClassVariable, BrowseName: codec.QualifiedName{Name: "Setpoint"},
		DataType: n0(id.Double), ValueRank: -1, AccessLevel: rw, WriteMask: uint32(ua.AttributeWriteMaskDisplayName),
		WriteRoles: []codec.NodeId{operator}, Value: codec.DoubleVariant(1),
	}))
	write := func(roles []codec.NodeId, a attr.ID, v codec.Variant) status.Code {
		op := &nodemgr.WriteOp{Principal: nodemgr.Principal{Roles: roles},
			Items: []ua.WriteValue{{NodeId: sp, AttributeId: uint32(a), Value: codec.DataValue{Value: v}}}, Results: make([]status.Code, 1)}
		s.Write(context.Background(), op, func() {})
		return op.Results[0]
	}
	read := func(roles []codec.NodeId, a attr.ID) codec.DataValue {
		op := &nodemgr.ReadOp{Principal: nodemgr.Principal{Roles: roles},
			Items: []ua.ReadValueId{{NodeId: sp, AttributeId: uint32(a)}}, Results: make([]codec.DataValue, 1)}
		s.Read(context.Background(), op, func() {})
		return op.Results[0]
	}
	name := codec.MustVariant(codec.LocalizedText{Text: "x"})

	require.Equal(t, status.BadUserAccessDenied, write(anonymous, attr.Value, codec.DoubleVariant(2)))
	require.Equal(t, status.BadUserAccessDenied, write(nil, attr.DisplayName, name))
	require.Equal(t, codec.DoubleVariant(1), read(anonymous, attr.Value).Value)
	require.Equal(t, codec.ByteVariant(uint8(ua.AccessLevelTypeCurrentRead)), read(anonymous, attr.UserAccessLevel).Value)
	require.Equal(t, codec.UInt32Variant(0), read(anonymous, attr.UserWriteMask).Value)
	require.Equal(t, codec.ByteVariant(rw), read(anonymous, attr.AccessLevel).Value)
	require.Equal(t, codec.UInt32Variant(uint32(ua.AttributeWriteMaskDisplayName)), read(anonymous, attr.WriteMask).Value)

	require.Equal(t, status.BadTypeMismatch, write(allowed, attr.Value, codec.Int32Variant(2)), "type checks still apply")
	require.Equal(t, status.Good, write(allowed, attr.Value, codec.DoubleVariant(2)))
	require.Equal(t, status.Good, write(allowed, attr.DisplayName, name))
	require.Equal(t, codec.DoubleVariant(2), read(anonymous, attr.Value).Value)
	require.Equal(t, codec.ByteVariant(rw), read(allowed, attr.UserAccessLevel).Value)
	require.Equal(t, codec.UInt32Variant(uint32(ua.AttributeWriteMaskDisplayName)), read(allowed, attr.UserWriteMask).Value)
}

// TestSetTypedValue checks that a value of the wrong DataType or ValueRank is refused
// and the right one stored.
func TestSetTypedValue(t *testing.T) {
	t.Parallel()
	s := NewNamespace0()
	level := n0(id.Server_ServiceLevel) // Byte
	require.Error(t, s.SetTypedValue(level, codec.UInt32Variant(255)))
	require.Error(t, s.SetTypedValue(level, codec.MustVariant([]byte{1})))
	require.Error(t, s.SetTypedValue(n0(999999), codec.ByteVariant(1)))
	require.NoError(t, s.SetTypedValue(level, codec.ByteVariant(200)))
	require.Equal(t, codec.ByteVariant(200), readAttr(t, s, level, attr.Value).Value)
	// Duration is a subtype of Double.
	require.NoError(t, s.SetTypedValue(n0(id.Server_ServerCapabilities_MinSupportedSampleRate), codec.DoubleVariant(0)))
}

// TestReadRoles: a namespace 0 variable restricted with SetReadRoles answers a Value read
// by a principal without the role with BadUserAccessDenied and shows it a
// UserAccessLevel without the read bit; a holder of the role reads it. Objects and
// unknown nodes cannot be restricted.
func TestReadRoles(t *testing.T) {
	t.Parallel()
	admin := []codec.NodeId{n0(id.WellKnownRole_AuthenticatedUser), n0(id.WellKnownRole_SecurityAdmin)}
	anonymous := []codec.NodeId{n0(id.WellKnownRole_Anonymous)}
	s := NewNamespace0()
	arr := n0(id.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray)
	require.True(t, s.SetReadRoles(arr, n0(id.WellKnownRole_SecurityAdmin)))
	require.False(t, s.SetReadRoles(n0(id.Server), n0(id.WellKnownRole_SecurityAdmin)), "an Object has no Value")
	require.False(t, s.SetReadRoles(codec.NewStringNodeId(0, "nowhere"), n0(id.WellKnownRole_SecurityAdmin)))
	read := func(roles []codec.NodeId, a attr.ID) codec.DataValue {
		op := &nodemgr.ReadOp{Principal: nodemgr.Principal{Roles: roles},
			Items: []ua.ReadValueId{{NodeId: arr, AttributeId: uint32(a)}}, Results: make([]codec.DataValue, 1)}
		s.Read(context.Background(), op, func() {})
		return op.Results[0]
	}
	require.Equal(t, status.BadUserAccessDenied, read(anonymous, attr.Value).Status)
	require.Equal(t, status.Good, read(admin, attr.Value).Status)
	fullDV := read(admin, attr.UserAccessLevel)
	full, ok := fullDV.Value.Value().(uint8)
	require.True(t, ok)
	require.NotZero(t, full&uint8(ua.AccessLevelTypeCurrentRead))
	restrictedDV := read(anonymous, attr.UserAccessLevel)
	restricted, ok := restrictedDV.Value.Value().(uint8)
	require.True(t, ok)
	require.Zero(t, restricted&uint8(ua.AccessLevelTypeCurrentRead))
	require.Equal(t, read(admin, attr.AccessLevel).Value, read(anonymous, attr.AccessLevel).Value, "AccessLevel is the node's")
}
