package server_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	gua "github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// codeOf is the ServiceResult of a raw request's answer: a ServiceFault's, or Good.
func codeOf(t *testing.T, resp codec.Structure, err error) status.Code {
	t.Helper()
	if f, ok := resp.(*ua.ServiceFault); ok {
		return f.ResponseHeader.ServiceResult
	}
	require.NoError(t, err)
	return status.Good
}

// legitRead connects a gopcua client over None, anonymously, reads the server's State
// and closes: a legitimate client being served.
func legitRead(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	c := connect(t, ctx, url, gua.SecurityPolicyURINone, gua.MessageSecurityModeNone, gua.UserTokenTypeAnonymous)
	resp, err := c.Read(ctx, &gua.ReadRequest{NodesToRead: []*gua.ReadValueID{readValueID(2259, gua.AttributeIDValue)}})
	require.NoError(t, err)
	require.Equal(t, gua.StatusOK, resp.Results[0].Status)
	require.NoError(t, c.Close(ctx))
}

// TestUnactivatedSessionSquatting: a client creates sessions and never activates them.
// One channel beyond limits.maxSessionCount gets BadTooManySessions at its share (half
// the table); channels flooding a full table only push out unactivated sessions, their
// own first; and what they leave ends limits.unactivatedSessionTimeout after creation
// (BadSessionIdInvalid for the squatter). Throughout, a gopcua client connects,
// activates and reads.
func TestUnactivatedSessionSquatting(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Limits.MaxSessionCount = 10 // a share of 5 per owner
		c.Limits.UnactivatedSessionTimeout = 2 * time.Second
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := func(ch *uasc.ClientChannel) (codec.NodeId, status.Code, error) {
		resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "squat", RequestedSessionTimeout: 3_600_000})
		if f, ok := resp.(*ua.ServiceFault); ok {
			return codec.NodeId{}, f.ResponseHeader.ServiceResult, nil
		}
		if err != nil {
			return codec.NodeId{}, 0, err
		}
		return resp.(*ua.CreateSessionResponse).AuthenticationToken, status.Good, nil
	}
	activate := func(ch *uasc.ClientChannel, token codec.NodeId) status.Code {
		resp, err := ch.Request(ctx, &ua.ActivateSessionRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: token}})
		return codeOf(t, resp, err)
	}

	// One channel, 12 CreateSessions into a table of 10.
	first := dialNone(t, ctx, ts)
	var tokens []codec.NodeId
	var codes []status.Code
	for range 12 {
		token, code, err := create(first)
		require.NoError(t, err)
		codes = append(codes, code)
		if code == status.Good {
			tokens = append(tokens, token)
		}
	}
	want := []status.Code{status.Good, status.Good, status.Good, status.Good, status.Good}
	for range 7 {
		want = append(want, status.BadTooManySessions)
	}
	require.Equal(t, want, codes, "the channel holds its share of 5, then BadTooManySessions")
	legitRead(t, ctx, ts.URL)

	// Three channels flood the table while the legitimate client connects three times.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex // guards flood, last, floodErr
	flood := map[status.Code]int{}
	last := map[*uasc.ClientChannel]codec.NodeId{}
	var floodErr error
	for range 3 {
		ch := dialNone(t, ctx, ts)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				token, code, err := create(ch)
				mu.Lock()
				if err != nil {
					floodErr = err
					mu.Unlock()
					return
				}
				flood[code]++
				if code == status.Good {
					last[ch] = token
				}
				mu.Unlock()
			}
		}()
	}
	for range 3 {
		legitRead(t, ctx, ts.URL)
	}
	close(stop)
	wg.Wait()
	require.NoError(t, floodErr)
	t.Logf("flood: %d created, %d BadTooManySessions", flood[status.Good], flood[status.BadTooManySessions])
	for code := range flood {
		require.Contains(t, []status.Code{status.Good, status.BadTooManySessions}, code, "the flood got %v", flood)
	}

	// The first channel's oldest session was pushed out for a legitimate client (or has
	// timed out by now), and what the flood left ends 2 s after it was created: the
	// squatter is told BadSessionIdInvalid.
	require.Equal(t, status.BadSessionIdInvalid, activate(first, tokens[0]))
	time.Sleep(2100 * time.Millisecond)
	for ch, token := range last {
		require.Equal(t, status.BadSessionIdInvalid, activate(ch, token))
	}
	c := connect(t, ctx, ts.URL, gua.SecurityPolicyURINone, gua.MessageSecurityModeNone, gua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	require.Eventually(t, func() bool {
		return readDiag(t, ctx, c, diagCurrentSessions)[0].Value.Value() == uint32(1)
	}, 5*time.Second, 100*time.Millisecond, "only the legitimate session is left")
}

