package id

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTableCount(t *testing.T) {
	require.Len(t, nodes, 12626, "NodeIds.csv 1.05.03 has 12,626 rows")
}

func TestTableSortedAndUnique(t *testing.T) {
	// Binary search needs strictly increasing ids.
	for i := 1; i < len(nodes); i++ {
		require.Less(t, nodes[i-1].id, nodes[i].id, "at index %d", i)
	}
}

func TestKnownIDs(t *testing.T) {
	tests := []struct {
		id    uint32
		want  uint32
		name  string
		class string
	}{
		{Boolean, 1, "Boolean", "DataType"},
		{ReadRequest_Encoding_DefaultBinary, 631, "ReadRequest_Encoding_DefaultBinary", "Object"},
		{NodeClass, 257, "NodeClass", "DataType"},
		{HasComponent, 47, "HasComponent", "ReferenceType"},
		{Server, 2253, "Server", "Object"},
		{Server_ServerStatus, 2256, "Server_ServerStatus", "Variable"},
		{BaseDataVariableType, 63, "BaseDataVariableType", "VariableType"},
		{Topics_LastChange, 32856, "Topics_LastChange", "Variable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.id)
			require.Equal(t, tt.name, Name(tt.id))
			require.Equal(t, tt.class, NodeClassOf(tt.id))
		})
	}
}

func TestUnknownID(t *testing.T) {
	for _, n := range []uint32{0, 32855, 32857, 1 << 31, ^uint32(0)} {
		require.Empty(t, Name(n), "id %d", n)
		require.Empty(t, NodeClassOf(n), "id %d", n)
	}
}

func TestUntypedConstants(t *testing.T) {
	// The constants are untyped so they fit uint32 and other integer types.
	var asUint32 uint32 = ReadRequest_Encoding_DefaultBinary
	var asUint16 uint16 = ReadRequest_Encoding_DefaultBinary
	require.Equal(t, uint32(631), asUint32)
	require.Equal(t, uint16(631), asUint16)
}
