package uasc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// panicValue is a Structure of another package whose binary encoding panics, as a
// faulty node manager's value may.
type panicValue struct{}

var panicValueType = &codec.TypeInfo{Name: "PanicValue", DataType: codec.NewNumericNodeId(1, 9001),
	BinaryEncoding: codec.NewNumericNodeId(1, 9002), New: func() codec.Structure { return new(panicValue) }}

func (*panicValue) EncodeBinary(*codec.Encoder)   { panic("a value that cannot be encoded") }
func (*panicValue) DecodeBinary(*codec.Decoder)   {}
func (*panicValue) EncodeJSON(*codec.JSONEncoder) {}
func (*panicValue) DecodeJSON(*codec.JSONDecoder) {}
func (*panicValue) TypeInfo() *codec.TypeInfo     { return panicValueType }

// TestEncodePanic: a response whose encoding panics, in its first chunk or after
// several, is answered with a ServiceFault BadInternalError carrying the request's
// handle, Respond reports an *EncodePanic with the stack, and the channel goes on: its
// next request and another channel's are answered, with and without security (the
// encoding runs before the chunks are sealed).
func TestEncodePanic(t *testing.T) {
	t.Parallel()
	reported := make(chan error, 16)
	ts := startServerWith(t, nil, func(_ context.Context, r Request) {
		m := r.Message.(*ua.ReadRequest)
		resp := &ua.ReadResponse{ResponseHeader: ua.ResponseHeader{RequestHandle: m.RequestHeader.RequestHandle}}
		for _, n := range m.NodesToRead {
			v := codec.StringVariant(n.IndexRange)
			switch n.IndexRange {
			case "panic":
				v = codec.MustVariant(&panicValue{})
			case "big":
				v = codec.StringVariant(strings.Repeat("x", 300_000))
			}
			resp.Results = append(resp.Results, codec.DataValue{Value: v})
		}
		if err := r.Respond(resp); err != nil {
			reported <- err
		}
	})
	for _, c := range []combo{{policy.URINone, ua.MessageSecurityModeNone}, {policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}} {
		t.Run(c.name(), func(t *testing.T) {
			cc, err := dialChannel(t, ts.addr, clientConfig(c))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for handle, before := range []string{"small", "big"} {
				handle := uint32(handle + 1)
				resp, err := cc.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{RequestHandle: handle},
					NodesToRead: []ua.ReadValueId{{IndexRange: before}, {IndexRange: "panic"}}})
				require.ErrorIs(t, err, status.BadInternalError)
				f, ok := resp.(*ua.ServiceFault)
				require.True(t, ok, "got %T", resp)
				require.Equal(t, handle, f.ResponseHeader.RequestHandle)
				var ep *EncodePanic
				require.True(t, errors.As(<-reported, &ep))
				require.Equal(t, "ReadResponse", ep.Type)
				require.Equal(t, "a value that cannot be encoded", ep.Value)
				require.Contains(t, string(ep.Stack), "panicValue).EncodeBinary")
				read(t, cc, 3, "after", "it")
			}
			requireServing(t, ts)
		})
	}
}
