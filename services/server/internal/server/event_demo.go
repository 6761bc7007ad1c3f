package server

import (
	"context"
	"fmt"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/subscription"
)

// The demo event source: the object Demo/Events, a notifier below the Server object
// (HasNotifier, Part 3 §7.16), emits a DemoEventType event every demoEventInterval and
// one per call of its method Emit.
var (
	demoEventsID    = demoID("Demo.Events")
	demoEventTypeID = demoID("DemoEventType")
	demoCounterKey  = subscription.FieldKey(codec.QualifiedName{NamespaceIndex: demoIndex, Name: "Counter"})
)

const demoEventInterval = time.Second

// demoSeverities are the severities the periodic demo events cycle through, so that a
// filter on Severity has something to tell apart.
var demoSeverities = [...]uint16{100, 300, 500, 700, 900}

// initEvents prepares the event types and, with the demo namespace, the demo event
// source. It runs in New, before the server serves.
func (s *Server) initEvents() {
	s.events = newEventTypes(s)
	s.events.warm(codec.NewNumericNodeId(0, id.EventQueueOverflowEventType))
	s.events.warm(codec.NewNumericNodeId(0, id.SystemEventType))
	if !s.cfg.AddressSpace.DemoNamespace {
		return
	}
	if err := s.addDemoEvents(); err != nil {
		s.log.Error("demo event source", "error", err)
		return
	}
	s.events.warm(demoEventTypeID)
}

// addDemoEvents adds DemoEventType (a BaseEventType with a UInt32 Counter), the
// object Demo/Events and its method Emit(Severity UInt16, Message String).
func (s *Server) addDemoEvents() error {
	sp := s.space
	n0 := func(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }
	qn := func(name string) codec.QualifiedName {
		return codec.QualifiedName{NamespaceIndex: demoIndex, Name: name}
	}
	lt := func(name string) codec.LocalizedText { return codec.LocalizedText{Text: name} }
	nodes := []addrspace.Node{{
		NodeId: demoEventTypeID, NodeClass: ua.NodeClassObjectType, BrowseName: qn("DemoEventType"), DisplayName: lt("DemoEventType"),
		References: []addrspace.Reference{{ReferenceTypeId: n0(id.HasSubtype), TargetId: n0(id.BaseEventType), IsForward: false}},
	}, {
		NodeId: demoID("DemoEventType.Counter"), NodeClass: ua.NodeClassVariable, BrowseName: qn("Counter"), DisplayName: lt("Counter"),
		DataType: n0(id.UInt32), ValueRank: -1, AccessLevel: uint8(ua.AccessLevelTypeCurrentRead), Value: codec.UInt32Variant(0),
		References: []addrspace.Reference{
			{ReferenceTypeId: n0(id.HasProperty), TargetId: demoEventTypeID, IsForward: false},
			{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.PropertyType), IsForward: true},
			{ReferenceTypeId: n0(id.HasModellingRule), TargetId: n0(id.ModellingRule_Mandatory), IsForward: true},
		},
	}, {
		NodeId: demoEventsID, NodeClass: ua.NodeClassObject, BrowseName: qn("Events"), DisplayName: lt("Events"),
		EventNotifier: uint8(ua.EventNotifierTypeSubscribeToEvents),
		References: []addrspace.Reference{
			{ReferenceTypeId: n0(id.Organizes), TargetId: demoID("Demo"), IsForward: false},
			{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.BaseObjectType), IsForward: true},
		},
	}}
	for _, n := range nodes {
		if err := sp.AddNode(n); err != nil {
			return err
		}
	}
	if err := sp.AddReference(serverID, addrspace.Reference{ReferenceTypeId: n0(id.HasNotifier), TargetId: demoEventsID, IsForward: true}); err != nil {
		return err
	}
	args := []ua.Argument{
		{Name: "Severity", DataType: n0(id.UInt16), ValueRank: -1, Description: lt("1 to 1000")},
		{Name: "Message", DataType: n0(id.String), ValueRank: -1, Description: lt("Message")},
	}
	method := addrspace.Node{NodeId: demoID("Demo.Events.Emit"), BrowseName: qn("Emit"), DisplayName: lt("Emit")}
	return sp.AddMethod(demoEventsID, method, args, nil, s.demoEmit)
}

// demoEmit is Demo/Events/Emit: it emits one DemoEventType event with the given
// Severity (1 to 1000, BadOutOfRange otherwise) and Message.
func (s *Server) demoEmit(_ context.Context, _ codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code) {
	sev := uint16(in[0].Bits())
	if sev < 1 || sev > 1000 {
		return nil, status.BadOutOfRange
	}
	s.emitDemoEvent(sev, in[1].Str())
	return nil, status.Good
}

// emitDemoEvent emits a DemoEventType event from Demo/Events, which reaches the items
// on Demo/Events and on the Server object.
func (s *Server) emitDemoEvent(severity uint16, message string) {
	if !s.subs.Listening() {
		return
	}
	ev := s.newEvent(demoEventTypeID, demoEventsID, "Demo/Events", severity, message)
	ev.Fields[demoCounterKey] = codec.UInt32Variant(s.events.demoCount.Add(1))
	s.emit(ev, demoEventsID, serverID)
}

// runDemoEvents emits a demo event every demoEventInterval, cycling through
// demoSeverities, until ctx ends; then it closes done.
func (s *Server) runDemoEvents(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(demoEventInterval)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sev := demoSeverities[i%len(demoSeverities)]
		s.emitDemoEvent(sev, fmt.Sprintf("Demo event with severity %d", sev))
	}
}
