package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/config"
)

// TestParkedOperationsHoldNoWorker is TestParkedReadsHoldNoWorker for the other routed
// services: a manager that takes 1 s per operation, completing from its own goroutine,
// gets many Writes, Calls, Browses (of its root, and of the Objects folder, whose
// reference to the root it must describe) or TranslateBrowsePaths at once with two
// workers. All of them reach the manager at once, no worker stays busy, Reads of
// namespace 0 keep their latency, and every request is then answered Good.
func TestParkedOperationsHoldNoWorker(t *testing.T) {
	t.Parallel()
	type request func(ns uint16, h ua.RequestHeader) codec.Structure
	cases := []struct {
		name string
		req  request
		// good checks the response of one request.
		good func(codec.Structure) error
		// ops is the number of operations one request hands the manager at once.
		ops int32
	}{
		{"Write", func(ns uint16, h ua.RequestHeader) codec.Structure {
			return &ua.WriteRequest{RequestHeader: h, NodesToWrite: []ua.WriteValue{{
				NodeId: codec.NewStringNodeId(ns, childName(0)), AttributeId: 13,
				Value: codec.DataValue{Value: codec.Int32Variant(5)},
			}}}
		}, func(r codec.Structure) error {
			if w, ok := r.(*ua.WriteResponse); !ok || len(w.Results) != 1 || w.Results[0] != status.Good {
				return fmt.Errorf("write: %#v", r)
			}
			return nil
		}, 1},
		{"Call", func(ns uint16, h ua.RequestHeader) codec.Structure {
			return &ua.CallRequest{RequestHeader: h, MethodsToCall: []ua.CallMethodRequest{{
				ObjectId: codec.NewStringNodeId(ns, "Root"), MethodId: codec.NewStringNodeId(ns, "Double"),
				InputArguments: []codec.Variant{codec.Int32Variant(2)},
			}}}
		}, func(r codec.Structure) error {
			if c, ok := r.(*ua.CallResponse); !ok || len(c.Results) != 1 || c.Results[0].StatusCode != status.Good {
				return fmt.Errorf("call: %#v", r)
			}
			return nil
		}, 1},
		{"BrowseRoot", func(ns uint16, h ua.RequestHeader) codec.Structure {
			return &ua.BrowseRequest{RequestHeader: h, NodesToBrowse: []ua.BrowseDescription{{
				NodeId: codec.NewStringNodeId(ns, "Root"), BrowseDirection: ua.BrowseDirectionForward, ResultMask: 63,
			}}}
		}, browseFinds("Child0"), 1},
		{"BrowseObjects", func(ns uint16, h ua.RequestHeader) codec.Structure {
			return &ua.BrowseRequest{RequestHeader: h, NodesToBrowse: []ua.BrowseDescription{{
				NodeId: codec.NewNumericNodeId(0, id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionForward, ResultMask: 63,
			}}}
		}, browseFinds("Root"), 2}, // a Read and a Browse describe the root
		{"Translate", func(ns uint16, h ua.RequestHeader) codec.Structure {
			return &ua.TranslateBrowsePathsToNodeIdsRequest{RequestHeader: h, BrowsePaths: []ua.BrowsePath{{
				StartingNode: codec.NewNumericNodeId(0, id.ObjectsFolder),
				RelativePath: ua.RelativePath{Elements: []ua.RelativePathElement{{
					ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes),
					TargetName:      codec.QualifiedName{NamespaceIndex: ns, Name: "Root"},
				}}},
			}}}
		}, func(r codec.Structure) error {
			if tr, ok := r.(*ua.TranslateBrowsePathsToNodeIdsResponse); !ok || len(tr.Results) != 1 || len(tr.Results[0].Targets) != 1 {
				return fmt.Errorf("translate: %#v", r)
			}
			return nil
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const parked = 30
			// Held until released (for at least a second), so that all are parked at
			// once however slowly a loaded machine sends them.
			m := newRouteManager(0)
			m.release = make(chan struct{})
			ps := startPipeline(t, m, func(c *config.Config) {
				c.Limits.MinRequestThreadCount = 1
				c.Limits.MaxRequestThreadCount = 2
				c.Limits.MaxQueuedRequestCount = parked
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			errs := make(chan error, parked)
			for i := range parked {
				go func() {
					h := ua.RequestHeader{AuthenticationToken: ps.token, RequestHandle: uint32(i + 1)}
					resp, err := ps.ch.Request(ctx, tc.req(ps.slowNS, h))
					if err == nil {
						err = tc.good(resp)
					}
					errs <- err
				}()
			}
			require.Eventually(t, func() bool { return m.inFlight.Load() == tc.ops*parked }, 10*time.Second, time.Millisecond,
				"with two workers, all %d requests are parked in the manager at once", parked)
			parkedAt := time.Now()

			// The last job may still be returning from the manager's method.
			require.Eventually(t, func() bool { _, _, busy := ps.srv.pipe.Queue().Stats(); return busy == 0 }, 2*time.Second, time.Millisecond,
				"the workers are free once the requests are parked")

			var latencies []time.Duration
			for i := range 20 {
				_, running, busy := ps.srv.pipe.Queue().Stats()
				require.Zero(t, busy, "no worker is held by a parked request")
				require.LessOrEqual(t, running, 2)
				start := time.Now()
				resp, err := ps.read(ctx, 0, uint32(1000+i), 0)
				latencies = append(latencies, time.Since(start))
				requireReadGood(t, resp, err)
			}
			requireNormalLatency(t, latencies)
			require.Equal(t, tc.ops*parked, m.inFlight.Load(), "the namespace 0 Reads ran while the others were parked")

			time.Sleep(time.Second - time.Since(parkedAt))
			close(m.release)
			for range parked {
				require.NoError(t, <-errs)
			}
		})
	}
}

// browseFinds returns a check that a Browse response of one node holds a reference to a
// target with BrowseName name, and NodeClass and DisplayName filled in.
func browseFinds(name string) func(codec.Structure) error {
	return func(r codec.Structure) error {
		b, ok := r.(*ua.BrowseResponse)
		if !ok || len(b.Results) != 1 || b.Results[0].StatusCode != status.Good {
			return fmt.Errorf("browse: %#v", r)
		}
		for _, rd := range b.Results[0].References {
			if rd.BrowseName.Name == name && rd.NodeClass != 0 && rd.DisplayName.Text == name {
				return nil
			}
		}
		return fmt.Errorf("browse: no described reference to %s in %v", name, b.Results[0].References)
	}
}

// requireNormalLatency checks the latencies of namespace 0 Reads made while requests
// are parked in a manager that takes 1 s: typically fast (median under 50 ms) and never
// queued behind a parked request (each well under the manager's second). The bound on
// the slowest is loose because the test machine's cores are shared.
func requireNormalLatency(t *testing.T, latencies []time.Duration) {
	t.Helper()
	// The parked operations are held until the test releases them, after these Reads: a
	// Read that waited for one would not finish at all. What is left to check is that the
	// Reads stay fast; the bounds leave room for a loaded machine under -race.
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	require.Less(t, sorted[len(sorted)/2], 100*time.Millisecond, "namespace 0 Reads keep their latency: %v", latencies)
	require.Less(t, sorted[len(sorted)-1], 5*time.Second, "no namespace 0 Read waits for a parked request: %v", latencies)
}

// TestRouteTimeout checks BadTimeout for routed requests whose manager answers after
// their TimeoutHint, in each phase: a Write, the description of a Browse of the Objects
// folder, and a TranslateBrowsePaths round. The channel carries on afterwards.
func TestRouteTimeout(t *testing.T) {
	t.Parallel()
	m := newRouteManager(time.Second)
	ps := startPipeline(t, m, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := func(handle uint32) ua.RequestHeader {
		return ua.RequestHeader{AuthenticationToken: ps.token, RequestHandle: handle, TimeoutHint: 100}
	}
	for i, req := range []codec.Structure{
		&ua.WriteRequest{RequestHeader: h(1), NodesToWrite: []ua.WriteValue{{
			NodeId: codec.NewStringNodeId(ps.slowNS, childName(0)), AttributeId: 13, Value: codec.DataValue{Value: codec.Int32Variant(1)},
		}}},
		&ua.BrowseRequest{RequestHeader: h(2), NodesToBrowse: []ua.BrowseDescription{{
			NodeId: codec.NewNumericNodeId(0, id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionForward, ResultMask: 63,
		}}},
		&ua.TranslateBrowsePathsToNodeIdsRequest{RequestHeader: h(3), BrowsePaths: []ua.BrowsePath{{
			StartingNode: codec.NewStringNodeId(ps.slowNS, "Root"),
			RelativePath: ua.RelativePath{Elements: []ua.RelativePathElement{{TargetName: codec.QualifiedName{NamespaceIndex: ps.slowNS, Name: "Double"}}}},
		}}},
	} {
		start := time.Now()
		resp, err := ps.ch.Request(ctx, req)
		requirePipelineFault(t, resp, err, status.BadTimeout, uint32(i+1))
		require.Less(t, time.Since(start), 900*time.Millisecond, "answered before the manager")
	}
	require.Eventually(t, func() bool { return m.inFlight.Load() == 0 }, 5*time.Second, time.Millisecond)
	resp, err := ps.read(ctx, 0, 9, 0)
	requireReadGood(t, resp, err)
}
