package server

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/admission"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/telemetry"
)

// TestAdmissionConnectionRate floods the listener from one source with connections
// that send nothing, beyond limits.connectionsPerSecond and its burst: the excess gets
// ERR BadTcpServerTooBusy at once, before anything is read from it and so before any
// crypto work. Meanwhile a new client from another source (bootstrap) and the client of
// a live session (reconnect) connect, open a session and read.
func TestAdmissionConnectionRate(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Limits.ConnectionsPerSecond, c.Limits.ConnectionBurst = 40, 40
		c.Limits.MaxConnectionsPerSource, c.Limits.MaxChannelCount = 0, 5000
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var mu sync.Mutex // guards conns
	var conns []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			_ = nc.Close()
		}
	})
	flood := func(n int) {
		for range n {
			nc, err := dialFrom(ctx, "127.0.0.2", ps.url)
			if err != nil {
				continue // the kernel's backlog overflowed: the flood outran the accept loop
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
		}
	}
	start := time.Now()
	flood(300)
	elapsed := time.Since(start)
	counts := map[status.Code]int{}
	held := 0
	mu.Lock()
	first := append([]net.Conn(nil), conns...)
	mu.Unlock()
	var wg sync.WaitGroup
	var cmu sync.Mutex // guards counts, held
	for _, nc := range first {
		wg.Go(func() {
			code, h := refusalOf(nc, 300*time.Millisecond)
			cmu.Lock()
			defer cmu.Unlock()
			if h {
				held++
			} else {
				counts[code]++
			}
		})
	}
	wg.Wait()
	t.Logf("300 connections at once: %d admitted, refusals %v (0: closed unanswered)", held, counts)
	require.Positive(t, counts[status.BadTcpServerTooBusy], "the excess is told the server is too busy")
	require.LessOrEqual(t, float64(held), 40+40*elapsed.Seconds()+5, "no more than the burst and the refill while the flood ran (%v)", elapsed)
	require.GreaterOrEqual(t, held, 30, "the shared burst is admitted")
	for code := range counts {
		require.Contains(t, []status.Code{0, status.BadTcpServerTooBusy}, code, "only the rate refused")
	}

	// The flood goes on while the legitimate clients connect.
	stop := make(chan struct{})
	var flooding sync.WaitGroup
	flooding.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				flood(10)
			}
		}
	})
	tries, err := legitRead(ctx, "127.0.0.3", ps.url)
	require.NoError(t, err, "a new source is served during the flood")
	t.Logf("new source served after %d tries", tries)
	tries, err = legitRead(ctx, "127.0.0.1", ps.url)
	require.NoError(t, err, "the source of a live session is served during the flood")
	t.Logf("source with a live session served after %d tries", tries)
	close(stop)
	flooding.Wait()
	st := ps.srv.admission.Stats()
	require.Positive(t, st.ConnectionsRateLimited)
	require.Greater(t, st.ConnectionsRateLimited, uint64(counts[status.BadTcpServerTooBusy]), "the flood went on being refused")
}

// TestAdmissionConnectionsPerSource: one source holds connections that send nothing up
// to limits.maxConnectionsPerSource; every further one gets ERR BadTcpNotEnoughResources
// (reason OwnerLimit), while a client from another source is served; once the source
// closes one, it may open one again.
func TestAdmissionConnectionsPerSource(t *testing.T) {
	t.Parallel()
	const perSource = 5
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) { c.Limits.MaxConnectionsPerSource = perSource })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var held []net.Conn
	t.Cleanup(func() {
		for _, nc := range held {
			_ = nc.Close()
		}
	})
	for i := range 3 * perSource {
		nc, err := dialFrom(ctx, "127.0.0.2", ps.url)
		require.NoError(t, err)
		code, h := refusalOf(nc, 200*time.Millisecond)
		if i < perSource {
			require.True(t, h, "connection %d is admitted", i)
			held = append(held, nc)
			continue
		}
		require.False(t, h, "connection %d is refused", i)
		require.Equal(t, status.BadTcpNotEnoughResources, code, "connection %d", i)
		_ = nc.Close()
	}
	rej := ps.srv.admission.Stats().Stages[admission.StageConnection].Rejections
	require.Equal(t, uint64(2*perSource), rej[admission.OwnerLimit])

	_, err := legitRead(ctx, "127.0.0.3", ps.url)
	require.NoError(t, err, "another source is served")

	require.NoError(t, held[0].Close())
	held = held[1:]
	require.Eventually(t, func() bool {
		nc, err := dialFrom(ctx, "127.0.0.2", ps.url)
		if err != nil {
			return false
		}
		if _, h := refusalOf(nc, 100*time.Millisecond); !h {
			_ = nc.Close()
			return false
		}
		held = append(held, nc)
		return true
	}, 5*time.Second, 20*time.Millisecond, "a closed connection gives its slot back")
}

// TestAdmissionHandshakeQueue: a flood of Basic256Sha256 OpenSecureChannel requests takes
// turns at one processor's RSA (limits.maxConcurrentHandshakes=1) with two waiting at
// most (limits.maxQueuedHandshakes=2); the excess is answered with an ERR
// BadTcpServerTooBusy and counted, a None client reads meanwhile, and once the flood is
// over the lane is whole: a secured channel opens at once.
func TestAdmissionHandshakeQueue(t *testing.T) {
	t.Parallel()
	ps := startPipeline(t, &slowManager{}, func(c *config.Config) {
		c.Security.AutoAcceptUntrusted = true
		c.Limits.MaxConcurrentHandshakes, c.Limits.MaxQueuedHandshakes = 1, 2
		c.Limits.ConnectionsPerSecond, c.Limits.MaxConnectionsPerSource = 0, 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cert, key := applicationIdentity(t, "urn:admission:handshakes")

	const flood = 24
	var opened, busy atomic.Int32
	var others []error
	var mu sync.Mutex // guards others
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range flood {
		wg.Go(func() {
			nc, err := dialFrom(ctx, "127.0.0.2", ps.url)
			if err != nil {
				mu.Lock()
				others = append(others, err)
				mu.Unlock()
				return
			}
			defer nc.Close()
			<-start
			ch, err := secureChannel(ctx, nc, ps.url, ps.srv.cert.Raw, cert, key)
			switch {
			case err == nil:
				opened.Add(1)
				_ = ch.Close()
			case errors.Is(err, status.BadTcpServerTooBusy):
				busy.Add(1)
			default:
				mu.Lock()
				others = append(others, err)
				mu.Unlock()
			}
		})
	}
	close(start)
	tries, err := legitRead(ctx, "127.0.0.3", ps.url)
	require.NoError(t, err, "a None client is served during the flood")
	wg.Wait()
	t.Logf("%d secured channels at once: %d opened, %d refused busy; None client served after %d tries", flood, opened.Load(), busy.Load(), tries)
	require.Empty(t, others)
	require.Positive(t, busy.Load(), "the excess is told the server is too busy")
	require.GreaterOrEqual(t, opened.Load(), int32(3), "the turn and the queue are served")
	require.Equal(t, uint64(busy.Load()), ps.srv.tel.Admission().Refused(telemetry.RefusedHandshakes))
	require.Zero(t, ps.srv.handshakes.Waiting())

	nc, err := dialFrom(ctx, "127.0.0.4", ps.url)
	require.NoError(t, err)
	ch, err := secureChannel(ctx, nc, ps.url, ps.srv.cert.Raw, cert, key)
	require.NoError(t, err, "the lane is whole again")
	require.NoError(t, ch.Close())
}
