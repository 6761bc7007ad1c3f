package ua

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

func TestRequestHeaderOf(t *testing.T) {
	h := RequestHeader{AuthenticationToken: codec.NewNumericNodeId(0, 7), RequestHandle: 42, TimeoutHint: 500}
	require.Equal(t, h, RequestHeaderOf(&QueryFirstRequest{RequestHeader: h}))
	require.Equal(t, h, RequestHeaderOf(&ReadRequest{RequestHeader: h, MaxAge: 1}))
}
