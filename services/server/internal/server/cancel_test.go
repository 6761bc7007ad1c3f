package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
)

// TestCancel parks a Read with handle 7 in a blocking node manager and queues a second
// Read with handle 7 and one with handle 8 behind it (one worker). Cancel(7) answers
// both handle-7 Reads with BadRequestCancelledByClient and CancelCount 2; the queued one
// never reaches the manager, the handle-8 Read succeeds once the manager lets go, and a
// second Cancel(7) finds nothing. A Cancel without a session is refused.
func TestCancel(t *testing.T) {
	t.Parallel()
	m := &slowManager{hold: make(chan struct{})}
	ps := startPipeline(t, m, func(c *config.Config) {
		c.Limits.MinRequestThreadCount = 1
		c.Limits.MaxRequestThreadCount = 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	type result struct {
		resp codec.Structure
		err  error
	}
	parked, queued, other := make(chan result, 1), make(chan result, 1), make(chan result, 1)
	go func() { r, err := ps.read(ctx, ps.slowNS, 7, 0); parked <- result{r, err} }()
	require.Eventually(t, func() bool { return m.inFlight.Load() == 1 }, 5*time.Second, time.Millisecond)
	go func() { r, err := ps.read(ctx, ps.slowNS, 7, 0); queued <- result{r, err} }()
	go func() { r, err := ps.read(ctx, ps.slowNS, 8, 0); other <- result{r, err} }()
	require.Eventually(t, func() bool { q, _, _ := ps.srv.pipe.Queue().Stats(); return q == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, 3, ps.srv.pipe.Outstanding().Len())

	resp, err := ps.ch.Request(ctx, &ua.CancelRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: ps.token, RequestHandle: 100},
		RequestHandle: 7,
	})
	require.NoError(t, err)
	cr, ok := resp.(*ua.CancelResponse)
	require.True(t, ok, "response is %T", resp)
	require.Equal(t, uint32(100), cr.ResponseHeader.RequestHandle)
	require.Equal(t, uint32(2), cr.CancelCount)
	for _, c := range []chan result{parked, queued} {
		r := <-c
		requirePipelineFault(t, r.resp, r.err, status.BadRequestCancelledByClient, 7)
	}

	close(m.hold)
	r := <-other
	requireReadGood(t, r.resp, r.err)
	require.Eventually(t, func() bool { return ps.srv.pipe.Outstanding().Len() == 0 }, 5*time.Second, time.Millisecond,
		"answered requests leave the registry")
	require.Equal(t, int32(2), m.calls.Load(), "the cancelled queued Read never reached the manager")

	resp, err = ps.ch.Request(ctx, &ua.CancelRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: ps.token, RequestHandle: 101},
		RequestHandle: 7,
	})
	require.NoError(t, err)
	require.Equal(t, uint32(0), resp.(*ua.CancelResponse).CancelCount)

	resp, err = ps.ch.Request(ctx, &ua.CancelRequest{RequestHeader: ua.RequestHeader{RequestHandle: 102}, RequestHandle: 7})
	requirePipelineFault(t, resp, err, status.BadSessionIdInvalid, 102)
}
