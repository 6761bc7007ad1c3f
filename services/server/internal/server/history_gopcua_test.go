package server_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

var (
	sineNode     = ua.NewStringNodeID(1, "Demo.Simulation.Sine")
	setpointNode = ua.NewStringNodeID(1, "Demo.Protected.Setpoint")
	eventsNode   = ua.NewStringNodeID(1, "Demo.Events")
)

// hv is a HistoryReadValueID: gopcua writes nothing for a nil DataEncoding, so one
// is always given.
func hv(node *ua.NodeID, cp []byte) *ua.HistoryReadValueID {
	return &ua.HistoryReadValueID{NodeID: node, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}
}

// historyValues reads the raw history of node between start and end with gopcua.
func historyValues(t *testing.T, ctx context.Context, c *opcua.Client, node *ua.NodeID, d *ua.ReadRawModifiedDetails, cp []byte) (*ua.HistoryReadResult, []*ua.DataValue) {
	t.Helper()
	res, err := c.HistoryReadRawModified(ctx, []*ua.HistoryReadValueID{hv(node, cp)}, d)
	require.NoError(t, err)
	require.Len(t, res.Results, 1)
	r := res.Results[0]
	if r.HistoryData == nil || r.HistoryData.Value == nil {
		return r, nil
	}
	if m, ok := r.HistoryData.Value.(*ua.HistoryModifiedData); ok {
		return r, m.DataValues
	}
	return r, r.HistoryData.Value.(*ua.HistoryData).DataValues
}

// waitHistory waits until the demo's Sine has at least n values in history and returns
// the time of the first one.
func waitHistory(t *testing.T, ctx context.Context, c *opcua.Client, n int) time.Time {
	t.Helper()
	var vals []*ua.DataValue
	require.Eventually(t, func() bool {
		_, vals = historyValues(t, ctx, c, sineNode, &ua.ReadRawModifiedDetails{StartTime: time.Now().Add(-time.Hour), EndTime: time.Now().Add(time.Hour)}, nil)
		return len(vals) >= n
	}, 20*time.Second, 50*time.Millisecond)
	return vals[0].SourceTimestamp
}

func updateRequest(details ...any) *ua.HistoryUpdateRequest {
	req := &ua.HistoryUpdateRequest{}
	for _, d := range details {
		req.HistoryUpdateDetails = append(req.HistoryUpdateDetails, ua.NewExtensionObject(d))
	}
	return req
}

func historyUpdate(t *testing.T, ctx context.Context, c *opcua.Client, details ...any) []*ua.HistoryUpdateResult {
	t.Helper()
	var res *ua.HistoryUpdateResponse
	require.NoError(t, c.Send(ctx, updateRequest(details...), func(v ua.Response) error {
		res = v.(*ua.HistoryUpdateResponse)
		return nil
	}))
	return res.Results
}

