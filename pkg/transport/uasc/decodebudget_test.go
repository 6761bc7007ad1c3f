package uasc

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// rawWrite is a WriteRequest whose body is given bytes.
type rawWrite struct{ b []byte }

var rawWriteType = &codec.TypeInfo{Name: "rawWrite", BinaryEncoding: codec.NewNumericNodeId(0, id.WriteRequest_Encoding_DefaultBinary)}

func (r *rawWrite) EncodeBinary(e *codec.Encoder)   { e.Raw(r.b) }
func (r *rawWrite) DecodeBinary(d *codec.Decoder)   {}
func (r *rawWrite) EncodeJSON(e *codec.JSONEncoder) {}
func (r *rawWrite) DecodeJSON(d *codec.JSONDecoder) {}
func (r *rawWrite) TypeInfo() *codec.TypeInfo       { return rawWriteType }

// TestRequestDecodeBudget sends a WriteRequest of one WriteValue whose value is an array of
// 200,000 DataValues with an empty mask (200 kB on the wire, 17.6 MB decoded): within
// ServerConfig.Decode's budget it reaches the handler, beyond it the answer is a
// ServiceFault BadEncodingLimitsExceeded and the channel serves the next request.
func TestRequestDecodeBudget(t *testing.T) {
	t.Parallel()
	e := codec.NewEncoder(nil)
	(&ua.RequestHeader{RequestHandle: 3}).EncodeBinary(e)
	e.Int32(1)                                                     // NodesToWrite
	e.Raw([]byte{0x00, 0x55, 13, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}) // NodeId, AttributeId, IndexRange
	e.Raw([]byte{0x01, 0x80 | byte(codec.TypeDataValue)})          // DataValue: Value, an array of DataValues
	e.Int32(200000)
	e.Raw(bytes.Repeat([]byte{0x00}, 200000))
	body := e.Bytes()

	for _, tc := range []struct {
		multiple int
		want     status.Code
	}{
		{0, status.BadEncodingLimitsExceeded}, // the default, 12
		{100, status.BadServiceUnsupported},   // decoded: echoHandler answers it so
	} {
		ts := startServer(t, func(c *ServerConfig) { c.Decode.MaxDecodeMultiple = tc.multiple })
		cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cc.Request(ctx, &rawWrite{body})
		cancel()
		require.ErrorIs(t, err, tc.want, "multiple %d", tc.multiple)
		f, ok := resp.(*ua.ServiceFault)
		require.True(t, ok, "response is %T", resp)
		require.Equal(t, tc.want, f.ResponseHeader.ServiceResult)
		read(t, cc, 4, "after")
	}
}

// TestResponseNoDecodeBudget checks that a client channel decodes a response whatever its
// ratio of memory to wire bytes: 300,000 null DataValues take 300 kB on the wire and
// 26 MB decoded, and a conforming server may send them.
func TestResponseNoDecodeBudget(t *testing.T) {
	t.Parallel()
	const n = 300000
	ts := startServerWith(t, nil, func(_ context.Context, r Request) {
		m := r.Message.(*ua.ReadRequest)
		_ = r.Respond(&ua.ReadResponse{ResponseHeader: ua.ResponseHeader{RequestHandle: m.RequestHeader.RequestHandle},
			Results: make([]codec.DataValue, n)})
	})
	cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cc.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{RequestHandle: 5}})
	require.NoError(t, err)
	require.Len(t, resp.(*ua.ReadResponse).Results, n)
}
