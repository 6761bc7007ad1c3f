package demo

import (
	"context"
	"fmt"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
)

// The demo event source: the object Demo/Events, a notifier below the Server object
// (HasNotifier, Part 3 §7.16), emits a DemoEventType event every demoEventInterval and
// one per call of its method Emit.
var (
	// EventsID is the NodeId of Demo/Events, the notifier of the demo events.
	EventsID = ID("Demo.Events")
	// EventTypeID is the NodeId of DemoEventType.
	EventTypeID = ID("DemoEventType")
	// counter is the browse path of DemoEventType's Counter.
	counter = []codec.QualifiedName{{NamespaceIndex: Index, Name: "Counter"}}
)

// Events is where the demo's events go: the server's subscription engine.
type Events interface {
	// Listening reports whether any client monitors events; while none does, no event is
	// built.
	Listening() bool
	// Emit reports an event of typ from source, with the fields of BaseEventType made
	// from the arguments and fields (by browse path) added, to the event items of the
	// notifiers.
	Emit(typ, source codec.NodeId, sourceName string, severity uint16, message string, fields []nodemgr.EventField, notifiers ...codec.NodeId)
}

const demoEventInterval = time.Second

// serverID is the Server object, the root notifier of every event (Part 5 §8.3.2).
var serverID = codec.NewNumericNodeId(0, id.Server)

// Severities are the severities the periodic demo events cycle through, so that a
// filter on Severity has something to tell apart.
var Severities = [...]uint16{100, 300, 500, 700, 900}

// addEvents adds DemoEventType (a BaseEventType with a UInt32 Counter), the object
// Demo/Events (a notifier of the Server object) and its method Emit(Severity UInt16,
// Message String).
func (d *Demo) addEvents() error {
	sp := d.space
	n0 := func(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }
	qn := func(name string) codec.QualifiedName {
		return codec.QualifiedName{NamespaceIndex: Index, Name: name}
	}
	lt := func(name string) codec.LocalizedText { return codec.LocalizedText{Text: name} }
	nodes := []addrspace.Node{{
		NodeId: EventTypeID, NodeClass: ua.NodeClassObjectType, BrowseName: qn("DemoEventType"), DisplayName: lt("DemoEventType"),
		References: []addrspace.Reference{{ReferenceTypeId: n0(id.HasSubtype), TargetId: n0(id.BaseEventType), IsForward: false}},
	}, {
		NodeId: ID("DemoEventType.Counter"), NodeClass: ua.NodeClassVariable, BrowseName: qn("Counter"), DisplayName: lt("Counter"),
		DataType: n0(id.UInt32), ValueRank: -1, AccessLevel: uint8(ua.AccessLevelTypeCurrentRead), Value: codec.UInt32Variant(0),
		References: []addrspace.Reference{
			{ReferenceTypeId: n0(id.HasProperty), TargetId: EventTypeID, IsForward: false},
			{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.PropertyType), IsForward: true},
			{ReferenceTypeId: n0(id.HasModellingRule), TargetId: n0(id.ModellingRule_Mandatory), IsForward: true},
		},
	}, {
		NodeId: EventsID, NodeClass: ua.NodeClassObject, BrowseName: qn("Events"), DisplayName: lt("Events"),
		EventNotifier: uint8(ua.EventNotifierTypeSubscribeToEvents | ua.EventNotifierTypeHistoryRead),
		References: []addrspace.Reference{
			{ReferenceTypeId: n0(id.Organizes), TargetId: ID("Demo"), IsForward: false},
			{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.BaseObjectType), IsForward: true},
		},
	}}
	for _, n := range nodes {
		if err := sp.AddNode(n); err != nil {
			return err
		}
	}
	if err := sp.AddReference(serverID, addrspace.Reference{ReferenceTypeId: n0(id.HasNotifier), TargetId: EventsID, IsForward: true}); err != nil {
		return err
	}
	args := []ua.Argument{
		{Name: "Severity", DataType: n0(id.UInt16), ValueRank: -1, Description: lt("1 to 1000")},
		{Name: "Message", DataType: n0(id.String), ValueRank: -1, Description: lt("Message")},
	}
	method := addrspace.Node{NodeId: ID("Demo.Events.Emit"), BrowseName: qn("Emit"), DisplayName: lt("Emit")}
	return sp.AddMethod(EventsID, method, args, nil, d.emitMethod)
}

// emitMethod is Demo/Events/Emit: it emits one DemoEventType event with the given
// Severity (1 to 1000, BadOutOfRange otherwise) and Message.
func (d *Demo) emitMethod(_ context.Context, _ codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code) {
	sev := uint16(in[0].Bits())
	if sev < 1 || sev > 1000 {
		return nil, status.BadOutOfRange
	}
	d.emit(sev, in[1].Str())
	return nil, status.Good
}

// emit emits a DemoEventType event from Demo/Events, which reaches the items on
// Demo/Events and on the Server object.
func (d *Demo) emit(severity uint16, message string) {
	if !d.events.Listening() {
		return
	}
	fields := []nodemgr.EventField{{BrowsePath: counter, Value: codec.UInt32Variant(d.count.Add(1))}}
	d.events.Emit(EventTypeID, EventsID, "Demo/Events", severity, message, fields, EventsID, serverID)
}

// runEvents emits a demo event every demoEventInterval, cycling through Severities,
// until ctx ends; then it closes done.
func (d *Demo) runEvents(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(demoEventInterval)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sev := Severities[i%len(Severities)]
		d.emit(sev, fmt.Sprintf("Demo event with severity %d", sev))
	}
}
