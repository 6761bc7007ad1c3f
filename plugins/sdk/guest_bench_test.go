package sdk_test

import (
	"context"
	"testing"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/examples/device"
	"uastack.dev/plugins/sdk"
	"uastack.dev/plugins/wire"
)

type nopLink struct{}

func (nopLink) Push([]byte)    {}
func (nopLink) Log([]byte)     {}
func (nopLink) Now() time.Time { return time.Now() }

// setUpDevice returns a Guest serving the example device, set up, mounted at index 2
// and started.
func setUpDevice(tb testing.TB) *sdk.Guest {
	tb.Helper()
	g := sdk.NewGuest(device.Factory, nopLink{})
	for _, f := range []nodemgr.Frame{
		{Kind: nodemgr.KindInfo, Body: &nodemgr.Setup{Name: "d", NamespaceURI: "urn:d"}},
		{Kind: nodemgr.KindMount, Body: &nodemgr.MountRequest{Indexes: []uint16{2}}},
		{Kind: nodemgr.KindStart, Body: &nodemgr.StartParams{Namespaces: []string{"urn:d"}, NamespaceIndexes: []uint16{2}}},
	} {
		var b wire.Batch
		if err := b.Add(&f); err != nil {
			tb.Fatal(err)
		}
		g.Serve(context.Background(), b.Bytes())
	}
	return g
}

// readBatch is n Read frames of one item each, cycling over the device's variables.
func readBatch(tb testing.TB, n int) []byte {
	names := []string{device.NameSine, device.NameRamp, device.NameCounter, device.NameSetpoint}
	var b wire.Batch
	for i := range n {
		op := &nodemgr.ReadOp{
			Principal:  nodemgr.Principal{SessionID: codec.NewNumericNodeId(1, uint32(1000+i%10)), Anonymous: true},
			Timestamps: ua.TimestampsToReturnBoth,
			Items:      []ua.ReadValueId{{NodeId: device.NodeID(2, names[i%len(names)]), AttributeId: 13}},
			Now:        codec.DateTimeOf(time.Now()),
		}
		if err := b.Add(&nodemgr.Frame{Kind: nodemgr.KindRead, ID: uint32(i), Body: op}); err != nil {
			tb.Fatal(err)
		}
	}
	return append([]byte(nil), b.Bytes()...)
}

// BenchmarkServeReads is the guest's side of a call: a batch of Reads of the example
// device decoded, answered and encoded, natively (a WASM guest runs the same code).
func BenchmarkServeReads(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(map[int]string{1: "1", 64: "64"}[n], func(b *testing.B) {
			g := setUpDevice(b)
			batch := readBatch(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				g.Serve(ctx, batch)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/read")
		})
	}
}

// BenchmarkServeOneRead64 is one Read frame of 64 items.
func BenchmarkServeOneRead64(b *testing.B) {
	g := setUpDevice(b)
	names := []string{device.NameSine, device.NameRamp, device.NameCounter, device.NameSetpoint}
	op := &nodemgr.ReadOp{Principal: nodemgr.Principal{Anonymous: true}, Timestamps: ua.TimestampsToReturnBoth, Now: codec.DateTimeOf(time.Now())}
	for i := range 64 {
		op.Items = append(op.Items, ua.ReadValueId{NodeId: device.NodeID(2, names[i%4]), AttributeId: 13})
	}
	var bt wire.Batch
	if err := bt.Add(&nodemgr.Frame{Kind: nodemgr.KindRead, Body: op}); err != nil {
		b.Fatal(err)
	}
	batch := bt.Bytes()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		g.Serve(ctx, batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/read")
}