// TestMonitoredItemMemory: one anonymous session creates 10,000 monitored items of
// QueueSize 1,000 on values that change every 100 ms and never publishes. The queues hold
// what arrives, not what was asked for: the server's heap grows by less than 150 MB
// (880 MB of queues were allocated up front before), and once the client leaves and its
// session times out, the memory goes back. A gopcua client's subscription is served
// meanwhile.
func TestMonitoredItemMemory(t *testing.T) {
	// Not parallel: it measures the heap of the test process, the server's included.
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.AddressSpace.Simulation = config.Simulation{Count: 100, Interval: 100 * time.Millisecond}
		c.Limits.MinSessionTimeout = time.Second
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}

	ch := dialNone(t, ctx, ts)
	resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "hog", RequestedSessionTimeout: 2000})
	require.NoError(t, err)
	token := resp.(*ua.CreateSessionResponse).AuthenticationToken
	h := ua.RequestHeader{AuthenticationToken: token}
	_, err = ch.Request(ctx, &ua.ActivateSessionRequest{RequestHeader: h})
	require.NoError(t, err)
	base := heap()

	resp, err = ch.Request(ctx, &ua.CreateSubscriptionRequest{RequestHeader: h, RequestedPublishingInterval: 100,
		RequestedLifetimeCount: 30000, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true})
	require.NoError(t, err)
	sub := resp.(*ua.CreateSubscriptionResponse).SubscriptionId
	const items, perCall = 10_000, 2_500
	for from := 0; from < items; from += perCall {
		reqs := make([]ua.MonitoredItemCreateRequest, perCall)
		for i := range reqs {
			reqs[i] = ua.MonitoredItemCreateRequest{
				ItemToMonitor:       ua.ReadValueId{NodeId: codec.NewStringNodeId(1, fmt.Sprintf("Demo.Simulation.Load.%d", (from+i)%100)), AttributeId: 13},
				MonitoringMode:      ua.MonitoringModeReporting,
				RequestedParameters: ua.MonitoringParameters{ClientHandle: uint32(from + i), QueueSize: 1000, DiscardOldest: true},
			}
		}
		resp, err := ch.Request(ctx, &ua.CreateMonitoredItemsRequest{RequestHeader: h, SubscriptionId: sub,
			TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: reqs})
		require.NoError(t, err)
		for _, r := range resp.(*ua.CreateMonitoredItemsResponse).Results {
			require.Equal(t, status.Good, r.StatusCode)
			require.Equal(t, uint32(1000), r.RevisedQueueSize, "the client is granted what it asked for")
		}
	}

	// Values arrive for 2 s and nobody publishes; the session is kept alive with Reads.
	legit := connect(t, ctx, ts.URL, gua.SecurityPolicyURINone, gua.MessageSecurityModeNone, gua.UserTokenTypeAnonymous)
	defer legit.Close(ctx)
	subscribeOne(t, ctx, legit, 100*time.Millisecond, gua.NewStringNodeID(1, "Demo.Simulation.Load.0"))
	for range 8 {
		time.Sleep(250 * time.Millisecond)
		_, err := ch.Request(ctx, &ua.ReadRequest{RequestHeader: h,
			NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13}}})
		require.NoError(t, err)
	}
	held := heap()
	t.Logf("heap: %d MB before the items, %d MB with them", base>>20, held>>20)
	require.Less(t, int64(held)-int64(base), int64(150<<20), "10,000 items of QueueSize 1,000")

	// The client leaves without a word; its session times out after 2 s and takes its
	// subscription (nobody may transfer an anonymous None subscription) with it.
	require.NoError(t, ch.Close())
	require.Eventually(t, func() bool {
		left := heap()
		t.Logf("heap after the client left: %d MB", left>>20)
		return int64(left)-int64(base) < 20<<20
	}, 20*time.Second, 500*time.Millisecond, "the memory goes back")
}

