package server

import (
	"context"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
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
	"uastack.dev/services/server/internal/routing"
)

// pushingManager is a slowManager that is started with a host, pushes through it,
// reports the health it is set to, and counts its Close.
type pushingManager struct {
	slowManager
	host   atomic.Pointer[nodemgr.Host]
	closed atomic.Int32
	health atomic.Uint32 // a status.Code
}

func (m *pushingManager) Health(context.Context) nodemgr.Health {
	return nodemgr.Health{Status: status.Code(m.health.Load())}
}

func (m *pushingManager) Start(_ context.Context, h nodemgr.Host) error {
	m.host.Store(&h)
	return nil
}

func (m *pushingManager) Close(context.Context) error {
	m.closed.Add(1)
	return nil
}

// TestManagerLifecycle: a node manager named in the configuration is provisioned by its
// kind, mounted, started with a host that knows its namespace index, and the events it
// pushes reach an event item on the Server object; when the server stops it is closed
// once.
func TestManagerLifecycle(t *testing.T) {
	t.Parallel()
	m := &pushingManager{}
	kind := routing.Kind{Type: config.NodeManagerBuiltin, Provision: func(nm config.NodeManager) (nodemgr.Manager, error) {
		require.Equal(t, "slow", nm.Name)
		return m, nil
	}}
	var srv *Server
	// Registered first, so it runs after startPipeline's cleanup has stopped the server.
	t.Cleanup(func() {
		require.Equal(t, int32(1), m.closed.Load(), "closed once when the server stopped")
		require.NoError(t, srv.Close())
		require.Equal(t, int32(1), m.closed.Load(), "Close after Serve does not close again")
	})
	func() {
		ps := startPipelineWith(t, nil, Options{Kinds: []routing.Kind{kind}}, func(c *config.Config) {
			c.AddressSpace.NodeManagers = []config.NodeManager{{Name: "slow", Type: config.NodeManagerBuiltin, NamespaceURI: testNamespaceURI}}
		})
		srv = ps.srv
		hp := m.host.Load()
		require.NotNil(t, hp, "started before serving")
		host := *hp
		require.Equal(t, []uint16{ps.slowNS}, host.NamespaceIndexes())
		resp, err := ps.read(context.Background(), ps.slowNS, 1, 0)
		requireReadGood(t, resp, err)

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h := ua.RequestHeader{AuthenticationToken: ps.token}
		resp, err = ps.ch.Request(ctx, &ua.CreateSubscriptionRequest{RequestHeader: h, RequestedPublishingInterval: 50,
			RequestedLifetimeCount: 1000, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true})
		require.NoError(t, err)
		sub := resp.(*ua.CreateSubscriptionResponse).SubscriptionId
		message := ua.SimpleAttributeOperand{TypeDefinitionId: codec.NewNumericNodeId(0, id.BaseEventType),
			BrowsePath: []codec.QualifiedName{{Name: "Message"}}, AttributeId: uint32(attr.Value)}
		resp, err = ps.ch.Request(ctx, &ua.CreateMonitoredItemsRequest{RequestHeader: h, SubscriptionId: sub,
			TimestampsToReturn: ua.TimestampsToReturnNeither, ItemsToCreate: []ua.MonitoredItemCreateRequest{{
				ItemToMonitor:       ua.ReadValueId{NodeId: serverID, AttributeId: uint32(attr.EventNotifier)},
				MonitoringMode:      ua.MonitoringModeReporting,
				RequestedParameters: ua.MonitoringParameters{ClientHandle: 9, QueueSize: 10, Filter: codec.NewExtensionObject(&ua.EventFilter{SelectClauses: []ua.SimpleAttributeOperand{message}})},
			}}})
		require.NoError(t, err)
		require.Equal(t, status.Good, resp.(*ua.CreateMonitoredItemsResponse).Results[0].StatusCode)

		source := codec.NewNumericNodeId(ps.slowNS, 1)
		host.Notifier().Emit([]nodemgr.Event{{EventType: codec.NewNumericNodeId(0, id.BaseEventType), SourceNode: source,
			Fields: []nodemgr.EventField{{BrowsePath: []codec.QualifiedName{{Name: "Message"}}, Value: codec.MustVariant(codec.LocalizedText{Text: "from the device"})}}}})
		for {
			resp, err = ps.ch.Request(ctx, &ua.PublishRequest{RequestHeader: h})
			require.NoError(t, err)
			var got []ua.EventFieldList
			for _, x := range resp.(*ua.PublishResponse).NotificationMessage.NotificationData {
				if l, ok := x.Value.(*ua.EventNotificationList); ok {
					got = append(got, l.Events...)
				}
			}
			if len(got) > 0 {
				require.Equal(t, uint32(9), got[0].ClientHandle)
				require.Equal(t, "from the device", got[0].EventFields[0].Value().(codec.LocalizedText).Text)
				break
			}
		}
		require.Zero(t, m.closed.Load(), "not closed while serving")

		var metrics strings.Builder
		require.NoError(t, srv.WriteMetrics(&metrics))
		require.Contains(t, metrics.String(), "uastack_node_manager_healthy{manager=\"slow\"} 1\n", "named by its entry")
		m.health.Store(uint32(status.BadCommunicationError))
		metrics.Reset()
		require.NoError(t, srv.WriteMetrics(&metrics))
		require.Contains(t, metrics.String(), "uastack_node_manager_healthy{manager=\"slow\"} 0\n")
	}()
}

