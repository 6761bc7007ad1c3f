package attr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCount(t *testing.T) {
	count := 0
	for id := range ID(len(names)) {
		if Valid(id) {
			count++
		}
	}
	require.Equal(t, 27, count, "AttributeIds.csv has 27 attributes")
}

func TestKnownIDs(t *testing.T) {
	tests := []struct {
		id   ID
		want uint32
		name string
	}{
		{NodeId, 1, "NodeId"},
		{NodeClass, 2, "NodeClass"},
		{BrowseName, 3, "BrowseName"},
		{Value, 13, "Value"},
		{DataType, 14, "DataType"},
		{DataTypeDefinition, 23, "DataTypeDefinition"},
		{AccessLevelEx, 27, "AccessLevelEx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, uint32(tt.id))
			require.True(t, Valid(tt.id))
			require.Equal(t, tt.name, tt.id.String())
		})
	}
}

func TestInvalid(t *testing.T) {
	for _, id := range []ID{0, 28, 1000, ^ID(0)} {
		require.False(t, Valid(id), "id %d", uint32(id))
	}
	require.Equal(t, "ID(0)", ID(0).String())
	require.Equal(t, "ID(28)", ID(28).String())
	require.Equal(t, "ID(4294967295)", (^ID(0)).String())
}
