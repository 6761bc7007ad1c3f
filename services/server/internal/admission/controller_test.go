package admission

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
)

// tcp returns the TCP address 10.0.0.i:4840.
func tcp(i byte) net.Addr { return &net.TCPAddr{IP: net.IPv4(10, 0, 0, i), Port: 4840} }

// testConfig is the default configuration of the server, on a clock that stands still.
func testConfig(p Profile, now *time.Time) Config {
	return Config{
		Profile: p, ConnectionsPerSecond: 500, ConnectionBurst: 1000, MaxChannelCount: 1000,
		MaxConnectionsPerSource: 100, MaxConcurrentSessionEstablishment: 128, MaxQueuedRequestCount: 200,
		MaxParkedRequestCount: 1000, PasswordChecksPerSecond: 2, PasswordCheckBurst: 10, MaxTrackedOwners: 4096,
		Now: func() time.Time { return *now },
	}
}

// admitAll admits connections from remote until one is refused, and returns the
// releases and the refusal's code.
func admitAll(t *testing.T, c *Controller, remote net.Addr) ([]func(), status.Code) {
	t.Helper()
	var rel []func()
	for range 5000 {
		r, code := c.AdmitConnection(remote)
		if code != status.Good {
			return rel, code
		}
		rel = append(rel, r)
	}
	t.Fatal("never refused")
	return nil, 0
}

// TestConnectionRate: a flood from one source spends the shared burst and is refused
// BadTcpServerTooBusy; under Balanced a new source and a source with a live session
// still get in on their reserved tokens, under FairShare they do not.
func TestConnectionRate(t *testing.T) {
	t.Parallel()
	for _, p := range []Profile{FairShare, Balanced} {
		now := time.Unix(0, 0)
		cfg := testConfig(p, &now)
		cfg.MaxConnectionsPerSource = 0
		cfg.ConnectionsPerSecond, cfg.ConnectionBurst = 100, 200
		var rejections []Rejection
		cfg.Rejected = func(r Rejection) { rejections = append(rejections, r) }
		c, err := New(cfg)
		require.NoError(t, err)
		c.SessionActivated(42, tcp(3))
		flood, code := admitAll(t, c, tcp(1))
		require.Equal(t, status.BadTcpServerTooBusy, code)
		want := 200
		if p == Balanced {
			want -= 2 * 10 // the bootstrap and reconnect buckets' bursts
		}
		require.Len(t, flood, want)
		require.Equal(t, []Rejection{{Stage: StageConnection, Reason: Capacity, Metered: true, Owner: src(1)}}, rejections)
		_, code = c.AdmitConnection(tcp(2))
		_, code3 := c.AdmitConnection(tcp(3))
		if p == Balanced {
			require.Equal(t, status.Good, code, "a new source bootstraps")
			require.Equal(t, status.Good, code3, "a source holding a live session reconnects")
		} else {
			require.Equal(t, status.BadTcpServerTooBusy, code)
			require.Equal(t, status.BadTcpServerTooBusy, code3)
		}
		now = now.Add(time.Second)
		_, code = c.AdmitConnection(tcp(1))
		require.Equal(t, status.Good, code, "the rate refills")
		s := c.Stats()
		require.Equal(t, uint64(len(rejections)), s.ConnectionsRateLimited)
		require.Equal(t, 1, s.LiveSources)
	}
}

// TestConnectionsPerSource: one source is capped (BadTcpNotEnoughResources, OwnerLimit)
// and others are not; releasing frees its slots; SharedOnly has no cap.
func TestConnectionsPerSource(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	cfg := testConfig(Balanced, &now)
	cfg.MaxConnectionsPerSource = 5
	c, err := New(cfg)
	require.NoError(t, err)
	rel, code := admitAll(t, c, tcp(1))
	require.Equal(t, status.BadTcpNotEnoughResources, code)
	require.Len(t, rel, 5)
	require.Equal(t, uint64(1), c.Stats().Stages[StageConnection].Rejections[OwnerLimit])
	_, code = c.AdmitConnection(tcp(2))
	require.Equal(t, status.Good, code)
	rel[0]()
	_, code = c.AdmitConnection(tcp(1))
	require.Equal(t, status.Good, code)
	require.Equal(t, 6, c.Stats().Stages[StageConnection].Used)

	cfg.Profile, cfg.MaxChannelCount = SharedOnly, 5000
	c, err = New(cfg)
	require.NoError(t, err)
	rel, code = admitAll(t, c, tcp(1))
	require.Equal(t, status.BadTcpServerTooBusy, code, "SharedOnly: only the rate stops one source")
	require.Len(t, rel, 1000)
}

