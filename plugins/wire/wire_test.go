package wire

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

func sampleBatch(t testing.TB) []byte {
	var b Batch
	require.NoError(t, b.Add(&nodemgr.Frame{Kind: nodemgr.KindHealth, ID: 1}))
	require.NoError(t, b.Add(&nodemgr.Frame{Kind: nodemgr.KindRead, ID: 2, Body: &nodemgr.ReadOp{
		Items: []ua.ReadValueId{{NodeId: codec.NewStringNodeId(2, "a"), AttributeId: 13}}}}))
	return append([]byte(nil), b.Bytes()...)
}

func TestBatchRoundTrip(t *testing.T) {
	batch := sampleBatch(t)
	n, err := Count(batch)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	var kinds []nodemgr.Kind
	require.NoError(t, Split(batch, func(i int, b []byte) {
		var f nodemgr.Frame
		require.NoError(t, f.Decode(b, Limits))
		require.Equal(t, uint32(i+1), f.ID)
		kinds = append(kinds, f.Kind)
	}))
	require.Equal(t, []nodemgr.Kind{nodemgr.KindHealth, nodemgr.KindRead}, kinds)

	// ResetTo builds in the caller's memory, and an empty batch is its count alone.
	var b Batch
	own := make([]byte, 0, 256)
	b.ResetTo(own)
	require.NoError(t, b.Add(&nodemgr.Frame{Kind: nodemgr.KindHealth}))
	require.Same(t, &own[:1][0], &b.Bytes()[0])
	b.Reset()
	require.Equal(t, []byte{0, 0, 0, 0}, b.Bytes())
	// A frame that cannot be encoded leaves the batch as it was.
	require.Error(t, b.Add(&nodemgr.Frame{Kind: nodemgr.KindRead, Body: &nodemgr.WriteOp{}}))
	require.Equal(t, 0, b.Len())
}

func TestMalformed(t *testing.T) {
	good := sampleBatch(t)
	tooMany := binary.LittleEndian.AppendUint32(nil, MaxFrames+1)
	for name, b := range map[string][]byte{
		"short":       {1, 0},
		"count past":  binary.LittleEndian.AppendUint32(nil, 1),
		"length past": append(binary.LittleEndian.AppendUint32(nil, 1), 9, 0, 0, 0, 1),
		"bytes after": append(append([]byte(nil), good...), 0),
		"length cut":  append(binary.LittleEndian.AppendUint32(nil, 1), 9, 0),
		"too many":    tooMany,
		"huge length": append(binary.LittleEndian.AppendUint32(nil, 1), 0xff, 0xff, 0xff, 0xff),
	} {
		_, err := Count(b)
		require.ErrorIs(t, err, status.BadDecodingError, name)
		called := false
		require.ErrorIs(t, Split(b, func(int, []byte) { called = true }), status.BadDecodingError, name)
		require.False(t, called, name)
	}
}

func TestParseLog(t *testing.T) {
	level, msg, attrs := ParseLog([]byte(`{"time":"x","level":"WARN","msg":"hot","temp":81.5,"unit":"C"}` + "\n"))
	require.Equal(t, "WARN", level.String())
	require.Equal(t, "hot", msg)
	require.Len(t, attrs, 2)
	require.Equal(t, "temp", attrs[0].Key)
	require.Equal(t, "unit", attrs[1].Key)
	level, msg, attrs = ParseLog([]byte("panic: boom\n"))
	require.Equal(t, "INFO", level.String())
	require.Equal(t, "panic: boom", msg)
	require.Empty(t, attrs)
}

// FuzzSplit: Count and Split never panic, agree, and hand out frames that lie within the
// batch one after the other.
func FuzzSplit(f *testing.F) {
	f.Add(sampleBatch(f))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{2, 0, 0, 0, 1, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Count(b)
		got := 0
		serr := Split(b, func(i int, frame []byte) {
			if i != got {
				t.Fatalf("frame %d after %d", i, got)
			}
			got++
			var fr nodemgr.Frame
			_ = fr.Decode(frame, Limits)
		})
		if (err == nil) != (serr == nil) {
			t.Fatalf("Count %v, Split %v", err, serr)
		}
		if err == nil && got != n {
			t.Fatalf("Count %d, Split %d", n, got)
		}
		ParseLog(b)
	})
}
