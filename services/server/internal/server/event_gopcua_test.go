package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/servertest"
)

// gopcuaEvent is one event as the test sees it: its fields in select-clause order.
type gopcuaEvent struct {
	handle uint32
	fields []any
}

// collectEvents forwards the events of ch by client handle.
func collectEvents(ctx context.Context, t *testing.T, ch <-chan *opcua.PublishNotificationData) map[uint32]chan gopcuaEvent {
	by := map[uint32]chan gopcuaEvent{1: make(chan gopcuaEvent, 256), 2: make(chan gopcuaEvent, 256)}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case n := <-ch:
				if n.Error != nil {
					t.Logf("publish error: %v", n.Error)
					continue
				}
				enl, ok := n.Value.(*ua.EventNotificationList)
				if !ok {
					continue
				}
				for _, e := range enl.Events {
					ev := gopcuaEvent{handle: e.ClientHandle}
					for _, f := range e.EventFields {
						ev.fields = append(ev.fields, f.Value())
					}
					if c := by[e.ClientHandle]; c != nil {
						c <- ev
					}
				}
			}
		}
	}()
	return by
}

func selectClause(typ uint32, names ...string) *ua.SimpleAttributeOperand {
	o := &ua.SimpleAttributeOperand{TypeDefinitionID: ua.NewNumericNodeID(0, typ), AttributeID: ua.AttributeIDValue}
	for _, n := range names {
		ns := uint16(0)
		if n == "Counter" {
			ns = 1
		}
		o.BrowsePath = append(o.BrowsePath, &ua.QualifiedName{NamespaceIndex: ns, Name: n})
	}
	return o
}

func eventItem(node *ua.NodeID, handle uint32, f *ua.EventFilter) *ua.MonitoredItemCreateRequest {
	return &ua.MonitoredItemCreateRequest{
		ItemToMonitor:  &ua.ReadValueID{NodeID: node, AttributeID: ua.AttributeIDEventNotifier, DataEncoding: &ua.QualifiedName{}},
		MonitoringMode: ua.MonitoringModeReporting,
		RequestedParameters: &ua.MonitoringParameters{ClientHandle: handle, DiscardOldest: true, QueueSize: 100,
			Filter: ua.NewExtensionObject(f)},
	}
}

