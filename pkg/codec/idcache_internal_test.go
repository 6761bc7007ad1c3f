package codec

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestIDCacheGrows: a cache for a few identifiers stays at its first slots; one for many
// doubles up to its bound, keeping what it held, and then evicts instead.
func TestIDCacheGrows(t *testing.T) {
	var d Decoder
	d.CacheNodeIds(512)
	c := d.ids
	for range 10 {
		for _, id := range []string{"token", "Demo.A", "Demo.B"} {
			c.str([]byte(id))
		}
	}
	require.Len(t, c.slots, idFirstSlots, "three identifiers need no more slots")

	// Enough that every set of the full cache gets four: with 2,000, about one run in 60
	// left a set of the 128 with three.
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = fmt.Sprintf("Plant.Line%d.Value", i)
	}
	// Few enough that no set of the full cache is likely to get five of them.
	first := make([]string, 16)
	for i := range first {
		first[i] = c.str([]byte(ids[i]))
	}
	require.Greater(t, len(c.slots), idFirstSlots, "more identifiers than slots: it grew")
	for i := range first {
		got := c.str([]byte(ids[i]))
		require.Same(t, unsafe.StringData(first[i]), unsafe.StringData(got), "%s kept across growth", ids[i])
	}
	for _, id := range ids {
		c.str([]byte(id))
	}
	require.Len(t, c.slots, 512, "it grows to its bound and no further")
	held := 0
	for _, s := range c.slots {
		if s != "" {
			held++
		}
	}
	require.Equal(t, 512, held)
}
