package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/servertest"
)

// conditionSelects are the fields the alarm tests select, in this order.
func conditionSelects() []*ua.SimpleAttributeOperand {
	return []*ua.SimpleAttributeOperand{
		selectClause(id.BaseEventType, "EventId"),
		selectClause(id.BaseEventType, "EventType"),
		{TypeDefinitionID: ua.NewNumericNodeID(0, id.ConditionType), AttributeID: ua.AttributeIDNodeID}, // ConditionId
		selectClause(id.BaseEventType, "Severity"),
		selectClause(id.AlarmConditionType, "ActiveState", "Id"),
		selectClause(id.AcknowledgeableConditionType, "AckedState", "Id"),
		selectClause(id.ConditionType, "Retain"),
		selectClause(id.AlarmConditionType, "ShelvingState", "CurrentState", "Id"),
		selectClause(id.ExclusiveLimitAlarmType, "LimitState", "CurrentState"),
		selectClause(id.ConditionType, "BranchId"),
	}
}

// conditionEvent is an event of conditionSelects.
type conditionEvent struct {
	eventID   []byte
	eventType *ua.NodeID
	condition *ua.NodeID
	severity  uint16
	active    any
	acked     any
	retain    any
	shelving  any
	limit     any
}

func toConditionEvent(e gopcuaEvent) conditionEvent {
	f := e.fields
	c := conditionEvent{active: f[4], acked: f[5], retain: f[6], shelving: f[7], limit: f[8]}
	c.eventID, _ = f[0].([]byte)
	c.eventType, _ = f[1].(*ua.NodeID)
	c.condition, _ = f[2].(*ua.NodeID)
	c.severity, _ = f[3].(uint16)
	return c
}