// TestEventsGopcua subscribes to the demo event source with a where clause Severity >
// 500 and to the Server object's system events, through gopcua's client.
func TestEventsGopcua(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	time.Sleep(300 * time.Millisecond) // see TestSubscriptionGopcua

	ch := make(chan *opcua.PublishNotificationData, 64)
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 50 * time.Millisecond}, ch)
	require.NoError(t, err)
	got := collectEvents(ctx, t, ch)

	source := ua.NewStringNodeID(1, "Demo.Events")
	server := ua.NewNumericNodeID(0, id.Server)
	severe := &ua.EventFilter{
		SelectClauses: []*ua.SimpleAttributeOperand{
			selectClause(id.BaseEventType, "Severity"), selectClause(id.BaseEventType, "Message"),
			selectClause(id.BaseEventType, "SourceName"), selectClause(id.BaseEventType, "EventId"),
			selectClause(id.BaseEventType, "Counter"),
		},
		WhereClause: &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{
			FilterOperator: ua.FilterOperatorGreaterThan,
			FilterOperands: []*ua.ExtensionObject{
				ua.NewExtensionObject(selectClause(id.BaseEventType, "Severity")),
				ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(int32(500))}),
			},
		}}},
	}
	system := &ua.EventFilter{
		SelectClauses: []*ua.SimpleAttributeOperand{selectClause(id.BaseEventType, "EventType"), selectClause(id.BaseEventType, "Message")},
		WhereClause: &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{
			FilterOperator: ua.FilterOperatorOfType,
			FilterOperands: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(ua.NewNumericNodeID(0, id.SystemEventType))})},
		}}},
	}
	badSelects := &ua.EventFilter{SelectClauses: []*ua.SimpleAttributeOperand{
		selectClause(id.BaseEventType, "Severity"),
		selectClause(id.FolderType, "Severity"),
		selectClause(424242, "Severity"),
		selectClause(id.SystemEventType, "NoSuchField"),
		selectClause(id.BaseDataVariableType, "Severity"),
	}, WhereClause: &ua.ContentFilter{}}
	badWhere := &ua.EventFilter{
		SelectClauses: []*ua.SimpleAttributeOperand{selectClause(id.BaseEventType, "Severity")},
		WhereClause: &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{
			FilterOperator: ua.FilterOperatorInView,
			FilterOperands: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(ua.NewNumericNodeID(0, id.ViewsFolder))})},
		}}},
	}
	onVariable := eventItem(ua.NewStringNodeID(1, "Demo.Scalar_Double"), 5, severe)
	onVariable.ItemToMonitor.AttributeID = ua.AttributeIDValue
	dataFilter := eventItem(server, 7, severe)
	dataFilter.RequestedParameters.Filter = ua.NewExtensionObject(&ua.DataChangeFilter{Trigger: ua.DataChangeTriggerStatusValue})
	noFilter := eventItem(server, 8, severe)
	noFilter.RequestedParameters.Filter = nil
	res, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth,
		eventItem(source, 1, severe), eventItem(server, 2, system), eventItem(server, 3, badSelects), eventItem(server, 4, badWhere),
		onVariable, eventItem(ua.NewStringNodeID(1, "Demo"), 6, severe), dataFilter, noFilter)
	require.NoError(t, err)
	require.Len(t, res.Results, 8)
	require.Equal(t, ua.StatusBadFilterNotAllowed, res.Results[6].StatusCode)
	require.Equal(t, ua.StatusBadMonitoredItemFilterInvalid, res.Results[7].StatusCode)

	// ModifyMonitoredItems checks a new EventFilter the same way; without one the item
	// keeps its filter.
	modify := func(f *ua.ExtensionObject) *ua.MonitoredItemModifyResult {
		r, err := sub.ModifyMonitoredItems(ctx, ua.TimestampsToReturnBoth, &ua.MonitoredItemModifyRequest{
			MonitoredItemID:     res.Results[0].MonitoredItemID,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: 1, QueueSize: 50, DiscardOldest: true, Filter: f}})
		require.NoError(t, err)
		return r.Results[0]
	}
	mr := modify(ua.NewExtensionObject(badWhere))
	require.Equal(t, ua.StatusBadEventFilterInvalid, mr.StatusCode)
	require.Equal(t, ua.StatusBadFilterOperatorUnsupported, mr.FilterResult.Value.(*ua.EventFilterResult).WhereClauseResult.ElementResults[0].StatusCode)
	mr = modify(nil)
	require.Equal(t, ua.StatusOK, mr.StatusCode)
	require.Equal(t, uint32(50), mr.RevisedQueueSize)
	require.Equal(t, ua.StatusOK, res.Results[0].StatusCode)
	require.Equal(t, ua.StatusOK, res.Results[1].StatusCode)
	require.Equal(t, ua.StatusOK, res.Results[2].StatusCode)
	fr, ok := res.Results[2].FilterResult.Value.(*ua.EventFilterResult)
	require.True(t, ok, "FilterResult %T", res.Results[2].FilterResult.Value)
	require.Equal(t, []ua.StatusCode{ua.StatusOK, ua.StatusBadTypeDefinitionInvalid, ua.StatusBadNodeIDUnknown, ua.StatusBadBrowseNameInvalid,
		ua.StatusBadTypeDefinitionInvalid},
		fr.SelectClauseResults)
	require.Equal(t, ua.StatusBadEventFilterInvalid, res.Results[3].StatusCode)
	fr, ok = res.Results[3].FilterResult.Value.(*ua.EventFilterResult)
	require.True(t, ok)
	require.Equal(t, ua.StatusBadFilterOperatorUnsupported, fr.WhereClauseResult.ElementResults[0].StatusCode)
	require.Equal(t, ua.StatusBadFilterNotAllowed, res.Results[4].StatusCode)
	require.Equal(t, ua.StatusBadNotSupported, res.Results[5].StatusCode)

	// Emit three events on demand: only Severity > 500 reaches item 1.
	emit := func(sev uint16, msg string) {
		r, err := c.Call(ctx, &ua.CallMethodRequest{ObjectID: source, MethodID: ua.NewStringNodeID(1, "Demo.Events.Emit"),
			InputArguments: []*ua.Variant{ua.MustVariant(sev), ua.MustVariant(msg)}})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, r.StatusCode)
	}
	emit(200, "test low")
	emit(800, "test high")
	emit(600, "test mid")
	var mine []string
	deadline := time.After(10 * time.Second)
	for len(mine) < 2 {
		select {
		case ev := <-got[1]:
			require.Len(t, ev.fields, 5)
			sev := ev.fields[0].(uint16)
			require.Greater(t, sev, uint16(500), "the where clause lets %v through", ev.fields)
			msg := ev.fields[1].(*ua.LocalizedText).Text
			require.Equal(t, "Demo/Events", ev.fields[2])
			require.Len(t, ev.fields[3].([]byte), 16)
			require.IsType(t, uint32(0), ev.fields[4], "a field of DemoEventType")
			if strings.HasPrefix(msg, "test") {
				mine = append(mine, msg)
			}
		case <-deadline:
			t.Fatalf("demo events received: %v", mine)
		}
	}
	require.Equal(t, []string{"test high", "test mid"}, mine)

	// Subscription lifecycle reaches the Server object as SystemEvents.
	sub2, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 100 * time.Millisecond}, make(chan *opcua.PublishNotificationData, 8))
	require.NoError(t, err)
	require.NoError(t, sub2.Cancel(ctx))
	want := []string{"Subscription " + strconv.FormatUint(uint64(sub2.SubscriptionID), 10) + " created", "Subscription " + strconv.FormatUint(uint64(sub2.SubscriptionID), 10) + " deleted"}
	var seen []string
	deadline = time.After(10 * time.Second)
	for len(seen) < 2 {
		select {
		case ev := <-got[2]:
			require.Equal(t, ua.NewNumericNodeID(0, id.SystemEventType).String(), ev.fields[0].(*ua.NodeID).String())
			if msg := ev.fields[1].(*ua.LocalizedText).Text; strings.HasPrefix(msg, "Subscription ") {
				seen = append(seen, msg)
			}
		case <-deadline:
			t.Fatalf("system events received: %v", seen)
		}
	}
	require.Equal(t, want, seen)

	// So does a session's life: created, activated, closed.
	c2 := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	require.NoError(t, c2.Close(ctx))
	seen = nil
	deadline = time.After(10 * time.Second)
	for len(seen) < 3 {
		select {
		case ev := <-got[2]:
			if msg := ev.fields[1].(*ua.LocalizedText).Text; strings.HasPrefix(msg, "Session ") {
				seen = append(seen, msg)
			}
		case <-deadline:
			t.Fatalf("session events received: %v", seen)
		}
	}
	session := strings.TrimPrefix(seen[0], "Session created: ")
	require.NotEqual(t, seen[0], session)
	require.Equal(t, []string{"Session created: " + session, "Session activated: " + session, "Session closed: " + session}, seen)
}
