package uasc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/status"
)

// TestRecycle answers Reads inline and hands each back with Request.Recycle: the next
// ReadRequest is decoded into the same value, with no field of the earlier one left over;
// a request of another type in between leaves the spare for the next Read.
func TestRecycle(t *testing.T) {
	// The handler reports what it saw: the test must not read a recycled request itself,
	// since the channel decodes the next one into it with no synchronisation the race
	// detector could see (the ordering runs through the TCP connection).
	type sighting struct {
		msg   codec.Structure
		nodes int
	}
	seen := make(chan sighting, 8)
	ts := startServerWith(t, nil, func(_ context.Context, r Request) {
		m, ok := r.Message.(*ua.ReadRequest)
		if ok {
			seen <- sighting{r.Message, len(m.NodesToRead)}
		} else {
			seen <- sighting{msg: r.Message}
		}
		if !ok {
			_ = r.Respond(&ua.ServiceFault{})
			return
		}
		resp := &ua.ReadResponse{ResponseHeader: ua.ResponseHeader{RequestHandle: m.RequestHeader.RequestHandle}}
		for _, n := range m.NodesToRead {
			resp.Results = append(resp.Results, codec.DataValue{Value: codec.StringVariant(n.IndexRange)})
		}
		_ = r.Respond(resp)
		r.Recycle()
	})
	cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)

	read(t, cc, 1, "a", "b", "c")
	first := (<-seen).msg
	read(t, cc, 2, "d") // fewer nodes: a left-over element would show in the echo
	second := <-seen
	require.Same(t, first, second.msg)
	require.Equal(t, 1, second.nodes)

	ctx := context.Background()
	_, err = cc.Request(ctx, &ua.BrowseRequest{})
	require.Error(t, err) // the ServiceFault
	require.IsType(t, &ua.BrowseRequest{}, (<-seen).msg)

	read(t, cc, 3, "e", "f")
	require.Same(t, first, (<-seen).msg, "the spare did not survive a request of another type")
}

// TestResponseTooLarge answers a Read with a response of more chunks than the client
// accepts: the encoding stops taking chunk buffers at the limit, the client gets a
// ServiceFault with BadResponseTooLarge, and the channel carries on.
func TestResponseTooLarge(t *testing.T) {
	ts := startServer(t, nil)
	c, _ := dialUACP(t, ts.addr, uacp.Limits{MaxChunkCount: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, err := Dial(ctx, c, clientConfig(combo{policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}))
	require.NoError(t, err)
	defer cc.Close()
	big := strings.Repeat("z", 300000) // the echo needs five 64 KiB chunks
	req := &ua.ReadRequest{RequestHeader: ua.RequestHeader{RequestHandle: 9}, NodesToRead: []ua.ReadValueId{{IndexRange: big}}}
	cc.neg.MaxSendChunkCount = 0 // the request itself must go out
	_, err = cc.Request(ctx, req)
	require.Equal(t, status.BadResponseTooLarge, statusOf(err), "%v", err)
	read(t, cc, 10, "small")
}
