package diagnostics

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/session"
	"uastack.dev/services/server/internal/subscription"
)

// TestSessionEndReasons: a session closed by its client counts in neither, one that
// outlives its timeout in SessionTimeoutCount, one dropped on an error (a CreateSession
// that failed after the session was made) in SessionAbortCount.
func TestSessionEndReasons(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	d := New(true, func() time.Time { return now }, nil)
	ss := session.New(10, func() time.Time { return now })
	ss.Observe(d.SessionChanged)
	mk := func() session.Record {
		rec, code := ss.Create(session.Request{Name: "s", Timeout: time.Second, ChannelID: 1})
		require.True(t, code.IsGood())
		return rec
	}
	closed, timedOut, aborted := mk(), mk(), mk()
	require.Len(t, d.sessions, 3, "every session described")
	require.NotNil(t, d.CountersOf(closed.AuthenticationToken))
	require.True(t, ss.Close(closed.AuthenticationToken, 1, true).IsGood(), "CloseSession")
	require.Nil(t, d.CountersOf(closed.AuthenticationToken), "a closed session has no counters")
	ss.Abort(aborted.AuthenticationToken)
	now = now.Add(2 * time.Second)
	_, _, code := ss.Lookup(timedOut.AuthenticationToken)
	require.True(t, code.IsBad(), "expired")
	snap := d.buildLocked(now)
	require.EqualValues(t, 3, snap.summary.CumulatedSessionCount)
	require.EqualValues(t, 1, snap.summary.SessionTimeoutCount)
	require.EqualValues(t, 1, snap.summary.SessionAbortCount)
	require.Zero(t, snap.summary.CurrentSessionCount)
	require.Empty(t, d.sessions, "ended sessions are no longer described")
	require.Empty(t, d.byToken)
}

// BenchmarkRebuild is one rebuild of the diagnostics snapshot with n described sessions,
// each with a subscription: what the first read after the throttling interval costs.
func BenchmarkRebuild(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			subs := subscription.New(subscription.Limits{MaxSubscriptions: n, MaxSubscriptionsPerSession: 1,
				MinPublishingInterval: time.Millisecond, MaxPublishingInterval: time.Hour,
				MaxKeepAliveCount: 100, MaxLifetimeCount: 1000}, nil, nil)
			d := New(true, time.Now, subs)
			ss := session.New(n, time.Now)
			ss.Observe(d.SessionChanged)
			for i := range n {
				rec, code := ss.Create(session.Request{Name: fmt.Sprintf("s%d", i), Timeout: time.Hour, ChannelID: 1})
				require.True(b, code.IsGood())
				_, _, code = subs.Create(rec.SessionID, "", subscription.Params{PublishingInterval: 1000}, true)
				require.True(b, code.IsGood())
			}
			b.ReportAllocs()
			var snap *snapshot
			for b.Loop() {
				d.mu.Lock()
				snap = d.buildLocked(time.Now())
				d.mu.Unlock()
			}
			require.EqualValues(b, n, snap.summary.CurrentSessionCount)
			require.EqualValues(b, n, snap.summary.CurrentSubscriptionCount)
		})
	}
}
