package space

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/nodemgr/nodemgrtest"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

const ns = 2

func nid(s string) codec.NodeId       { return codec.NewStringNodeId(ns, s) }
func n0(i uint32) codec.NodeId        { return codec.NewNumericNodeId(0, i) }
func qn(s string) codec.QualifiedName { return codec.QualifiedName{NamespaceIndex: ns, Name: s} }

// clock is a fixed time the test space runs on.
var clock = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a Space as a plugin builds it: Box below ObjectsFolder, with a stored
// writable Double, a computed read-only Double, a computed writable Int32 with Set, an
// array, a Variable nobody may read, and a Method Add with two Doubles in and one out.
type fixture struct {
	*Space
	setCalls atomic.Int32
	lastSet  atomic.Pointer[codec.DataValue]
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{Space: New(func() time.Time { return clock })}
	add := func(err error) {
		t.Helper()
		require.NoError(t, err)
	}
	box := nid("Box")
	add(f.AddObject(Object{NodeId: box, BrowseName: qn("Box"), Description: codec.LocalizedText{Text: "a box"},
		EventNotifier: ua.EventNotifierTypeSubscribeToEvents, Parent: n0(id.ObjectsFolder), ParentReference: n0(id.Organizes)}))
	add(f.AddObject(Object{NodeId: nid("Box.Folder"), BrowseName: qn("Folder"), TypeDefinition: n0(id.FolderType),
		Parent: box, ParentReference: n0(id.Organizes)}))
	add(f.AddVariable(Variable{NodeId: nid("Box.Stored"), BrowseName: qn("Stored"), DataType: n0(id.Double),
		AccessLevel: ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite, Value: codec.DoubleVariant(1.5),
		MinimumSamplingInterval: 100, Parent: box}))
	add(f.AddVariable(Variable{NodeId: nid("Box.Computed"), BrowseName: qn("Computed"), DataType: n0(id.Double),
		Get: func(now codec.DateTime) codec.DataValue {
			return codec.DataValue{Value: codec.DoubleVariant(float64(now.Time().Second()))}
		}, Parent: box}))
	add(f.AddVariable(Variable{NodeId: nid("Box.Owned"), BrowseName: qn("Owned"), DataType: n0(id.Int32),
		AccessLevel: ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite,
		Get: func(codec.DateTime) codec.DataValue {
			if dv := f.lastSet.Load(); dv != nil {
				return *dv
			}
			return codec.DataValue{Value: codec.Int32Variant(0), SourceTimestamp: 7}
		},
		Set: func(v codec.DataValue) status.Code {
			f.setCalls.Add(1)
			if v.Value.Value().(int32) < 0 {
				return status.BadOutOfRange
			}
			f.lastSet.Store(&v)
			return status.Good
		}, Parent: box}))
	add(f.AddVariable(Variable{NodeId: nid("Box.Array"), BrowseName: qn("Array"), DataType: n0(id.Double), ValueRank: 1,
		ArrayDimensions: []uint32{0}, AccessLevel: ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite,
		Value: codec.MustVariant([]float64{1, 2}), Parent: box}))
	add(f.AddVariable(Variable{NodeId: nid("Box.Duration"), BrowseName: qn("Duration"), DataType: n0(id.Duration),
		AccessLevel: ua.AccessLevelTypeCurrentWrite, Value: codec.DoubleVariant(1000), Historizing: true,
		Parent: nid("Box.Folder"), ParentReference: n0(id.HasProperty), TypeDefinition: n0(id.PropertyType)}))
	add(f.AddMethod(Method{NodeId: nid("Box.Add"), BrowseName: qn("Add"), Parent: box,
		InputArguments:  []ua.Argument{{Name: "a", DataType: n0(id.Double), ValueRank: -1}, {Name: "b", DataType: n0(id.Double), ValueRank: -1}},
		OutputArguments: []ua.Argument{{Name: "sum", DataType: n0(id.Double), ValueRank: -1}},
		Run: func(_ codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code) {
			return []codec.Variant{codec.DoubleVariant(in[0].Value().(float64) + in[1].Value().(float64))}, status.Good
		}}))
	add(f.AddMethod(Method{NodeId: nid("Box.Off"), BrowseName: qn("Off"), Parent: box, Disabled: true,
		Run: func(codec.NodeId, []codec.Variant) ([]codec.Variant, status.Code) { return nil, status.Good }}))
	add(f.AddMethod(Method{NodeId: nid("Folder.Fail"), BrowseName: qn("Fail"), Parent: nid("Box.Folder"),
		Run: func(codec.NodeId, []codec.Variant) ([]codec.Variant, status.Code) {
			return []codec.Variant{codec.DoubleVariant(1)}, status.BadDeviceFailure
		}}))
	return f
}

