package ua

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

// chunkWindows hands out windows of size bytes.
type chunkWindows struct{ size int }

func (w chunkWindows) NextChunk() []byte { return make([]byte, 0, w.size) }

// TestBinaryChunked encodes random values of every generated structure straight into
// small windows (codec.Encoder.ResetChunks): the windows joined are the ordinary encoding.
func TestBinaryChunked(t *testing.T) {
	t.Parallel()
	for _, tc := range allTypes {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRand(t.Name())
			for i := range 5 {
				v := tc.random(r, randomDepth)
				want := encodeBinary(t, v)
				for _, size := range []int{codec.MinChunkWindow, codec.MinChunkWindow + 13} {
					w := chunkWindows{size: size}
					var e codec.Encoder
					e.ResetChunks(w.NextChunk(), w)
					v.EncodeBinary(&e)
					require.NoError(t, e.Err())
					chunks := e.Chunks()
					for _, c := range chunks {
						require.LessOrEqual(t, cap(c), size, "value %d: a window grew", i)
					}
					require.Equal(t, want, bytes.Join(chunks, nil), "value %d, windows of %d", i, size)
				}
			}
		})
	}
}
