package session

import (
	"crypto/x509"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/owner"
)

// shares is what each owner holds of tab: its sessions, and of them those not activated.
func shares(tab *Table) map[owner.Owner][2]int {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	out := map[owner.Owner][2]int{}
	for o, h := range tab.owners {
		n := 0
		for s := h.oldestNew; s != nil; s = s.newer {
			n++
		}
		if n != h.unactivated {
			panic("the list and the count of unactivated sessions disagree")
		}
		out[o] = [2]int{h.sessions, h.unactivated}
	}
	return out
}

// ends records the sessions the observers were told ended, and how.
type ends struct {
	mu  sync.Mutex // guards why
	why map[codec.NodeId]End
}

func observeEnds(tab *Table) *ends {
	e := &ends{why: map[codec.NodeId]End{}}
	tab.Observe(func(c *Change) {
		if c.Kind == Ended {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.why[c.Record.SessionID] = c.End
		}
	})
	return e
}

func (e *ends) of(id codec.NodeId) (End, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	why, ok := e.why[id]
	return why, ok
}

// TestUnactivatedTimeout: a session nobody activates ends UnactivatedTimeout after its
// creation although requests name it (a failed ActivateSession looks it up), while an
// activated one lives to its session timeout; a session timeout below the unactivated
// timeout still applies.
func TestUnactivatedTimeout(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	tab := NewLimited(Limits{MaxSessions: 10, UnactivatedTimeout: 5 * time.Second}, func() time.Time { return now })
	tab.Stop() // only lookups end sessions here: the clock is the test's
	ended := observeEnds(tab)
	idle, _ := tab.Create(Request{Name: "idle", Timeout: time.Minute, ChannelID: 1})
	used, _ := tab.Create(Request{Name: "used", Timeout: time.Minute, ChannelID: 1})
	short, _ := tab.Create(Request{Name: "short", Timeout: 2 * time.Second, ChannelID: 1})
	_, code := tab.Activate(used.AuthenticationToken, 1, nodemgr.Principal{Anonymous: true}, Activation{})
	require.Equal(t, status.Good, code)

	now = now.Add(2*time.Second + time.Nanosecond)
	_, _, code = tab.Lookup(short.AuthenticationToken)
	require.Equal(t, status.BadSessionIdInvalid, code, "its own timeout is shorter")
	now = now.Add(2 * time.Second)
	_, _, code = tab.Lookup(idle.AuthenticationToken)
	require.Equal(t, status.Good, code, "4 s after creation")
	now = now.Add(time.Second)
	_, _, code = tab.Lookup(idle.AuthenticationToken)
	require.Equal(t, status.BadSessionIdInvalid, code, "5 s after creation: a lookup 1 s ago did not extend it")
	why, ok := ended.of(idle.SessionID)
	require.True(t, ok)
	require.Equal(t, TimedOut, why)
	_, _, code = tab.Lookup(used.AuthenticationToken)
	require.Equal(t, status.Good, code, "activated: its session timeout applies")
	require.Equal(t, 1, tab.Count())
}

