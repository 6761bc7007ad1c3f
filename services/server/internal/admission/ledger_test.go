package admission

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// src returns the source owner of IPv4 address 10.0.0.i.
func src(i byte) Owner { return sourceOfIP(netip.AddrFrom4([4]byte{10, 0, 0, i})) }

// fill charges owner o one unit at a time until the ledger refuses, and returns the
// charges and the reason of the refusal.
func fill(t *testing.T, l *Ledger, o Owner, c Class) ([]Charge, Reason) {
	t.Helper()
	var got []Charge
	for range 10000 {
		ch, reason, ok := l.Acquire(o, c, 1)
		if !ok {
			return got, reason
		}
		got = append(got, ch)
	}
	t.Fatal("the ledger never refused")
	return nil, 0
}

func TestSharedOnlyLedger(t *testing.T) {
	t.Parallel()
	l := NewLedger(LedgerConfig{Stage: StageQueue, Shared: 3, Bootstrap: 5, OwnerLimit: 1})
	got, reason := fill(t, l, src(1), Ordinary)
	require.Len(t, got, 3, "without owners, one owner may take the whole shared pool and no reserve")
	require.Equal(t, Capacity, reason)
	_, _, ok := l.Acquire(src(2), Ordinary, 1)
	require.False(t, ok, "a new owner is no different")
	l.Release(got[0])
	_, _, ok = l.Acquire(src(2), Ordinary, 1)
	require.True(t, ok)
	s := l.Stats()
	require.Equal(t, 3, s.Used)
	require.Zero(t, s.Owners)
	require.Equal(t, uint64(2), s.Rejections[Capacity])
}

// TestFairShareHeadroom: a single owner stops a headroom short of the top; a second
// owner still gets in and the first is refused with OwnerLimit; once both hold their
// fair share, a third still finds room.
func TestFairShareHeadroom(t *testing.T) {
	t.Parallel()
	l := NewLedger(LedgerConfig{Stage: StageQueue, Shared: 32, Owners: true, MaxOwners: 100})
	flood, reason := fill(t, l, src(1), Ordinary)
	require.Equal(t, OwnerLimit, reason)
	require.Len(t, flood, 32-headroomOf(32), "a lone owner takes all but the headroom")
	second, reason := fill(t, l, src(2), Ordinary)
	require.NotEmpty(t, second, "a newcomer gets in while the flooder holds its maximum")
	require.Equal(t, Capacity, reason)
	require.Equal(t, 32, len(flood)+len(second))

	// With two owners at their fair share, release a little: the flooder may not take it
	// back while a third owner may.
	l.Release(second[0])
	_, reason, ok := l.Acquire(src(1), Ordinary, 1)
	require.False(t, ok)
	require.Equal(t, OwnerLimit, reason)
	ch, _, ok := l.Acquire(src(3), Ordinary, 1)
	require.True(t, ok)
	require.Equal(t, Bootstrap, ch.Class(), "an owner's first charge is a bootstrap")
	require.False(t, ch.Reserved(), "taken from the shared pool while it had room")
	require.Equal(t, 3, l.Stats().Owners)
	for _, c := range append(flood, second[1:]...) {
		l.Release(c)
	}
	l.Release(ch)
	require.Zero(t, l.Stats().Owners, "an owner that holds nothing is forgotten")
	require.Zero(t, l.Stats().Used)
}

// TestBalancedReserves: when ordinary traffic has taken the whole shared pool, a new
// owner gets the bootstrap reserve and a reconnecting one the reconnect reserve; the
// flooder gets neither.
func TestBalancedReserves(t *testing.T) {
	t.Parallel()
	l := NewLedger(LedgerConfig{Stage: StageSession, Shared: 8, Owners: true, Bootstrap: 1, Reconnect: 1, MaxOwners: 100})
	// Two flooders take the shared pool.
	a, _ := fill(t, l, src(1), Ordinary)
	b, _ := fill(t, l, src(2), Ordinary)
	require.Equal(t, 8, len(a)+len(b))
	_, reason, ok := l.Acquire(src(1), Ordinary, 1)
	require.False(t, ok, "a flooder holding units takes no bootstrap reserve")
	require.Equal(t, Capacity, reason)

	boot, _, ok := l.Acquire(src(3), Ordinary, 1)
	require.True(t, ok, "a new owner takes the bootstrap reserve")
	require.True(t, boot.Reserved())
	require.Equal(t, Bootstrap, boot.Class())
	_, reason, ok = l.Acquire(src(4), Ordinary, 1)
	require.False(t, ok, "the bootstrap reserve holds one")
	require.Equal(t, Capacity, reason)

	re, _, ok := l.Acquire(src(5), Reconnect, 1)
	require.True(t, ok, "a reconnecting owner takes the reconnect reserve")
	require.Equal(t, Reconnect, re.Class())
	require.True(t, re.Reserved())

	l.Release(boot)
	_, _, ok = l.Acquire(src(4), Ordinary, 1)
	require.True(t, ok, "the released reserve serves the next newcomer")
}

