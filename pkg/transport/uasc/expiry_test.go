package uasc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// stopRenewal stops the client's automatic token renewal, as a client that stopped renewing
// would, and returns the timer it stopped.
func stopRenewal(cc *ClientChannel) *time.Timer {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.timer.Stop()
	return cc.timer
}

// liveIDs returns how many SecureChannelIds a is handing out.
func liveIDs(a *IDAllocator) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.live)
}

// channelRecorder is a Handler that echoes like echoHandler and remembers the ServerChannel
// of every request, by SecureChannelId.
type channelRecorder struct {
	mu    sync.Mutex // guards chans
	chans map[uint32]*ServerChannel
}

func (r *channelRecorder) handle(ctx context.Context, req Request) {
	r.mu.Lock()
	r.chans[req.Channel.ID()] = req.Channel
	r.mu.Unlock()
	echoHandler(ctx, req)
}

func (r *channelRecorder) channel(id uint32) *ServerChannel {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.chans[id]
}

// TestTokenExpiryClosesChannel opens two channels with one-second tokens on one server. The
// idle one never renews and holds part of a message in the reassembly budget; the server
// closes it with BadSecureChannelTokenUnknown once its token is 25% past its lifetime, and
// returns its SecureChannelId and budget. The other renews and lives on.
func TestTokenExpiryClosesChannel(t *testing.T) {
	t.Parallel()
	const budgetBytes = 1 << 20
	budget, allocator := NewBudget(budgetBytes), NewIDAllocator()
	ts := startServer(t, func(cfg *ServerConfig) { cfg.Budget, cfg.IDs = budget, allocator })
	cfg := clientConfig(secure)
	cfg.RequestedLifetime = time.Second

	start := time.Now()
	idle, err := dialChannel(t, ts.addr, cfg)
	require.NoError(t, err)
	stopRenewal(idle)
	renewing, err := dialChannel(t, ts.addr, cfg)
	require.NoError(t, err)
	// The idle client pins reassembly budget with the first chunk of a message it never ends.
	require.NoError(t, idle.conn.WriteChunks(sealedRead(t, idle, 900, uacp.ChunkIntermediate, "partial")))
	require.Eventually(t, func() bool { return budget.Available() < budgetBytes }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, 2, liveIDs(allocator))

	// The renewing client keeps working until well after the idle one is closed.
	var i uint32
	for time.Since(start) < 2500*time.Millisecond {
		i++
		read(t, renewing, i, "alive")
		time.Sleep(50 * time.Millisecond)
	}
	requireChannelError(t, idle, status.BadSecureChannelTokenUnknown)
	renewing.smu.Lock()
	tokenID := renewing.sendTok.id
	renewing.smu.Unlock()
	require.Greater(t, tokenID, uint32(2), "the renewing client renewed at least twice")
	require.NoError(t, renewing.Err())
	read(t, renewing, 1000, "still alive")
	require.Eventually(t, func() bool { return budget.Available() == budgetBytes }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return liveIDs(allocator) == 1 }, 5*time.Second, 5*time.Millisecond)
}

// TestTokenExpiryTiming checks when the server closes a channel that stops renewing: not
// before 125% of the token lifetime, counted from the last renewal, and soon after.
func TestTokenExpiryTiming(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	cfg := clientConfig(secure)
	cfg.RequestedLifetime = time.Second // renewal due at 750 ms, expiry at 1250 ms

	t.Run("NeverRenewed", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		cc, err := dialChannel(t, ts.addr, cfg)
		require.NoError(t, err)
		stopRenewal(cc)
		requireChannelError(t, cc, status.BadSecureChannelTokenUnknown)
		closed := time.Since(start)
		require.GreaterOrEqual(t, closed, 1250*time.Millisecond)
		require.Less(t, closed, 2250*time.Millisecond)
	})
	t.Run("RenewedOnce", func(t *testing.T) {
		t.Parallel()
		cc, err := dialChannel(t, ts.addr, cfg)
		require.NoError(t, err)
		old := stopRenewal(cc)
		time.Sleep(600 * time.Millisecond)
		renewed := time.Now()
		_, _, err = cc.sendOpen(ua.SecurityTokenRequestTypeRenew)
		require.NoError(t, err)
		// The response arms a fresh renewal timer: wait for it and stop it too.
		require.Eventually(t, func() bool {
			cc.mu.Lock()
			defer cc.mu.Unlock()
			return cc.timer != old
		}, 5*time.Second, time.Millisecond)
		stopRenewal(cc)
		read(t, cc, 1, "new token") // the server switches to the new token
		requireChannelError(t, cc, status.BadSecureChannelTokenUnknown)
		closed := time.Since(renewed)
		require.GreaterOrEqual(t, closed, 1250*time.Millisecond, "the renewal moved the deadline")
		require.Less(t, closed, 2250*time.Millisecond)
	})
}

// TestCloseStopsExpiryTimer closes a channel long before its token expires and checks that
// its expiry timer was stopped and its SecureChannelId freed.
func TestCloseStopsExpiryTimer(t *testing.T) {
	t.Parallel()
	rec := &channelRecorder{chans: make(map[uint32]*ServerChannel)}
	allocator := NewIDAllocator()
	ts := startServerWith(t, func(cfg *ServerConfig) { cfg.IDs = allocator }, rec.handle)
	cfg := clientConfig(secure)
	cfg.RequestedLifetime = time.Hour
	cc, err := dialChannel(t, ts.addr, cfg)
	require.NoError(t, err)
	read(t, cc, 1, "x")
	sc := rec.channel(cc.ID())
	require.NotNil(t, sc)
	require.NoError(t, cc.Close())

	require.Eventually(t, func() bool { return liveIDs(allocator) == 0 }, 5*time.Second, 5*time.Millisecond)
	sc.smu.Lock()
	defer sc.smu.Unlock()
	require.NotNil(t, sc.expiry)
	// The deadline is 75 minutes away: Stop reports false only for a timer already stopped.
	require.False(t, sc.expiry.Stop(), "expiry timer still armed after the channel closed")
	ts.mu.Lock()
	defer ts.mu.Unlock()
	require.Empty(t, ts.live)
}

// TestExpiryUsesNow checks that the expiry timer decides with ServerConfig.Now, the clock
// the receive path uses: when Now falls half a second behind after the channel opened, the
// timer that fires at the real-time deadline finds the token still valid, re-arms, and
// closes the channel half a second later.
func TestExpiryUsesNow(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var offset time.Duration
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return time.Now().Add(offset)
	}
	ts := startServer(t, func(cfg *ServerConfig) { cfg.Now = now })
	cfg := clientConfig(secure)
	cfg.RequestedLifetime = time.Second
	start := time.Now()
	cc, err := dialChannel(t, ts.addr, cfg)
	require.NoError(t, err)
	stopRenewal(cc)
	mu.Lock()
	offset = -500 * time.Millisecond
	mu.Unlock()
	requireChannelError(t, cc, status.BadSecureChannelTokenUnknown)
	closed := time.Since(start)
	require.GreaterOrEqual(t, closed, 1750*time.Millisecond, "closed by the real clock although Now said the token was valid")
	require.Less(t, closed, 2750*time.Millisecond)
}
