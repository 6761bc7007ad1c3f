package server_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	pua "uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/services/server/internal/subscription"
)

const (
	historianURI = "urn:uastack:test:historian"
	plainURI     = "urn:uastack:test:no-history"
)

// attrManager answers the attributes history's access checks read: Temp keeps history
// (HistoryRead and HistoryWrite), Locked is readable but keeps none for the client
// (no HistoryRead), Guarded's history is written by nobody (HistoryWrite only in its
// AccessLevel), Alarms is a notifier with the HistoryRead bit.
type attrManager struct {
	uri   string
	reads atomic.Int32 // Read calls
}

func (m *attrManager) Namespaces() []string { return []string{m.uri} }

func (m *attrManager) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	m.reads.Add(1)
	const (
		rd = pua.AccessLevelTypeCurrentRead
		hr = pua.AccessLevelTypeHistoryRead
		hw = pua.AccessLevelTypeHistoryWrite
	)
	levels := map[string][2]pua.AccessLevelType{"Temp": {rd | hr | hw, rd | hr | hw}, "Locked": {rd, rd}, "Guarded": {rd | hr | hw, rd | hr}}
	for i, it := range op.Items {
		res := &op.Results[i]
		name := it.NodeId.StringID()
		lv, variable := levels[name]
		switch {
		case name == "Alarms" && attr.ID(it.AttributeId) == attr.NodeClass:
			res.Value = codec.Int32Variant(int32(pua.NodeClassObject))
		case name == "Alarms" && attr.ID(it.AttributeId) == attr.EventNotifier:
			res.Value = codec.ByteVariant(byte(pua.EventNotifierTypeSubscribeToEvents | pua.EventNotifierTypeHistoryRead))
		case name == "Alarms":
			res.Status = status.BadAttributeIdInvalid
		case !variable:
			res.Status = status.BadNodeIdUnknown
		case attr.ID(it.AttributeId) == attr.NodeClass:
			res.Value = codec.Int32Variant(int32(pua.NodeClassVariable))
		case attr.ID(it.AttributeId) == attr.AccessLevel:
			res.Value = codec.ByteVariant(byte(lv[0]))
		case attr.ID(it.AttributeId) == attr.UserAccessLevel:
			res.Value = codec.ByteVariant(byte(lv[1]))
		default:
			res.Status = status.BadAttributeIdInvalid
		}
	}
	done()
}

// historianManager is attrManager with a history store of its own: the server routes
// the history of its nodes there.
type historianManager struct {
	attrManager
	*history.Memory
}

var (
	_ history.Store      = (*historianManager)(nil)
	_ history.EventStore = (*historianManager)(nil)
)

// startManaged starts a server with the demo namespace and history on, and managers m.
func startManaged(t *testing.T, m ...nodemgr.Manager) string {
	t.Helper()
	url, err := startManagers(t, nil, m...)
	require.NoError(t, err)
	return url
}

