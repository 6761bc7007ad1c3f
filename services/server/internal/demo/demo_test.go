package demo

import (
	"context"
	"sync"
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
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/config"
)

// sink records the events it is handed.
type sink struct {
	mu  sync.Mutex // guards got
	got []emitted
}

type emitted struct {
	typ, source codec.NodeId
	severity    uint16
	message     string
	fields      []nodemgr.EventField
	notifiers   []codec.NodeId
}

func (s *sink) Listening() bool { return true }

func (s *sink) Emit(typ, source codec.NodeId, _ string, severity uint16, message string, fields []nodemgr.EventField, notifiers ...codec.NodeId) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, emitted{typ, source, severity, message, fields, notifiers})
}

func (s *sink) events() []emitted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]emitted(nil), s.got...)
}

// TestDemo: the demo namespace needs its URI at Index; its Emit method emits one event
// with a growing Counter and refuses a severity out of range; Run moves the Sine and the
// load variables and emits the periodic events until its context ends.
func TestDemo(t *testing.T) {
	t.Parallel()
	_, err := New(addrspace.NewNamespace0(), config.AddressSpace{}, &sink{}, time.Now)
	require.ErrorContains(t, err, "not \"urn:uastack:demo\" at index 1")

	space := addrspace.New(addrspace.NamespaceURI0, URI)
	events := &sink{}
	d, err := New(space, config.AddressSpace{Simulation: config.Simulation{Count: 2, Interval: 20 * time.Millisecond}}, events, time.Now)
	require.NoError(t, err)

	call := func(sev uint16) status.Code {
		op := &nodemgr.CallOp{Items: []ua.CallMethodRequest{{ObjectId: EventsID, MethodId: ID("Demo.Events.Emit"),
			InputArguments: []codec.Variant{codec.UInt16Variant(sev), codec.StringVariant("hello")}}}, Results: make([]ua.CallMethodResult, 1)}
		space.Call(context.Background(), op, func() {})
		return op.Results[0].StatusCode
	}
	require.Equal(t, status.BadOutOfRange, call(0))
	require.Equal(t, status.Good, call(700))
	require.Equal(t, status.Good, call(800))
	got := events.events()
	require.Len(t, got, 2)
	require.Equal(t, emitted{EventTypeID, EventsID, 700, "hello",
		[]nodemgr.EventField{{BrowsePath: counter, Value: codec.UInt32Variant(1)}}, []codec.NodeId{EventsID, serverID}}, got[0])
	require.Equal(t, codec.UInt32Variant(2), got[1].fields[0].Value, "the Counter grows")

	var mu sync.Mutex // guards changed
	changed := map[codec.NodeId]int{}
	space.OnChange(func(id codec.NodeId, _ *codec.DataValue) {
		mu.Lock()
		changed[id]++
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return changed[SineID] >= 2 && changed[LoadID(1)] >= 2 && len(events.events()) >= 3
	}, 10*time.Second, 10*time.Millisecond, "the Sine, the load and the periodic events")
	cancel()
	<-done
	periodic := events.events()[2]
	require.Equal(t, Severities[0], periodic.severity)

	op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: LoadID(0), AttributeId: uint32(attr.Value)}}, Results: make([]codec.DataValue, 1)}
	space.Read(context.Background(), op, func() {})
	require.Equal(t, status.Good, op.Results[0].Status)
	require.Positive(t, op.Results[0].Value.Value().(float64), "a load variable counts its cycles")
}

// TestConformance: the server's address space with the demo namespace passes the
// node-manager conformance kit, as every node manager must.
func TestConformance(t *testing.T) {
	nodemgrtest.Run(t, nodemgrtest.Fixture{
		New: func(t testing.TB) nodemgr.Manager {
			space := addrspace.New(addrspace.NamespaceURI0, URI)
			if _, err := New(space, config.AddressSpace{}, &sink{}, time.Now); err != nil {
				t.Fatal(err)
			}
			return space
		},
		NamespaceIndexes: []uint16{0, Index},
		Capabilities:     nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapCall,
		Principal:        nodemgr.Principal{Anonymous: true},
		Readable:         codec.NewNumericNodeId(0, id.Server_ServerStatus_State),
		Writable:         ID("Demo.Scalar_Double"),
		WriteValue:       codec.DoubleVariant(21.5),
		NotWritable:      SineID,
		Browsable:        ID("Demo"),
		Unknown:          ID("Demo.NoSuchNode"),
		Call: &ua.CallMethodRequest{ObjectId: ID("Demo"), MethodId: ID("Demo.Add"),
			InputArguments: []codec.Variant{codec.DoubleVariant(1), codec.DoubleVariant(2)}},
	})
}
