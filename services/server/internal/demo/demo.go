// Package demo is the demo namespace (addressSpace.demoNamespace): a scalar and an array
// variable of every built-in type, methods, a simulated value and its load variables, a
// setpoint only the Operator role may write, and an event source. Its nodes live in the
// server's address space, beside namespace 0, at NamespaceArray index 1.
package demo

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/config"
)

// URI is the URI of the demo namespace (addressSpace.demoNamespace). It is index 1 of
// the NamespaceArray when the demo namespace is on.
const URI = "urn:uastack:demo"

// Timing: Simulation/Sine is updated every demoTick and completes a period every
// demoSinePeriod.
const (
	demoTick       = 200 * time.Millisecond
	demoSinePeriod = 10 * time.Second
)

// Index is the namespace index of the demo nodes: they are mounted in the Space that
// serves namespace 0, which the server creates with the demo URI second.
const Index = 1

// ID returns the NodeId of a demo node: a string identifier in namespace 1, such as
// "Demo.Scalar_Int32".
func ID(name string) codec.NodeId { return codec.NewStringNodeId(Index, name) }

// SineID is the NodeId of Demo/Simulation/Sine.
var SineID = ID("Demo.Simulation.Sine")

// SetpointID is the NodeId of Demo/Protected/Setpoint, which only the Operator role may
// write.
var SetpointID = ID("Demo.Protected.Setpoint")

// Values are the initial values of the Scalar_ and Array_ variables, one per
// built-in type that makes sense as a Variable value (Part 6 §5.1.2, ids 1 to 21).
var Values = []struct {
	Type   codec.TypeID
	Scalar codec.Variant
	Array  codec.Variant
}{
	{codec.TypeBoolean, codec.BooleanVariant(true), codec.MustVariant([]bool{true, false})},
	{codec.TypeSByte, codec.SByteVariant(-1), codec.MustVariant([]int8{-1, 1})},
	{codec.TypeByte, codec.ByteVariant(1), codec.ByteArray([]byte{1, 2})},
	{codec.TypeInt16, codec.Int16Variant(-2), codec.MustVariant([]int16{-2, 2})},
	{codec.TypeUInt16, codec.UInt16Variant(2), codec.MustVariant([]uint16{2, 3})},
	{codec.TypeInt32, codec.Int32Variant(-3), codec.MustVariant([]int32{-3, 3})},
	{codec.TypeUInt32, codec.UInt32Variant(3), codec.MustVariant([]uint32{3, 4})},
	{codec.TypeInt64, codec.Int64Variant(-4), codec.MustVariant([]int64{-4, 4})},
	{codec.TypeUInt64, codec.UInt64Variant(4), codec.MustVariant([]uint64{4, 5})},
	{codec.TypeFloat, codec.FloatVariant(1.5), codec.MustVariant([]float32{1.5, 2.5})},
	{codec.TypeDouble, codec.DoubleVariant(2.5), codec.MustVariant([]float64{2.5, 3.5})},
	{codec.TypeString, codec.StringVariant("uastack"), codec.MustVariant([]string{"ua", "stack"})},
	{codec.TypeDateTime, codec.DateTimeVariant(codec.DateTimeOf(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))),
		codec.MustVariant([]codec.DateTime{codec.DateTimeOf(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))})},
	{codec.TypeGuid, codec.GuidVariant(codec.Guid{Data1: 1}), codec.MustVariant([]codec.Guid{{Data1: 1}, {Data1: 2}})},
	{codec.TypeByteString, codec.ByteStringVariant([]byte("ua")), codec.MustVariant([][]byte{[]byte("ua"), []byte("stack")})},
	{codec.TypeXmlElement, codec.XmlElementVariant("<a/>"), codec.XmlElementArray([]string{"<a/>", "<b/>"})},
	{codec.TypeNodeId, codec.NodeIdVariant(codec.NewNumericNodeId(0, id.ObjectsFolder)),
		codec.MustVariant([]codec.NodeId{codec.NewNumericNodeId(0, id.ObjectsFolder), ID("Demo")})},
	{codec.TypeExpandedNodeId, codec.MustVariant(codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, id.ObjectsFolder)}),
		codec.MustVariant([]codec.ExpandedNodeId{{NodeId: codec.NewNumericNodeId(0, id.ObjectsFolder)}})},
	{codec.TypeStatusCode, codec.StatusCodeVariant(status.Good), codec.MustVariant([]status.Code{status.Good, status.BadTypeMismatch})},
	{codec.TypeQualifiedName, codec.QualifiedNameVariant(codec.QualifiedName{NamespaceIndex: Index, Name: "Demo"}),
		codec.MustVariant([]codec.QualifiedName{{NamespaceIndex: Index, Name: "Demo"}})},
	{codec.TypeLocalizedText, codec.MustVariant(codec.LocalizedText{Locale: "en", Text: "demo"}),
		codec.MustVariant([]codec.LocalizedText{{Locale: "en", Text: "demo"}})},
}

