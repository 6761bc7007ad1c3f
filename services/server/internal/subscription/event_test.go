package subscription

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// eventInbox records the events and data changes of the Publishes it answers.
type eventInbox struct {
	events [][]ua.EventFieldList // per response
	items  [][]ua.MonitoredItemNotification
	codes  []status.Code
}

func (in *eventInbox) Respond(r *ua.PublishResponse) {
	var evs []ua.EventFieldList
	var items []ua.MonitoredItemNotification
	for _, x := range r.NotificationMessage.NotificationData {
		switch v := x.Value.(type) {
		case *ua.EventNotificationList:
			for _, e := range v.Events {
				evs = append(evs, ua.EventFieldList{ClientHandle: e.ClientHandle, EventFields: append([]codec.Variant(nil), e.EventFields...)})
			}
		case *ua.DataChangeNotification:
			items = append(items, v.MonitoredItems...)
		}
	}
	in.events = append(in.events, evs)
	in.items = append(in.items, items)
	in.codes = append(in.codes, r.ResponseHeader.ServiceResult)
}

var notifierA = codec.NewStringNodeId(1, "A")

// eventItem creates an event item on node with select clauses Severity, EventType and
// Message, and the where clause w.
func (r *rig) eventItem(sub uint32, node codec.NodeId, handle, queue uint32, discardOldest bool, w ...ua.ContentFilterElement) uint32 {
	ef, res, code := CompileEventFilter(&ua.EventFilter{
		SelectClauses: []ua.SimpleAttributeOperand{*sao(id.BaseEventType, "Severity"), *sao(id.BaseEventType, "EventType"), *sao(id.BaseEventType, "Message")},
		WhereClause:   ua.ContentFilter{Elements: w},
	}, ns0Types{})
	require.Equal(r.t, status.Good, code)
	require.Nil(r.t, res)
	out, code := r.e.CreateItems(r.ses, sub, ua.TimestampsToReturnBoth, []ItemRequest{{
		Item: ua.ReadValueId{NodeId: node, AttributeId: uint32(attr.EventNotifier)}, Mode: ua.MonitoringModeReporting,
		ClientHandle: handle, QueueSize: queue, DiscardOldest: discardOldest, Events: ef,
	}}, []status.Code{status.Good})
	require.Equal(r.t, status.Good, code)
	require.Equal(r.t, status.Good, out[0].StatusCode)
	require.Equal(r.t, 0.0, out[0].RevisedSamplingInterval)
	return out[0].MonitoredItemId
}

func sevEvent(sev uint16) *Event {
	return &Event{Type: n0(id.SystemEventType), Fields: map[string]codec.Variant{
		KeySeverity:  codec.UInt16Variant(sev),
		KeyEventType: codec.NodeIdVariant(n0(id.SystemEventType)),
		KeyMessage:   codec.MustVariant(codec.LocalizedText{Text: "m"}),
	}}
}

func severities(evs []ua.EventFieldList) []uint16 {
	var out []uint16
	for _, e := range evs {
		if e.EventFields[1].NodeId() == n0(id.EventQueueOverflowEventType) {
			out = append(out, 0) // 0 marks the overflow event
			continue
		}
		out = append(out, uint16(e.EventFields[0].Bits()))
	}
	return out
}

func TestEventsPublishedThroughWhereClause(t *testing.T) {
	t.Parallel()
	r := newRig(t, testLimits())
	sub := r.create(100*time.Millisecond, 10, 30)
	require.False(t, r.e.Listening())
	r.eventItem(sub, notifierA, 7, 10, true,
		el(ua.FilterOperatorGreaterThan, fld("Severity"), lit(codec.Int32Variant(500))))
	require.True(t, r.e.Listening())

	in := &eventInbox{}
	r.e.Publish(r.ses, nil, nil, in, time.Time{})
	for _, sev := range []uint16{100, 700, 500, 900} {
		r.e.Emit(sevEvent(sev), notifierA)
	}
	r.e.Emit(sevEvent(1000), codec.NewStringNodeId(1, "other")) // a notifier nobody monitors
	r.advance(100 * time.Millisecond)
	require.Len(t, in.events, 1)
	require.Equal(t, []uint16{700, 900}, severities(in.events[0]))
	require.Empty(t, in.items[0], "no DataChangeNotification with events only")
	for _, e := range in.events[0] {
		require.Equal(t, uint32(7), e.ClientHandle)
		require.Equal(t, n0(id.SystemEventType), e.EventFields[1].NodeId())
		require.Equal(t, "m", e.EventFields[2].Value().(codec.LocalizedText).Text)
	}
}

func TestEventsAndDataChangesInOneMessage(t *testing.T) {
	t.Parallel()
	r := newRig(t, testLimits())
	sub := r.create(100*time.Millisecond, 10, 30)
	r.eventItem(sub, notifierA, 1, 10, true)
	node := codec.NewStringNodeId(1, "v")
	r.vals[node] = codec.DataValue{Value: codec.DoubleVariant(1)}
	_, code := r.e.CreateItems(r.ses, sub, ua.TimestampsToReturnBoth, []ItemRequest{{
		Item: ua.ReadValueId{NodeId: node, AttributeId: uint32(attr.Value)}, Mode: ua.MonitoringModeReporting,
		ClientHandle: 2, SamplingInterval: 50, QueueSize: 1, Filter: DefaultFilter,
	}}, []status.Code{status.Good})
	require.Equal(t, status.Good, code)
	r.e.Emit(sevEvent(300), notifierA)
	in := &eventInbox{}
	r.e.Publish(r.ses, nil, nil, in, time.Time{})
	r.advance(100 * time.Millisecond)
	require.Len(t, in.events, 1)
	require.Equal(t, []uint16{300}, severities(in.events[0]))
	require.Len(t, in.items[0], 1)
	require.Equal(t, uint32(2), in.items[0][0].ClientHandle)
}

