package drive

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRun keeps 2 × 3 calls of about 1 ms in flight: completions are counted only inside
// the window, every counted one has a latency, and each client is closed.
func TestRun(t *testing.T) {
	t.Parallel()
	var dials, closes atomic.Int32
	dial := func(context.Context) (Call, func(), error) {
		dials.Add(1)
		return func(ctx context.Context) error {
			select {
			case <-time.After(time.Millisecond):
			case <-ctx.Done():
			}
			return nil
		}, func() { closes.Add(1) }, nil
	}
	res, err := Run(context.Background(), dial, Options{Clients: 2, Outstanding: 3, Warmup: 50 * time.Millisecond, Window: 200 * time.Millisecond})
	require.NoError(t, err)
	require.EqualValues(t, 2, dials.Load())
	require.EqualValues(t, 2, closes.Load())
	require.Positive(t, res.Requests)
	require.Len(t, res.Latencies, int(res.Requests))
	// Six in flight, each at least 1 ms: at most 6,000 a second (with slack).
	require.Less(t, res.PerSecond(), 6000.0*1.5)
	require.GreaterOrEqual(t, res.Window, 200*time.Millisecond)

	var sum Result
	sum.Add(res)
	sum.Add(res)
	require.Equal(t, 2*res.Requests, sum.Requests)
	require.InDelta(t, res.PerSecond(), sum.PerSecond(), 1e-9)
}

// TestRunError stops at the first failing call and returns its error.
func TestRunError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	dial := func(context.Context) (Call, func(), error) {
		return func(context.Context) error { return boom }, func() {}, nil
	}
	_, err := Run(context.Background(), dial, Options{Clients: 1, Outstanding: 2, Warmup: 10 * time.Millisecond, Window: 50 * time.Millisecond})
	require.ErrorIs(t, err, boom)

	_, err = Run(context.Background(), func(context.Context) (Call, func(), error) { return nil, nil, boom },
		Options{Clients: 1, Outstanding: 1, Window: time.Millisecond})
	require.ErrorIs(t, err, boom)
}
