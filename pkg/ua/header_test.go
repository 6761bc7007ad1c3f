package ua

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

func TestRequestHeaderOf(t *testing.T) {
	h := RequestHeader{AuthenticationToken: codec.NewNumericNodeId(0, 7), RequestHandle: 42, TimeoutHint: 500}
	require.Equal(t, h, RequestHeaderOf(&QueryFirstRequest{RequestHeader: h}))
	require.Equal(t, h, RequestHeaderOf(&ReadRequest{RequestHeader: h, MaxAge: 1}))
	// A structure that is not a Request: the header is decoded from its encoding.
	require.Equal(t, h, RequestHeaderOf(hidden{&ReadRequest{RequestHeader: h, MaxAge: 1}}))
}

// hidden is a structure that starts with a RequestHeader but does not say so.
type hidden struct{ codec.Structure }

// TestHeaders checks Header against the wire: the header of every generated service
// message is the one its encoding starts with.
func TestHeaders(t *testing.T) {
	n := 0
	for _, tc := range allTypes {
		r := newRand(tc.name)
		v := tc.random(r, 2)
		var hdr codec.Structure
		switch m := v.(type) {
		case Request:
			hdr = m.Header()
		case Response:
			hdr = m.Header()
		default:
			continue
		}
		n++
		msg, h := encodeBinary(t, v), encodeBinary(t, hdr)
		require.True(t, bytes.HasPrefix(msg, h), "%s does not start with its header", tc.name)
	}
	require.Greater(t, n, 70, "service messages with a header")
}