func TestEventQueueOverflow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name          string
		discardOldest bool
		want          []uint16
	}{
		// Queue of 3, events 1..5: the overflow event takes the oldest place and the
		// newest events follow it.
		{"discardOldest", true, []uint16{0, 4, 5}},
		// The overflow event replaces the newest; later events are dropped.
		{"discardNewest", false, []uint16{1, 2, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, testLimits())
			sub := r.create(100*time.Millisecond, 10, 30)
			r.eventItem(sub, notifierA, 1, 3, tt.discardOldest)
			for sev := uint16(1); sev <= 5; sev++ {
				r.e.Emit(sevEvent(sev), notifierA)
			}
			in := &eventInbox{}
			r.e.Publish(r.ses, nil, nil, in, time.Time{})
			r.advance(100 * time.Millisecond)
			require.Len(t, in.events, 1)
			require.Equal(t, tt.want, severities(in.events[0]))
			ovf := in.events[0][0]
			if !tt.discardOldest {
				ovf = in.events[0][2]
			}
			require.Equal(t, uint16(1), uint16(ovf.EventFields[0].Bits()), "the overflow event's Severity")
			require.Equal(t, "Event queue overflow", ovf.EventFields[2].Value().(codec.LocalizedText).Text)

			// Once delivered, the queue starts over: no overflow event without an overflow.
			r.e.Emit(sevEvent(6), notifierA)
			r.e.Publish(r.ses, nil, nil, in, time.Time{})
			r.advance(100 * time.Millisecond)
			require.Len(t, in.events, 2)
			require.Equal(t, []uint16{6}, severities(in.events[1]))
		})
	}
}

func TestEventItemModes(t *testing.T) {
	t.Parallel()
	r := newRig(t, testLimits())
	sub := r.create(100*time.Millisecond, 10, 30)
	item := r.eventItem(sub, notifierA, 1, 10, true)
	_, code := r.e.SetMonitoringMode(r.ses, sub, ua.MonitoringModeDisabled, []uint32{item})
	require.Equal(t, status.Good, code)
	r.e.Emit(sevEvent(1), notifierA)
	_, code = r.e.SetMonitoringMode(r.ses, sub, ua.MonitoringModeReporting, []uint32{item})
	require.Equal(t, status.Good, code)
	r.e.Emit(sevEvent(2), notifierA)

	// Modify shrinks the queue to 1 keeping the newest and swaps the filter.
	ef, _, _ := CompileEventFilter(&ua.EventFilter{
		SelectClauses: []ua.SimpleAttributeOperand{*sao(id.BaseEventType, "Severity"), *sao(id.BaseEventType, "EventType")},
		WhereClause:   ua.ContentFilter{Elements: []ua.ContentFilterElement{el(ua.FilterOperatorLessThan, fld("Severity"), lit(codec.Int32Variant(10)))}},
	}, ns0Types{})
	r.e.Emit(sevEvent(3), notifierA)
	res, code := r.e.ModifyItems(r.ses, sub, ua.TimestampsToReturnBoth, []ItemModify{{ID: item, ClientHandle: 9, QueueSize: 1, DiscardOldest: true, Events: ef}}, []status.Code{status.Good})
	require.Equal(t, status.Good, code)
	require.Equal(t, uint32(1), res[0].RevisedQueueSize)
	r.e.Emit(sevEvent(50), notifierA) // fails the new where clause
	in := &eventInbox{}
	r.e.Publish(r.ses, nil, nil, in, time.Time{})
	r.advance(100 * time.Millisecond)
	require.Len(t, in.events, 1)
	require.Equal(t, []uint16{3}, severities(in.events[0]))
	require.Equal(t, uint32(9), in.events[0][0].ClientHandle)

	dres, code := r.e.DeleteItems(r.ses, sub, []uint32{item})
	require.Equal(t, status.Good, code)
	require.Equal(t, []status.Code{status.Good}, dres)
	require.False(t, r.e.Listening())
}

func TestEventsRespectMaxNotifications(t *testing.T) {
	t.Parallel()
	l := testLimits()
	r := newRig(t, l)
	id, _, code := r.e.Create(r.ses, "anonymous", Params{PublishingInterval: 100, MaxKeepAliveCount: 10, LifetimeCount: 30, MaxNotificationsPerPublish: 2}, true)
	require.Equal(t, status.Good, code)
	r.eventItem(id, notifierA, 1, 10, true)
	for sev := uint16(1); sev <= 5; sev++ {
		r.e.Emit(sevEvent(sev), notifierA)
	}
	in := &eventInbox{}
	r.e.Publish(r.ses, nil, nil, in, time.Time{})
	r.advance(100 * time.Millisecond)
	require.Len(t, in.events, 1)
	// MoreNotifications: the next Publishes are answered at once.
	r.e.Publish(r.ses, nil, nil, in, time.Time{})
	r.e.Publish(r.ses, nil, nil, in, time.Time{})
	require.Len(t, in.events, 3)
	require.Equal(t, []uint16{1, 2}, severities(in.events[0]))
	require.Equal(t, []uint16{3, 4}, severities(in.events[1]))
	require.Equal(t, []uint16{5}, severities(in.events[2]))
}
