package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/demo"
	"uastack.dev/services/server/internal/routing"
	"uastack.dev/services/server/internal/telemetry"
)

// panicNamespaceURI is the namespace of panicManager.
const panicNamespaceURI = "urn:uastack:test:panics"

// The nodes of panicManager (numeric ids of its namespace).
const (
	panicFine      = 1 // reads as Int32 1
	panicOnRead    = 2 // a Read of it panics, whatever else it reads
	panicDoneTwice = 4 // reads as Int32 4, calling done twice from a goroutine
)

// panicManager is an in-process node manager with bugs: its Read panics on one node,
// calls done twice for another, its Write, Browse and Call always panic, and its Health
// panics once told to. It is started with a host, to push events.
type panicManager struct {
	host        atomic.Pointer[nodemgr.Host]
	healthPanic atomic.Bool
}

var (
	_ nodemgr.Reader         = (*panicManager)(nil)
	_ nodemgr.Writer         = (*panicManager)(nil)
	_ nodemgr.Browser        = (*panicManager)(nil)
	_ nodemgr.Caller         = (*panicManager)(nil)
	_ nodemgr.Starter        = (*panicManager)(nil)
	_ nodemgr.HealthReporter = (*panicManager)(nil)
)

func (m *panicManager) Namespaces() []string { return []string{panicNamespaceURI} }

func (m *panicManager) Start(_ context.Context, h nodemgr.Host) error {
	m.host.Store(&h)
	return nil
}

func (m *panicManager) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	twice := false
	for i, it := range op.Items {
		switch it.NodeId.IntID() {
		case panicOnRead:
			panic("panicManager: a bug in Read")
		case panicDoneTwice:
			twice = true
		}
		op.Results[i] = codec.DataValue{Value: codec.Int32Variant(int32(it.NodeId.IntID()))}
	}
	if !twice {
		done()
		return
	}
	go func() {
		done()
		done()
	}()
}

func (m *panicManager) Write(context.Context, *nodemgr.WriteOp, func()) {
	panic("panicManager: a bug in Write")
}

func (m *panicManager) Browse(context.Context, *nodemgr.BrowseOp, func()) {
	panic("panicManager: a bug in Browse")
}

func (m *panicManager) Call(context.Context, *nodemgr.CallOp, func()) {
	panic("panicManager: a bug in Call")
}

func (m *panicManager) Health(context.Context) nodemgr.Health {
	if m.healthPanic.Load() {
		panic("panicManager: a bug in Health")
	}
	return nodemgr.Health{Status: status.Good}
}

// panicValue is a Structure of a node manager whose binary encoding panics: a response
// or a filter comparison that encodes it panics.
type panicValue struct{}

var panicValueType = &codec.TypeInfo{Name: "PanicValue", DataType: codec.NewNumericNodeId(1, 9001),
	BinaryEncoding: codec.NewNumericNodeId(1, 9002), New: func() codec.Structure { return new(panicValue) }}

func (*panicValue) EncodeBinary(*codec.Encoder)   { panic("panicValue: a value that cannot be encoded") }
func (*panicValue) DecodeBinary(*codec.Decoder)   {}
func (*panicValue) EncodeJSON(*codec.JSONEncoder) {}
func (*panicValue) DecodeJSON(*codec.JSONDecoder) {}
func (*panicValue) TypeInfo() *codec.TypeInfo     { return panicValueType }