func TestOwnerLimitAndTable(t *testing.T) {
	t.Parallel()
	l := NewLedger(LedgerConfig{Stage: StageConnection, Shared: 100, Owners: true, OwnerLimit: 3, Reconnect: 1, MaxOwners: 3})
	got, reason := fill(t, l, src(1), Ordinary)
	require.Len(t, got, 3)
	require.Equal(t, OwnerLimit, reason)
	_, _, ok := l.Acquire(src(2), Ordinary, 1)
	require.True(t, ok)
	_, reason, ok = l.Acquire(src(3), Ordinary, 1)
	require.False(t, ok, "the last table slot is kept for a reconnecting owner")
	require.Equal(t, OwnerTableFull, reason)
	_, _, ok = l.Acquire(src(3), Reconnect, 1)
	require.True(t, ok)
	_, reason, _ = l.Acquire(Owner{}, Ordinary, 1)
	require.Equal(t, InvalidOwner, reason)
	_, reason, _ = l.Acquire(Owner{Kind: OwnerTrusted, ID: 7}, Ordinary, 1)
	require.Equal(t, InvalidOwner, reason, "a trusted owner that is not configured")
	s := l.Stats()
	require.Equal(t, uint64(1), s.Rejections[OwnerLimit])
	require.Equal(t, uint64(1), s.Rejections[OwnerTableFull])
	require.Equal(t, uint64(2), s.Rejections[InvalidOwner])
}