// TestHistoryFromManager: a mounted manager that implements history.Store serves the
// history of its nodes to gopcua (raw in pages, processed, an insert read back, events),
// the server checking access with the attributes the manager answers; one without a
// store answers BadHistoryOperationUnsupported, also next to the other in one request.
func TestHistoryFromManager(t *testing.T) {
	t.Parallel()
	mem := history.NewMemory(history.MemoryLimits{PerNode: 1000, Total: 10000, EventsPerNotifier: 100})
	hm := &historianManager{attrManager{uri: historianURI}, mem}
	url := startManaged(t, hm, &attrManager{uri: plainURI})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, url, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	hns, err := c.FindNamespace(ctx, historianURI)
	require.NoError(t, err)
	pns, err := c.FindNamespace(ctx, plainURI)
	require.NoError(t, err)
	temp, locked, guarded := ua.NewStringNodeID(hns, "Temp"), ua.NewStringNodeID(hns, "Locked"), ua.NewStringNodeID(hns, "Guarded")
	plainTemp := ua.NewStringNodeID(pns, "Temp")

	// Ten values a second apart, 0 to 9, in the manager's own store.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	var vals []history.Value
	for i := range 10 {
		at := codec.DateTimeOf(t0.Add(time.Duration(i) * time.Second))
		vals = append(vals, history.Value{Node: codec.NewStringNodeId(hns, "Temp"),
			Value: codec.DataValue{Value: codec.DoubleVariant(float64(i)), SourceTimestamp: at, ServerTimestamp: at}})
	}
	require.NoError(t, mem.Append(ctx, vals))
	whole := &ua.ReadRawModifiedDetails{StartTime: t0, EndTime: t0.Add(10 * time.Second)}

	t.Run("RawPages", func(t *testing.T) {
		paged := *whole
		paged.NumValuesPerNode = 4
		var got []float64
		var cp []byte
		for pages := 1; ; pages++ {
			require.LessOrEqual(t, pages, 3)
			r, page := historyValues(t, ctx, c, temp, &paged, cp)
			require.Equal(t, ua.StatusOK, r.StatusCode)
			for _, v := range page {
				got = append(got, v.Value.Value().(float64))
			}
			if cp = r.ContinuationPoint; cp == nil {
				break
			}
		}
		require.Equal(t, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, got)
	})

	t.Run("Processed", func(t *testing.T) {
		res, err := c.HistoryReadProcessed(ctx, []*ua.HistoryReadValueID{hv(temp, nil), hv(temp, nil)}, &ua.ReadProcessedDetails{
			StartTime: t0, EndTime: t0.Add(10 * time.Second), ProcessingInterval: 5000,
			AggregateType:          []*ua.NodeID{ua.NewNumericNodeID(0, id.AggregateFunction_Count), ua.NewNumericNodeID(0, id.AggregateFunction_Maximum)},
			AggregateConfiguration: &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true}})
		require.NoError(t, err)
		var got [2][]any
		for k := range got {
			require.Equal(t, ua.StatusOK, res.Results[k].StatusCode)
			for _, v := range res.Results[k].HistoryData.Value.(*ua.HistoryData).DataValues {
				got[k] = append(got[k], v.Value.Value())
			}
		}
		require.Len(t, got[0], 2)
		require.EqualValues(t, 5, got[0][0], "Count of 0..4")
		require.EqualValues(t, 5, got[0][1], "Count of 5..9")
		require.Equal(t, []any{4.0, 9.0}, got[1], "Maximum")
	})

	t.Run("Unsupported", func(t *testing.T) {
		before := hm.reads.Load()
		res, err := c.HistoryReadRawModified(ctx, []*ua.HistoryReadValueID{hv(plainTemp, nil), hv(temp, nil), hv(locked, nil)}, whole)
		require.NoError(t, err)
		require.Equal(t, before+1, hm.reads.Load(), "the access of both nodes is one Read")
		require.Equal(t, ua.StatusBadHistoryOperationUnsupported, res.Results[0].StatusCode, "a manager without a store")
		require.Equal(t, ua.StatusOK, res.Results[1].StatusCode)
		require.Len(t, res.Results[1].HistoryData.Value.(*ua.HistoryData).DataValues, 10)
		require.Equal(t, ua.StatusBadNotReadable, res.Results[2].StatusCode, "no HistoryRead in the AccessLevel the manager answers")
		insert := &ua.UpdateDataDetails{NodeID: plainTemp, PerformInsertReplace: ua.PerformUpdateTypeInsert,
			UpdateValues: []*ua.DataValue{{EncodingMask: ua.DataValueValue | ua.DataValueSourceTimestamp, Value: ua.MustVariant(1.0), SourceTimestamp: t0}}}
		require.Equal(t, ua.StatusBadHistoryOperationUnsupported, historyUpdate(t, ctx, c, insert)[0].StatusCode)
	})

	t.Run("Update", func(t *testing.T) {
		at := t0.Add(20 * time.Second)
		insert := &ua.UpdateDataDetails{NodeID: temp, PerformInsertReplace: ua.PerformUpdateTypeInsert,
			UpdateValues: []*ua.DataValue{{EncodingMask: ua.DataValueValue | ua.DataValueSourceTimestamp, Value: ua.MustVariant(42.0), SourceTimestamp: at}}}
		onGuarded := *insert
		onGuarded.NodeID = guarded
		res := historyUpdate(t, ctx, c, insert, &onGuarded)
		require.Equal(t, ua.StatusOK, res[0].StatusCode)
		require.Equal(t, []ua.StatusCode{ua.StatusGoodEntryInserted}, res[0].OperationResults)
		require.Equal(t, ua.StatusBadUserAccessDenied, res[1].StatusCode, "no HistoryWrite in the UserAccessLevel the manager answers")
		// The value went to the manager's store.
		op := &history.ReadRawOp{Items: []history.RawRead{{Node: codec.NewStringNodeId(hns, "Temp"), Start: codec.DateTimeOf(at), End: codec.DateTimeOf(at.Add(time.Second))}},
			Results: make([]history.RawResult, 1)}
		require.NoError(t, mem.ReadRaw(ctx, op))
		require.Len(t, op.Results[0].Values, 1)
		require.Equal(t, 42.0, op.Results[0].Values[0].Value.Value())
		_, got := historyValues(t, ctx, c, temp, &ua.ReadRawModifiedDetails{StartTime: at, EndTime: at.Add(time.Second)}, nil)
		require.Len(t, got, 1)
		require.Equal(t, 42.0, got[0].Value.Value())

		// In request order: the deletion comes between the inserts, so the second one
		// finds no value at its time. The access of all three is one Read.
		later := at.Add(time.Second)
		again := &ua.UpdateDataDetails{NodeID: temp, PerformInsertReplace: ua.PerformUpdateTypeInsert,
			UpdateValues: []*ua.DataValue{{EncodingMask: ua.DataValueValue | ua.DataValueSourceTimestamp, Value: ua.MustVariant(7.0), SourceTimestamp: later}}}
		before := hm.reads.Load()
		res = historyUpdate(t, ctx, c, again, &ua.DeleteAtTimeDetails{NodeID: temp, ReqTimes: []time.Time{later}}, again)
		require.Equal(t, before+1, hm.reads.Load())
		require.Equal(t, []ua.StatusCode{ua.StatusGoodEntryInserted}, res[0].OperationResults)
		require.Equal(t, []ua.StatusCode{ua.StatusOK}, res[1].OperationResults)
		require.Equal(t, []ua.StatusCode{ua.StatusGoodEntryInserted}, res[2].OperationResults, "applied after the deletion")
	})

	t.Run("Events", func(t *testing.T) {
		notifier := codec.NewStringNodeId(hns, "Alarms")
		at := codec.DateTimeOf(t0)
		require.NoError(t, mem.AppendEvents(ctx, []history.Event{{Notifier: notifier, Time: at, Type: codec.NewNumericNodeId(0, id.BaseEventType),
			Fields: []history.EventField{
				{Key: subscription.KeyTime, Value: codec.DateTimeVariant(at)},
				{Key: subscription.KeyEventType, Value: codec.NodeIdVariant(codec.NewNumericNodeId(0, id.BaseEventType))},
				{Key: subscription.KeySeverity, Value: codec.UInt16Variant(700)},
			}}}))
		sev := &ua.SimpleAttributeOperand{TypeDefinitionID: ua.NewNumericNodeID(0, id.BaseEventType), BrowsePath: []*ua.QualifiedName{{Name: "Severity"}}, AttributeID: ua.AttributeIDValue}
		res, err := c.HistoryReadEvent(ctx, []*ua.HistoryReadValueID{hv(ua.NewStringNodeID(hns, "Alarms"), nil), hv(ua.NewStringNodeID(pns, "Alarms"), nil)},
			&ua.ReadEventDetails{StartTime: t0.Add(-time.Second), EndTime: t0.Add(time.Second), Filter: &ua.EventFilter{SelectClauses: []*ua.SimpleAttributeOperand{sev}, WhereClause: &ua.ContentFilter{}}})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, res.Results[0].StatusCode)
		evs := res.Results[0].HistoryData.Value.(*ua.HistoryEvent).Events
		require.Len(t, evs, 1)
		require.Equal(t, uint16(700), evs[0].EventFields[0].Value())
		require.Equal(t, ua.StatusBadHistoryOperationUnsupported, res.Results[1].StatusCode)
	})
}
