package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/admission"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/pipeline"
)

// busyManager serves one namespace whose Reads hold the worker for a millisecond each, as
// a manager doing blocking device I/O does; every item reads as Int32 7.
type busyManager struct{ calls atomic.Int32 }

func (m *busyManager) Namespaces() []string { return []string{"urn:uastack:test:busy"} }

func (m *busyManager) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	m.calls.Add(1)
	time.Sleep(time.Millisecond)
	for i := range op.Results {
		op.Results[i] = codec.DataValue{Value: codec.Int32Variant(7)}
	}
	done()
}

// TestAdmissionRequestFlood: one session keeps 200 Reads of a blocking manager in
// flight (two workers, a millisecond each: the queue stays full) while another session
// reads the same manager one Read at a time. With SharedOnly (one FIFO, the control)
// each legitimate Read waits behind the flood's queue or is refused; with FairShare and
// Balanced the owners take turns, so it waits for at most the job in progress and one
// of the flooder's.
//
// Not parallel: it measures latencies, which other tests' work would distort.
func TestAdmissionRequestFlood(t *testing.T) {
	medians := map[string]time.Duration{}
	for _, profile := range []string{"SharedOnly", "FairShare", "Balanced"} {
		m := &busyManager{}
		ps := startPipeline(t, m, func(c *config.Config) {
			c.Limits.IsolationProfile = profile
			c.Limits.MinRequestThreadCount, c.Limits.MaxRequestThreadCount = 1, 2
			c.Limits.MaxQueuedRequestCount = 200
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		flooder, err := noneChannel(ctx, "127.0.0.2", ps.url)
		require.NoError(t, err)
		token, err := anonymousSession(ctx, flooder)
		require.NoError(t, err)
		stop := make(chan struct{})
		var flood sync.WaitGroup
		var busyAnswers atomic.Int32
		node := codec.NewNumericNodeId(ps.slowNS, 1)
		for range 200 {
			flood.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, err := flooder.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: token},
						NodesToRead: []ua.ReadValueId{{NodeId: node, AttributeId: 13}}})
					if errors.Is(err, status.BadServerTooBusy) {
						busyAnswers.Add(1)
						time.Sleep(5 * time.Millisecond) // rude, but not spinning on the test's processors
					} else if err != nil {
						return
					}
				}
			})
		}
		require.Eventually(t, func() bool { return ps.srv.pipe.Queue().Queued(pipeline.StageService) > 100 }, 10*time.Second, time.Millisecond)

		var latencies []time.Duration
		refused, reads := 0, 20
		if profile == "SharedOnly" {
			reads = 3 // each waits for the whole queue
		}
		for i := range reads {
			start := time.Now()
			resp, err := ps.read(ctx, ps.slowNS, uint32(i+1), 0)
			latencies = append(latencies, time.Since(start))
			if errors.Is(err, status.BadServerTooBusy) {
				refused++
				continue
			}
			requireReadGood(t, resp, err)
		}
		queued := ps.srv.pipe.Queue().Queued(pipeline.StageService)
		close(stop)
		flood.Wait()
		_ = flooder.Close()
		cancel()
		slices.Sort(latencies)
		medians[profile] = latencies[len(latencies)/2]
		t.Logf("%s: legitimate Reads: median %v, max %v, %d of %d refused; flood: %d refused, %d queued at the end",
			profile, latencies[len(latencies)/2], latencies[len(latencies)-1], refused, reads, busyAnswers.Load(), queued)
		if profile == "SharedOnly" {
			require.True(t, refused > 0 || latencies[len(latencies)/2] > 50*time.Millisecond,
				"the control: the flood does delay or refuse a client that shares its FIFO")
			continue
		}
		require.Zero(t, refused, "%s: no legitimate Read is refused", profile)
		require.Less(t, latencies[len(latencies)/2], 25*time.Millisecond, "%s: the legitimate client takes its turns", profile)
	}
	require.Less(t, 4*medians["Balanced"], medians["SharedOnly"], "turns beat the FIFO: %v", medians)
}

// TestAdmissionParkedRequests: a session parks Reads in a manager that holds them
// (limits.maxParkedRequestCount 4) up to the stage's capacity and is then refused
// BadServerTooBusy with a RetryAfterMs hint; a second session still parks one on the
// fair-share headroom, a third on the bootstrap reserve; once the manager answers, all
// parked Reads succeed and the stage is empty again.
func TestAdmissionParkedRequests(t *testing.T) {
	t.Parallel()
	m := &slowManager{release: make(chan struct{})}
	ps := startPipeline(t, m, func(c *config.Config) { c.Limits.MaxParkedRequestCount = 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type session struct {
		ch    *uasc.ClientChannel
		token codec.NodeId
	}
	open := func(source string) session {
		ch, err := noneChannel(ctx, source, ps.url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ch.Close() })
		token, err := anonymousSession(ctx, ch)
		require.NoError(t, err)
		return session{ch, token}
	}
	var parked sync.WaitGroup
	errs := make(chan error, 16)
	park := func(s session) {
		parked.Go(func() {
			_, err := s.ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: s.token},
				NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(ps.slowNS, 1), AttributeId: 13}}})
			errs <- err
		})
	}
	refusedNow := func(s session) time.Duration {
		resp, err := s.ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: s.token},
			NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(ps.slowNS, 1), AttributeId: 13}}})
		require.ErrorIs(t, err, status.BadServerTooBusy)
		return busyHint(resp)
	}
	parkedNow := func() int { return ps.srv.admission.Stats().Stages[admission.StageParked].Used }

	flooder := session{ps.ch, ps.token}
	for i := range 4 {
		park(flooder)
		require.Eventually(t, func() bool { return parkedNow() == i+1 }, 5*time.Second, time.Millisecond)
	}
	require.Positive(t, refusedNow(flooder), "a lone session holds the configured capacity, no more")
	second, third, fourth := open("127.0.0.2"), open("127.0.0.3"), open("127.0.0.4")
	park(second)
	require.Eventually(t, func() bool { return parkedNow() == 5 }, 5*time.Second, time.Millisecond, "the headroom")
	park(third)
	require.Eventually(t, func() bool { return parkedNow() == 6 }, 5*time.Second, time.Millisecond, "the bootstrap reserve")
	require.Positive(t, refusedNow(fourth), "the stage is full")
	rej := ps.srv.admission.Stats().Stages[admission.StageParked].Rejections
	require.Equal(t, uint64(1), rej[admission.OwnerLimit])
	require.Equal(t, uint64(1), rej[admission.Capacity])

	close(m.release)
	parked.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return parkedNow() == 0 }, 5*time.Second, time.Millisecond, "answered requests give their units back")
}