func TestTrustedReserve(t *testing.T) {
	t.Parallel()
	trusted := Owner{Kind: OwnerTrusted, ID: 0}
	l := NewLedger(LedgerConfig{Stage: StageQueue, Shared: 4, Owners: true, Trusted: []int{2}, OwnerLimit: 1, MaxOwners: 10})
	fill(t, l, src(1), Ordinary)
	fill(t, l, src(2), Ordinary)
	fill(t, l, src(3), Ordinary)
	fill(t, l, src(4), Ordinary)
	got, _ := fill(t, l, trusted, Ordinary)
	require.Len(t, got, 2, "the trusted owner has its reserve, and no owner limit")
	for _, c := range got {
		require.True(t, c.Reserved())
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := NewLedger(LedgerConfig{Stage: StageSession, Shared: 4, Now: func() time.Time { return now }})
	require.Equal(t, retryAfterUnknown, l.RetryAfter(), "before any drain was seen")
	require.Equal(t, 2*retryAfterUnknown, l.RetryAfter(), "the next refused behind the first")
	now = now.Add(time.Second)
	got, _ := fill(t, l, src(1), Ordinary)
	for _, c := range got[:3] {
		now = now.Add(20 * time.Millisecond)
		l.Release(c)
		_, _, ok := l.Acquire(src(1), Ordinary, 1)
		require.True(t, ok)
	}
	require.Equal(t, 20*time.Millisecond, l.RetryAfter(), "one released every 20 ms: the first refused waits one interval")
	require.Equal(t, 40*time.Millisecond, l.RetryAfter(), "the next behind it")
	require.Equal(t, 60*time.Millisecond, l.RetryAfter())
	now = now.Add(10 * time.Millisecond)
	require.Equal(t, 70*time.Millisecond, l.RetryAfter(), "turns are kept in time: 10 ms on, the fourth turn is 70 ms away")
	now = now.Add(time.Hour)
	require.Equal(t, RetryAfterMax, l.RetryAfter(), "a stalled stage caps the hint")
}

// TestLend: units lent while their holder waits on the network admit other charges; at
// most the stage's capacity is lent; a lent charge comes back beyond the capacity, and
// one released while lent gives back only its owner's holding.
func TestLend(t *testing.T) {
	t.Parallel()
	l := NewLedger(LedgerConfig{Stage: StageSession, Shared: 2})
	first, _, ok := l.Acquire(src(1), Ordinary, 1)
	require.True(t, ok)
	second, _, ok := l.Acquire(src(2), Ordinary, 1)
	require.True(t, ok)
	_, _, ok = l.Acquire(src(3), Ordinary, 1)
	require.False(t, ok, "full")
	require.True(t, l.Lend(first))
	third, _, ok := l.Acquire(src(3), Ordinary, 1)
	require.True(t, ok, "a lent unit admits another charge")
	require.True(t, l.Lend(third))
	fourth, _, ok := l.Acquire(src(4), Ordinary, 1)
	require.True(t, ok)
	require.False(t, l.Lend(fourth), "as many units as the stage has are lent already")
	l.Return(first)
	require.Equal(t, 3, l.Stats().Used, "back beyond the capacity")
	_, _, ok = l.Acquire(src(5), Ordinary, 1)
	require.False(t, ok)
	l.ReleaseLent(third)
	require.Equal(t, 3, l.Stats().Used, "a lent charge's units were out of the pool already")
	require.True(t, l.Lend(fourth), "the released charge is no longer lent")
	l.Return(fourth)
	for _, c := range []Charge{first, second, fourth} {
		l.Release(c)
	}
	require.Zero(t, l.Stats().Used)
}

// TestLendOwners: a lent charge still counts in its owner's holding until released.
func TestLendOwners(t *testing.T) {
	t.Parallel()
	l := NewLedger(LedgerConfig{Stage: StageSession, Shared: 8, Owners: true, MaxOwners: 10})
	c, _, ok := l.Acquire(src(1), Ordinary, 1)
	require.True(t, ok)
	require.True(t, l.Lend(c))
	require.Equal(t, 1, l.Stats().Owners)
	l.ReleaseLent(c)
	require.Zero(t, l.Stats().Owners)
	require.Zero(t, l.Stats().Used)
}

func TestBucket(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	b := NewBucket(10, 2, now)
	require.True(t, b.Take(now))
	require.True(t, b.Take(now))
	require.False(t, b.Take(now), "the burst is spent")
	require.Equal(t, 100*time.Millisecond, b.Wait(now))
	now = now.Add(50 * time.Millisecond)
	require.False(t, b.Take(now))
	require.Equal(t, 50*time.Millisecond, b.Wait(now))
	now = now.Add(50 * time.Millisecond)
	require.True(t, b.Take(now))
	require.False(t, b.Full(now))
	now = now.Add(time.Hour)
	require.True(t, b.Full(now), "a bucket refills to its burst, no further")
	require.True(t, b.Take(now))
	require.True(t, b.Take(now))
	require.False(t, b.Take(now))
	require.False(t, b.Take(now.Add(-time.Hour)), "a clock going back adds nothing")
}

func TestMeter(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	m := NewMeter(1, 2, 2, func() time.Time { return now })
	for range 2 {
		_, _, ok := m.Take(src(1))
		require.True(t, ok)
	}
	wait, reason, ok := m.Take(src(1))
	require.False(t, ok)
	require.Equal(t, Capacity, reason)
	require.Equal(t, time.Second, wait)
	_, _, ok = m.Take(src(2))
	require.True(t, ok, "another source has its own bucket")
	_, reason, ok = m.Take(src(3))
	require.False(t, ok, "two owners tracked, neither refilled")
	require.Equal(t, OwnerTableFull, reason)
	now = now.Add(3 * time.Second)
	_, _, ok = m.Take(src(3))
	require.True(t, ok, "refilled buckets are swept to make room")
	require.Equal(t, 1, m.Len())
}

func TestSourceOf(t *testing.T) {
	t.Parallel()
	a := SourceOf(&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1})
	require.Equal(t, a, SourceOf(&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 2}), "an IPv4-mapped address is its IPv4 address")
	require.Equal(t, "192.0.2.7", a.String())
	v6 := SourceOf(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa::1")})
	require.Equal(t, v6, SourceOf(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:bbbb::9")}), "one /64 is one source")
	require.NotEqual(t, v6, SourceOf(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:3::1")}))
	require.Equal(t, "2001:db8:1:2::/64", v6.String())
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	require.Equal(t, Owner{Kind: OwnerUnknownSource}, SourceOf(p1.RemoteAddr()))
	require.False(t, SourceOf(p1.RemoteAddr()).IsZero())
}
