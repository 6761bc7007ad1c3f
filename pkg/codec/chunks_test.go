package codec_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

// windowSource hands out windows of size bytes and remembers them.
type windowSource struct {
	size    int
	windows [][]byte
}

func (s *windowSource) NextChunk() []byte {
	w := make([]byte, 0, s.size)
	s.windows = append(s.windows, w)
	return w
}

// EncodeChunked encodes write into windows of size bytes and checks the result against
// the unchunked encoding: the same bytes, each chunk inside the window it was given and
// at most chunkSlack bytes short of it except the last. It returns the chunks.
func binEncodeChunked(t *testing.T, size int, write func(*codec.Encoder)) [][]byte {
	t.Helper()
	plain := codec.NewEncoder(nil)
	write(plain)
	require.NoError(t, plain.Err())

	src := &windowSource{size: size}
	var e codec.Encoder
	e.ResetChunks(src.NextChunk(), src)
	write(&e)
	require.NoError(t, e.Err())
	require.Equal(t, plain.Len(), e.Len())
	chunks := slices.Clone(e.Chunks())
	require.Len(t, chunks, len(src.windows))
	for i, c := range chunks {
		require.Same(t, unsafe.SliceData(src.windows[i][:1]), unsafe.SliceData(c[:1]), "chunk %d is not in its window", i)
		require.LessOrEqual(t, len(c), size)
		require.NotEmpty(t, c, "chunk %d", i)
	}
	require.Equal(t, plain.Bytes(), bytes.Join(chunks, nil))
	e.Reset(nil)
	require.Nil(t, e.Chunks(), "Reset ends chunked mode")
	return chunks
}

// TestEncodeChunks writes values that cross window boundaries in every way: long strings
// and byte strings split over windows, nested ExtensionObjects whose length placeholders
// lie in earlier windows, and a long Int32 array whose inlined writes overflow a window.
func TestEncodeChunks(t *testing.T) {
	long := strings.Repeat("0123456789abcdef", 40)
	ints := make([]int32, 1000)
	for i := range ints {
		ints[i] = int32(i * 7919)
	}
	nested := &binStruct{ID: 1, Name: long, Value: codec.MustVariant(codec.NewExtensionObject(
		&binStruct{ID: 2, Name: "inner", Value: codec.MustVariant(ints)}))}
	write := func(e *codec.Encoder) {
		e.String("head")
		e.ExtensionObject(&codec.ExtensionObject{Value: nested})
		e.ByteString([]byte(long))
		for i := range 300 {
			e.Variant(&[]codec.Variant{codec.Int32Variant(int32(i)), codec.DoubleVariant(float64(i)), codec.StringVariant("s")}[i%3])
			e.NodeId(codec.NewOpaqueNodeId(1, []byte(long[:i%50])))
		}
		e.Raw([]byte(long))
	}
	for _, size := range []int{codec.MinChunkWindow, codec.MinChunkWindow + 7, 1000, 8192} {
		chunks := binEncodeChunked(t, size, write)
		if size < 1000 {
			require.Greater(t, len(chunks), 10)
		}
	}
	// A run of inlined writes that overflows the last window is repaired by Chunks.
	arr := codec.MustVariant(ints)
	require.Greater(t, len(binEncodeChunked(t, codec.MinChunkWindow, func(e *codec.Encoder) { e.Variant(&arr) })), 10)
	// A message that fits one window is one chunk.
	require.Len(t, binEncodeChunked(t, 8192, func(e *codec.Encoder) { e.String("short") }), 1)
}

// binFuzzChunked checks that write encodes to want when chunked into the smallest windows.
func binFuzzChunked(t *testing.T, want []byte, write func(*codec.Encoder)) {
	src := &windowSource{size: codec.MinChunkWindow}
	var e codec.Encoder
	e.ResetChunks(src.NextChunk(), src)
	write(&e)
	if got := bytes.Join(e.Chunks(), nil); !bytes.Equal(got, want) {
		t.Fatalf("chunked encoding differs\nchunked: % x\nplain:   % x", got, want)
	}
}
