package uacp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPoolClasses(t *testing.T) {
	t.Parallel()
	cases := []struct{ n, cap int }{
		{0, 8192}, {1, 8192}, {8192, 8192}, {8193, 16384},
		{65535, 65536}, {65536, 65536}, {65537, 131072}, // a power of two stays in its own class
		{1 << 20, 1 << 20}, {16 << 20, 16 << 20},
	}
	var p Pool
	for _, tc := range cases {
		b := p.Get(tc.n)
		require.Len(t, b, tc.n)
		require.Equal(t, tc.cap, cap(b), "Get(%d)", tc.n)
		p.Put(b)
	}
	big := p.Get(16<<20 + 1)
	require.Len(t, big, 16<<20+1)
	p.Put(big) // dropped: not a class size
	require.Panics(t, func() { p.Get(-1) })
}

func TestPoolReuseAndForeign(t *testing.T) {
	var p Pool
	b := p.Get(65536)
	b[0] = 42
	p.Put(b)
	// sync.Pool may drop items at any time, but with no GC in between the same P gets it back.
	c := p.Get(100)
	if &c[:1][0] == &b[:1][0] {
		require.Equal(t, byte(42), c[0], "Put does not zero")
	}
	p.Put(c)

	// Foreign capacities are dropped, not filed in a wrong class.
	p.Put(make([]byte, 10000))
	p.Put(make([]byte, 100))
	p.Put(nil)
	for range 4 {
		require.Equal(t, 8192, cap(p.Get(8192)))
	}

	z := p.Get(8192)
	for i := range z {
		z[i] = 0xAA
	}
	p.PutZeroed(z[:10])
	require.Equal(t, make([]byte, 8192), z[:8192], "PutZeroed clears the whole capacity")
}

func TestPoolNoAllocs(t *testing.T) {
	var p Pool
	p.Put(p.Get(65536))
	allocs := testing.AllocsPerRun(1000, func() {
		b := p.Get(65536)
		p.Put(b)
	})
	require.Zero(t, allocs)
}

// TestReleaseZeroedClearsTheChunk checks that a released chunk leaves no byte of its own
// in the buffer, even when Bytes was resliced shorter, and leaves the rest alone.
func TestReleaseZeroedClearsTheChunk(t *testing.T) {
	var p Pool
	b := p.Get(100)
	for i := range b[:cap(b)] {
		b[:cap(b)][i] = 0xAA
	}
	ch := Chunk{Header: Header{Size: 100}, Bytes: b[:40], pool: &p}
	ch.ReleaseZeroed()
	require.Nil(t, ch.Bytes)
	require.Equal(t, make([]byte, 100), b[:100], "the chunk's bytes are zeroed")
	require.Equal(t, byte(0xAA), b[:cap(b)][100], "bytes it never held are not touched")
}
