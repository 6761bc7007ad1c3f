package addrspace

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// TestCall covers the checks of Call on a method added to an ObjectType and called on an
// instance (HasComponent found through HasTypeDefinition and HasSubtype), and on the
// type itself.
func TestCall(t *testing.T) {
	t.Parallel()
	s := New(NamespaceURI0, "urn:test")
	d1 := func(name string) codec.NodeId { return codec.NewStringNodeId(1, name) }
	require.NoError(t, s.AddNode(Node{NodeId: d1("BaseT"), NodeClass: ua.NodeClassObjectType, BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "BaseT"},
		References: []Reference{{ReferenceTypeId: n0(id.HasSubtype), TargetId: n0(id.BaseObjectType), IsForward: false}}}))
	require.NoError(t, s.AddNode(Node{NodeId: d1("SubT"), NodeClass: ua.NodeClassObjectType, BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "SubT"},
		References: []Reference{{ReferenceTypeId: n0(id.HasSubtype), TargetId: d1("BaseT"), IsForward: false}}}))
	require.NoError(t, s.AddNode(Node{NodeId: d1("obj"), NodeClass: ua.NodeClassObject, BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "obj"},
		References: []Reference{{ReferenceTypeId: n0(id.HasTypeDefinition), TargetId: d1("SubT"), IsForward: true}}}))
	var seen codec.NodeId
	neg := func(_ context.Context, object codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code) {
		seen = object
		return []codec.Variant{codec.Int32Variant(-in[0].Value().(int32))}, status.Good
	}
	arg := ua.Argument{Name: "x", DataType: n0(id.Int32), ValueRank: -1}
	require.NoError(t, s.AddMethod(d1("BaseT"), Node{NodeId: d1("Neg"), BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "Neg"}},
		[]ua.Argument{arg}, []ua.Argument{arg}, neg))
	require.Error(t, s.AddMethod(d1("nope"), Node{NodeId: d1("M2")}, nil, nil, neg))

	call := func(object, method codec.NodeId, in ...codec.Variant) ua.CallMethodResult {
		op := &nodemgr.CallOp{Items: []ua.CallMethodRequest{{ObjectId: object, MethodId: method, InputArguments: in}}, Results: make([]ua.CallMethodResult, 1)}
		calls := 0
		s.Call(context.Background(), op, func() { calls++ })
		require.Equal(t, 1, calls)
		return op.Results[0]
	}
	for _, object := range []codec.NodeId{d1("obj"), d1("BaseT")} {
		seen = codec.NodeId{}
		res := call(object, d1("Neg"), codec.Int32Variant(7))
		require.Equal(t, status.Good, res.StatusCode, object.String())
		require.Equal(t, []codec.Variant{codec.Int32Variant(-7)}, res.OutputArguments)
		require.Equal(t, []status.Code{status.Good}, res.InputArgumentResults)
		require.Equal(t, object, seen)
	}
	cases := []struct {
		name           string
		object, method codec.NodeId
		in             []codec.Variant
		want           status.Code
		argResults     []status.Code
	}{
		{"method of a supertype on the subtype", d1("SubT"), d1("Neg"), []codec.Variant{codec.Int32Variant(1)}, status.Good, []status.Code{status.Good}},
		{"unknown object", d1("x"), d1("Neg"), nil, status.BadNodeIdUnknown, nil},
		{"type definition as object", n0(id.BaseObjectType), d1("Neg"), nil, status.BadMethodInvalid, nil},
		{"unrelated object", n0(id.ObjectsFolder), d1("Neg"), nil, status.BadMethodInvalid, nil},
		{"variable as object", n0(id.Server_NamespaceArray), d1("Neg"), nil, status.BadNodeIdInvalid, nil},
		{"missing", d1("obj"), d1("Neg"), nil, status.BadArgumentsMissing, nil},
		{"too many", d1("obj"), d1("Neg"), []codec.Variant{codec.Int32Variant(1), codec.Int32Variant(2)}, status.BadTooManyArguments, nil},
		{"type mismatch", d1("obj"), d1("Neg"), []codec.Variant{codec.Int64Variant(1)}, status.BadInvalidArgument, []status.Code{status.BadTypeMismatch}},
		{"null argument", d1("obj"), d1("Neg"), []codec.Variant{{}}, status.BadInvalidArgument, []status.Code{status.BadTypeMismatch}},
		{"no handler", n0(id.Server), n0(id.Server_GetMonitoredItems), []codec.Variant{codec.UInt32Variant(1)}, status.BadNotImplemented, nil},
	}
	for _, tc := range cases {
		res := call(tc.object, tc.method, tc.in...)
		require.Equal(t, tc.want, res.StatusCode, tc.name)
		require.Equal(t, tc.argResults, res.InputArgumentResults, tc.name)
	}
}
