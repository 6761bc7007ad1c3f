package ua

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

// encodeMessage returns v encoded as a message: its encoding's NodeId, then v.
func encodeMessage(t testing.TB, v codec.Structure) []byte {
	t.Helper()
	e := codec.NewEncoder(nil)
	e.Message(v)
	require.NoError(t, e.Err())
	return append([]byte(nil), e.Bytes()...)
}

// TestRequestStamp checks RequestStampOffset and DecodeStamp against the generated codec
// for every request type, with random values: the stamp found is the one the generated
// decoder reads, and a request whose Timestamp and RequestHandle change encodes to the
// same bytes but for those at the stamp.
func TestRequestStamp(t *testing.T) {
	t.Parallel()
	n := 0
	for _, tc := range allTypes {
		r := newRand(tc.name)
		for i := range 4 {
			v := tc.random(r, 2)
			req, ok := v.(Request)
			if !ok {
				break
			}
			if i == 0 {
				n++
			}
			msg := encodeMessage(t, v)
			var d codec.Decoder
			at, ok := RequestStampOffset(&d, msg)
			require.True(t, ok, "%s", tc.name)

			fresh := codec.NewDecoder(msg)
			decoded := fresh.Message()
			require.NoError(t, fresh.Err(), "%s", tc.name)
			want := decoded.(Request).Header()
			var got RequestHeader
			d.Reset(msg[at : at+RequestStampLen])
			got.DecodeStamp(&d)
			require.NoError(t, d.Err())
			require.Equal(t, want.Timestamp, got.Timestamp, "%s", tc.name)
			require.Equal(t, want.RequestHandle, got.RequestHandle, "%s", tc.name)

			h := req.Header()
			h.Timestamp, h.RequestHandle = codec.DateTime(r.Int64N(1<<60)), r.Uint32()
			again := encodeMessage(t, v)
			require.Len(t, again, len(msg), "%s", tc.name)
			require.Equal(t, msg[:at], again[:at], "%s: bytes before the stamp", tc.name)
			require.Equal(t, msg[at+RequestStampLen:], again[at+RequestStampLen:], "%s: bytes after the stamp", tc.name)
			d.Reset(again[at : at+RequestStampLen])
			got.DecodeStamp(&d)
			require.Equal(t, h.Timestamp, got.Timestamp, "%s", tc.name)
			require.Equal(t, h.RequestHandle, got.RequestHandle, "%s", tc.name)
		}
	}
	require.Greater(t, n, 30, "request types")
}

// TestRequestStampShort refuses messages that end before the stamp does.
func TestRequestStampShort(t *testing.T) {
	t.Parallel()
	msg := encodeMessage(t, &ReadRequest{RequestHeader: RequestHeader{AuthenticationToken: codec.NewStringNodeId(1, "token")}})
	var d codec.Decoder
	at, ok := RequestStampOffset(&d, msg)
	require.True(t, ok)
	for n := range at + RequestStampLen {
		_, ok := RequestStampOffset(&d, msg[:n])
		require.False(t, ok, "%d bytes", n)
	}
	_, ok = RequestStampOffset(&d, msg[:at+RequestStampLen])
	require.True(t, ok)
}

// FuzzRequestStamp finds the stamp in any bytes: it never reaches past them, and when the
// bytes decode as a request, the stamp it finds is that request's Timestamp and
// RequestHandle.
func FuzzRequestStamp(f *testing.F) {
	for _, v := range []codec.Structure{
		&ReadRequest{RequestHeader: RequestHeader{AuthenticationToken: codec.NewNumericNodeId(0, 7), Timestamp: 1, RequestHandle: 2},
			NodesToRead: []ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13}}},
		&BrowseRequest{RequestHeader: RequestHeader{AuthenticationToken: codec.NewOpaqueNodeId(1, []byte("0123456789abcdef")), RequestHandle: 9}},
		&PublishRequest{RequestHeader: RequestHeader{AuthenticationToken: codec.NewGuidNodeId(1, codec.Guid{Data1: 3}), Timestamp: -1}},
		&WriteRequest{RequestHeader: RequestHeader{AuthenticationToken: codec.NewStringNodeId(2, "session")}},
		&ReadResponse{},
	} {
		f.Add(encodeMessage(f, v))
	}
	f.Add([]byte{1, 0, 0x77, 2})
	f.Fuzz(func(t *testing.T, msg []byte) {
		var d codec.Decoder
		at, ok := RequestStampOffset(&d, msg)
		if ok && at+RequestStampLen > len(msg) {
			t.Fatalf("stamp at %d of %d bytes", at, len(msg))
		}
		fresh := codec.NewDecoder(msg)
		m := fresh.Message()
		req, isReq := m.(Request)
		if fresh.Err() != nil || !isReq {
			return
		}
		if !ok {
			t.Fatalf("%T decodes but has no stamp", m)
		}
		var got RequestHeader
		d.Reset(msg[at : at+RequestStampLen])
		got.DecodeStamp(&d)
		if got.Timestamp != req.Header().Timestamp || got.RequestHandle != req.Header().RequestHandle {
			t.Fatalf("%T: stamp %v/%d, decoded %v/%d", m, got.Timestamp, got.RequestHandle, req.Header().Timestamp, req.Header().RequestHandle)
		}
	})
}
