package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// BenchmarkRouteRoundTrip measures a one-item request from our client over loopback
// (None): a Read of namespace 0, answered inline, against a Read and a Browse of a
// mounted manager that answers at once from a goroutine of its own, so the difference is
// the cost of the request queue, the hand-off to the manager and the description of
// foreign targets.
func BenchmarkRouteRoundTrip(b *testing.B) {
	m := newRouteManager(0)
	ps := startPipeline(b, m, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := ua.RequestHeader{AuthenticationToken: ps.token}
	read := func(n codec.NodeId) codec.Structure {
		return &ua.ReadRequest{RequestHeader: h, NodesToRead: []ua.ReadValueId{{NodeId: n, AttributeId: 13}}}
	}
	for _, bc := range []struct {
		name string
		req  codec.Structure
	}{
		{"ReadInline", read(codec.NewNumericNodeId(0, id.Server_ServerStatus_State))},
		{"ReadManager", read(codec.NewStringNodeId(ps.slowNS, childName(0)))},
		{"BrowseObjects", &ua.BrowseRequest{RequestHeader: h, NodesToBrowse: []ua.BrowseDescription{{
			NodeId: codec.NewNumericNodeId(0, id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionForward, ResultMask: 63,
		}}}},
		{"BrowseManagerRoot", &ua.BrowseRequest{RequestHeader: h, NodesToBrowse: []ua.BrowseDescription{{
			NodeId: codec.NewStringNodeId(ps.slowNS, "Root"), BrowseDirection: ua.BrowseDirectionBoth, ResultMask: 63,
		}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := ps.ch.Request(ctx, bc.req)
				require.NoError(b, err)
				require.NotNil(b, resp)
			}
		})
	}
}
