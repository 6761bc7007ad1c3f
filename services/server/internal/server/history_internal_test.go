package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
)

// serveForHistory starts a server with cfg's history settings on 127.0.0.1:0 and
// returns it with its URL; the server stops when the test ends.
func serveForHistory(t *testing.T, configure func(*config.Config)) (*Server, string) {
	t.Helper()
	srv, url, stop := startForHistory(t, configure)
	t.Cleanup(stop)
	return srv, url
}

// startForHistory is serveForHistory with the stop left to the caller.
func startForHistory(t *testing.T, configure func(*config.Config)) (*Server, string, func()) {
	t.Helper()
	cfg := config.Default()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "opc.tcp://" + ln.Addr().String()
	cfg.Endpoint.EndpointURL = url
	if configure != nil {
		configure(cfg)
	}
	require.NoError(t, cfg.Validate())
	srv, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	return srv, url, func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
			require.NoError(t, srv.Close())
		})
	}
}

func dialNoneGopcua(t *testing.T, ctx context.Context, url string) *opcua.Client {
	t.Helper()
	eps, err := opcua.GetEndpoints(ctx, url)
	require.NoError(t, err)
	ep, err := opcua.SelectEndpoint(eps, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone)
	require.NoError(t, err)
	c, err := opcua.NewClient(url, opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeAnonymous), opcua.AutoReconnect(false),
		opcua.RequestTimeout(10*time.Second))
	require.NoError(t, err)
	require.NoError(t, c.Connect(ctx))
	return c
}