// addNamespace mounts the demo nodes in sp under Objects (Organizes): the folder
// Demo with a writable Scalar_<Type> and Array_<Type> Variable per built-in type, the
// Methods Add and Echo, the folder Simulation with the Double Sine, which
// Run updates, and the folder Protected with the Double Setpoint that only
// the Operator role may write.
func addNamespace(sp *addrspace.Space) error {
	n0 := func(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }
	qn := func(name string) codec.QualifiedName {
		return codec.QualifiedName{NamespaceIndex: Index, Name: name}
	}
	lt := func(name string) codec.LocalizedText { return codec.LocalizedText{Text: name} }
	folder := func(nodeID, name string, parent codec.NodeId) error {
		return sp.AddNode(addrspace.Node{
			NodeId: ID(nodeID), NodeClass: ua.NodeClassObject, BrowseName: qn(name), DisplayName: lt(name),
			References: []addrspace.Reference{
				{ReferenceTypeId: n0(id.Organizes), TargetId: parent, IsForward: false},
				{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.FolderType), IsForward: true},
			},
		})
	}
	variable := func(nodeID, name string, parent codec.NodeId, dt codec.NodeId, rank int32, access ua.AccessLevelType, val codec.Variant) error {
		var dims []uint32
		if rank == 1 {
			dims = []uint32{0}
		}
		return sp.AddNode(addrspace.Node{
			NodeId: ID(nodeID), NodeClass: ua.NodeClassVariable, BrowseName: qn(name), DisplayName: lt(name),
			DataType: dt, ValueRank: rank, ArrayDimensions: dims, AccessLevel: uint8(access), Value: val,
			References: []addrspace.Reference{
				{ReferenceTypeId: n0(id.Organizes), TargetId: parent, IsForward: false},
				{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.BaseDataVariableType), IsForward: true},
			},
		})
	}
	demo := ID("Demo")
	if err := folder("Demo", "Demo", n0(id.ObjectsFolder)); err != nil {
		return err
	}
	rw := ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite
	for _, v := range Values {
		dt := n0(uint32(v.Type))
		if err := variable("Demo.Scalar_"+v.Type.String(), "Scalar_"+v.Type.String(), demo, dt, -1, rw, v.Scalar); err != nil {
			return err
		}
		if err := variable("Demo.Array_"+v.Type.String(), "Array_"+v.Type.String(), demo, dt, 1, rw, v.Array); err != nil {
			return err
		}
	}
	if err := folder("Demo.Simulation", "Simulation", demo); err != nil {
		return err
	}
	// Sine and Setpoint keep their history (Historizing, Part 11): anyone reads it, only
	// the Operator role updates Setpoint's.
	if err := sp.AddNode(addrspace.Node{
		NodeId: SineID, NodeClass: ua.NodeClassVariable, BrowseName: qn("Sine"), DisplayName: lt("Sine"),
		DataType: n0(id.Double), ValueRank: -1, Value: codec.DoubleVariant(0), Historizing: true,
		AccessLevel: uint8(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeHistoryRead),
		References: []addrspace.Reference{
			{ReferenceTypeId: n0(id.Organizes), TargetId: ID("Demo.Simulation"), IsForward: false},
			{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.BaseDataVariableType), IsForward: true},
		},
	}); err != nil {
		return err
	}
	// Demo/Protected/Setpoint shows per-user write access: anyone reads it, only a user
	// with the Operator role writes it (security.users[].roles).
	if err := folder("Demo.Protected", "Protected", demo); err != nil {
		return err
	}
	if err := sp.AddNode(addrspace.Node{
		NodeId: SetpointID, NodeClass: ua.NodeClassVariable, BrowseName: qn("Setpoint"), DisplayName: lt("Setpoint"),
		DataType: n0(id.Double), ValueRank: -1, Value: codec.DoubleVariant(0), Historizing: true,
		AccessLevel: uint8(rw | ua.AccessLevelTypeHistoryRead | ua.AccessLevelTypeHistoryWrite),
		WriteRoles:  []codec.NodeId{n0(id.WellKnownRole_Operator)},
		References: []addrspace.Reference{
			{ReferenceTypeId: n0(id.Organizes), TargetId: ID("Demo.Protected"), IsForward: false},
			{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.BaseDataVariableType), IsForward: true},
		},
	}); err != nil {
		return err
	}
	method := func(name string) addrspace.Node {
		return addrspace.Node{NodeId: ID("Demo." + name), BrowseName: qn(name), DisplayName: lt(name)}
	}
	double := func(name string) ua.Argument {
		return ua.Argument{Name: name, DataType: n0(id.Double), ValueRank: -1, Description: lt(name)}
	}
	if err := sp.AddMethod(demo, method("Add"), []ua.Argument{double("a"), double("b")}, []ua.Argument{double("sum")}, add); err != nil {
		return err
	}
	anyArg := func(name string) ua.Argument {
		return ua.Argument{Name: name, DataType: n0(id.BaseDataType), ValueRank: -2, Description: lt(name)}
	}
	return sp.AddMethod(demo, method("Echo"), []ua.Argument{anyArg("value")}, []ua.Argument{anyArg("value")}, echo)
}

