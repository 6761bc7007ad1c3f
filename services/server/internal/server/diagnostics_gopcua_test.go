package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// NodeIds of the Server object's ServerDiagnostics (Part 5 §6.3.3).
const (
	diagSummary          = 2275
	diagCurrentSessions  = 2277
	diagCumulated        = 2278
	diagRejectedRequests = 2288
	diagSubscriptions    = 2290
	diagEnabledFlag      = 2294
	diagSessions         = 3707
	diagSessionSecurity  = 3708
)

// readDiag reads the Values of ids through c and requires them Good.
func readDiag(t *testing.T, ctx context.Context, c *opcua.Client, ids ...uint32) []*ua.DataValue {
	t.Helper()
	nodes := make([]*ua.ReadValueID, len(ids))
	for i, id := range ids {
		nodes[i] = readValueID(id, ua.AttributeIDValue)
	}
	resp, err := c.Read(ctx, &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth, NodesToRead: nodes})
	require.NoError(t, err)
	require.Len(t, resp.Results, len(ids))
	for i, r := range resp.Results {
		require.Equal(t, ua.StatusOK, r.Status, "node i=%d", ids[i])
	}
	return resp.Results
}

// structures returns the decoded structures of an ExtensionObject[] value.
func structures[T any](t *testing.T, dv *ua.DataValue) []*T {
	t.Helper()
	xs, ok := dv.Value.Value().([]*ua.ExtensionObject)
	require.True(t, ok, "value is %T", dv.Value.Value())
	out := make([]*T, len(xs))
	for i, x := range xs {
		v, ok := x.Value.(*T)
		require.True(t, ok, "element %d is %T", i, x.Value)
		out[i] = v
	}
	return out
}

// subscribeOne subscribes c at interval with one monitored item on node, and waits for
// its first data change.
func subscribeOne(t *testing.T, ctx context.Context, c *opcua.Client, interval time.Duration, node *ua.NodeID) *opcua.Subscription {
	t.Helper()
	ch := make(chan *opcua.PublishNotificationData, 16)
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: interval}, ch)
	require.NoError(t, err)
	res, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, opcua.NewMonitoredItemCreateRequestWithDefaults(node, ua.AttributeIDValue, 1))
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, res.Results[0].StatusCode)
	select {
	case n := <-ch:
		require.NoError(t, n.Error)
	case <-time.After(5 * time.Second):
		t.Fatal("no data change within 5 s")
	}
	return sub
}

