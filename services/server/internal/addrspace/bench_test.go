package addrspace

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/pkg/ua/ns0"
)

func nop() {}

// valueReads returns a ReadOp of n Value reads of namespace 0 Variables, with a value
// set for those the nodeset gives none.
func valueReads(tb testing.TB, s *Space, n int) *nodemgr.ReadOp {
	op := &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnBoth}
	for node := range ns0.All() {
		if len(op.Items) == n {
			break
		}
		if node.NodeClass() != ua.NodeClassVariable || node.ValueRank() != -1 || node.AccessLevel()&1 == 0 {
			continue
		}
		if !node.HasValue() {
			require.True(tb, s.SetValue(node.NodeId(), codec.DataValue{Value: codec.Int32Variant(int32(node.ID()))}))
		}
		op.Items = append(op.Items, ua.ReadValueId{NodeId: node.NodeId(), AttributeId: uint32(attr.Value)})
	}
	require.Len(tb, op.Items, n)
	op.Results = make([]codec.DataValue, n)
	return op
}

func TestReadValueDoesNotAllocate(t *testing.T) {
	s := NewNamespace0()
	require.True(t, s.SetValue(n0(id.Server_ServerStatus_CurrentTime), codec.DataValue{Value: codec.DateTimeVariant(codec.Now())}))
	op := &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnBoth,
		Items:   []ua.ReadValueId{{NodeId: n0(id.Server_ServerStatus_CurrentTime), AttributeId: uint32(attr.Value)}},
		Results: make([]codec.DataValue, 1)}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() { s.Read(ctx, op, nop) })
	require.Equal(t, status.Good, op.Results[0].Status)
	require.Zero(t, allocs)
	// A value computed by a ValueFunc.
	op.Items[0].NodeId = n0(id.Server_ServerStatus_StartTime)
	start := codec.Now()
	require.True(t, s.SetValueFunc(op.Items[0].NodeId, func(codec.DateTime) codec.DataValue {
		return codec.DataValue{Value: codec.DateTimeVariant(start)}
	}))
	allocs = testing.AllocsPerRun(100, func() { s.Read(ctx, op, nop) })
	require.Equal(t, status.Good, op.Results[0].Status)
	require.Equal(t, codec.DateTimeVariant(start), op.Results[0].Value)
	require.Zero(t, allocs)
	// A nodeset value is decoded once, then served from the cache.
	op.Items[0].NodeId = n0(7612)
	s.Read(ctx, op, nop)
	allocs = testing.AllocsPerRun(100, func() { s.Read(ctx, op, nop) })
	require.Equal(t, status.Good, op.Results[0].Status)
	require.Zero(t, allocs)
}

// spaceSink keeps BenchmarkNewNamespace0's result alive.
var spaceSink *Space

func BenchmarkNewNamespace0(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		spaceSink = NewNamespace0()
	}
}

func BenchmarkRead(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(map[int]string{1: "1Value", 100: "100Values"}[n], func(b *testing.B) {
			s := NewNamespace0()
			op := valueReads(b, s, n)
			ctx := context.Background()
			s.Read(ctx, op, nop)
			b.ReportAllocs()
			for b.Loop() {
				s.Read(ctx, op, nop)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
		})
	}
}

func BenchmarkReadDisplayName(b *testing.B) {
	s := NewNamespace0()
	op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: n0(id.Server), AttributeId: uint32(attr.DisplayName)}}, Results: make([]codec.DataValue, 1)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s.Read(ctx, op, nop)
	}
}

func BenchmarkBrowse(b *testing.B) {
	for _, tc := range []struct {
		name string
		node uint32
	}{{"ObjectsFolder", id.ObjectsFolder}, {"Server", id.Server}} {
		b.Run(tc.name, func(b *testing.B) {
			s := NewNamespace0()
			op := &nodemgr.BrowseOp{Items: []ua.BrowseDescription{{NodeId: n0(tc.node), BrowseDirection: ua.BrowseDirectionBoth,
				ReferenceTypeId: n0(id.HierarchicalReferences), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}},
				Results: make([]nodemgr.BrowseResult, 1)}
			ctx := context.Background()
			s.Browse(ctx, op, nop)
			b.ReportAllocs()
			for b.Loop() {
				s.Browse(ctx, op, nop)
			}
			b.ReportMetric(float64(len(op.Results[0].References)), "refs")
		})
	}
}