// TestReconnectConnectionReserve: a distributed flood, one connection per source, takes
// every shared slot and then the bootstrap reserve; a source with a live session still
// connects on the reconnect reserve.
func TestReconnectConnectionReserve(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	cfg := testConfig(Balanced, &now)
	cfg.ConnectionsPerSecond = 0
	cfg.MaxChannelCount, cfg.MaxConnectionsPerSource = 64, 0
	c, err := New(cfg)
	require.NoError(t, err)
	c.SessionActivated(7, tcp(9))
	admitted := 0
	for i := range byte(100) {
		if _, code := c.AdmitConnection(tcp(100 + i)); code == status.Good {
			admitted++
		}
	}
	require.Equal(t, 64-carve(64), admitted, "the flood takes the shared slots and the bootstrap reserve")
	_, code := c.AdmitConnection(tcp(20))
	require.Equal(t, status.BadTcpNotEnoughResources, code, "no newcomer finds room")
	r9, code := c.AdmitConnection(tcp(9))
	require.Equal(t, status.Good, code, "the source of a live session reconnects")
	c.SessionEnded(7)
	r9()
	_, code = c.AdmitConnection(tcp(9))
	require.Equal(t, status.BadTcpNotEnoughResources, code, "with no live session left it is a newcomer like the others")
	require.Zero(t, c.Stats().LiveSources)
}

func TestTrustedOwners(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	cfg := testConfig(TrustedReservations, &now)
	cfg.Trusted = []TrustedOwner{{Name: "plant", Address: netip.MustParsePrefix("10.0.1.0/24"), Weight: 4, Reserved: 2}}
	c, err := New(cfg)
	require.NoError(t, err)
	o, ok := c.Trusted(&net.TCPAddr{IP: net.IPv4(10, 0, 1, 9)}, nil)
	require.True(t, ok)
	require.Equal(t, Owner{Kind: OwnerTrusted, ID: 0}, o)
	require.Equal(t, 4, c.Weight(o))
	require.Equal(t, 1, c.Weight(src(1)))
	require.Equal(t, src(1), c.ChannelOwner(tcp(1), nil))
	s := c.Stats()
	require.Equal(t, 200+headroomOf(200)+onTop(200)+2, s.Stages[StageQueue].Capacity, "the headroom and the reserves come on top of the queue")
	require.Equal(t, 200+headroomOf(200), s.Stages[StageQueue].Shared)
	require.Equal(t, 1000, s.Stages[StageConnection].Capacity, "and is carved out of the connections")

	cfg.Profile = Balanced
	_, err = New(cfg)
	require.ErrorContains(t, err, "limits.trustedOwners")
	cfg.Profile, cfg.Trusted = TrustedReservations, nil
	_, err = New(cfg)
	require.ErrorContains(t, err, "limits.trustedOwners")
}

func TestPlanErrors(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	cfg := testConfig(Balanced, &now)
	cfg.ConnectionsPerSecond, cfg.ConnectionBurst = 2, 1000
	_, err := New(cfg)
	require.ErrorContains(t, err, "limits.connectionsPerSecond")
	cfg.ConnectionsPerSecond = 0
	_, err = New(cfg)
	require.NoError(t, err, "no rate limit, no rate reserves")
	cfg.MaxConcurrentSessionEstablishment = 1
	c, err := New(cfg)
	require.NoError(t, err, "too small a stage for reserves has none")
	require.Equal(t, 1, c.Stats().Stages[StageSession].Capacity)
}

func TestMeterPassword(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	c, err := New(testConfig(Balanced, &now))
	require.NoError(t, err)
	for range 10 {
		_, ok := c.MeterPassword(tcp(1))
		require.True(t, ok)
	}
	wait, ok := c.MeterPassword(tcp(1))
	require.False(t, ok)
	require.Equal(t, 500*time.Millisecond, wait)
	_, ok = c.MeterPassword(tcp(2))
	require.True(t, ok)
	require.Equal(t, uint64(1), c.Stats().PasswordChecksMetered)
}
