package sdk_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/examples/device"
	"uastack.dev/plugins/sdk"
	"uastack.dev/plugins/wire"
)

// serve sends frames to g as one batch and returns the replies.
func serve(t *testing.T, ctx context.Context, g *sdk.Guest, frames ...nodemgr.Frame) []nodemgr.Frame {
	t.Helper()
	var b wire.Batch
	for i := range frames {
		require.NoError(t, b.Add(&frames[i]))
	}
	out := g.Serve(ctx, b.Bytes())
	var replies []nodemgr.Frame
	require.NoError(t, wire.Split(out, func(_ int, fb []byte) {
		var f nodemgr.Frame
		require.NoError(t, f.Decode(fb, wire.Limits))
		replies = append(replies, f)
	}))
	require.Len(t, replies, len(frames), "one reply per request")
	return replies
}

func faultOf(t *testing.T, f nodemgr.Frame) status.Code {
	t.Helper()
	require.Equal(t, nodemgr.KindFault, f.Kind)
	return f.Body.(*nodemgr.Outcome).Status
}

// TestGuestLifecycle: Info builds the manager from the entry's setup (once), operations
// before it are refused, and the device answers through the frames as it does in-process.
func TestGuestLifecycle(t *testing.T) {
	ctx := context.Background()
	var built int
	g := sdk.NewGuest(func(s nodemgr.Setup) (nodemgr.Manager, error) {
		built++
		return device.Factory(s)
	}, nopLink{})
	r := serve(t, ctx, g, nodemgr.Frame{Kind: nodemgr.KindHealth, ID: 4})
	require.Equal(t, status.BadInvalidState, faultOf(t, r[0]))
	require.Equal(t, uint32(4), r[0].ID)

	setup := nodemgr.Frame{Kind: nodemgr.KindInfo, ID: 1, Body: &nodemgr.Setup{Name: "d", NamespaceURI: "urn:d"}}
	r = serve(t, ctx, g, setup, setup)
	for _, f := range r {
		require.Equal(t, nodemgr.KindInfo|nodemgr.KindReply, f.Kind)
		info := f.Body.(*nodemgr.Info)
		require.Equal(t, []string{"urn:d"}, info.Namespaces)
		require.NotZero(t, info.Capabilities&nodemgr.CapRead)
		require.Zero(t, info.Capabilities&nodemgr.CapWatch)
	}
	require.Equal(t, 1, built, "set up once")

	r = serve(t, ctx, g,
		nodemgr.Frame{Kind: nodemgr.KindMount, ID: 2, Body: &nodemgr.MountRequest{Indexes: []uint16{2}}},
		nodemgr.Frame{Kind: nodemgr.KindStart, ID: 3, Body: &nodemgr.StartParams{Namespaces: []string{"urn:d"}, NamespaceIndexes: []uint16{2}}},
		nodemgr.Frame{Kind: nodemgr.KindRead, ID: 5, Body: &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnBoth,
			Items: []ua.ReadValueId{{NodeId: device.NodeID(2, device.NameSetpoint), AttributeId: 13}, {NodeId: device.NodeID(2, "Nope"), AttributeId: 13}}}},
		nodemgr.Frame{Kind: nodemgr.KindWatch, ID: 6, Body: &nodemgr.WatchSet{}},
		nodemgr.Frame{Kind: nodemgr.KindDataChanges, ID: 7, Body: &nodemgr.DataChanges{}},
	)
	require.Len(t, r[0].Body.(*nodemgr.Mounts).Mounts, 1)
	require.Equal(t, status.Good, r[1].Body.(*nodemgr.Outcome).Status)
	rr := r[2].Body.(*nodemgr.ReadResults).Results
	require.Equal(t, status.Good, rr[0].Status)
	require.Equal(t, codec.DoubleVariant(0), rr[0].Value, "the default setpoint")
	require.Equal(t, status.BadNodeIdUnknown, rr[1].Status)
	require.Equal(t, status.BadServiceUnsupported, faultOf(t, r[3]), "not a Watcher")
	require.Equal(t, status.BadServiceUnsupported, faultOf(t, r[4]), "a push is no request")

	// A factory that fails is a Fault of its own, with the error.
	bad := sdk.NewGuest(func(nodemgr.Setup) (nodemgr.Manager, error) { return nil, errors.New("no device") }, nopLink{})
	r = serve(t, ctx, bad, setup)
	require.Equal(t, status.BadConfigurationError, faultOf(t, r[0]))
	require.Contains(t, r[0].Body.(*nodemgr.Outcome).Message, "no device")
}

// stuck never calls done for the node "stuck", and calls it from another goroutine for
// "late".
type stuck struct{ release chan struct{} }

func (stuck) Namespaces() []string { return []string{"urn:s"} }

func (s stuck) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	switch op.Items[0].NodeId.StringID() {
	case "stuck":
		go func() { <-s.release; done() }()
	case "late":
		go func() {
			time.Sleep(10 * time.Millisecond)
			op.Results[0] = codec.DataValue{Value: codec.Int32Variant(7)}
			done()
			done() // a second done is ignored
		}()
	default:
		op.Results[0] = codec.DataValue{Value: codec.Int32Variant(1)}
		done()
	}
}

// TestGuestWaits: a batch waits for operations that complete later; one whose manager
// never calls done is answered BadTimeout once the context ends, and the rest of the
// batch is answered as usual; batches run concurrently.
func TestGuestWaits(t *testing.T) {
	s := stuck{release: make(chan struct{})}
	defer close(s.release)
	g := sdk.NewGuest(func(nodemgr.Setup) (nodemgr.Manager, error) { return s, nil }, nopLink{})
	serve(t, context.Background(), g, nodemgr.Frame{Kind: nodemgr.KindInfo, Body: &nodemgr.Setup{}})
	read := func(id uint32, node string) nodemgr.Frame {
		return nodemgr.Frame{Kind: nodemgr.KindRead, ID: id, Body: &nodemgr.ReadOp{
			Items: []ua.ReadValueId{{NodeId: codec.NewStringNodeId(2, node), AttributeId: 13}}}}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := serve(t, context.Background(), g, read(1, "now"), read(2, "late"))
			require.Equal(t, codec.Int32Variant(1), r[0].Body.(*nodemgr.ReadResults).Results[0].Value)
			require.Equal(t, codec.Int32Variant(7), r[1].Body.(*nodemgr.ReadResults).Results[0].Value)
		}()
	}
	wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := serve(t, ctx, g, read(1, "now"), read(2, "stuck"), read(3, "late"))
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, codec.Int32Variant(1), r[0].Body.(*nodemgr.ReadResults).Results[0].Value)
	require.Equal(t, status.BadTimeout, faultOf(t, r[1]))
	require.Equal(t, uint32(2), r[1].ID)
	require.Equal(t, codec.Int32Variant(7), r[2].Body.(*nodemgr.ReadResults).Results[0].Value)
}

// TestGuestMalformed: a malformed batch gets an empty one (the host sees the count
// differ), a malformed frame a Fault of its own.
func TestGuestMalformed(t *testing.T) {
	g := setUpDevice(t)
	n, err := wire.Count(g.Serve(context.Background(), []byte{1, 0, 0, 0}))
	require.NoError(t, err)
	require.Zero(t, n)
	out := g.Serve(context.Background(), []byte{1, 0, 0, 0, 3, 0, 0, 0, 1, 0x05, 0})
	require.NoError(t, wire.Split(out, func(_ int, fb []byte) {
		var f nodemgr.Frame
		require.NoError(t, f.Decode(fb, wire.Limits))
		require.Equal(t, status.BadDecodingError, faultOf(t, f))
	}))
}