// watchingManager is a pushingManager that watches what clients monitor.
type watchingManager struct {
	pushingManager
	mu      sync.Mutex // guards watched
	watched map[nodemgr.WatchKey]float64
}

func (m *watchingManager) Watch(_ context.Context, set *nodemgr.WatchSet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watched == nil {
		m.watched = make(map[nodemgr.WatchKey]float64)
	}
	for _, k := range set.Remove {
		delete(m.watched, k)
	}
	for _, a := range set.Add {
		m.watched[a.Key()] = a.SamplingInterval
	}
}

func (m *watchingManager) watching() map[nodemgr.WatchKey]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.watched)
}

// TestWatchedItems: a monitored item on a node of a nodemgr.Watcher is watched, not
// sampled: the manager is told the pair and the item's interval, the values it pushes
// reach the client, its Read is asked once (the first value), and once the item is
// deleted the pair is no longer watched.
func TestWatchedItems(t *testing.T) {
	t.Parallel()
	m := &watchingManager{}
	ps := startPipeline(t, m, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := ua.RequestHeader{AuthenticationToken: ps.token}
	resp, err := ps.ch.Request(ctx, &ua.CreateSubscriptionRequest{RequestHeader: h, RequestedPublishingInterval: 50,
		RequestedLifetimeCount: 1000, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true})
	require.NoError(t, err)
	sub := resp.(*ua.CreateSubscriptionResponse).SubscriptionId
	node := codec.NewNumericNodeId(ps.slowNS, 1)
	resp, err = ps.ch.Request(ctx, &ua.CreateMonitoredItemsRequest{RequestHeader: h, SubscriptionId: sub,
		TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: []ua.MonitoredItemCreateRequest{{
			ItemToMonitor:       ua.ReadValueId{NodeId: node, AttributeId: uint32(attr.Value)},
			MonitoringMode:      ua.MonitoringModeReporting,
			RequestedParameters: ua.MonitoringParameters{ClientHandle: 5, SamplingInterval: 250, QueueSize: 10},
		}}})
	require.NoError(t, err)
	created := resp.(*ua.CreateMonitoredItemsResponse).Results[0]
	require.Equal(t, status.Good, created.StatusCode)
	pair := nodemgr.WatchKey{NodeId: node, AttributeId: uint32(attr.Value)}
	require.Eventually(t, func() bool { return m.watching()[pair] == 250 }, 5*time.Second, time.Millisecond, "the manager watches the pair at the item's interval")

	values := func() []codec.Variant {
		resp, err := ps.ch.Request(ctx, &ua.PublishRequest{RequestHeader: h})
		require.NoError(t, err)
		var out []codec.Variant
		for _, x := range resp.(*ua.PublishResponse).NotificationMessage.NotificationData {
			if dcn, ok := x.Value.(*ua.DataChangeNotification); ok {
				for _, n := range dcn.MonitoredItems {
					out = append(out, n.Value.Value)
				}
			}
		}
		return out
	}
	require.Equal(t, []codec.Variant{codec.Int32Variant(42)}, values(), "the first value is read")
	(*m.host.Load()).Notifier().Changed([]nodemgr.DataChange{{NodeId: node, AttributeId: uint32(attr.Value),
		Value: codec.DataValue{Value: codec.Int32Variant(7)}}})
	require.Equal(t, []codec.Variant{codec.Int32Variant(7)}, values(), "a pushed value reaches the item")
	time.Sleep(600 * time.Millisecond) // more than two sampling intervals
	require.Equal(t, int32(1), m.calls.Load(), "the item is not sampled: one Read, for the first value")

	_, err = ps.ch.Request(ctx, &ua.DeleteMonitoredItemsRequest{RequestHeader: h, SubscriptionId: sub, MonitoredItemIds: []uint32{created.MonitoredItemId}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(m.watching()) == 0 }, 5*time.Second, time.Millisecond, "the pair is no longer watched")
}