// Namespaces makes the fixture a complete manager for the conformance kit.
func (f *fixture) Namespaces() []string { return []string{"urn:test:space"} }

func (f *fixture) read(ts ua.TimestampsToReturn, now codec.DateTime, items ...ua.ReadValueId) []codec.DataValue {
	op := &nodemgr.ReadOp{Timestamps: ts, Now: now, Items: items, Results: make([]codec.DataValue, len(items))}
	called := 0
	f.Read(context.Background(), op, func() { called++ })
	if called != 1 {
		panic("done not called once")
	}
	return op.Results
}

func rv(n codec.NodeId, a attr.ID) ua.ReadValueId {
	return ua.ReadValueId{NodeId: n, AttributeId: uint32(a)}
}

func TestRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	now := codec.DateTimeOf(clock.Add(42 * time.Second))
	rw := byte(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite)
	tests := []struct {
		name string
		item ua.ReadValueId
		code status.Code
		want codec.Variant
	}{
		{"NodeId", rv(nid("Box"), attr.NodeId), status.Good, codec.NodeIdVariant(nid("Box"))},
		{"NodeClass", rv(nid("Box.Add"), attr.NodeClass), status.Good, codec.Int32Variant(int32(ua.NodeClassMethod))},
		{"BrowseName", rv(nid("Box"), attr.BrowseName), status.Good, codec.QualifiedNameVariant(qn("Box"))},
		{"DisplayName defaults to the name", rv(nid("Box"), attr.DisplayName), status.Good, codec.MustVariant(codec.LocalizedText{Text: "Box"})},
		{"Description", rv(nid("Box"), attr.Description), status.Good, codec.MustVariant(codec.LocalizedText{Text: "a box"})},
		{"WriteMask", rv(nid("Box.Stored"), attr.WriteMask), status.Good, codec.UInt32Variant(0)},
		{"EventNotifier", rv(nid("Box"), attr.EventNotifier), status.Good, codec.ByteVariant(1)},
		{"EventNotifier of a Variable", rv(nid("Box.Stored"), attr.EventNotifier), status.BadAttributeIdInvalid, codec.Variant{}},
		{"stored Value", rv(nid("Box.Stored"), attr.Value), status.Good, codec.DoubleVariant(1.5)},
		{"computed Value at op.Now", rv(nid("Box.Computed"), attr.Value), status.Good, codec.DoubleVariant(42)},
		{"array Value", rv(nid("Box.Array"), attr.Value), status.Good, codec.MustVariant([]float64{1, 2})},
		{"Value of an Object", rv(nid("Box"), attr.Value), status.BadAttributeIdInvalid, codec.Variant{}},
		{"Value without CurrentRead", rv(nid("Box.Duration"), attr.Value), status.BadNotReadable, codec.Variant{}},
		{"DataType", rv(nid("Box.Owned"), attr.DataType), status.Good, codec.NodeIdVariant(n0(id.Int32))},
		{"ValueRank scalar", rv(nid("Box.Stored"), attr.ValueRank), status.Good, codec.Int32Variant(-1)},
		{"ValueRank array", rv(nid("Box.Array"), attr.ValueRank), status.Good, codec.Int32Variant(1)},
		{"ArrayDimensions empty", rv(nid("Box.Stored"), attr.ArrayDimensions), status.Good, codec.MustVariant([]uint32{})},
		{"ArrayDimensions", rv(nid("Box.Array"), attr.ArrayDimensions), status.Good, codec.MustVariant([]uint32{0})},
		{"AccessLevel default", rv(nid("Box.Computed"), attr.AccessLevel), status.Good, codec.ByteVariant(1)},
		{"UserAccessLevel", rv(nid("Box.Stored"), attr.UserAccessLevel), status.Good, codec.ByteVariant(rw)},
		{"AccessLevelEx", rv(nid("Box.Stored"), attr.AccessLevelEx), status.Good, codec.UInt32Variant(uint32(rw))},
		{"MinimumSamplingInterval", rv(nid("Box.Stored"), attr.MinimumSamplingInterval), status.Good, codec.DoubleVariant(100)},
		{"Historizing", rv(nid("Box.Duration"), attr.Historizing), status.Good, codec.BooleanVariant(true)},
		{"Executable", rv(nid("Box.Add"), attr.Executable), status.Good, codec.BooleanVariant(true)},
		{"UserExecutable disabled", rv(nid("Box.Off"), attr.UserExecutable), status.Good, codec.BooleanVariant(false)},
		{"Executable of an Object", rv(nid("Box"), attr.Executable), status.BadAttributeIdInvalid, codec.Variant{}},
		{"InputArguments", rv(nid("Box.Add.InputArguments"), attr.Value), status.Good, codec.MustVariant([]codec.ExtensionObject{
			codec.NewExtensionObject(&ua.Argument{Name: "a", DataType: n0(id.Double), ValueRank: -1}),
			codec.NewExtensionObject(&ua.Argument{Name: "b", DataType: n0(id.Double), ValueRank: -1})})},
		{"InputArguments BrowseName", rv(nid("Box.Add.InputArguments"), attr.BrowseName), status.Good,
			codec.QualifiedNameVariant(codec.QualifiedName{Name: "InputArguments"})},
		{"RolePermissions not kept", rv(nid("Box"), attr.RolePermissions), status.BadAttributeIdInvalid, codec.Variant{}},
		{"no such attribute", rv(nid("Box"), 999), status.BadAttributeIdInvalid, codec.Variant{}},
		{"no such node", rv(nid("Nope"), attr.Value), status.BadNodeIdUnknown, codec.Variant{}},
		{"no such node, any attribute", rv(nid("Nope"), 999), status.BadNodeIdUnknown, codec.Variant{}},
		{"IndexRange", ua.ReadValueId{NodeId: nid("Box.Array"), AttributeId: uint32(attr.Value), IndexRange: "0"}, status.BadIndexRangeInvalid, codec.Variant{}},
		{"Default Binary of a Double", ua.ReadValueId{NodeId: nid("Box.Stored"), AttributeId: uint32(attr.Value),
			DataEncoding: codec.QualifiedName{Name: "Default Binary"}}, status.BadDataEncodingInvalid, codec.Variant{}},
		{"Default Binary of structures", ua.ReadValueId{NodeId: nid("Box.Add.InputArguments"), AttributeId: uint32(attr.Value),
			DataEncoding: codec.QualifiedName{Name: "Default Binary"}}, status.Good, codec.Variant{}},
		{"Default XML of structures", ua.ReadValueId{NodeId: nid("Box.Add.InputArguments"), AttributeId: uint32(attr.Value),
			DataEncoding: codec.QualifiedName{Name: "Default XML"}}, status.BadDataEncodingUnsupported, codec.Variant{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.read(ua.TimestampsToReturnNeither, now, tt.item)[0]
			require.Equal(t, tt.code, got.Status)
			if tt.code == status.Good && !tt.want.IsNull() {
				require.Equal(t, tt.want, got.Value)
			}
			if tt.code != status.Good {
				require.Equal(t, codec.DataValue{Status: tt.code}, got, "a failed read carries nothing but its StatusCode")
			}
		})
	}
}