// TestAlarmsGopcua drives the demo's limit alarms with gopcua's client: the condition
// nodes browse and read, a where clause on condition fields selects the events,
// Acknowledge with an unknown EventId is refused, a timed shelve ends by itself, and a
// ConditionRefresh answers only the subscription of its session.
func TestAlarmsGopcua(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	time.Sleep(300 * time.Millisecond) // see TestSubscriptionGopcua

	exclusive := ua.NewStringNodeID(1, "Demo.Simulation.SineExclusiveAlarm")
	nonExclusive := ua.NewStringNodeID(1, "Demo.Simulation.SineNonExclusiveAlarm")
	sine := ua.NewStringNodeID(1, "Demo.Simulation.Sine")

	// The condition is an instance of its type, found from its source by HasCondition.
	br, err := c.Browse(ctx, &ua.BrowseRequest{NodesToBrowse: []*ua.BrowseDescription{{
		NodeID: sine, BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeID: ua.NewNumericNodeID(0, id.HasCondition),
		IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}}})
	require.NoError(t, err)
	require.Len(t, br.Results[0].References, 2)
	rr, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{
		{NodeID: ua.NewStringNodeID(1, "Demo.Simulation.SineExclusiveAlarm.HighLimit"), AttributeID: ua.AttributeIDValue},
		{NodeID: ua.NewStringNodeID(1, "Demo.Simulation.SineExclusiveAlarm.ConditionName"), AttributeID: ua.AttributeIDValue},
		{NodeID: ua.NewStringNodeID(1, "Demo.Simulation.SineNonExclusiveAlarm.HighHighState.Id"), AttributeID: ua.AttributeIDValue},
	}})
	require.NoError(t, err)
	require.Equal(t, 0.5, rr.Results[0].Value.Value())
	require.Equal(t, "SineExclusiveAlarm", rr.Results[1].Value.Value())
	require.IsType(t, false, rr.Results[2].Value.Value())

	ch := make(chan *opcua.PublishNotificationData, 64)
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 50 * time.Millisecond}, ch)
	require.NoError(t, err)
	got := collectEvents(ctx, t, ch)
	server := ua.NewNumericNodeID(0, id.Server)
	// Item 1: active exclusive limit alarms only; item 2: every condition event.
	activeOnly := &ua.EventFilter{SelectClauses: conditionSelects(), WhereClause: &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{
		FilterOperator: ua.FilterOperatorAnd,
		FilterOperands: []*ua.ExtensionObject{
			ua.NewExtensionObject(&ua.ElementOperand{Index: 1}), ua.NewExtensionObject(&ua.ElementOperand{Index: 2})},
	}, {
		FilterOperator: ua.FilterOperatorOfType,
		FilterOperands: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(ua.NewNumericNodeID(0, id.ExclusiveLimitAlarmType))})},
	}, {
		FilterOperator: ua.FilterOperatorEquals,
		FilterOperands: []*ua.ExtensionObject{
			ua.NewExtensionObject(selectClause(id.AlarmConditionType, "ActiveState", "Id")),
			ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(true)})},
	}}}}
	all := &ua.EventFilter{SelectClauses: conditionSelects(), WhereClause: &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{
		FilterOperator: ua.FilterOperatorOfType,
		FilterOperands: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(ua.NewNumericNodeID(0, id.ConditionType))})},
	}}}}
	res, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, eventItem(server, 1, activeOnly), eventItem(server, 2, all))
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, res.Results[0].StatusCode)
	require.Equal(t, ua.StatusOK, res.Results[1].StatusCode)

	// The sine passes 0.5 within a second of the start: the exclusive alarm goes active.
	var active conditionEvent
	select {
	case e := <-got[1]:
		active = toConditionEvent(e)
	case <-ctx.Done():
		t.Fatal("no active alarm event")
	}
	require.Equal(t, exclusive.String(), active.condition.String())
	require.Equal(t, ua.NewNumericNodeID(0, id.ExclusiveLimitAlarmType).String(), active.eventType.String())
	require.Equal(t, true, active.active)
	require.Equal(t, true, active.retain)
	require.GreaterOrEqual(t, active.severity, uint16(700))
	require.Contains(t, []any{"High", "HighHigh", "Low", "LowLow"}, textOf(active.limit))
	require.Len(t, active.eventID, 16)

	call := func(obj, method *ua.NodeID, args ...any) ua.StatusCode {
		req := &ua.CallMethodRequest{ObjectID: obj, MethodID: method}
		for _, a := range args {
			req.InputArguments = append(req.InputArguments, ua.MustVariant(a))
		}
		r, err := c.Call(ctx, req)
		require.NoError(t, err)
		return r.StatusCode
	}
	ackID := ua.NewNumericNodeID(0, id.AcknowledgeableConditionType_Acknowledge)
	comment := &ua.LocalizedText{Text: "gopcua", EncodingMask: ua.LocalizedTextText}
	require.Equal(t, ua.StatusBadEventIDUnknown, call(exclusive, ackID, []byte("no such event"), comment))
	require.Equal(t, ua.StatusBadNodeIDInvalid, call(ua.NewNumericNodeID(0, id.AcknowledgeableConditionType), ackID, active.eventID, comment),
		"the type itself is no condition (Part 9 §5.7.3)")
	require.Equal(t, ua.StatusBadMethodInvalid, call(ua.NewStringNodeID(1, "Demo"), ackID, active.eventID, comment),
		"Acknowledge is no component of Demo or its type")

	// A timed shelve of 300 ms ends by itself; the events say so.
	shelving := ua.NewStringNodeID(1, "Demo.Simulation.SineExclusiveAlarm.ShelvingState")
	timed := ua.NewNumericNodeID(0, id.ShelvedStateMachineType_TimedShelve)
	require.Equal(t, ua.StatusBadShelvingTimeOutOfRange, call(shelving, timed, float64(0)))
	require.Equal(t, ua.StatusBadShelvingTimeOutOfRange, call(shelving, timed, float64(2*time.Hour/time.Millisecond)))
	require.Equal(t, ua.StatusBadConditionNotShelved, call(shelving, ua.NewNumericNodeID(0, id.ShelvedStateMachineType_Unshelve)))
	start := time.Now()
	require.Equal(t, ua.StatusOK, call(shelving, timed, float64(300)))
	require.Equal(t, ua.StatusBadConditionAlreadyShelved, call(shelving, timed, float64(300)))
	timedShelved, unshelved := ua.NewNumericNodeID(0, id.ShelvedStateMachineType_TimedShelved), ua.NewNumericNodeID(0, id.ShelvedStateMachineType_Unshelved)
	sawShelved, sawOther := false, false
	for {
		var e conditionEvent
		select {
		case ev := <-got[2]:
			e = toConditionEvent(ev)
		case <-ctx.Done():
			t.Fatal("the shelve did not end")
		}
		if e.condition.String() != exclusive.String() {
			sawOther = sawOther || e.condition.String() == nonExclusive.String()
			continue
		}
		s, _ := e.shelving.(*ua.NodeID)
		if s != nil && s.String() == timedShelved.String() {
			sawShelved = true
		}
		if sawShelved && s != nil && s.String() == unshelved.String() {
			require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
			break
		}
	}

	// ConditionRefresh: RefreshStart, the retained conditions, RefreshEnd, on item 2.
	refreshID := ua.NewNumericNodeID(0, id.ConditionType_ConditionRefresh)
	conditionType := ua.NewNumericNodeID(0, id.ConditionType)
	require.Equal(t, ua.StatusBadSubscriptionIDInvalid, call(conditionType, refreshID, sub.SubscriptionID+1000))
	require.Equal(t, ua.StatusBadMethodInvalid, call(server, refreshID, sub.SubscriptionID))
	for len(got[2]) > 0 {
		<-got[2]
	}
	require.Equal(t, ua.StatusOK, call(conditionType, refreshID, sub.SubscriptionID))
	var types []string
	retained := map[string]bool{}
	for done := false; !done; {
		select {
		case ev := <-got[2]:
			e := toConditionEvent(ev)
			switch e.eventType.String() {
			case ua.NewNumericNodeID(0, id.RefreshStartEventType).String():
				types = append(types, "start")
			case ua.NewNumericNodeID(0, id.RefreshEndEventType).String():
				types = append(types, "end")
				done = true
			default:
				if len(types) > 0 && types[0] == "start" && e.retain == true && e.condition != nil {
					retained[e.condition.String()] = true
				}
			}
		case <-ctx.Done():
			t.Fatal("no RefreshEndEvent")
		}
	}
	require.Equal(t, "start", types[0])
	// Nobody acknowledged them: both alarms are retained.
	require.True(t, retained[exclusive.String()], "%v", retained)
	require.True(t, retained[nonExclusive.String()], "%v", retained)

	// ConditionRefresh2 on one item, then on an item that is not there.
	refresh2 := ua.NewNumericNodeID(0, id.ConditionType_ConditionRefresh2)
	require.Equal(t, ua.StatusOK, call(conditionType, refresh2, sub.SubscriptionID, res.Results[1].MonitoredItemID))
	require.Equal(t, ua.StatusBadMonitoredItemIDInvalid, call(conditionType, refresh2, sub.SubscriptionID, uint32(999999)))

	// The where clause held for everything item 1 got but the refresh's markers, while
	// item 2 saw the other alarm.
	markers := 0
	for len(got[1]) > 0 {
		e := toConditionEvent(<-got[1])
		if t := e.eventType.String(); t == ua.NewNumericNodeID(0, id.RefreshStartEventType).String() || t == ua.NewNumericNodeID(0, id.RefreshEndEventType).String() {
			markers++
			continue
		}
		require.Equal(t, exclusive.String(), e.condition.String())
		require.Equal(t, true, e.active)
	}
	for len(got[2]) > 0 && !sawOther {
		e := toConditionEvent(<-got[2])
		sawOther = e.condition != nil && e.condition.String() == nonExclusive.String()
	}
	require.True(t, sawOther, "item 2 saw the non-exclusive alarm")
	require.Equal(t, 2, markers, "RefreshStart and RefreshEnd of the one ConditionRefresh on every item")

	// Another session may not refresh this one's subscription.
	c2 := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c2.Close(ctx)
	r2, err := c2.Call(ctx, &ua.CallMethodRequest{ObjectID: conditionType, MethodID: refreshID,
		InputArguments: []*ua.Variant{ua.MustVariant(sub.SubscriptionID)}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusBadUserAccessDenied, r2.StatusCode)
}

func textOf(v any) any {
	if lt, ok := v.(*ua.LocalizedText); ok {
		return lt.Text
	}
	return v
}