// TestOwnerSharesServer: a session (its own owner: anonymous over None) takes at most
// limits.ownerShare of limits.maxSubscriptionCount and limits.maxMonitoredItemCount,
// with BadTooManySubscriptions and BadTooManyMonitoredItems beyond; a gopcua session
// still creates its subscriptions and items.
func TestOwnerSharesServer(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Limits.MaxSubscriptionCount = 4 // shares of 2
		c.Limits.MaxMonitoredItemCount = 10
		c.Limits.MaxMonitoredItemsPerSubscription = 10 // shares of 5
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := dialNone(t, ctx, ts)
	h := ua.RequestHeader{AuthenticationToken: activate(t, ctx, ch)}
	newSub := func() (uint32, status.Code) {
		resp, err := ch.Request(ctx, &ua.CreateSubscriptionRequest{RequestHeader: h, RequestedPublishingInterval: 100,
			RequestedLifetimeCount: 300, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true})
		if code := codeOf(t, resp, err); code != status.Good {
			return 0, code
		}
		return resp.(*ua.CreateSubscriptionResponse).SubscriptionId, status.Good
	}
	s1, code := newSub()
	require.Equal(t, status.Good, code)
	_, code = newSub()
	require.Equal(t, status.Good, code)
	_, code = newSub()
	require.Equal(t, status.BadTooManySubscriptions, code, "the session holds its 2 of 4")

	reqs := make([]ua.MonitoredItemCreateRequest, 6)
	for i := range reqs {
		reqs[i] = ua.MonitoredItemCreateRequest{ItemToMonitor: ua.ReadValueId{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13},
			MonitoringMode: ua.MonitoringModeReporting, RequestedParameters: ua.MonitoringParameters{ClientHandle: uint32(i), QueueSize: 1}}
	}
	resp, err := ch.Request(ctx, &ua.CreateMonitoredItemsRequest{RequestHeader: h, SubscriptionId: s1,
		TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: reqs})
	require.NoError(t, err)
	var got []status.Code
	for _, r := range resp.(*ua.CreateMonitoredItemsResponse).Results {
		got = append(got, r.StatusCode)
	}
	require.Equal(t, []status.Code{status.Good, status.Good, status.Good, status.Good, status.Good, status.BadTooManyMonitoredItems}, got,
		"the session holds its 5 of 10")

	c := connect(t, ctx, ts.URL, gua.SecurityPolicyURINone, gua.MessageSecurityModeNone, gua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	sub := subscribeOne(t, ctx, c, 100*time.Millisecond, gua.NewNumericNodeID(0, 2258))
	more := make([]*gua.MonitoredItemCreateRequest, 4)
	for i := range more {
		more[i] = opcua.NewMonitoredItemCreateRequestWithDefaults(gua.NewNumericNodeID(0, 2259), gua.AttributeIDValue, uint32(10+i))
	}
	res, err := sub.Monitor(ctx, gua.TimestampsToReturnBoth, more...)
	require.NoError(t, err)
	for _, r := range res.Results {
		require.Equal(t, gua.StatusOK, r.StatusCode, "the other session's share")
	}
	_, err = c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 100 * time.Millisecond}, make(chan *opcua.PublishNotificationData, 4))
	require.NoError(t, err, "the other session's second subscription")
}

// TestOrphanedSubscriptionBound: a user's session closes keeping its subscriptions,
// which ask for an 8-hour lifetime; the one taken over within
// subscriptions.orphanLifetime lives on, the other is gone after it
// (BadSubscriptionIdInvalid to the transfer that comes too late).
func TestOrphanedSubscriptionBound(t *testing.T) {
	t.Parallel()
	hash, err := cheapHash("s3cret")
	require.NoError(t, err)
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.Users = []config.User{{Name: "alice", PasswordHash: hash}}
		c.Subscriptions.OrphanLifetime = time.Second
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := func() *opcua.Client {
		return connect(t, ctx, ts.URL, gua.SecurityPolicyURINone, gua.MessageSecurityModeNone, gua.UserTokenTypeUserName,
			opcua.AuthUsername("alice", "s3cret"))
	}
	first := alice()
	var subs []uint32
	for range 2 {
		cs, code := rawSend[*gua.CreateSubscriptionResponse](t, ctx, first, &gua.CreateSubscriptionRequest{
			RequestedPublishingInterval: 1000, RequestedLifetimeCount: 30000, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true})
		require.Equal(t, gua.StatusOK, code)
		require.EqualValues(t, 30000, cs.RevisedLifetimeCount, "8 hours at 1 s")
		subs = append(subs, cs.SubscriptionID)
	}
	_, code := rawSend[*gua.CloseSessionResponse](t, ctx, first, &gua.CloseSessionRequest{DeleteSubscriptions: false})
	require.Equal(t, gua.StatusOK, code)
	_ = first.Close(ctx)

	second := alice()
	defer second.Close(ctx)
	tr, code := rawSend[*gua.TransferSubscriptionsResponse](t, ctx, second, &gua.TransferSubscriptionsRequest{SubscriptionIDs: subs[:1]})
	require.Equal(t, gua.StatusOK, code)
	require.Equal(t, gua.StatusOK, tr.Results[0].StatusCode, "within the bound")
	time.Sleep(1200 * time.Millisecond)
	tr, code = rawSend[*gua.TransferSubscriptionsResponse](t, ctx, second, &gua.TransferSubscriptionsRequest{SubscriptionIDs: subs})
	require.Equal(t, gua.StatusOK, code)
	require.Equal(t, gua.StatusOK, tr.Results[0].StatusCode, "the adopted one lives on")
	require.Equal(t, gua.StatusBadSubscriptionIDInvalid, tr.Results[1].StatusCode, "past the bound, not its 8 hours")
}