func TestReadTimestamps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	now := codec.DateTimeOf(clock.Add(time.Minute))
	added := codec.DateTimeOf(clock)
	tests := []struct {
		name           string
		ts             ua.TimestampsToReturn
		now            codec.DateTime
		item           ua.ReadValueId
		source, server codec.DateTime
	}{
		{"Both stored", ua.TimestampsToReturnBoth, now, rv(nid("Box.Stored"), attr.Value), added, now},
		{"Source stored", ua.TimestampsToReturnSource, now, rv(nid("Box.Stored"), attr.Value), added, 0},
		{"Server stored", ua.TimestampsToReturnServer, now, rv(nid("Box.Stored"), attr.Value), 0, now},
		{"Neither", ua.TimestampsToReturnNeither, now, rv(nid("Box.Stored"), attr.Value), 0, 0},
		{"computed source is the read's time", ua.TimestampsToReturnBoth, now, rv(nid("Box.Computed"), attr.Value), now, now},
		{"computed keeps its own source", ua.TimestampsToReturnBoth, now, rv(nid("Box.Owned"), attr.Value), 7, now},
		{"no op.Now: the Space's clock", ua.TimestampsToReturnBoth, 0, rv(nid("Box.Computed"), attr.Value), added, added},
		{"attributes have no source", ua.TimestampsToReturnBoth, now, rv(nid("Box"), attr.BrowseName), 0, now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.read(tt.ts, tt.now, tt.item)[0]
			require.Equal(t, status.Good, got.Status)
			require.Equal(t, tt.source, got.SourceTimestamp, "SourceTimestamp")
			require.Equal(t, tt.server, got.ServerTimestamp, "ServerTimestamp")
		})
	}

	for _, bad := range []struct {
		op   nodemgr.ReadOp
		code status.Code
	}{
		{nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnNeither + 1}, status.BadTimestampsToReturnInvalid},
		{nodemgr.ReadOp{Timestamps: -1}, status.BadTimestampsToReturnInvalid},
		{nodemgr.ReadOp{MaxAge: -1}, status.BadMaxAgeInvalid},
	} {
		op := bad.op
		op.Items = []ua.ReadValueId{rv(nid("Box.Stored"), attr.Value), rv(nid("Nope"), attr.Value)}
		op.Results = make([]codec.DataValue, 2)
		f.Read(context.Background(), &op, func() {})
		require.Equal(t, []codec.DataValue{{Status: bad.code}, {Status: bad.code}}, op.Results)
	}
}