// panicLog is a log sink safe for concurrent writes.
type panicLog struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (l *panicLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *panicLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// panicRig is a server with panicManager (configured, through the builtin kind) and a
// well-behaved slowManager mounted, a session of one client on a None channel (ps), a
// second client (other), the server's log and its panic counts.
type panicRig struct {
	*pipelineServer
	m       *panicManager
	panicNS uint16
	demoNS  uint16
	other   *client.Client
	log     *panicLog
	panics  *telemetry.Panics
	h       ua.RequestHeader
	handle  uint32
}

func newPanicRig(t *testing.T) *panicRig {
	t.Helper()
	m := &panicManager{}
	kind := routing.Kind{Type: config.NodeManagerBuiltin, Provision: func(config.NodeManager) (nodemgr.Manager, error) { return m, nil }}
	log := &panicLog{}
	ps := startPipelineWith(t, &slowManager{}, Options{Kinds: []routing.Kind{kind},
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelError}))},
		func(c *config.Config) {
			c.AddressSpace.NodeManagers = []config.NodeManager{{Name: "panicky", Type: config.NodeManagerBuiltin, NamespaceURI: panicNamespaceURI}}
		})
	r := &panicRig{pipelineServer: ps, m: m, log: log, panics: ps.srv.tel.Panics(), h: ua.RequestHeader{AuthenticationToken: ps.token}}
	for i, u := range ps.srv.routes.Namespaces() {
		switch u {
		case panicNamespaceURI:
			r.panicNS = uint16(i)
		case demo.URI:
			r.demoNS = uint16(i)
		}
	}
	require.NotZero(t, r.panicNS)
	require.NotZero(t, r.demoNS)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	other, err := client.Dial(ctx, ps.url, client.Security(policy.URINone, ua.MessageSecurityModeNone), client.Anonymous())
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	r.other = other
	return r
}

// header returns the request header of the rig's session with a fresh RequestHandle.
func (r *panicRig) header() ua.RequestHeader {
	r.handle++
	h := r.h
	h.RequestHandle = r.handle
	return h
}

// request sends req on the rig's channel.
func (r *panicRig) request(t *testing.T, req codec.Structure) (codec.Structure, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.ch.Request(ctx, req)
}