// TestHistoryContinuationPointsReleased checks that the continuation points of an
// abandoned HistoryRead are bounded per session (history.maxContinuationPoints,
// BadNoContinuationPoints beyond), released by ReleaseContinuationPoints, and all
// released when the session closes.
func TestHistoryContinuationPointsReleased(t *testing.T) {
	t.Parallel()
	srv, url := serveForHistory(t, func(c *config.Config) { c.History.MaxContinuationPoints = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialNoneGopcua(t, ctx, url)
	sine := ua.NewStringNodeID(1, "Demo.Simulation.Sine")
	details := &ua.ReadRawModifiedDetails{StartTime: time.Now().Add(-time.Hour), EndTime: time.Now().Add(time.Hour), NumValuesPerNode: 1}
	read := func(release bool, cp []byte) *ua.HistoryReadResult {
		req := &ua.HistoryReadRequest{HistoryReadDetails: ua.NewExtensionObject(details), TimestampsToReturn: ua.TimestampsToReturnSource,
			ReleaseContinuationPoints: release,
			NodesToRead:               []*ua.HistoryReadValueID{{NodeID: sine, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}}}
		var res *ua.HistoryReadResponse
		require.NoError(t, c.Send(ctx, req, func(v ua.Response) error { res = v.(*ua.HistoryReadResponse); return nil }))
		return res.Results[0]
	}
	// Three values at least, so that a read of one leaves a point.
	require.Eventually(t, func() bool {
		details.NumValuesPerNode = 0
		defer func() { details.NumValuesPerNode = 1 }()
		r := read(false, nil)
		return r.HistoryData != nil && r.HistoryData.Value != nil && len(r.HistoryData.Value.(*ua.HistoryData).DataValues) >= 3
	}, 20*time.Second, 50*time.Millisecond)

	first := read(false, nil)
	require.NotNil(t, first.ContinuationPoint)
	second := read(false, nil)
	require.NotNil(t, second.ContinuationPoint)
	require.Equal(t, 2, srv.hist.points.count())
	require.Equal(t, ua.StatusBadNoContinuationPoints, read(false, nil).StatusCode, "history.maxContinuationPoints")

	require.Equal(t, ua.StatusOK, read(true, first.ContinuationPoint).StatusCode)
	require.Equal(t, 1, srv.hist.points.count(), "released by ReleaseContinuationPoints")
	next := read(false, second.ContinuationPoint)
	require.Equal(t, ua.StatusOK, next.StatusCode)
	require.NotNil(t, next.ContinuationPoint, "the used point is replaced by the next one")
	require.Equal(t, 1, srv.hist.points.count())

	require.NoError(t, c.Close(ctx))
	require.Eventually(t, func() bool { return srv.hist.points.count() == 0 }, 5*time.Second, 10*time.Millisecond,
		"released when the session closes")
}

// TestHistoryDurableRestart records the demo's Sine into the durable store, stops the
// server and starts another on the same history.path: a client reads the same values.
func TestHistoryDurableRestart(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "history")
	pkiDir := filepath.Join(t.TempDir(), "pki")
	durable := func(c *config.Config) {
		c.History.Store, c.History.Path = config.HistoryDurable, dir
		c.Security.PKIDir = pkiDir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	sine := ua.NewStringNodeID(1, "Demo.Simulation.Sine")
	start, end := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	readAll := func(url string) []*ua.DataValue {
		c := dialNoneGopcua(t, ctx, url)
		defer c.Close(ctx)
		res, err := c.HistoryReadRawModified(ctx, []*ua.HistoryReadValueID{{NodeID: sine, DataEncoding: &ua.QualifiedName{}}},
			&ua.ReadRawModifiedDetails{StartTime: start, EndTime: end})
		require.NoError(t, err)
		if res.Results[0].HistoryData == nil || res.Results[0].HistoryData.Value == nil {
			return nil
		}
		return res.Results[0].HistoryData.Value.(*ua.HistoryData).DataValues
	}
	_, url, stop := startForHistory(t, durable)
	var before []*ua.DataValue
	require.Eventually(t, func() bool { before = readAll(url); return len(before) >= 5 }, 20*time.Second, 50*time.Millisecond)
	stop()
	after := time.Now()

	_, url, stop = startForHistory(t, durable)
	defer stop()
	kept := readAll(url)
	require.GreaterOrEqual(t, len(kept), len(before), "every value read before the restart, and those recorded until the stop")
	for i, v := range before {
		require.Equal(t, v.SourceTimestamp, kept[i].SourceTimestamp)
		require.Equal(t, v.Value.Value(), kept[i].Value.Value())
	}
	require.Eventually(t, func() bool {
		vals := readAll(url)
		return vals[len(vals)-1].SourceTimestamp.After(after)
	}, 10*time.Second, 50*time.Millisecond, "recording goes on after the restart")
}

// TestHistoryResponseBounded checks that one HistoryRead answer holds at most
// history.maxValuesPerResponse values: the nodes share it (the rest left for
// continuation points), and a processed read of more intervals than it allows is
// BadTooManyOperations.
func TestHistoryResponseBounded(t *testing.T) {
	t.Parallel()
	_, url := serveForHistory(t, func(c *config.Config) { c.History.MaxValuesPerResponse = 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialNoneGopcua(t, ctx, url)
	defer c.Close(ctx)
	sine := ua.NewStringNodeID(1, "Demo.Simulation.Sine")
	node := func() *ua.HistoryReadValueID {
		return &ua.HistoryReadValueID{NodeID: sine, DataEncoding: &ua.QualifiedName{}}
	}
	start := time.Now()
	details := &ua.ReadRawModifiedDetails{StartTime: start.Add(-time.Hour), EndTime: start.Add(time.Hour)}
	var res *ua.HistoryReadResponse
	require.Eventually(t, func() bool {
		var err error
		res, err = c.HistoryReadRawModified(ctx, []*ua.HistoryReadValueID{node(), node()}, details)
		require.NoError(t, err)
		return res.Results[0].ContinuationPoint != nil
	}, 20*time.Second, 50*time.Millisecond, "more than two values of Sine")
	for _, r := range res.Results {
		require.Equal(t, ua.StatusOK, r.StatusCode)
		require.Len(t, r.HistoryData.Value.(*ua.HistoryData).DataValues, 2, "half of 4 each")
		require.NotNil(t, r.ContinuationPoint)
	}
	_, err := c.HistoryReadProcessed(ctx, []*ua.HistoryReadValueID{node()}, &ua.ReadProcessedDetails{
		StartTime: start.Add(-time.Minute), EndTime: start, ProcessingInterval: 1000,
		AggregateType:          []*ua.NodeID{ua.NewNumericNodeID(0, 2342)},
		AggregateConfiguration: &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true}})
	require.ErrorIs(t, err, ua.StatusBadTooManyOperations, "60 intervals for a response of 4")
}

// TestHistoryOff: with history.store off nothing is recorded, HistoryRead and
// HistoryUpdate answer BadHistoryOperationUnsupported per node, and
// HistoryServerCapabilities says there is no history.
func TestHistoryOff(t *testing.T) {
	t.Parallel()
	srv, url := serveForHistory(t, func(c *config.Config) { c.History.Store = config.HistoryOff })
	require.Nil(t, srv.hist)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialNoneGopcua(t, ctx, url)
	defer c.Close(ctx)
	sine := ua.NewStringNodeID(1, "Demo.Simulation.Sine")
	res, err := c.HistoryReadRawModified(ctx, []*ua.HistoryReadValueID{{NodeID: sine, DataEncoding: &ua.QualifiedName{}}},
		&ua.ReadRawModifiedDetails{StartTime: time.Now().Add(-time.Hour), EndTime: time.Now()})
	require.NoError(t, err)
	require.Equal(t, ua.StatusBadHistoryOperationUnsupported, res.Results[0].StatusCode)
	upd := &ua.HistoryUpdateRequest{HistoryUpdateDetails: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.DeleteAtTimeDetails{NodeID: sine, ReqTimes: []time.Time{time.Now()}})}}
	var ures *ua.HistoryUpdateResponse
	require.NoError(t, c.Send(ctx, upd, func(v ua.Response) error { ures = v.(*ua.HistoryUpdateResponse); return nil }))
	require.Equal(t, ua.StatusBadHistoryOperationUnsupported, ures.Results[0].StatusCode)
	read, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{
		{NodeID: ua.NewNumericNodeID(0, 11193), AttributeID: ua.AttributeIDValue}}}) // AccessHistoryDataCapability
	require.NoError(t, err)
	require.Equal(t, false, read.Results[0].Value.Value())
}