func TestBrowse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	box := nid("Box")
	type ref struct {
		typ    uint32
		target codec.NodeId
		fwd    bool
	}
	tests := []struct {
		name     string
		node     codec.NodeId
		dir      ua.BrowseDirection
		typ      uint32
		subtypes bool
		code     status.Code
		want     []ref
	}{
		{"Box forward", box, ua.BrowseDirectionForward, 0, false, status.Good, []ref{
			{id.HasTypeDefinition, n0(id.BaseObjectType), true}, {id.Organizes, nid("Box.Folder"), true},
			{id.HasComponent, nid("Box.Stored"), true}, {id.HasComponent, nid("Box.Computed"), true},
			{id.HasComponent, nid("Box.Owned"), true}, {id.HasComponent, nid("Box.Array"), true},
			{id.HasComponent, nid("Box.Add"), true}, {id.HasComponent, nid("Box.Off"), true}}},
		{"Box inverse: the mount", box, ua.BrowseDirectionInverse, 0, false, status.Good, []ref{{id.Organizes, n0(id.ObjectsFolder), false}}},
		{"hierarchical with subtypes", nid("Box.Folder"), ua.BrowseDirectionBoth, id.HierarchicalReferences, true, status.Good, []ref{
			{id.Organizes, box, false}, {id.HasProperty, nid("Box.Duration"), true}, {id.HasComponent, nid("Folder.Fail"), true}}},
		{"hierarchical without subtypes", nid("Box.Folder"), ua.BrowseDirectionBoth, id.HierarchicalReferences, false, status.Good, nil},
		{"HasChild takes HasProperty and HasComponent", nid("Box.Folder"), ua.BrowseDirectionForward, id.HasChild, true, status.Good, []ref{
			{id.HasProperty, nid("Box.Duration"), true}, {id.HasComponent, nid("Folder.Fail"), true}}},
		{"Aggregates", nid("Box.Add"), ua.BrowseDirectionBoth, id.Aggregates, true, status.Good, []ref{
			{id.HasComponent, box, false}, {id.HasProperty, nid("Box.Add.InputArguments"), true}, {id.HasProperty, nid("Box.Add.OutputArguments"), true}}},
		{"HasProperty exactly", nid("Box.Folder"), ua.BrowseDirectionForward, id.HasProperty, false, status.Good, []ref{{id.HasProperty, nid("Box.Duration"), true}}},
		{"Organizes", nid("Box.Folder"), ua.BrowseDirectionBoth, id.Organizes, true, status.Good, []ref{{id.Organizes, box, false}}},
		{"non-hierarchical: the type", nid("Box.Duration"), ua.BrowseDirectionBoth, id.NonHierarchicalReferences, true, status.Good, []ref{
			{id.HasTypeDefinition, n0(id.PropertyType), true}}},
		{"References takes everything", nid("Box.Duration"), ua.BrowseDirectionBoth, id.References, true, status.Good, []ref{
			{id.HasTypeDefinition, n0(id.PropertyType), true}, {id.HasProperty, nid("Box.Folder"), false}}},
		{"a method has no type definition", nid("Box.Off"), ua.BrowseDirectionBoth, 0, false, status.Good, []ref{{id.HasComponent, box, false}}},
		{"not a ReferenceType", box, ua.BrowseDirectionBoth, id.ObjectsFolder, true, status.BadReferenceTypeIdInvalid, nil},
		{"bad direction", box, ua.BrowseDirectionBoth + 1, 0, false, status.BadBrowseDirectionInvalid, nil},
		{"unknown node", nid("Nope"), ua.BrowseDirectionBoth, 0, false, status.BadNodeIdUnknown, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ua.BrowseDescription{NodeId: tt.node, BrowseDirection: tt.dir, IncludeSubtypes: tt.subtypes,
				ResultMask: uint32(ua.BrowseResultMaskReferenceTypeInfo)}
			if tt.typ != 0 {
				d.ReferenceTypeId = n0(tt.typ)
			}
			op := &nodemgr.BrowseOp{Items: []ua.BrowseDescription{d}, Results: make([]nodemgr.BrowseResult, 1)}
			f.Browse(context.Background(), op, func() {})
			require.Equal(t, tt.code, op.Results[0].Status)
			var got []ref
			for _, rd := range op.Results[0].References {
				got = append(got, ref{rd.ReferenceTypeId.IntID(), rd.NodeId.NodeId, rd.IsForward})
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestBrowseResultMaskAndNodeClassMask(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	browse := func(mask ua.BrowseResultMask, classes ua.NodeClass, view codec.NodeId) nodemgr.BrowseResult {
		op := &nodemgr.BrowseOp{View: ua.ViewDescription{ViewId: view},
			Items: []ua.BrowseDescription{{NodeId: nid("Box.Folder"), BrowseDirection: ua.BrowseDirectionBoth,
				NodeClassMask: uint32(classes), ResultMask: uint32(mask)}}, Results: make([]nodemgr.BrowseResult, 1)}
		f.Browse(context.Background(), op, func() {})
		return op.Results[0]
	}
	all := browse(ua.BrowseResultMaskAll, 0, codec.NodeId{})
	require.Equal(t, status.Good, all.Status)
	require.Equal(t, []ua.ReferenceDescription{
		{ReferenceTypeId: n0(id.HasTypeDefinition), IsForward: true, NodeId: codec.ExpandedNodeId{NodeId: n0(id.FolderType)}},
		{ReferenceTypeId: n0(id.Organizes), NodeId: codec.ExpandedNodeId{NodeId: nid("Box")}, NodeClass: ua.NodeClassObject,
			BrowseName: qn("Box"), DisplayName: codec.LocalizedText{Text: "Box"}, TypeDefinition: codec.ExpandedNodeId{NodeId: n0(id.BaseObjectType)}},
		{ReferenceTypeId: n0(id.HasProperty), IsForward: true, NodeId: codec.ExpandedNodeId{NodeId: nid("Box.Duration")}, NodeClass: ua.NodeClassVariable,
			BrowseName: qn("Duration"), DisplayName: codec.LocalizedText{Text: "Duration"}, TypeDefinition: codec.ExpandedNodeId{NodeId: n0(id.PropertyType)}},
		{ReferenceTypeId: n0(id.HasComponent), IsForward: true, NodeId: codec.ExpandedNodeId{NodeId: nid("Folder.Fail")}, NodeClass: ua.NodeClassMethod,
			BrowseName: qn("Fail"), DisplayName: codec.LocalizedText{Text: "Fail"}},
	}, all.References)

	none := browse(ua.BrowseResultMaskNone, 0, codec.NodeId{})
	require.Len(t, none.References, 4)
	for _, rd := range none.References {
		require.Equal(t, ua.ReferenceDescription{NodeId: rd.NodeId}, rd, "ResultMask None gives only the target")
	}

	// Targets in the Space are filtered by class; FolderType, outside it, is kept for the server.
	vars := browse(ua.BrowseResultMaskNone, ua.NodeClassVariable, codec.NodeId{})
	require.Equal(t, []ua.ReferenceDescription{{NodeId: codec.ExpandedNodeId{NodeId: n0(id.FolderType)}},
		{NodeId: codec.ExpandedNodeId{NodeId: nid("Box.Duration")}}}, vars.References)

	require.Equal(t, status.BadViewIdUnknown, browse(ua.BrowseResultMaskAll, 0, nid("View")).Status)
}

func TestWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	wv := func(n codec.NodeId, v codec.Variant) ua.WriteValue {
		return ua.WriteValue{NodeId: n, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: v}}
	}
	withRange := wv(nid("Box.Array"), codec.MustVariant([]float64{9}))
	withRange.IndexRange = "0"
	withStatus := wv(nid("Box.Stored"), codec.DoubleVariant(3))
	withStatus.Value.Status = status.UncertainLastUsableValue
	withTime := wv(nid("Box.Stored"), codec.DoubleVariant(3))
	withTime.Value.SourceTimestamp = 1
	tests := []struct {
		name string
		w    ua.WriteValue
		code status.Code
		read codec.Variant // the Value read afterwards, when not null
	}{
		{"stored Double", wv(nid("Box.Stored"), codec.DoubleVariant(2.5)), status.Good, codec.DoubleVariant(2.5)},
		{"Float into Double", wv(nid("Box.Stored"), codec.FloatVariant(2.5)), status.BadTypeMismatch, codec.DoubleVariant(2.5)},
		{"array into scalar", wv(nid("Box.Stored"), codec.MustVariant([]float64{1})), status.BadTypeMismatch, nil0},
		{"null", wv(nid("Box.Stored"), codec.Variant{}), status.BadTypeMismatch, nil0},
		{"array", wv(nid("Box.Array"), codec.MustVariant([]float64{3, 4, 5})), status.Good, codec.MustVariant([]float64{3, 4, 5})},
		{"scalar into array", wv(nid("Box.Array"), codec.DoubleVariant(1)), status.BadTypeMismatch, nil0},
		{"IndexRange", withRange, status.BadWriteNotSupported, codec.MustVariant([]float64{3, 4, 5})},
		{"StatusCode", withStatus, status.BadWriteNotSupported, nil0},
		{"SourceTimestamp", withTime, status.BadWriteNotSupported, nil0},
		{"Double into a Duration", wv(nid("Box.Duration"), codec.DoubleVariant(5)), status.Good, nil0},
		{"through Set", wv(nid("Box.Owned"), codec.Int32Variant(7)), status.Good, codec.Int32Variant(7)},
		{"Set refuses", wv(nid("Box.Owned"), codec.Int32Variant(-1)), status.BadOutOfRange, codec.Int32Variant(7)},
		{"Set not called on a mismatch", wv(nid("Box.Owned"), codec.UInt32Variant(1)), status.BadTypeMismatch, codec.Int32Variant(7)},
		{"read-only", wv(nid("Box.Computed"), codec.DoubleVariant(1)), status.BadNotWritable, nil0},
		{"an Object's Value", wv(nid("Box"), codec.DoubleVariant(1)), status.BadAttributeIdInvalid, nil0},
		{"DisplayName", ua.WriteValue{NodeId: nid("Box"), AttributeId: uint32(attr.DisplayName),
			Value: codec.DataValue{Value: codec.MustVariant(codec.LocalizedText{Text: "x"})}}, status.BadNotWritable, nil0},
		{"no such attribute", ua.WriteValue{NodeId: nid("Box"), AttributeId: uint32(attr.DataType)}, status.BadAttributeIdInvalid, nil0},
		{"no such node", wv(nid("Nope"), codec.DoubleVariant(1)), status.BadNodeIdUnknown, nil0},
	}
	for _, tt := range tests { // in order: later cases read what earlier ones wrote
		calls := f.setCalls.Load()
		op := &nodemgr.WriteOp{Items: []ua.WriteValue{tt.w}, Results: make([]status.Code, 1)}
		f.Write(context.Background(), op, func() {})
		require.Equal(t, tt.code, op.Results[0], tt.name)
		if tt.code == status.BadTypeMismatch || tt.code == status.BadNotWritable {
			require.Equal(t, calls, f.setCalls.Load(), "%s: Set is called only with checked values", tt.name)
		}
		if !tt.read.IsNull() {
			got := f.read(ua.TimestampsToReturnBoth, 0, rv(tt.w.NodeId, attr.Value))[0]
			require.Equal(t, tt.read, got.Value, tt.name)
			if tt.w.NodeId == nid("Box.Stored") && tt.code == status.Good {
				require.Equal(t, codec.DateTimeOf(clock), got.SourceTimestamp, "%s: a written value is stamped by the clock", tt.name)
			}
		}
	}
}

// nil0 is "do not read back".
var nil0 codec.Variant

func TestCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := codec.DoubleVariant
	tests := []struct {
		name string
		req  ua.CallMethodRequest
		want ua.CallMethodResult
	}{
		{"Add", ua.CallMethodRequest{ObjectId: nid("Box"), MethodId: nid("Box.Add"), InputArguments: []codec.Variant{d(1), d(2)}},
			ua.CallMethodResult{InputArgumentResults: []status.Code{0, 0}, OutputArguments: []codec.Variant{d(3)}}},
		{"wrong type", ua.CallMethodRequest{ObjectId: nid("Box"), MethodId: nid("Box.Add"), InputArguments: []codec.Variant{d(1), codec.Int32Variant(2)}},
			ua.CallMethodResult{StatusCode: status.BadInvalidArgument, InputArgumentResults: []status.Code{0, status.BadTypeMismatch}}},
		{"missing", ua.CallMethodRequest{ObjectId: nid("Box"), MethodId: nid("Box.Add"), InputArguments: []codec.Variant{d(1)}},
			ua.CallMethodResult{StatusCode: status.BadArgumentsMissing}},
		{"too many", ua.CallMethodRequest{ObjectId: nid("Box"), MethodId: nid("Box.Add"), InputArguments: []codec.Variant{d(1), d(2), d(3)}},
			ua.CallMethodResult{StatusCode: status.BadTooManyArguments}},
		{"disabled", ua.CallMethodRequest{ObjectId: nid("Box"), MethodId: nid("Box.Off")}, ua.CallMethodResult{StatusCode: status.BadNotExecutable}},
		{"Run fails: no outputs", ua.CallMethodRequest{ObjectId: nid("Box.Folder"), MethodId: nid("Folder.Fail")},
			ua.CallMethodResult{StatusCode: status.BadDeviceFailure}},
		{"method of another object", ua.CallMethodRequest{ObjectId: nid("Box.Folder"), MethodId: nid("Box.Add"), InputArguments: []codec.Variant{d(1), d(2)}},
			ua.CallMethodResult{StatusCode: status.BadMethodInvalid}},
		{"not a method", ua.CallMethodRequest{ObjectId: nid("Box"), MethodId: nid("Box.Stored")}, ua.CallMethodResult{StatusCode: status.BadMethodInvalid}},
		{"unknown method", ua.CallMethodRequest{ObjectId: nid("Box"), MethodId: nid("Nope")}, ua.CallMethodResult{StatusCode: status.BadMethodInvalid}},
		{"not an object", ua.CallMethodRequest{ObjectId: nid("Box.Stored"), MethodId: nid("Box.Add")}, ua.CallMethodResult{StatusCode: status.BadNodeIdInvalid}},
		{"unknown object", ua.CallMethodRequest{ObjectId: nid("Nope"), MethodId: nid("Box.Add")}, ua.CallMethodResult{StatusCode: status.BadNodeIdUnknown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := &nodemgr.CallOp{Items: []ua.CallMethodRequest{tt.req}, Results: make([]ua.CallMethodResult, 1)}
			f.Call(context.Background(), op, func() {})
			require.Equal(t, tt.want, op.Results[0])
		})
	}
}