// TestDiagnosticsGopcua reads ServerDiagnostics through gopcua after two sessions with a
// subscription each (at different publishing intervals) and a refused request: the
// summary, its component Variables, the session, session security and subscription
// arrays match what the clients did. A third session does not show within the
// throttling interval (same snapshot, same SourceTimestamp) and does after it.
func TestDiagnosticsGopcua(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous, opcua.SessionName("diag-a"))
	defer a.Close(ctx)
	b := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous, opcua.SessionName("diag-b"))
	defer b.Close(ctx)
	// Let gopcua's first Publish (BadNoSubscription) pause its publish loop before
	// Subscribe resumes it (see TestSubscriptionGopcua).
	time.Sleep(300 * time.Millisecond)
	subA := subscribeOne(t, ctx, a, 100*time.Millisecond, ua.NewStringNodeID(1, "Demo.Scalar_Double"))
	subB := subscribeOne(t, ctx, b, 200*time.Millisecond, ua.NewNumericNodeID(0, 2258))

	// A Read of nothing is refused with a ServiceFault: one rejected request, at least
	// (gopcua's first Publishes were refused with BadNoSubscription too).
	_, err := a.Read(ctx, &ua.ReadRequest{})
	require.Error(t, err)

	// Who is logged in how is for security administrators: an anonymous session is
	// refused it (TestDiagnosticsRejectedAndTimedOut reads it as one).
	denied, err := a.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{readValueID(diagSessionSecurity, ua.AttributeIDValue)}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusBadUserAccessDenied, denied.Results[0].Status)

	got := readDiag(t, ctx, a, diagSummary, diagCurrentSessions, diagCumulated, diagRejectedRequests,
		diagSessions, diagSubscriptions, diagEnabledFlag)
	summary, ok := got[0].Value.Value().(*ua.ExtensionObject).Value.(*ua.ServerDiagnosticsSummaryDataType)
	require.True(t, ok, "summary is %T", got[0].Value.Value())
	require.EqualValues(t, 2, summary.CurrentSessionCount)
	require.EqualValues(t, 2, summary.CumulatedSessionCount)
	require.EqualValues(t, 2, summary.CurrentSubscriptionCount)
	require.EqualValues(t, 2, summary.CumulatedSubscriptionCount)
	require.EqualValues(t, 2, summary.PublishingIntervalCount)
	require.Zero(t, summary.RejectedSessionCount)
	require.Zero(t, summary.SessionTimeoutCount)
	require.GreaterOrEqual(t, summary.RejectedRequestsCount, uint32(1))
	// The component Variables come from the same snapshot.
	require.Equal(t, summary.CurrentSessionCount, got[1].Value.Value())
	require.Equal(t, summary.CumulatedSessionCount, got[2].Value.Value())
	require.Equal(t, summary.RejectedRequestsCount, got[3].Value.Value())
	require.Equal(t, true, got[6].Value.Value())

	sessions := structures[ua.SessionDiagnosticsDataType](t, got[4])
	require.Len(t, sessions, 2)
	byName := map[string]*ua.SessionDiagnosticsDataType{}
	for _, s := range sessions {
		byName[s.SessionName] = s
	}
	sa := byName["diag-a"]
	require.NotNil(t, sa, "sessions %v", byName)
	require.NotNil(t, byName["diag-b"])
	require.EqualValues(t, 1, sa.CurrentSubscriptionsCount)
	require.EqualValues(t, 1, sa.CurrentMonitoredItemsCount)
	// CreateSubscription, CreateMonitoredItems and the Read of nothing, at least.
	require.GreaterOrEqual(t, sa.TotalRequestCount.TotalCount, uint32(3))
	// Per service: one subscription and one item made; the security array Read refused
	// (BadUserAccessDenied, also unauthorised), then the Read of nothing (BadNothingToDo).
	require.Equal(t, &ua.ServiceCounterDataType{TotalCount: 1}, sa.CreateSubscriptionCount)
	require.Equal(t, &ua.ServiceCounterDataType{TotalCount: 1}, sa.CreateMonitoredItemsCount)
	// gopcua reads on its own when it connects: at least the two Reads here, one failed;
	// the Read in progress is counted once its answer is sent.
	require.GreaterOrEqual(t, sa.ReadCount.TotalCount, uint32(2))
	require.EqualValues(t, 1, sa.ReadCount.ErrorCount)
	require.GreaterOrEqual(t, sa.PublishCount.TotalCount, uint32(1))
	require.EqualValues(t, 0, sa.UnauthorizedRequestCount, "the refused item is a per-item status, not a refused request")
	require.GreaterOrEqual(t, sa.TotalRequestCount.ErrorCount, uint32(1))
	require.Zero(t, sa.WriteCount.TotalCount)
	require.Equal(t, ts.URL, sa.EndpointURL)
	require.NotEmpty(t, sa.ClientDescription.ApplicationURI)
	require.False(t, sa.ClientLastContactTime.Before(sa.ClientConnectionTime))
	require.Greater(t, sa.ActualSessionTimeout, 0.0)

	subs := structures[ua.SubscriptionDiagnosticsDataType](t, got[5])
	require.Len(t, subs, 2)
	bySub := map[uint32]*ua.SubscriptionDiagnosticsDataType{}
	for _, s := range subs {
		bySub[s.SubscriptionID] = s
	}
	da, db := bySub[subA.SubscriptionID], bySub[subB.SubscriptionID]
	require.NotNil(t, da)
	require.NotNil(t, db)
	require.Equal(t, sa.SessionID.String(), da.SessionID.String())
	require.EqualValues(t, 100, da.PublishingInterval)
	require.EqualValues(t, 200, db.PublishingInterval)
	require.True(t, da.PublishingEnabled)
	require.EqualValues(t, 1, da.MonitoredItemCount)
	require.Zero(t, da.DisabledMonitoredItemCount)
	require.GreaterOrEqual(t, da.DataChangeNotificationsCount, uint32(1))
	require.Equal(t, da.DataChangeNotificationsCount, da.NotificationsCount)
	require.GreaterOrEqual(t, da.PublishRequestCount, uint32(1))
	require.Greater(t, da.NextSequenceNumber, uint32(1))
	require.Equal(t, subA.RevisedMaxKeepAliveCount, da.MaxKeepAliveCount)
	require.Equal(t, subA.RevisedLifetimeCount, da.MaxLifetimeCount)

	// Throttled: a third subscription within the interval leaves the snapshot as it
	// was (one request, so the check runs well inside the interval)...
	first := got[0]
	subC, err := a.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 300 * time.Millisecond}, make(chan *opcua.PublishNotificationData, 16))
	require.NoError(t, err)
	defer subC.Cancel(ctx)
	again := readDiag(t, ctx, a, diagSummary)[0]
	require.Less(t, time.Since(first.SourceTimestamp), 900*time.Millisecond, "too slow to see the throttling")
	require.EqualValues(t, 2, again.Value.Value().(*ua.ExtensionObject).Value.(*ua.ServerDiagnosticsSummaryDataType).CurrentSubscriptionCount)
	require.Equal(t, first.SourceTimestamp, again.SourceTimestamp)
	// ...and a third session too; both show once the interval has passed.
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	time.Sleep(time.Until(first.SourceTimestamp.Add(1100 * time.Millisecond)))
	later := readDiag(t, ctx, a, diagSummary, diagCurrentSessions)
	summary = later[0].Value.Value().(*ua.ExtensionObject).Value.(*ua.ServerDiagnosticsSummaryDataType)
	require.EqualValues(t, 3, summary.CurrentSubscriptionCount)
	require.EqualValues(t, 3, summary.PublishingIntervalCount)
	require.EqualValues(t, 3, summary.CurrentSessionCount)
	require.EqualValues(t, 3, later[1].Value.Value())
	require.True(t, later[0].SourceTimestamp.After(first.SourceTimestamp))
}

