package addrspace

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/pkg/ua/ns0"
)

// TestIndex adds entries on each of the index's three paths (namespace 0 ids in the
// dense slice, other numeric ids, the rest) and finds each again, and only those; an
// entry of a namespace 0 table node carries that node.
func TestIndex(t *testing.T) {
	x := newIndex()
	ids := []codec.NodeId{
		codec.NewNumericNodeId(0, id.Server_ServerStatus_State),
		codec.NewNumericNodeId(0, id.Byte),
		codec.NewNumericNodeId(0, maxDenseID-1),
		codec.NewNumericNodeId(0, maxDenseID), // numeric map
		codec.NewNumericNodeId(2, id.Server_ServerStatus_State),
		codec.NewStringNodeId(0, "x"),
	}
	made := map[*entry]bool{}
	for _, n := range ids {
		e := x.add(n)
		require.NotNil(t, e)
		require.False(t, made[e], "%v shares an entry", n)
		made[e] = true
		require.Same(t, e, x.add(n), "%v: add finds the entry it made", n)
	}
	for _, n := range ids {
		require.NotNil(t, x.get(n), "%v", n)
	}
	for _, n := range []codec.NodeId{
		codec.NewNumericNodeId(0, id.Server_ServerStatus),
		codec.NewNumericNodeId(0, maxDenseID+1),
		codec.NewNumericNodeId(0, 1<<31),
		codec.NewNumericNodeId(1, 3),
		codec.NewStringNodeId(0, "y"),
	} {
		require.Nil(t, x.get(n), "%v", n)
	}
	require.Len(t, x.ns0, maxDenseID)

	for _, n := range ids[:2] {
		e := x.get(n)
		want, ok := ns0.Lookup(n.IntID())
		require.True(t, ok)
		require.True(t, e.inTable, "%v", n)
		require.Equal(t, want, e.tab, "%v", n)
	}
	for _, n := range ids[2:] {
		require.False(t, x.get(n).inTable, "%v is no table node", n)
	}
}

// TestRefsByDirection: a type whose instances were added before it keeps their inverse
// HasTypeDefinitions apart from its forward references, and its own inverse HasSubtype
// first, where the supertype walk finds it.
func TestRefsByDirection(t *testing.T) {
	s := New(NamespaceURI0, "urn:t")
	typ := codec.NewNumericNodeId(1, 1)
	for i := range 100 {
		require.NoError(t, s.AddNode(Node{NodeId: codec.NewNumericNodeId(1, uint32(100+i)), NodeClass: 1,
			BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "o"},
			References: []Reference{{ReferenceTypeId: codec.NewNumericNodeId(0, id.HasTypeDefinition), TargetId: typ, IsForward: true}}}))
	}
	require.NoError(t, s.AddNode(Node{NodeId: typ, NodeClass: 8, BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "T"},
		References: []Reference{{ReferenceTypeId: hasSubtype, TargetId: codec.NewNumericNodeId(0, id.BaseObjectType), IsForward: false}}}))
	rs := s.refs[typ]
	require.Empty(t, rs.fwd)
	require.Len(t, rs.inv, 101)
	require.Equal(t, hasSubtype, rs.inv[0].ReferenceTypeId)
	super, ok := s.superTypeLocked(typ)
	require.True(t, ok)
	require.Equal(t, codec.NewNumericNodeId(0, id.BaseObjectType), super)
	require.Len(t, s.refs[codec.NewNumericNodeId(0, id.BaseObjectType)].fwd, 1, "the inverse of the HasSubtype on BaseObjectType")
}