func TestAddRejects(t *testing.T) {
	t.Parallel()
	run := func(codec.NodeId, []codec.Variant) ([]codec.Variant, status.Code) { return nil, status.Good }
	get := func(codec.DateTime) codec.DataValue { return codec.DataValue{} }
	dbl := n0(id.Double)
	tests := []struct {
		name string
		add  func(s *Space) error
	}{
		{"null NodeId", func(s *Space) error { return s.AddObject(Object{BrowseName: qn("X")}) }},
		{"no BrowseName", func(s *Space) error { return s.AddObject(Object{NodeId: nid("X")}) }},
		{"duplicate", func(s *Space) error { return s.AddObject(Object{NodeId: nid("Box"), BrowseName: qn("Box")}) }},
		{"parent missing in own namespace", func(s *Space) error {
			return s.AddObject(Object{NodeId: nid("X"), BrowseName: qn("X"), Parent: nid("Nope")})
		}},
		{"no DataType", func(s *Space) error { return s.AddVariable(Variable{NodeId: nid("X"), BrowseName: qn("X")}) }},
		{"value of the wrong type", func(s *Space) error {
			return s.AddVariable(Variable{NodeId: nid("X"), BrowseName: qn("X"), DataType: dbl, Value: codec.StringVariant("x")})
		}},
		{"writable Get without Set", func(s *Space) error {
			return s.AddVariable(Variable{NodeId: nid("X"), BrowseName: qn("X"), DataType: dbl, Get: get,
				AccessLevel: ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite})
		}},
		{"Set without Get", func(s *Space) error {
			return s.AddVariable(Variable{NodeId: nid("X"), BrowseName: qn("X"), DataType: dbl,
				Set: func(codec.DataValue) status.Code { return status.Good }})
		}},
		{"method without parent", func(s *Space) error { return s.AddMethod(Method{NodeId: nid("X"), BrowseName: qn("X"), Run: run}) }},
		{"method without Run", func(s *Space) error {
			return s.AddMethod(Method{NodeId: nid("X"), BrowseName: qn("X"), Parent: nid("Box")})
		}},
		{"arguments without a string NodeId", func(s *Space) error {
			return s.AddMethod(Method{NodeId: codec.NewNumericNodeId(ns, 1), BrowseName: qn("X"), Parent: nid("Box"), Run: run,
				InputArguments: []ua.Argument{{Name: "a", DataType: dbl, ValueRank: -1}}})
		}},
		{"reference between strangers", func(s *Space) error { return s.AddReference(n0(1), n0(id.Organizes), n0(2)) }},
		{"reference to a missing node of the namespace", func(s *Space) error {
			return s.AddReference(nid("Box"), n0(id.Organizes), nid("Nope"))
		}},
		{"reference without type", func(s *Space) error { return s.AddReference(nid("Box"), codec.NodeId{}, n0(id.ObjectsFolder)) }},
		{"SetValue of a computed Variable", func(s *Space) error { return s.SetValue(nid("Box.Computed"), codec.DataValue{}) }},
		{"SetValue of an Object", func(s *Space) error { return s.SetValue(nid("Box"), codec.DataValue{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			require.ErrorIs(t, tt.add(f.Space), ErrInvalidNode)
		})
	}
}

func TestSetValueAndReferences(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.NoError(t, f.SetValue(nid("Box.Stored"), codec.DataValue{Value: codec.DoubleVariant(math.Pi), Status: status.UncertainLastUsableValue}))
	got := f.read(ua.TimestampsToReturnSource, 0, rv(nid("Box.Stored"), attr.Value))[0]
	require.Equal(t, codec.DataValue{Value: codec.DoubleVariant(math.Pi), Status: status.UncertainLastUsableValue,
		SourceTimestamp: codec.DateTimeOf(clock)}, got)

	require.NoError(t, f.AddReference(nid("Box.Stored"), n0(id.HasProperty), nid("Box.Array")))
	refs, ok := f.References(nid("Box.Array"))
	require.True(t, ok)
	require.Contains(t, refs, Reference{ReferenceTypeId: n0(id.HasProperty), TargetId: nid("Box.Stored")})
	_, ok = f.References(nid("Nope"))
	require.False(t, ok)
}

// TestConformance: a Space with Namespaces added is a complete manager and passes the
// node-manager conformance kit.
func TestConformance(t *testing.T) {
	nodemgrtest.Run(t, nodemgrtest.Fixture{
		New:              func(t testing.TB) nodemgr.Manager { return newFixture(t) },
		NamespaceIndexes: []uint16{ns},
		Capabilities:     nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapCall,
		Readable:         nid("Box.Computed"),
		Writable:         nid("Box.Stored"),
		WriteValue:       codec.DoubleVariant(21.5),
		NotWritable:      nid("Box.Computed"),
		Browsable:        nid("Box"),
		Unknown:          nid("Box.NoSuchNode"),
		Call: &ua.CallMethodRequest{ObjectId: nid("Box"), MethodId: nid("Box.Add"),
			InputArguments: []codec.Variant{codec.DoubleVariant(1), codec.DoubleVariant(2)}},
	})
}
