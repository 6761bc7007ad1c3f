package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// TestCancelPublish parks a Publish (handle 9) on a subscription that has nothing to
// say for minutes; Cancel(9) answers it with BadRequestCancelledByClient and counts it,
// and a Publish with another handle stays parked.
func TestCancelPublish(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{hold: make(chan struct{})}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hdr := func(handle uint32) ua.RequestHeader {
		return ua.RequestHeader{AuthenticationToken: ps.token, RequestHandle: handle, Timestamp: codec.Now()}
	}
	resp, err := ps.ch.Request(ctx, &ua.CreateSubscriptionRequest{
		RequestHeader: hdr(1), RequestedPublishingInterval: 1000, RequestedMaxKeepAliveCount: 300,
		RequestedLifetimeCount: 1000, PublishingEnabled: true,
	})
	require.NoError(t, err)
	require.IsType(t, &ua.CreateSubscriptionResponse{}, resp)

	type result struct {
		resp codec.Structure
		err  error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	// The first Publish answers at once (the subscription's first cycle); later ones park.
	resp, err = ps.ch.Request(ctx, &ua.PublishRequest{RequestHeader: hdr(2)})
	require.NoError(t, err)
	require.IsType(t, &ua.PublishResponse{}, resp)
	go func() {
		r, err := ps.ch.Request(ctx, &ua.PublishRequest{RequestHeader: hdr(9)})
		first <- result{r, err}
	}()
	go func() {
		r, err := ps.ch.Request(ctx, &ua.PublishRequest{RequestHeader: hdr(10)})
		second <- result{r, err}
	}()

	var count uint32
	require.Eventually(t, func() bool {
		resp, err := ps.ch.Request(ctx, &ua.CancelRequest{RequestHeader: hdr(3), RequestHandle: 9})
		require.NoError(t, err)
		count = resp.(*ua.CancelResponse).CancelCount
		return count > 0
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, uint32(1), count)
	r := <-first
	requirePipelineFault(t, r.resp, r.err, status.BadRequestCancelledByClient, 9)
	select {
	case r := <-second:
		t.Fatalf("the other Publish was answered: %T %v", r.resp, r.err)
	case <-time.After(100 * time.Millisecond):
	}
}
