package addrspace

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/telemetry"
)

// TestSpacePanics: a value computed at read time that panics is BadInternalError for its
// item, the other items of the Read are answered and the store is not left locked (a
// SetValue and a Write go through); a method handler that panics is BadInternalError
// for its item; an OnChange callback that panics does not keep the write from the
// others, nor make it fail.
func TestSpacePanics(t *testing.T) {
	t.Parallel()
	tel, err := telemetry.New(telemetry.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	s := New(NamespaceURI0, "urn:test")
	s.SetPanics(tel.Panics())
	d1 := func(name string) codec.NodeId { return codec.NewStringNodeId(1, name) }
	for _, name := range []string{"computed", "stored"} {
		require.NoError(t, s.AddNode(Node{NodeId: d1(name), NodeClass: ua.NodeClassVariable, BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: name},
			DataType: n0(id.Int32), ValueRank: -1, Value: codec.Int32Variant(1),
			AccessLevel: uint8(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite)}))
	}
	require.True(t, s.SetValueFunc(d1("computed"), func(codec.DateTime) codec.DataValue { panic("a diagnostics bug") }))
	var told atomic.Int32
	s.OnChange(func(codec.NodeId, *codec.DataValue) { panic("an observer's bug") })
	s.OnChange(func(codec.NodeId, *codec.DataValue) { told.Add(1) })

	read := &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnNeither,
		Items:   []ua.ReadValueId{{NodeId: d1("computed"), AttributeId: uint32(attr.Value)}, {NodeId: d1("stored"), AttributeId: uint32(attr.Value)}},
		Results: make([]codec.DataValue, 2)}
	calls := 0
	s.Read(context.Background(), read, func() { calls++ })
	require.Equal(t, 1, calls)
	require.Equal(t, status.BadInternalError, read.Results[0].Status)
	require.Equal(t, codec.DataValue{Value: codec.Int32Variant(1)}, read.Results[1])
	require.EqualValues(t, 1, tel.Panics().Count(telemetry.PlaceAddressSpace))

	set := make(chan bool)
	go func() { set <- s.SetValue(d1("stored"), codec.DataValue{Value: codec.Int32Variant(2)}) }()
	select {
	case ok := <-set:
		require.True(t, ok)
	case <-time.After(5 * time.Second):
		t.Fatal("SetValue blocked: the store was left locked")
	}
	write := &nodemgr.WriteOp{Items: []ua.WriteValue{{NodeId: d1("stored"), AttributeId: uint32(attr.Value),
		Value: codec.DataValue{Value: codec.Int32Variant(3)}}}, Results: make([]status.Code, 1)}
	s.Write(context.Background(), write, func() {})
	require.Equal(t, status.Good, write.Results[0])
	require.EqualValues(t, 2, told.Load(), "SetValue and Write told the next callback")
	require.EqualValues(t, 2, tel.Panics().Count(telemetry.PlaceObserver))

	require.NoError(t, s.AddNode(Node{NodeId: d1("obj"), NodeClass: ua.NodeClassObject, BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "obj"},
		References: []Reference{{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: n0(id.BaseObjectType), IsForward: true}}}))
	boom := func(context.Context, codec.NodeId, []codec.Variant) ([]codec.Variant, status.Code) {
		panic("a method's bug")
	}
	fine := func(context.Context, codec.NodeId, []codec.Variant) ([]codec.Variant, status.Code) {
		return nil, status.Good
	}
	require.NoError(t, s.AddMethod(d1("obj"), Node{NodeId: d1("Boom"), BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "Boom"}}, nil, nil, boom))
	require.NoError(t, s.AddMethod(d1("obj"), Node{NodeId: d1("Fine"), BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "Fine"}}, nil, nil, fine))
	call := &nodemgr.CallOp{Items: []ua.CallMethodRequest{{ObjectId: d1("obj"), MethodId: d1("Boom")}, {ObjectId: d1("obj"), MethodId: d1("Fine")}},
		Results: make([]ua.CallMethodResult, 2)}
	s.Call(context.Background(), call, func() {})
	require.Equal(t, status.BadInternalError, call.Results[0].StatusCode)
	require.Equal(t, status.Good, call.Results[1].StatusCode)
	require.EqualValues(t, 2, tel.Panics().Count(telemetry.PlaceAddressSpace))
}