// TestDiagnosticsDisabled runs with observability.diagnosticsEnabled=false: EnabledFlag
// is false, the arrays are empty although a session and a subscription exist, and the
// summary still counts (its counters are plain atomics). EnabledFlag follows the
// configuration and is not writable.
func TestDiagnosticsDisabled(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) { c.Observability.DiagnosticsEnabled = false }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	time.Sleep(300 * time.Millisecond)
	subscribeOne(t, ctx, c, 100*time.Millisecond, ua.NewStringNodeID(1, "Demo.Scalar_Double"))

	got := readDiag(t, ctx, c, diagEnabledFlag, diagSessions, diagSubscriptions, diagSummary)
	require.Equal(t, false, got[0].Value.Value())
	for i := 1; i <= 2; i++ {
		xs, ok := got[i].Value.Value().([]*ua.ExtensionObject)
		require.True(t, ok, "value %d is %T", i, got[i].Value.Value())
		require.Empty(t, xs)
	}
	summary := got[3].Value.Value().(*ua.ExtensionObject).Value.(*ua.ServerDiagnosticsSummaryDataType)
	require.EqualValues(t, 1, summary.CurrentSessionCount)
	require.EqualValues(t, 1, summary.CurrentSubscriptionCount)

	resp, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{
		NodeID: ua.NewNumericNodeID(0, diagEnabledFlag), AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(true)},
	}}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusBadNotWritable, resp.Results[0])
}

// TestDiagnosticsRejectedAndTimedOut counts a refused ActivateSession (a wrong password:
// BadUserAccessDenied, a security rejection) and a session that times out, and reads
// the user of the remaining session from SessionSecurityDiagnosticsArray, which bob may
// read as a security administrator.
func TestDiagnosticsRejectedAndTimedOut(t *testing.T) {
	t.Parallel()
	hash, err := cheapHash("pw")
	require.NoError(t, err)
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.Users = []config.User{{Name: "bob", PasswordHash: hash, Roles: []string{"SecurityAdmin"}}}
		c.Limits.MinSessionTimeout = 200 * time.Millisecond
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bob := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeUserName,
		opcua.AuthUsername("bob", "pw"), opcua.SessionName("bob"))
	defer bob.Close(ctx)

	eps, err := opcua.GetEndpoints(ctx, ts.URL)
	require.NoError(t, err)
	ep, err := opcua.SelectEndpoint(eps, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone)
	require.NoError(t, err)
	wrong, err := opcua.NewClient(ts.URL, opcua.AuthUsername("bob", "wrong"), opcua.SessionTimeout(200*time.Millisecond),
		opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeUserName), opcua.AutoReconnect(false))
	require.NoError(t, err)
	require.ErrorIs(t, wrong.Connect(ctx), ua.StatusBadUserAccessDenied)
	// The refused session was created but never activated: it times out.
	time.Sleep(500 * time.Millisecond)

	got := readDiag(t, ctx, bob, diagSummary, diagSessionSecurity)
	summary := got[0].Value.Value().(*ua.ExtensionObject).Value.(*ua.ServerDiagnosticsSummaryDataType)
	require.EqualValues(t, 1, summary.CurrentSessionCount)
	require.EqualValues(t, 2, summary.CumulatedSessionCount)
	require.EqualValues(t, 1, summary.RejectedSessionCount)
	require.EqualValues(t, 1, summary.SecurityRejectedSessionCount)
	require.EqualValues(t, 1, summary.SessionTimeoutCount)
	require.GreaterOrEqual(t, summary.SecurityRejectedRequestsCount, uint32(1))
	require.GreaterOrEqual(t, summary.RejectedRequestsCount, summary.SecurityRejectedRequestsCount)

	security := structures[ua.SessionSecurityDiagnosticsDataType](t, got[1])
	require.Len(t, security, 1)
	require.Equal(t, "bob", security[0].ClientUserIDOfSession)
	require.Equal(t, []string{"bob"}, security[0].ClientUserIDHistory)
	require.Equal(t, "UserName", security[0].AuthenticationMechanism)
	require.Equal(t, ua.SecurityPolicyURINone, security[0].SecurityPolicyURI)
	require.Equal(t, ua.MessageSecurityModeNone, security[0].SecurityMode)
	require.Equal(t, "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary", security[0].TransportProtocol)
}
