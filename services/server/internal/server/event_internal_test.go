package server

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/demo"
	"uastack.dev/services/server/internal/subscription"
)

// eventReplies is a Responder handing each PublishResponse's events to a channel.
type eventReplies chan []ua.EventFieldList

func (r eventReplies) Respond(resp *ua.PublishResponse) {
	var evs []ua.EventFieldList
	for _, x := range resp.NotificationMessage.NotificationData {
		if l, ok := x.Value.(*ua.EventNotificationList); ok {
			for _, e := range l.Events {
				evs = append(evs, ua.EventFieldList{ClientHandle: e.ClientHandle, EventFields: append([]codec.Variant(nil), e.EventFields...)})
			}
		}
	}
	r <- evs
}

// TestDemoEventSource checks the demo event source in the address space (an
// EventNotifier below the Server object, DemoEventType under BaseEventType) and that
// the demo emits its periodic events with a growing Counter.
func TestDemoEventSource(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	cfg.AddressSpace.DemoNamespace = true
	require.NoError(t, cfg.Validate())
	srv, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	op := &nodemgr.ReadOp{Items: []ua.ReadValueId{
		{NodeId: demo.EventsID, AttributeId: uint32(attr.EventNotifier)},
		{NodeId: serverID, AttributeId: uint32(attr.EventNotifier)},
	}, Results: make([]codec.DataValue, 2)}
	srv.space.Read(ctx, op, func() {})
	// Demo/Events and the Server object keep their events in history
	// (SubscribeToEvents | HistoryRead).
	require.Equal(t, codec.ByteVariant(5), op.Results[0].Value)
	require.Equal(t, codec.ByteVariant(5), op.Results[1].Value)
	br := &nodemgr.BrowseOp{Items: []ua.BrowseDescription{{NodeId: serverID, BrowseDirection: ua.BrowseDirectionForward,
		ReferenceTypeId: codec.NewNumericNodeId(0, id.HasEventSource), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}},
		Results: make([]nodemgr.BrowseResult, 1)}
	srv.space.Browse(ctx, br, func() {})
	require.Equal(t, status.Good, br.Results[0].Status)
	var notifiers []codec.NodeId
	for _, r := range br.Results[0].References {
		notifiers = append(notifiers, r.NodeId.NodeId)
	}
	require.Contains(t, notifiers, demo.EventsID)
	require.True(t, srv.eventTypes.IsSubtype(demo.EventTypeID, codec.NewNumericNodeId(0, id.BaseEventType)))
	require.False(t, srv.eventTypes.IsSubtype(demo.EventTypeID, codec.NewNumericNodeId(0, id.SystemEventType)))
	require.True(t, srv.eventTypes.HasField(demo.EventTypeID, []codec.QualifiedName{{NamespaceIndex: demo.Index, Name: "Counter"}}))
	require.True(t, srv.eventTypes.HasField(demo.EventTypeID, []codec.QualifiedName{{Name: "Severity"}}), "inherited")
	require.False(t, srv.eventTypes.HasField(codec.NewNumericNodeId(0, id.SystemEventType), []codec.QualifiedName{{NamespaceIndex: demo.Index, Name: "Counter"}}))

	ses := codec.NewNumericNodeId(1, 4242)
	sub, _, code := srv.subs.Create(ses, "", subscription.Params{PublishingInterval: 50, MaxKeepAliveCount: 100, LifetimeCount: 1000}, true)
	require.Equal(t, status.Good, code)
	sao := func(typ codec.NodeId, q codec.QualifiedName) ua.SimpleAttributeOperand {
		return ua.SimpleAttributeOperand{TypeDefinitionId: typ, BrowsePath: []codec.QualifiedName{q}, AttributeId: uint32(attr.Value)}
	}
	ef, res, code := subscription.CompileEventFilter(&ua.EventFilter{SelectClauses: []ua.SimpleAttributeOperand{
		sao(codec.NewNumericNodeId(0, id.BaseEventType), codec.QualifiedName{Name: "Severity"}),
		sao(demo.EventTypeID, codec.QualifiedName{NamespaceIndex: demo.Index, Name: "Counter"}),
		sao(codec.NewNumericNodeId(0, id.BaseEventType), codec.QualifiedName{Name: "Message"}),
	}}, srv.eventTypes)
	require.Equal(t, status.Good, code)
	require.Nil(t, res)
	items, code := srv.subs.CreateItems(ses, sub, ua.TimestampsToReturnNeither, []subscription.ItemRequest{{
		Item: ua.ReadValueId{NodeId: demo.EventsID, AttributeId: uint32(attr.EventNotifier)}, Mode: ua.MonitoringModeReporting,
		ClientHandle: 3, QueueSize: 10, DiscardOldest: true, Events: ef,
	}}, []status.Code{status.Good})
	require.Equal(t, status.Good, code)
	require.Equal(t, status.Good, items[0].StatusCode)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go srv.subs.Run(runCtx)
	go func() { defer close(done); srv.demo.Run(runCtx) }()
	defer func() { stop(); <-done }()
	replies := make(eventReplies, 4)
	var got []ua.EventFieldList
	for len(got) < 2 {
		srv.subs.Publish(ses, nil, nil, replies, time.Time{})
		select {
		case evs := <-replies:
			got = append(got, evs...)
		case <-ctx.Done():
			t.Fatalf("periodic demo events: got %d", len(got))
		}
	}
	for i, e := range got[:2] {
		require.Equal(t, uint32(3), e.ClientHandle)
		require.Equal(t, codec.UInt16Variant(demo.Severities[i]), e.EventFields[0])
		require.Equal(t, codec.UInt32Variant(uint32(i+1)), e.EventFields[1])
		require.Contains(t, e.EventFields[2].Value().(codec.LocalizedText).Text, "severity")
	}
}