// TestHistoryGopcua drives HistoryRead and HistoryUpdate with gopcua: the demo's Sine
// records its changes; a raw read in pages of two returns what one read does; a released
// continuation point is gone; processed and at-time reads; the demo events are read back
// with a filter; HistoryUpdate of Setpoint is refused without the Operator role
// (BadUserAccessDenied) and of Sine for everyone (no HistoryWrite), and an Operator's
// insert is read back.
func TestHistoryGopcua(t *testing.T) {
	t.Parallel()
	hash, err := cheapHash("pw")
	require.NoError(t, err)
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.Users = []config.User{
			{Name: "olga", PasswordHash: hash, Roles: []string{"Operator"}},
			{Name: "victor", PasswordHash: hash},
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	none, anon := ua.SecurityPolicyURINone, ua.MessageSecurityModeNone
	c := connect(t, ctx, ts.URL, none, anon, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)

	first := waitHistory(t, ctx, c, 6)
	end := time.Now()
	whole := &ua.ReadRawModifiedDetails{StartTime: first, EndTime: end}
	r, all := historyValues(t, ctx, c, sineNode, whole, nil)
	require.Equal(t, ua.StatusOK, r.StatusCode)
	require.GreaterOrEqual(t, len(all), 6)
	for i, v := range all {
		require.Equal(t, ua.StatusOK, v.Status)
		require.IsType(t, float64(0), v.Value.Value())
		if i > 0 {
			require.True(t, v.SourceTimestamp.After(all[i-1].SourceTimestamp), "oldest first")
		}
	}

	t.Run("Pages", func(t *testing.T) {
		paged := *whole
		paged.NumValuesPerNode = 2
		var got []*ua.DataValue
		var cp []byte
		for pages := 0; ; pages++ {
			require.Less(t, pages, 100)
			r, vals := historyValues(t, ctx, c, sineNode, &paged, cp)
			require.Equal(t, ua.StatusOK, r.StatusCode)
			require.LessOrEqual(t, len(vals), 2)
			got = append(got, vals...)
			if cp = r.ContinuationPoint; cp == nil {
				break
			}
		}
		require.Equal(t, len(all), len(got))
		for i := range all {
			require.Equal(t, all[i].SourceTimestamp, got[i].SourceTimestamp)
			require.Equal(t, all[i].Value.Value(), got[i].Value.Value())
		}
		// Newest first with bounds.
		rev := &ua.ReadRawModifiedDetails{StartTime: end, EndTime: first.Add(-time.Millisecond), ReturnBounds: true}
		_, back := historyValues(t, ctx, c, sineNode, rev, nil)
		require.Equal(t, all[len(all)-1].SourceTimestamp, back[1].SourceTimestamp, "the start bound, then the newest value")
		require.Equal(t, all[0].SourceTimestamp, back[len(back)-2].SourceTimestamp)
	})

	t.Run("Release", func(t *testing.T) {
		one := *whole
		one.NumValuesPerNode = 1
		r, _ := historyValues(t, ctx, c, sineNode, &one, nil)
		require.NotNil(t, r.ContinuationPoint)
		req := &ua.HistoryReadRequest{
			HistoryReadDetails:        ua.NewExtensionObject(&one),
			TimestampsToReturn:        ua.TimestampsToReturnBoth,
			ReleaseContinuationPoints: true,
			NodesToRead:               []*ua.HistoryReadValueID{hv(sineNode, r.ContinuationPoint)},
		}
		var res *ua.HistoryReadResponse
		require.NoError(t, c.Send(ctx, req, func(v ua.Response) error { res = v.(*ua.HistoryReadResponse); return nil }))
		require.Equal(t, ua.StatusOK, res.Results[0].StatusCode)
		require.Nil(t, res.Results[0].HistoryData.Value, "a release returns no data")
		again, _ := historyValues(t, ctx, c, sineNode, &one, r.ContinuationPoint)
		require.Equal(t, ua.StatusBadContinuationPointInvalid, again.StatusCode)
	})

	t.Run("Processed", func(t *testing.T) {
		res, err := c.HistoryReadProcessed(ctx, []*ua.HistoryReadValueID{hv(sineNode, nil), hv(sineNode, nil)}, &ua.ReadProcessedDetails{
			StartTime: first, EndTime: end, ProcessingInterval: float64(end.Sub(first).Milliseconds() + 1),
			AggregateType:          []*ua.NodeID{ua.NewNumericNodeID(0, id.AggregateFunction_Count), ua.NewNumericNodeID(0, id.AggregateFunction_Maximum)},
			AggregateConfiguration: &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true},
		})
		require.NoError(t, err)
		count := res.Results[0].HistoryData.Value.(*ua.HistoryData).DataValues
		require.Len(t, count, 1)
		require.Equal(t, int32(len(all)), count[0].Value.Value())
		require.Equal(t, ua.StatusCode(0x0401), count[0].Status, "Good, Calculated")
		max := res.Results[1].HistoryData.Value.(*ua.HistoryData).DataValues[0].Value.Value().(float64)
		want := -2.0
		for _, v := range all {
			want = math.Max(want, v.Value.Value().(float64))
		}
		require.Equal(t, want, max)
	})

	t.Run("AtTime", func(t *testing.T) {
		res, err := c.HistoryReadAtTime(ctx, []*ua.HistoryReadValueID{hv(sineNode, nil)}, &ua.ReadAtTimeDetails{
			ReqTimes: []time.Time{all[1].SourceTimestamp, first.Add(-time.Hour)}, UseSimpleBounds: true})
		require.NoError(t, err)
		vals := res.Results[0].HistoryData.Value.(*ua.HistoryData).DataValues
		require.Equal(t, all[1].Value.Value(), vals[0].Value.Value(), "the raw value at its time")
		require.Equal(t, ua.StatusBadNoData, vals[1].Status, "before the first value")
	})

	t.Run("Events", func(t *testing.T) {
		from := time.Now()
		_, err := c.Call(ctx, &ua.CallMethodRequest{ObjectID: eventsNode, MethodID: ua.NewStringNodeID(1, "Demo.Events.Emit"),
			InputArguments: []*ua.Variant{ua.MustVariant(uint16(800)), ua.MustVariant("history me")}})
		require.NoError(t, err)
		field := func(name string) *ua.SimpleAttributeOperand {
			return &ua.SimpleAttributeOperand{TypeDefinitionID: ua.NewNumericNodeID(0, id.BaseEventType),
				BrowsePath: []*ua.QualifiedName{{Name: name}}, AttributeID: ua.AttributeIDValue}
		}
		var msgs []string
		// Demo/Events and the Server object, the notifier of every event, both keep it.
		for _, notifier := range []*ua.NodeID{eventsNode, ua.NewNumericNodeID(0, id.Server)} {
			require.Eventually(t, func() bool {
				res, err := c.HistoryReadEvent(ctx, []*ua.HistoryReadValueID{hv(notifier, nil)}, &ua.ReadEventDetails{
					StartTime: from.Add(-time.Second), EndTime: time.Now().Add(time.Second),
					Filter: &ua.EventFilter{SelectClauses: []*ua.SimpleAttributeOperand{field("Message"), field("Severity")}, WhereClause: &ua.ContentFilter{}}})
				require.NoError(t, err)
				require.Equal(t, ua.StatusOK, res.Results[0].StatusCode)
				msgs = msgs[:0]
				for _, ev := range res.Results[0].HistoryData.Value.(*ua.HistoryEvent).Events {
					lt := ev.EventFields[0].Value().(*ua.LocalizedText)
					if lt.Text == "history me" {
						require.Equal(t, uint16(800), ev.EventFields[1].Value())
					}
					msgs = append(msgs, lt.Text)
				}
				return slices.Contains(msgs, "history me")
			}, 10*time.Second, 50*time.Millisecond, "%v", notifier)
		}
	})

	t.Run("ConditionEvents", func(t *testing.T) {
		// The demo's limit alarms report the Sine crossing its limits; the Server object
		// keeps those events too, and a where clause selects them.
		filter := &ua.EventFilter{
			SelectClauses: []*ua.SimpleAttributeOperand{
				{TypeDefinitionID: ua.NewNumericNodeID(0, id.BaseEventType), BrowsePath: []*ua.QualifiedName{{Name: "SourceNode"}}, AttributeID: ua.AttributeIDValue},
				{TypeDefinitionID: ua.NewNumericNodeID(0, id.AlarmConditionType), BrowsePath: []*ua.QualifiedName{{Name: "ActiveState"}, {Name: "Id"}}, AttributeID: ua.AttributeIDValue},
			},
			WhereClause: &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{FilterOperator: ua.FilterOperatorOfType,
				FilterOperands: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(ua.NewNumericNodeID(0, id.ExclusiveLimitAlarmType))})}}}},
		}
		var n int
		require.Eventually(t, func() bool {
			res, err := c.HistoryReadEvent(ctx, []*ua.HistoryReadValueID{hv(ua.NewNumericNodeID(0, id.Server), nil)}, &ua.ReadEventDetails{
				StartTime: first.Add(-time.Minute), EndTime: time.Now().Add(time.Second), Filter: filter})
			require.NoError(t, err)
			require.Equal(t, ua.StatusOK, res.Results[0].StatusCode)
			evs := res.Results[0].HistoryData.Value.(*ua.HistoryEvent).Events
			for _, ev := range evs {
				require.Equal(t, sineNode.String(), ev.EventFields[0].Value().(*ua.NodeID).String(), "only the Sine's exclusive alarm")
				require.IsType(t, false, ev.EventFields[1].Value())
			}
			n = len(evs)
			return n > 0
		}, 10*time.Second, 100*time.Millisecond)
	})

	t.Run("Access", func(t *testing.T) {
		scalar := ua.NewStringNodeID(1, "Demo.Scalar_Double")
		r, _ := historyValues(t, ctx, c, scalar, whole, nil)
		require.Equal(t, ua.StatusBadNotReadable, r.StatusCode, "no HistoryRead in AccessLevel")
		_, err := c.HistoryReadRawModified(ctx, []*ua.HistoryReadValueID{hv(sineNode, nil)}, &ua.ReadRawModifiedDetails{StartTime: first})
		require.ErrorIs(t, err, ua.StatusBadInvalidTimestampArgument, "a start without an end needs NumValuesPerNode")
	})

	t.Run("Update", func(t *testing.T) {
		at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
		insert := &ua.UpdateDataDetails{NodeID: setpointNode, PerformInsertReplace: ua.PerformUpdateTypeInsert,
			UpdateValues: []*ua.DataValue{{EncodingMask: ua.DataValueValue | ua.DataValueSourceTimestamp, Value: ua.MustVariant(42.0), SourceTimestamp: at}}}
		onSine := *insert
		onSine.NodeID = sineNode
		res := historyUpdate(t, ctx, c, insert, &onSine)
		require.Equal(t, ua.StatusBadUserAccessDenied, res[0].StatusCode, "anonymous: not an Operator")
		require.Equal(t, ua.StatusBadNotWritable, res[1].StatusCode, "no HistoryWrite in Sine's AccessLevel")
		plain := connect(t, ctx, ts.URL, none, anon, ua.UserTokenTypeUserName, opcua.AuthUsername("victor", "pw"))
		defer plain.Close(ctx)
		require.Equal(t, ua.StatusBadUserAccessDenied, historyUpdate(t, ctx, plain, insert)[0].StatusCode)
		operator := connect(t, ctx, ts.URL, none, anon, ua.UserTokenTypeUserName, opcua.AuthUsername("olga", "pw"))
		defer operator.Close(ctx)
		res = historyUpdate(t, ctx, operator, insert)
		require.Equal(t, ua.StatusOK, res[0].StatusCode)
		require.Equal(t, []ua.StatusCode{ua.StatusGoodEntryInserted}, res[0].OperationResults)
		require.Equal(t, []ua.StatusCode{ua.StatusBadEntryExists}, historyUpdate(t, ctx, operator, insert)[0].OperationResults)
		_, vals := historyValues(t, ctx, c, setpointNode, &ua.ReadRawModifiedDetails{StartTime: at, EndTime: at.Add(time.Second)}, nil)
		require.Len(t, vals, 1)
		require.Equal(t, 42.0, vals[0].Value.Value())
		del := &ua.DeleteAtTimeDetails{NodeID: setpointNode, ReqTimes: []time.Time{at}}
		require.Equal(t, ua.StatusBadUserAccessDenied, historyUpdate(t, ctx, c, del)[0].StatusCode)
		require.Equal(t, []ua.StatusCode{ua.StatusOK}, historyUpdate(t, ctx, operator, del)[0].OperationResults)
		_, vals = historyValues(t, ctx, c, setpointNode, &ua.ReadRawModifiedDetails{StartTime: at, EndTime: at.Add(time.Second), IsReadModified: true}, nil)
		require.Len(t, vals, 2, "the insert and the deletion, as modified values")
	})
}
