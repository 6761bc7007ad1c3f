package subscription

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/owner"
)

// TestOwnerShares: one owner (two sessions of one application) holds at most
// MaxSubscriptionsPerOwner subscriptions (BadTooManySubscriptions) and
// MaxMonitoredItemsPerOwner items (BadTooManyMonitoredItems per item), while a session
// of its own owner is still served; deleting makes room, and a transfer moves what a
// subscription holds to its new session's owner without refusing it.
func TestOwnerShares(t *testing.T) {
	l := testLimits()
	l.MaxSubscriptionsPerOwner, l.MaxMonitoredItemsPerOwner = 2, 3
	r := newRig(t, l)
	app := owner.OfApplication("urn:acme:scada")
	a, b, c := r.ses, codec.NewNumericNodeId(1, 2), codec.NewNumericNodeId(1, 3)
	r.e.SetSessionOwner(a, app)
	r.e.SetSessionOwner(b, app)
	p := Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30}
	create := func(ses codec.NodeId) (uint32, status.Code) {
		id, _, code := r.e.Create(ses, "anonymous", p, true)
		return id, code
	}
	items := func(ses codec.NodeId, sub uint32, from, n uint32) []status.Code {
		reqs := make([]ItemRequest, n)
		for i := range reqs {
			reqs[i] = ItemRequest{Item: ua.ReadValueId{NodeId: node(from + uint32(i)), AttributeId: 13}, Mode: ua.MonitoringModeReporting, QueueSize: 1, Push: true}
		}
		res, code := r.e.CreateItems(ses, sub, ua.TimestampsToReturnBoth, reqs, make([]status.Code, n))
		require.Equal(t, status.Good, code)
		out := make([]status.Code, n)
		for i := range res {
			out[i] = res[i].StatusCode
		}
		return out
	}

	a1, _ := create(a)
	b1, _ := create(b)
	_, code := create(a)
	require.Equal(t, status.BadTooManySubscriptions, code, "the application holds 2")
	_, code = create(b)
	require.Equal(t, status.BadTooManySubscriptions, code, "whichever of its sessions asks")
	c1, code := create(c)
	require.Equal(t, status.Good, code, "another owner is served")

	require.Equal(t, []status.Code{status.Good, status.Good}, items(a, a1, 1, 2))
	require.Equal(t, []status.Code{status.Good, status.BadTooManyMonitoredItems}, items(b, b1, 3, 2))
	require.Equal(t, []status.Code{status.Good, status.Good, status.Good}, items(c, c1, 5, 3), "another owner's items")
	subs, n := r.e.Owned(app)
	require.Equal(t, [2]int{2, 3}, [2]int{subs, n})

	require.Equal(t, []status.Code{status.Good}, r.e.Delete(b, []uint32{b1}))
	subs, n = r.e.Owned(app)
	require.Equal(t, [2]int{1, 2}, [2]int{subs, n})
	b2, code := create(b)
	require.Equal(t, status.Good, code, "deleting made room")
	require.Equal(t, []status.Code{status.Good, status.BadTooManyMonitoredItems}, items(b, b2, 8, 2))

	// c's subscription moves to a: the application now holds 3 and 6, the transfer is
	// not refused; c's owner holds nothing.
	res := r.e.Transfer(a, "anonymous", []uint32{c1}, false)
	require.Equal(t, status.Good, res[0].StatusCode)
	subs, n = r.e.Owned(app)
	require.Equal(t, [2]int{3, 6}, [2]int{subs, n})
	subs, n = r.e.Owned(owner.OfSession(c))
	require.Zero(t, subs+n)
	r.e.SessionEnded(a, true)
	r.e.SessionEnded(b, true)
	require.Empty(t, r.e.holdings, "nothing held once everything ended")
}

// TestOrphanLifetime: a subscription left by its session ends OrphanLifetime later
// although its lifetime count reaches much further; one taken over in time lives on; one
// nobody may take over (owner "") is deleted when its session ends.
func TestOrphanLifetime(t *testing.T) {
	l := testLimits()
	l.OrphanLifetime = time.Second
	r := newRig(t, l)
	var deleted []Change
	stop := r.e.Observe(func(c Change) {
		if c.Kind == ChangeDeleted {
			deleted = append(deleted, c)
		}
	})
	defer stop()
	iv := 100 * time.Millisecond
	p := Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 1000} // 100 s
	left, _, _ := r.e.Create(r.ses, "user:alice", p, true)
	adopted, _, _ := r.e.Create(r.ses, "user:alice", p, true)
	nobodys, _, _ := r.e.Create(r.ses, "", p, true)
	r.monitor(left, 1, 1, true, DefaultFilter)

	r.e.SessionEnded(r.ses, false)
	require.Equal(t, []Change{{Kind: ChangeDeleted, Subscription: nobodys, Status: status.BadSessionClosed}}, deleted,
		"nobody may take it over: deleted at once")
	r.advance(500 * time.Millisecond)
	other := codec.NewNumericNodeId(1, 9)
	res := r.e.Transfer(other, "user:alice", []uint32{adopted}, false)
	require.Equal(t, status.Good, res[0].StatusCode)
	r.advance(499 * time.Millisecond)
	require.Contains(t, r.e.subs, left, "within the bound")
	r.advance(iv)
	require.NotContains(t, r.e.subs, left, "past the bound, not its 100 s lifetime")
	require.Equal(t, Change{Kind: ChangeDeleted, Subscription: left, Status: status.BadTimeout}, deleted[1])
	require.Zero(t, r.e.Diagnostics(false).CurrentSubscriptions-1, "the adopted one lives on")
	require.Contains(t, r.e.subs, adopted)
	r.e.Publish(other, nil, nil, &inbox{}, time.Time{}) // its new session keeps it alive
	r.advance(5 * time.Second)
	require.Contains(t, r.e.subs, adopted, "adopted: the bound no longer applies")
}
