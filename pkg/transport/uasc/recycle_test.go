package uasc

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
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

// TestRecycleRepeat sends requests that repeat the last recycled one but for the
// RequestHeader's Timestamp and RequestHandle: the handler gets the recycled value with
// this request's two fields, not a decode. A request the handler keeps is not handed out
// again, and a repeat of it is decoded.
func TestRecycleRepeat(t *testing.T) {
	type sighting struct {
		msg      codec.Structure
		handle   uint32
		stamp    codec.DateTime
		repeated bool // not decoded: the reading goroutine's own record
	}
	seen := make(chan sighting, 8)
	ts := startServerWith(t, nil, func(_ context.Context, r Request) {
		m := r.Message.(*ua.ReadRequest)
		seen <- sighting{r.Message, m.RequestHeader.RequestHandle, m.RequestHeader.Timestamp, r.Channel.spare.repeated}
		resp := &ua.ReadResponse{ResponseHeader: ua.ResponseHeader{RequestHandle: m.RequestHeader.RequestHandle}}
		for _, n := range m.NodesToRead {
			resp.Results = append(resp.Results, codec.DataValue{Value: codec.StringVariant(n.IndexRange)})
		}
		_ = r.Respond(resp)
		if m.NodesToRead[0].IndexRange != "keep" {
			r.Recycle()
		}
	})
	cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	send := func(handle uint32, stamp codec.DateTime, ranges ...string) sighting {
		t.Helper()
		req := &ua.ReadRequest{RequestHeader: ua.RequestHeader{Timestamp: stamp, RequestHandle: handle, TimeoutHint: 5000}}
		for _, r := range ranges {
			req.NodesToRead = append(req.NodesToRead, ua.ReadValueId{NodeId: codec.NewStringNodeId(1, "n"), AttributeId: 13, IndexRange: r})
		}
		m, err := cc.Request(ctx, req)
		require.NoError(t, err)
		resp := m.(*ua.ReadResponse)
		require.Equal(t, handle, resp.ResponseHeader.RequestHandle)
		require.Len(t, resp.Results, len(ranges))
		for i, r := range ranges {
			require.Equal(t, codec.StringVariant(r), resp.Results[i].Value)
		}
		got := <-seen
		require.Equal(t, handle, got.handle)
		require.Equal(t, stamp, got.stamp)
		return got
	}

	first := send(1, 100, "a", "b")
	require.False(t, first.repeated)
	for i, tc := range []struct {
		handle   uint32
		stamp    codec.DateTime
		ranges   []string
		repeated bool
	}{
		{2, 200, []string{"a", "b"}, true},
		{3, 200, []string{"a", "b"}, true}, // the same Timestamp
		{4, 0, []string{"a", "c"}, false},  // decoded into the spare; after a miss, not copied
		{5, 1, []string{"a", "c"}, false},  // so decoded again, and copied
		{6, 1, []string{"a", "c"}, true},
		{7, 2, []string{"keep"}, false},
	} {
		got := send(tc.handle, tc.stamp, tc.ranges...)
		require.Same(t, first.msg, got.msg, "request %d", i)
		require.Equal(t, tc.repeated, got.repeated, "request %d", i)
	}
	kept := first.msg
	again := send(8, 2, "keep")
	require.NotSame(t, kept, again.msg, "a request the handler kept was handed out again")
	require.False(t, again.repeated)
	require.False(t, send(9, 4, "a", "c").repeated, "decoded: the spare was kept by the handler")
	require.False(t, send(10, 4, "a", "c").repeated, "not copied: one miss before")
	require.True(t, send(11, 4, "a", "c").repeated)

	// Every miss against a copied body doubles the requests that are not copied after it:
	// 1 after (x,0), 3 after (x,1), 7 after the first z. So the first z and the six after
	// it are not copied, the eighth is, and the ninth is the first repeat.
	for i := range 3 {
		send(uint32(20+2*i), 5, "x", strconv.Itoa(i))
		send(uint32(21+2*i), 5, "y", strconv.Itoa(i))
	}
	var waits []bool
	for i := range 20 {
		waits = append(waits, send(uint32(40+i), 6, "z").repeated)
	}
	require.Equal(t, 8, slices.Index(waits, true))
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