// TestUnactivatedSweep: with nothing touching the table, the sweep ends a session nobody
// activated at UnactivatedTimeout, not at its session timeout.
func TestUnactivatedSweep(t *testing.T) {
	t.Parallel()
	tab := NewLimited(Limits{MaxSessions: 10, UnactivatedTimeout: 100 * time.Millisecond}, time.Now)
	defer tab.Stop()
	ended := observeEnds(tab)
	start := time.Now()
	rec, _ := tab.Create(Request{Name: "squat", Timeout: time.Hour, ChannelID: 1})
	require.Eventually(t, func() bool { _, ok := ended.of(rec.SessionID); return ok }, 5*time.Second, 5*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	why, _ := ended.of(rec.SessionID)
	require.Equal(t, TimedOut, why)
	require.Zero(t, tab.Count())
}

// TestFullTable: a full table gives up its oldest session nobody activated for a new
// one (the observers see it Aborted, its subscriptions deleted); full of activated
// sessions, it refuses with BadTooManySessions.
func TestFullTable(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	tab := NewLimited(Limits{MaxSessions: 3}, func() time.Time { return now })
	tab.Stop()
	var mu sync.Mutex // guards deleted
	deleted := map[codec.NodeId]bool{}
	tab.Observe(func(c *Change) {
		if c.Kind == Ended {
			mu.Lock()
			defer mu.Unlock()
			deleted[c.Record.SessionID] = c.DeleteSubscriptions
		}
	})
	ended := observeEnds(tab)
	create := func(ch uint32) (Record, status.Code) {
		now = now.Add(time.Millisecond)
		return tab.Create(Request{Timeout: time.Minute, ChannelID: ch})
	}
	activate := func(rec Record, ch uint32) {
		_, code := tab.Activate(rec.AuthenticationToken, ch, nodemgr.Principal{Anonymous: true}, Activation{})
		require.Equal(t, status.Good, code)
	}
	u1, _ := create(1)
	u2, _ := create(2)
	act, _ := create(3)
	activate(act, 3)

	n1, code := create(4)
	require.Equal(t, status.Good, code, "the oldest unactivated session gave way")
	why, ok := ended.of(u1.SessionID)
	require.True(t, ok)
	require.Equal(t, Aborted, why)
	require.True(t, deleted[u1.SessionID])
	_, ok = ended.of(u2.SessionID)
	require.False(t, ok, "only the oldest")
	_, code = tab.Activate(u1.AuthenticationToken, 1, nodemgr.Principal{Anonymous: true}, Activation{})
	require.Equal(t, status.BadSessionIdInvalid, code, "what its client sees")

	activate(n1, 4) // u2 is now the only one not activated
	n2, code := create(5)
	require.Equal(t, status.Good, code)
	_, ok = ended.of(u2.SessionID)
	require.True(t, ok)
	activate(n2, 5)
	_, code = create(6)
	require.Equal(t, status.BadTooManySessions, code, "every session is activated")
	require.Equal(t, 3, tab.Count())
	require.Equal(t, status.Good, tab.Close(act.AuthenticationToken, 3, true))
	_, code = create(6)
	require.Equal(t, status.Good, code)
}

// TestFullTableFlood: when the table is full, a channel that holds unactivated sessions
// gives up its own oldest for a new one, and a client holding none takes the oldest of
// the biggest holder: two flooding channels never give up a third client's pending
// session, although it is the oldest in the table.
func TestFullTableFlood(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	tab := NewLimited(Limits{MaxSessions: 7, MaxPerOwner: 4}, func() time.Time { return now })
	tab.Stop()
	create := func(ch uint32) (Record, status.Code) {
		now = now.Add(time.Millisecond)
		return tab.Create(Request{Timeout: time.Minute, ChannelID: ch})
	}
	legit, _ := create(9) // the oldest of all, about to be activated
	for range 3 {
		_, code := create(1)
		require.Equal(t, status.Good, code)
		_, code = create(2)
		require.Equal(t, status.Good, code)
	}
	require.Equal(t, 7, tab.Count())
	for range 50 { // the flood: each channel in turn, forever under its share
		_, code := create(1)
		require.Equal(t, status.Good, code)
		_, code = create(2)
		require.Equal(t, status.Good, code)
		require.Equal(t, [2]int{3, 3}, shares(tab)[owner.OfChannel(1)], "channel 1 gave up its own")
	}
	_, code := create(3)
	require.Equal(t, status.Good, code, "a newcomer takes from the biggest holder")
	require.Equal(t, [2]int{1, 1}, shares(tab)[owner.OfChannel(9)])
	_, code = tab.Activate(legit.AuthenticationToken, 9, nodemgr.Principal{Anonymous: true}, Activation{})
	require.Equal(t, status.Good, code, "the pending session survived the flood")
}

// TestOwnerShare: an owner holds at most MaxPerOwner sessions. Over None the owner is
// the channel until activation, the session after it; a verified application is one
// owner across its channels, before and after activation; Request.Owner names another.
func TestOwnerShare(t *testing.T) {
	t.Parallel()
	tab := NewLimited(Limits{MaxSessions: 10, MaxPerOwner: 2}, time.Now)
	defer tab.Stop()
	create := func(r Request) (Record, status.Code) {
		r.Timeout = time.Minute
		return tab.Create(r)
	}
	a, _ := create(Request{ChannelID: 1})
	_, code := create(Request{ChannelID: 1})
	require.Equal(t, status.Good, code)
	_, code = create(Request{ChannelID: 1})
	require.Equal(t, status.BadTooManySessions, code, "channel 1 holds its share")
	_, code = create(Request{ChannelID: 2})
	require.Equal(t, status.Good, code, "another channel is served")
	require.Equal(t, 2, tab.Owned(owner.OfChannel(1)))

	_, code = tab.Activate(a.AuthenticationToken, 1, nodemgr.Principal{Anonymous: true}, Activation{})
	require.Equal(t, status.Good, code)
	require.Equal(t, 1, tab.Owned(owner.OfChannel(1)))
	require.Equal(t, 1, tab.Owned(owner.OfSession(a.SessionID)), "an activated None session holds its own share")
	_, code = create(Request{ChannelID: 1})
	require.Equal(t, status.Good, code)

	uri, _ := url.Parse("urn:acme:scada")
	cert := &x509.Certificate{URIs: []*url.URL{uri}}
	app := owner.OfApplication("urn:acme:scada")
	s1, _ := create(Request{ChannelID: 7, ClientCertificate: cert})
	_, code = create(Request{ChannelID: 8, ClientCertificate: cert})
	require.Equal(t, status.Good, code)
	_, code = create(Request{ChannelID: 9, ClientCertificate: cert})
	require.Equal(t, status.BadTooManySessions, code, "the application holds its share across channels")
	_, code = tab.Activate(s1.AuthenticationToken, 7, nodemgr.Principal{Anonymous: true}, Activation{})
	require.Equal(t, status.Good, code)
	require.Equal(t, 2, tab.Owned(app), "still the application's once activated")
	require.Equal(t, status.Good, tab.Close(s1.AuthenticationToken, 7, true))
	require.Equal(t, 1, tab.Owned(app))
	_, code = create(Request{ChannelID: 9, ClientCertificate: cert})
	require.Equal(t, status.Good, code)

	peer := owner.OfIP(netip.MustParseAddr("192.0.2.1"))
	_, code = create(Request{ChannelID: 10, Owner: peer})
	require.Equal(t, status.Good, code)
	_, code = create(Request{ChannelID: 11, Owner: peer})
	require.Equal(t, status.Good, code)
	_, code = create(Request{ChannelID: 12, Owner: peer})
	require.Equal(t, status.BadTooManySessions, code, "a named owner across channels")
	require.Zero(t, tab.Owned(owner.OfChannel(12)))
}