// requireServed checks that the rig's client and the other client are served: a Read of
// the server's state and of the slow manager's node, on the same channel and on another.
func (r *panicRig) requireServed(t *testing.T) {
	t.Helper()
	nodes := []ua.ReadValueId{
		{NodeId: codec.NewNumericNodeId(0, id.Server_ServerStatus_State), AttributeId: uint32(attr.Value)},
		{NodeId: codec.NewNumericNodeId(r.slowNS, 1), AttributeId: uint32(attr.Value)},
	}
	h := r.header()
	resp, err := r.request(t, &ua.ReadRequest{RequestHeader: h, NodesToRead: nodes})
	require.NoError(t, err, "the same client's next request")
	rr := resp.(*ua.ReadResponse)
	require.Equal(t, h.RequestHandle, rr.ResponseHeader.RequestHandle)
	for _, dv := range rr.Results {
		require.Equal(t, status.Good, dv.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	orr, err := r.other.Read(ctx, &ua.ReadRequest{NodesToRead: nodes})
	require.NoError(t, err, "another client's request")
	for _, dv := range orr.Results {
		require.Equal(t, status.Good, dv.Status)
	}
}

// requireLogged checks that the log has a line of a recovered panic at place whose
// stack shows frame.
func (r *panicRig) requireLogged(t *testing.T, place telemetry.Place, frame string) {
	t.Helper()
	// A panic while the answer is encoded is logged by the goroutine that sends the
	// ServiceFault, which may finish logging after the client has the fault.
	logged := func() bool {
		for _, line := range strings.Split(r.log.String(), "\n") {
			if strings.Contains(line, "panic recovered") && strings.Contains(line, "place="+place.String()) && strings.Contains(line, frame) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(2 * time.Second); !logged(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no line of a panic at %s with %s in its stack in:\n%s", place, frame, r.log.String())
		}
	}
}

func (r *panicRig) node(i uint32) codec.NodeId { return codec.NewNumericNodeId(r.panicNS, i) }

// TestPanicsInManagers: a node manager whose Read, Write, Browse or Call panics answers
// its items with BadInternalError, and the items of the address space and of another
// manager in the same request with their values; a manager that calls done twice is
// answered once; a Health that panics reports the manager unhealthy and the metrics are
// served. Each panic is logged with its stack and counted, and after each the same
// client and another are served.
func TestPanicsInManagers(t *testing.T) {
	t.Parallel()
	r := newPanicRig(t)

	h := r.header()
	resp, err := r.request(t, &ua.ReadRequest{RequestHeader: h, NodesToRead: []ua.ReadValueId{
		{NodeId: codec.NewNumericNodeId(0, id.Server_ServerStatus_State), AttributeId: uint32(attr.Value)},
		{NodeId: r.node(panicOnRead), AttributeId: uint32(attr.Value)},
		{NodeId: codec.NewNumericNodeId(r.slowNS, 1), AttributeId: uint32(attr.Value)},
	}})
	require.NoError(t, err)
	rr := resp.(*ua.ReadResponse)
	require.Equal(t, h.RequestHandle, rr.ResponseHeader.RequestHandle)
	require.Equal(t, status.Good, rr.Results[0].Status)
	require.Equal(t, status.BadInternalError, rr.Results[1].Status, "the panicking manager's item")
	require.Equal(t, codec.DataValue{Value: codec.Int32Variant(42)}, rr.Results[2], "the other manager's item")
	require.EqualValues(t, 1, r.panics.Count(telemetry.PlaceNodeManager))
	r.requireLogged(t, telemetry.PlaceNodeManager, "panicManager).Read")
	r.requireServed(t)

	resp, err = r.request(t, &ua.WriteRequest{RequestHeader: r.header(), NodesToWrite: []ua.WriteValue{
		{NodeId: r.node(panicFine), AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: codec.Int32Variant(7)}}}})
	require.NoError(t, err)
	require.Equal(t, []status.Code{status.BadInternalError}, resp.(*ua.WriteResponse).Results)
	resp, err = r.request(t, &ua.BrowseRequest{RequestHeader: r.header(), NodesToBrowse: []ua.BrowseDescription{
		{NodeId: r.node(panicFine), BrowseDirection: ua.BrowseDirectionForward, IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}}})
	require.NoError(t, err)
	require.Equal(t, status.BadInternalError, resp.(*ua.BrowseResponse).Results[0].StatusCode)
	resp, err = r.request(t, &ua.CallRequest{RequestHeader: r.header(), MethodsToCall: []ua.CallMethodRequest{
		{ObjectId: r.node(panicFine), MethodId: r.node(3)}}})
	require.NoError(t, err)
	require.Equal(t, status.BadInternalError, resp.(*ua.CallResponse).Results[0].StatusCode)
	require.EqualValues(t, 4, r.panics.Count(telemetry.PlaceNodeManager))
	r.requireLogged(t, telemetry.PlaceNodeManager, "panicManager).Call")
	r.requireServed(t)

	h = r.header()
	resp, err = r.request(t, &ua.ReadRequest{RequestHeader: h, NodesToRead: []ua.ReadValueId{
		{NodeId: r.node(panicDoneTwice), AttributeId: uint32(attr.Value)}}})
	require.NoError(t, err)
	require.Equal(t, h.RequestHandle, resp.(*ua.ReadResponse).ResponseHeader.RequestHandle)
	require.Equal(t, codec.Int32Variant(panicDoneTwice), resp.(*ua.ReadResponse).Results[0].Value)
	r.requireServed(t)

	r.m.healthPanic.Store(true)
	var metrics strings.Builder
	require.NoError(t, r.srv.WriteMetrics(&metrics))
	require.Contains(t, metrics.String(), "uastack_node_manager_healthy{manager=\"panicky\"} 0\n")
	require.EqualValues(t, 5, r.panics.Count(telemetry.PlaceNodeManager))
	r.m.healthPanic.Store(false)
	metrics.Reset()
	require.NoError(t, r.srv.WriteMetrics(&metrics))
	require.Contains(t, metrics.String(), "opcua_server_panics_total{place=\"node_manager\"} 5\n")
	r.requireServed(t)
}

// TestPanicsInline: on the channel's goroutine, a value the address space computes at
// read time (as the diagnostics do) that panics is BadInternalError for its item, a
// method handler that panics is BadInternalError for its call, and a value whose
// encoding panics turns the response into a ServiceFault BadInternalError; the channel
// reads its next request, and another client is served.
func TestPanicsInline(t *testing.T) {
	t.Parallel()
	r := newPanicRig(t)
	space := r.srv.space
	computed, encoded := codec.NewStringNodeId(r.demoNS, "PanicComputed"), codec.NewStringNodeId(r.demoNS, "PanicEncoded")
	for _, n := range []codec.NodeId{computed, encoded} {
		require.NoError(t, space.AddNode(addrspace.Node{NodeId: n, NodeClass: ua.NodeClassVariable,
			BrowseName: codec.QualifiedName{NamespaceIndex: r.demoNS, Name: n.StringID()}, DataType: codec.NewNumericNodeId(0, id.BaseDataType),
			ValueRank: -1, AccessLevel: uint8(ua.AccessLevelTypeCurrentRead)}))
	}
	require.True(t, space.SetValueFunc(computed, func(codec.DateTime) codec.DataValue { panic("a bug in a computed value") }))
	require.True(t, space.SetValue(encoded, codec.DataValue{Value: codec.MustVariant(&panicValue{})}))
	method := codec.NewStringNodeId(r.demoNS, "PanicMethod")
	require.NoError(t, space.AddMethod(serverID, addrspace.Node{NodeId: method, BrowseName: codec.QualifiedName{NamespaceIndex: r.demoNS, Name: "PanicMethod"}},
		nil, nil, func(context.Context, codec.NodeId, []codec.Variant) ([]codec.Variant, status.Code) {
			panic("a bug in a method handler")
		}))

	resp, err := r.request(t, &ua.ReadRequest{RequestHeader: r.header(), NodesToRead: []ua.ReadValueId{
		{NodeId: computed, AttributeId: uint32(attr.Value)},
		{NodeId: codec.NewNumericNodeId(0, id.Server_ServerStatus_State), AttributeId: uint32(attr.Value)},
	}})
	require.NoError(t, err)
	rr := resp.(*ua.ReadResponse)
	require.Equal(t, status.BadInternalError, rr.Results[0].Status)
	require.Equal(t, status.Good, rr.Results[1].Status)
	r.requireLogged(t, telemetry.PlaceAddressSpace, "TestPanicsInline")
	r.requireServed(t)

	resp, err = r.request(t, &ua.CallRequest{RequestHeader: r.header(), MethodsToCall: []ua.CallMethodRequest{{ObjectId: serverID, MethodId: method}}})
	require.NoError(t, err)
	require.Equal(t, status.BadInternalError, resp.(*ua.CallResponse).Results[0].StatusCode)
	require.EqualValues(t, 2, r.panics.Count(telemetry.PlaceAddressSpace))
	r.requireServed(t)

	h := r.header()
	resp, err = r.request(t, &ua.ReadRequest{RequestHeader: h, NodesToRead: []ua.ReadValueId{{NodeId: encoded, AttributeId: uint32(attr.Value)}}})
	require.ErrorIs(t, err, status.BadInternalError)
	require.Equal(t, h.RequestHandle, resp.(*ua.ServiceFault).ResponseHeader.RequestHandle)
	// Reported by the goroutine that sent the fault, once Respond returns: maybe after
	// the client has it.
	require.Eventually(t, func() bool { return r.panics.Count(telemetry.PlaceEncode) == 1 }, 2*time.Second, 5*time.Millisecond)
	r.requireLogged(t, telemetry.PlaceEncode, "panicValue).EncodeBinary")
	r.requireServed(t)
}

// publishes collects what Publish answers the rig's client gets until done is satisfied
// or the deadline passes; a Publish answered with a ServiceFault counts in faults.
type publishes struct {
	values map[uint32][]codec.DataValue // by ClientHandle
	events map[uint32][]ua.EventFieldList
	faults []status.Code
}

func (r *panicRig) publishUntil(t *testing.T, done func(*publishes) bool) *publishes {
	t.Helper()
	got := &publishes{values: map[uint32][]codec.DataValue{}, events: map[uint32][]ua.EventFieldList{}}
	deadline := time.Now().Add(10 * time.Second)
	for !done(got) {
		require.True(t, time.Now().Before(deadline), "publishes so far: %+v\n%s", got, r.log.String())
		resp, err := r.request(t, &ua.PublishRequest{RequestHeader: r.header()})
		if f, ok := resp.(*ua.ServiceFault); ok {
			got.faults = append(got.faults, f.ResponseHeader.ServiceResult)
			continue
		}
		require.NoError(t, err)
		for _, x := range resp.(*ua.PublishResponse).NotificationMessage.NotificationData {
			switch v := x.Value.(type) {
			case *ua.DataChangeNotification:
				for _, n := range v.MonitoredItems {
					got.values[n.ClientHandle] = append(got.values[n.ClientHandle], n.Value)
				}
			case *ua.EventNotificationList:
				for _, e := range v.Events {
					got.events[e.ClientHandle] = append(got.events[e.ClientHandle], e)
				}
			}
		}
	}
	return got
}

// TestPanicsInSubscriptions: a sampled item whose manager's Read panics gets
// BadInternalError; a value whose encoding panics in the data change filter reaches its
// item as BadInternalError; an event a manager pushes whose field panics in an item's
// where clause is skipped by that item. Through all of it the subscription keeps
// publishing the other items' values and the next events, no Publish fails, and the
// clients are served.
func TestPanicsInSubscriptions(t *testing.T) {
	t.Parallel()
	r := newPanicRig(t)
	resp, err := r.request(t, &ua.CreateSubscriptionRequest{RequestHeader: r.header(), RequestedPublishingInterval: 50,
		RequestedLifetimeCount: 1000, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true})
	require.NoError(t, err)
	sub := resp.(*ua.CreateSubscriptionResponse).SubscriptionId

	pushed := codec.NewStringNodeId(r.demoNS, "PanicPushed")
	require.NoError(t, r.srv.space.AddNode(addrspace.Node{NodeId: pushed, NodeClass: ua.NodeClassVariable,
		BrowseName: codec.QualifiedName{NamespaceIndex: r.demoNS, Name: "PanicPushed"}, DataType: codec.NewNumericNodeId(0, id.BaseDataType),
		ValueRank: -1, Value: codec.Int32Variant(0), AccessLevel: uint8(ua.AccessLevelTypeCurrentRead)}))
	operand := func(name string) codec.ExtensionObject {
		return codec.NewExtensionObject(&ua.SimpleAttributeOperand{TypeDefinitionId: codec.NewNumericNodeId(0, id.BaseEventType),
			BrowsePath: []codec.QualifiedName{{Name: name}}, AttributeId: uint32(attr.Value)})
	}
	literal := func(v codec.Variant) codec.ExtensionObject {
		return codec.NewExtensionObject(&ua.LiteralOperand{Value: v})
	}
	// Or(Poison = an Argument, Severity > 0): every element is evaluated, the first
	// compares the Poison field by its encoding.
	where := ua.ContentFilter{Elements: []ua.ContentFilterElement{
		{FilterOperator: ua.FilterOperatorOr, FilterOperands: []codec.ExtensionObject{
			codec.NewExtensionObject(&ua.ElementOperand{Index: 1}), codec.NewExtensionObject(&ua.ElementOperand{Index: 2})}},
		{FilterOperator: ua.FilterOperatorEquals, FilterOperands: []codec.ExtensionObject{operand("Poison"), literal(codec.MustVariant(&ua.Argument{Name: "x"}))}},
		{FilterOperator: ua.FilterOperatorGreaterThan, FilterOperands: []codec.ExtensionObject{operand("Severity"), literal(codec.Int32Variant(0))}},
	}}
	events := &ua.EventFilter{SelectClauses: []ua.SimpleAttributeOperand{{TypeDefinitionId: codec.NewNumericNodeId(0, id.BaseEventType),
		BrowsePath: []codec.QualifiedName{{Name: "Severity"}}, AttributeId: uint32(attr.Value)}}, WhereClause: where}
	const sampled, push, evented = 1, 2, 3
	resp, err = r.request(t, &ua.CreateMonitoredItemsRequest{RequestHeader: r.header(), SubscriptionId: sub,
		TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: []ua.MonitoredItemCreateRequest{
			{ItemToMonitor: ua.ReadValueId{NodeId: r.node(panicOnRead), AttributeId: uint32(attr.Value)}, MonitoringMode: ua.MonitoringModeReporting,
				RequestedParameters: ua.MonitoringParameters{ClientHandle: sampled, SamplingInterval: 50, QueueSize: 10}},
			{ItemToMonitor: ua.ReadValueId{NodeId: pushed, AttributeId: uint32(attr.Value)}, MonitoringMode: ua.MonitoringModeReporting,
				RequestedParameters: ua.MonitoringParameters{ClientHandle: push, QueueSize: 10}},
			{ItemToMonitor: ua.ReadValueId{NodeId: serverID, AttributeId: uint32(attr.EventNotifier)}, MonitoringMode: ua.MonitoringModeReporting,
				RequestedParameters: ua.MonitoringParameters{ClientHandle: evented, QueueSize: 10, Filter: codec.NewExtensionObject(events)}},
		}})
	require.NoError(t, err)
	for _, res := range resp.(*ua.CreateMonitoredItemsResponse).Results {
		require.Equal(t, status.Good, res.StatusCode)
	}

	// The sampled item: every sample's Read panics in the manager.
	r.publishUntil(t, func(p *publishes) bool {
		v := p.values[sampled]
		return len(v) > 0 && v[0].Status == status.BadInternalError && len(p.values[push]) > 0
	})
	require.Positive(t, r.panics.Count(telemetry.PlaceNodeManager))
	r.requireServed(t)

	// The pushed item: a value that cannot be encoded, twice, then a good one.
	poison := codec.DataValue{Value: codec.MustVariant(&panicValue{})}
	require.True(t, r.srv.space.SetValue(pushed, poison))
	require.True(t, r.srv.space.SetValue(pushed, poison))
	require.True(t, r.srv.space.SetValue(pushed, codec.DataValue{Value: codec.Int32Variant(5)}))
	got := r.publishUntil(t, func(p *publishes) bool {
		for _, v := range p.values[push] {
			if v.Value == codec.Int32Variant(5) {
				return true
			}
		}
		return false
	})
	var codes []status.Code
	for _, v := range got.values[push] {
		codes = append(codes, v.Status)
	}
	require.Contains(t, codes, status.BadInternalError, "the value that cannot be encoded")
	require.Empty(t, got.faults, "no Publish fails")
	require.EqualValues(t, 2, r.panics.Count(telemetry.PlaceFilter))
	r.requireLogged(t, telemetry.PlaceFilter, "panicValue).EncodeBinary")
	r.requireServed(t)

	// Events the manager pushes: the one whose Poison field panics in the where clause
	// is skipped, the ones around it arrive (among the demo namespace's events).
	notifier := (*r.m.host.Load()).Notifier()
	for sev, poisoned := range map[uint16]bool{11: false, 22: true, 33: false} {
		ev := nodemgr.Event{EventType: codec.NewNumericNodeId(0, id.BaseEventType), SourceNode: r.node(panicFine),
			Fields: []nodemgr.EventField{{BrowsePath: []codec.QualifiedName{{Name: "Severity"}}, Value: codec.UInt16Variant(sev)}}}
		if poisoned {
			ev.Fields = append(ev.Fields, nodemgr.EventField{BrowsePath: []codec.QualifiedName{{Name: "Poison"}}, Value: codec.MustVariant(&panicValue{})})
		}
		notifier.Emit([]nodemgr.Event{ev})
	}
	ours := func(p *publishes) map[uint64]bool {
		seen := map[uint64]bool{}
		for _, e := range p.events[evented] {
			if sev := e.EventFields[0].Bits(); sev < 100 {
				seen[sev] = true
			}
		}
		return seen
	}
	got = r.publishUntil(t, func(p *publishes) bool { return len(ours(p)) >= 2 })
	require.Equal(t, map[uint64]bool{11: true, 33: true}, ours(got))
	require.Empty(t, got.faults)
	require.EqualValues(t, 3, r.panics.Count(telemetry.PlaceFilter))
	r.requireServed(t)

	// And the subscription publishes on.
	require.True(t, r.srv.space.SetValue(pushed, codec.DataValue{Value: codec.Int32Variant(6)}))
	r.publishUntil(t, func(p *publishes) bool {
		for _, v := range p.values[push] {
			if v.Value == codec.Int32Variant(6) {
				return true
			}
		}
		return false
	})
	var metrics strings.Builder
	require.NoError(t, r.srv.WriteMetrics(&metrics))
	require.Contains(t, metrics.String(), "opcua_server_panics_total{place=\"filter\"} 3\n")
}
