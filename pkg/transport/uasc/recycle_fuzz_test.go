package uasc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

// encodeMessage returns the body of a service message: its type's NodeId and msg.
func encodeMessage(t testing.TB, msg codec.Structure) []byte {
	t.Helper()
	e := codec.NewEncoder(nil)
	e.Message(msg)
	require.NoError(t, e.Err())
	return append([]byte(nil), e.Bytes()...)
}

// FuzzRecycleRepeat hands a channel's decode path a body a and a body b that is a with
// patch written at off, in the order a, b, b, b, a, a, a, recycling every request as the
// inline Read does, for a handler that is a Repeater and for one that is not: whether a
// request is decoded or taken as the repeat of the recycled one, the handler gets what a
// fresh decode of its body gives, a body the decoder refuses is refused, and only a
// Repeater gets repeats.
func FuzzRecycleRepeat(f *testing.F) {
	read := func(token codec.NodeId, handle uint32, node codec.NodeId) []byte {
		return encodeMessage(f, &ua.ReadRequest{
			RequestHeader:      ua.RequestHeader{AuthenticationToken: token, Timestamp: 133_000_000_000_000_000, RequestHandle: handle, TimeoutHint: 1000},
			TimestampsToReturn: ua.TimestampsToReturnBoth,
			NodesToRead:        []ua.ReadValueId{{NodeId: node, AttributeId: 13}},
		})
	}
	tokens := []codec.NodeId{
		codec.NewNumericNodeId(0, 7),
		codec.NewOpaqueNodeId(1, []byte("0123456789abcdef0123456789abcdef")),
		codec.NewStringNodeId(2, "session"),
		codec.NewGuidNodeId(1, codec.Guid{Data1: 9}),
	}
	for i, tok := range tokens {
		a := read(tok, 1, codec.NewNumericNodeId(0, 2259))
		b := read(tok, uint32(i+2), codec.NewNumericNodeId(0, 2259))
		// The first byte that differs, and the patch that makes a into b from there.
		at := 0
		for a[at] == b[at] {
			at++
		}
		f.Add(a, b[at:at+4], uint16(at))
		f.Add(a, []byte{0x55}, uint16(len(a)-1))   // the last node's id
		f.Add(a, []byte{0xff, 0xff}, uint16(at-1)) // the byte before the Timestamp
	}
	f.Add(encodeMessage(f, &ua.BrowseRequest{}), []byte{1}, uint16(3))
	f.Add([]byte{1, 0, 0x77, 2}, []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, a, patch []byte, off uint16) {
		if len(a) == 0 || len(a) > 4*maxRecycledBody {
			return
		}
		b := append([]byte(nil), a...)
		copy(b[int(off)%len(a):], patch)
		for _, repeats := range []bool{true, false} {
			rc := recycled{repeats: repeats}
			var d codec.Decoder
			d.CacheNodeIds(decodeCachedIDs)
			for _, body := range [][]byte{a, b, b, b, a, a, a} {
				fresh := codec.NewDecoder(body)
				want := fresh.Message()
				in := append([]byte(nil), body...) // the chunk, cleared after Handle
				got, repeated, err := rc.decode(in, &d)
				require.Equal(t, statusOf(fresh.Err()), statusOf(err), "%v / %v", fresh.Err(), err)
				if err != nil {
					continue
				}
				require.Equal(t, encodeMessage(t, want), encodeMessage(t, got), "repeated %v", repeated)
				require.False(t, repeated && !repeats, "repeated without the handler's consent")
				rc.handling(in, got, repeated)
				rc.recycle(got, &d)
				rc.handled()
				clear(in)
			}
		}
	})
}

// TestRecycleOther hands back a message other than the one being handled: its body is not
// the one kept, so a repeat of the request being handled is decoded.
func TestRecycleOther(t *testing.T) {
	body := encodeMessage(t, &ua.ReadRequest{NodesToRead: []ua.ReadValueId{{AttributeId: 13}}})
	rc := recycled{repeats: true}
	var d codec.Decoder
	m, repeated, err := rc.decode(body, &d)
	require.NoError(t, err)
	require.False(t, repeated)
	rc.handling(body, m, repeated)
	rc.recycle(m, &d)
	rc.handled()
	m, repeated, err = rc.decode(body, &d)
	require.NoError(t, err)
	require.True(t, repeated)
	rc.handling(body, m, repeated)
	other := &ua.ReadRequest{}
	rc.recycle(other, &d)
	rc.handled()
	got, repeated, err := rc.decode(body, &d)
	require.NoError(t, err)
	require.False(t, repeated)
	require.Same(t, other, got, "decoded into the message handed back")
	require.Len(t, got.(*ua.ReadRequest).NodesToRead, 1)
}
