package codec_test

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// binEncodeNodeIds encodes ids one after the other.
func binEncodeNodeIds(ids ...codec.NodeId) []byte {
	e := codec.NewEncoder(nil)
	for _, id := range ids {
		e.NodeId(id)
	}
	return bytes.Clone(e.Bytes())
}

// TestCacheNodeIdsSharesRepeats decodes the same identifiers twice with the cache on: the
// second decode returns the strings of the first (same bytes in memory) and allocates
// nothing, and nothing aliases the input buffer.
func TestCacheNodeIdsSharesRepeats(t *testing.T) {
	token := codec.NewOpaqueNodeId(0, bytes.Repeat([]byte{0xa5}, 32))
	str := codec.NewStringNodeId(2, "Demo.Scalar_Int32")
	guid := codec.NewGuidNodeId(3, codec.Guid{Data1: 7, Data4: [8]byte{1, 2, 3}})
	wire := binEncodeNodeIds(token, str, guid)
	d := codec.NewDecoder(nil)
	d.CacheNodeIds(64)
	decodeAll := func() []codec.NodeId {
		d.Reset(wire)
		out := []codec.NodeId{d.NodeId(), d.NodeId(), d.NodeId()}
		require.NoError(t, d.Err())
		return out
	}
	first := decodeAll()
	require.Equal(t, []codec.NodeId{token, str, guid}, first)
	second := decodeAll()
	require.Equal(t, first, second)
	require.Equal(t, first[0].OpaqueID(), second[0].OpaqueID())
	require.Same(t, unsafe.StringData(first[1].StringID()), unsafe.StringData(second[1].StringID()))

	// No byte of the input is shared: overwrite it and the decoded ids stay the same.
	for i := range wire {
		wire[i] = 0xff
	}
	require.Equal(t, []codec.NodeId{token, str, guid}, second)

	wire = binEncodeNodeIds(token, str, guid)
	var sink codec.NodeId
	allocs := testing.AllocsPerRun(100, func() {
		d.Reset(wire)
		sink = d.NodeId()
		sink = d.NodeId()
		sink = d.NodeId()
	})
	require.Zero(t, allocs, "decoding cached NodeIds allocates")
	_ = sink
}

// TestCacheNodeIdsSameResults checks that the cache changes no decoded value: null and
// empty String identifiers stay apart, identifiers that share a slot or are too long to
// cache decode to their own bytes, and errors are the same.
func TestCacheNodeIdsSameResults(t *testing.T) {
	var ids []codec.NodeId
	for i := range 50 {
		ids = append(ids, codec.NewStringNodeId(1, fmt.Sprintf("node-%d", i)))
	}
	ids = append(ids,
		codec.NewStringNodeId(1, ""),
		codec.NewStringNodeId(1, codec.EmptyString),
		codec.NewOpaqueNodeId(1, nil),
		codec.NewOpaqueNodeId(1, []byte{}),
		codec.NewStringNodeId(1, string(bytes.Repeat([]byte("x"), 500))),
	)
	wire := binEncodeNodeIds(ids...)
	plain := codec.NewDecoder(wire)
	cached := codec.NewDecoder(nil)
	cached.CacheNodeIds(4) // few slots: most identifiers evict each other
	for round := range 3 {
		plain.Reset(wire)
		cached.Reset(wire)
		for i := range ids {
			want, got := plain.NodeId(), cached.NodeId()
			require.Equal(t, want, got, "round %d id %d", round, i)
			require.Equal(t, binEncodeNodeIds(want), binEncodeNodeIds(got), "round %d id %d re-encoded", round, i)
		}
		require.NoError(t, cached.Err())
		require.Zero(t, cached.Remaining())
	}

	truncated := wire[:len(wire)-3]
	cached.Reset(truncated)
	for range ids {
		cached.NodeId()
	}
	require.ErrorIs(t, cached.Err(), status.BadDecodingError)

	cached.CacheNodeIds(0)
	cached.Reset(wire)
	require.Equal(t, ids[0], cached.NodeId())
}

// TestMessageInto decodes a message into a spare of its type (reused, with every field
// overwritten) and one of another type (not used).
func TestMessageInto(t *testing.T) {
	encode := func(s codec.Structure) []byte {
		e := codec.NewEncoder(nil)
		e.Message(s)
		require.NoError(t, e.Err())
		return bytes.Clone(e.Bytes())
	}
	big := &binStruct{ID: 1, Name: "first", Value: codec.StringVariant("a long value")}
	small := &binStruct{ID: 2}
	d := codec.NewDecoder(encode(big))
	spare := d.Message()
	require.NoError(t, d.Err())
	require.Equal(t, big, spare)

	d.Reset(encode(small))
	got := d.MessageInto(spare)
	require.NoError(t, d.Err())
	require.Same(t, spare, got)
	require.Equal(t, small, got, "a field of the earlier message survived")

	wrong := &jsonPoint{}
	d.Reset(encode(big))
	got = d.MessageInto(wrong)
	require.NoError(t, d.Err())
	require.NotSame(t, codec.Structure(wrong), got)
	require.Equal(t, big, got)

	d.Reset(encode(big))
	got = d.MessageInto(nil)
	require.NoError(t, d.Err())
	require.Equal(t, big, got)

	// An unknown type is BadServiceUnsupported with or without a spare; trailing bytes
	// are BadDecodingError.
	unknown := binEncodeNodeIds(codec.NewNumericNodeId(binNS, 9999))
	d.Reset(unknown)
	require.Nil(t, d.MessageInto(spare))
	require.ErrorIs(t, d.Err(), status.BadServiceUnsupported)
	d.Reset(append(encode(small), 0))
	require.Nil(t, d.MessageInto(spare))
	require.ErrorIs(t, d.Err(), status.BadDecodingError)
}

// binFuzzCachedNodeIds decodes data as a run of NodeIds with and without the identifier
// cache, twice (the second pass hits the cache): the values, their encodings and the
// error must be the same.
func binFuzzCachedNodeIds(t *testing.T, data []byte) {
	// One cache that evicts at once, one that grows from its first slots first.
	for _, n := range []int{2, 64} {
		binFuzzCachedNodeIdsIn(t, data, n)
	}
}

func binFuzzCachedNodeIdsIn(t *testing.T, data []byte, n int) {
	plain := codec.NewDecoder(nil)
	cached := codec.NewDecoder(nil)
	cached.CacheNodeIds(n)
	for range 2 {
		plain.Reset(data)
		cached.Reset(data)
		for plain.Remaining() > 0 && plain.Err() == nil {
			want, got := plain.NodeId(), cached.NodeId()
			if want != got || !bytes.Equal(binEncodeNodeIds(want), binEncodeNodeIds(got)) {
				t.Fatalf("cached decode %v, plain %v", got, want)
			}
		}
		if plain.Err() != cached.Err() || plain.Remaining() != cached.Remaining() {
			t.Fatalf("cached decode ends with %v, %d left; plain %v, %d left", cached.Err(), cached.Remaining(), plain.Err(), plain.Remaining())
		}
	}
}