// add is Demo/Add: a + b for two Doubles.
func add(_ context.Context, _ codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code) {
	a, b := math.Float64frombits(in[0].Bits()), math.Float64frombits(in[1].Bits())
	return []codec.Variant{codec.DoubleVariant(a + b)}, status.Good
}

// echo is Demo/Echo: it returns its one argument of any type.
func echo(_ context.Context, _ codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code) {
	return []codec.Variant{in[0]}, status.Good
}

// LoadID returns the NodeId of Demo/Simulation/Load/<i> (addressSpace.simulation).
func LoadID(i int) codec.NodeId {
	return ID("Demo.Simulation.Load." + strconv.Itoa(i))
}

// addLoad adds the folder Demo/Simulation/Load with count Double variables, which keep
// their history when historizing.
func addLoad(sp *addrspace.Space, count int, historizing bool) error {
	access := ua.AccessLevelTypeCurrentRead
	if historizing {
		access |= ua.AccessLevelTypeHistoryRead
	}
	n0 := func(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }
	folder := ID("Demo.Simulation.Load")
	if err := sp.AddNode(addrspace.Node{
		NodeId: folder, NodeClass: ua.NodeClassObject,
		BrowseName: codec.QualifiedName{NamespaceIndex: Index, Name: "Load"}, DisplayName: codec.LocalizedText{Text: "Load"},
		References: []addrspace.Reference{
			{ReferenceTypeId: n0(id.Organizes), TargetId: ID("Demo.Simulation"), IsForward: false},
			{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.FolderType), IsForward: true},
		},
	}); err != nil {
		return err
	}
	for i := range count {
		name := strconv.Itoa(i)
		if err := sp.AddNode(addrspace.Node{
			NodeId: LoadID(i), NodeClass: ua.NodeClassVariable,
			BrowseName: codec.QualifiedName{NamespaceIndex: Index, Name: name}, DisplayName: codec.LocalizedText{Text: name},
			DataType: n0(id.Double), ValueRank: -1, AccessLevel: uint8(access), Value: codec.DoubleVariant(0), Historizing: historizing,
			References: []addrspace.Reference{
				{ReferenceTypeId: n0(id.Organizes), TargetId: folder, IsForward: false},
				{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.BaseDataVariableType), IsForward: true},
			},
		}); err != nil {
			return err
		}
	}
	return nil
}

// Run updates Demo/Simulation/Sine every demoTick, and every variable of
// Demo/Simulation/Load every simulation interval (to the number of that cycle), through
// SetValue, so that OnChange observers see each change, and emits the periodic demo
// events, until ctx ends; then it returns.
func (d *Demo) Run(ctx context.Context) {
	eventsDone := make(chan struct{})
	go d.runEvents(ctx, eventsDone)
	defer func() { <-eventsDone }()
	t := time.NewTicker(demoTick)
	defer t.Stop()
	var (
		loadIDs  []codec.NodeId
		loadTick <-chan time.Time
		cycle    float64
	)
	if sim := d.sim; sim.Count > 0 {
		loadIDs = make([]codec.NodeId, sim.Count)
		for i := range loadIDs {
			loadIDs[i] = LoadID(i)
		}
		lt := time.NewTicker(sim.Interval)
		defer lt.Stop()
		loadTick = lt.C
	}
	start := d.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-loadTick:
			cycle++
			ts := codec.DateTimeOf(d.now())
			dv := codec.DataValue{Value: codec.DoubleVariant(cycle), SourceTimestamp: ts, ServerTimestamp: ts}
			for _, id := range loadIDs {
				d.space.SetValue(id, dv)
			}
			continue
		case <-t.C:
		}
		now := d.now()
		phase := 2 * math.Pi * float64(now.Sub(start)) / float64(demoSinePeriod)
		ts := codec.DateTimeOf(now)
		d.space.SetValue(SineID, codec.DataValue{Value: codec.DoubleVariant(math.Sin(phase)), SourceTimestamp: ts, ServerTimestamp: ts})
	}
}

// Demo is the demo namespace of one server: its nodes in the address space, and what
// changes them while the server runs.
type Demo struct {
	space  *addrspace.Space
	events Events
	now    func() time.Time
	sim    config.Simulation
	// count is the Counter of the last demo event.
	count atomic.Uint32
}

// New adds the demo nodes to space (which serves URI at Index), with the load
// simulation as configures and the event source, whose events go to events.
func New(space *addrspace.Space, as config.AddressSpace, events Events, now func() time.Time) (*Demo, error) {
	if ns := space.Namespaces(); len(ns) <= Index || ns[Index] != URI {
		return nil, fmt.Errorf("demo namespace: the address space serves %q, not %q at index %d", ns, URI, Index)
	}
	d := &Demo{space: space, events: events, now: now, sim: as.Simulation}
	if err := addNamespace(space); err != nil {
		return nil, fmt.Errorf("demo namespace: %w", err)
	}
	if as.Simulation.Count > 0 {
		if err := addLoad(space, as.Simulation.Count, as.Simulation.Historizing); err != nil {
			return nil, fmt.Errorf("demo simulation: %w", err)
		}
	}
	if err := d.addEvents(); err != nil {
		return nil, fmt.Errorf("demo event source: %w", err)
	}
	return d, nil
}
