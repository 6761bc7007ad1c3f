package processhost

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/plugintest/testplugin/testmgr"
	"uastack.dev/plugins/sdk"
	"uastack.dev/plugins/wire"
)

// readBatch returns a batch of n Reads of one item each, as remote's lanes build them.
func readBatch(b *testing.B, n int) []byte {
	var batch wire.Batch
	for i := range n {
		op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: codec.NewStringNodeId(2, "a"), AttributeId: 13}}, Results: make([]codec.DataValue, 1)}
		require.NoError(b, batch.Add(&nodemgr.Frame{Kind: nodemgr.KindRead, ID: uint32(i), Body: op}))
	}
	return append([]byte(nil), batch.Bytes()...)
}

// setUp sends the Info that builds the manager.
func setUp(b *testing.B, call func(ctx context.Context, batch []byte) ([]byte, error)) {
	var batch wire.Batch
	require.NoError(b, batch.Add(&nodemgr.Frame{Kind: nodemgr.KindInfo, Body: &nodemgr.Setup{Name: "bench", NamespaceURI: testNamespace}}))
	out, err := call(context.Background(), batch.Bytes())
	require.NoError(b, err)
	n, err := wire.Count(out)
	require.NoError(b, err)
	require.Equal(b, 1, n)
}

// checkReplies checks that out holds n Good Read replies.
func checkReplies(b *testing.B, out []byte, n int) {
	got := 0
	require.NoError(b, wire.Split(out, func(_ int, fb []byte) {
		var f nodemgr.Frame
		require.NoError(b, f.Decode(fb, wire.Limits))
		require.Equal(b, nodemgr.KindRead|nodemgr.KindReply, f.Kind)
		require.Equal(b, status.Good, f.Body.(*nodemgr.ReadResults).Results[0].Status)
		got++
	}))
	require.Equal(b, n, got)
}

// BenchmarkCall measures one call carrying a batch of Reads of one item each: across
// the process boundary (a gRPC call to the test plugin) and in-process (the same
// manager behind sdk.Guest.Serve), per batch (ns/op) and per Read (ns/item).
func BenchmarkCall(b *testing.B) {
	d := &dialer{cfg: Config{Name: "bench", Path: pluginPath, CallTimeout: 10 * time.Second}, logger: slog.New(slog.DiscardHandler)}
	conn, err := d.Dial(context.Background(), func([]byte) {})
	require.NoError(b, err)
	defer conn.Close()
	setUp(b, conn.Call)
	guest := sdk.NewGuest(testmgr.New, nopLink{})
	inproc := func(ctx context.Context, batch []byte) ([]byte, error) { return guest.Serve(ctx, batch), nil }
	setUp(b, inproc)
	for _, n := range []int{1, 64} {
		batch := readBatch(b, n)
		for _, c := range []struct {
			name string
			call func(ctx context.Context, batch []byte) ([]byte, error)
		}{{"rpc", conn.Call}, {"inproc", inproc}} {
			b.Run(c.name+"/batch="+strconv.Itoa(n), func(b *testing.B) {
				out, err := c.call(context.Background(), batch)
				require.NoError(b, err)
				checkReplies(b, out, n)
				b.ReportAllocs()
				b.SetBytes(int64(len(batch)))
				b.ResetTimer()
				for range b.N {
					if _, err := c.call(context.Background(), batch); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
			})
		}
	}
}

// BenchmarkManagerRead measures Reads of one item through the Manager from 64
// goroutines: what the server sees, coalescing included (reads/call).
func BenchmarkManagerRead(b *testing.B) {
	m, err := Open(context.Background(), Config{Name: "bench", Path: pluginPath, Setup: nodemgr.Setup{NamespaceURI: testNamespace}})
	require.NoError(b, err)
	defer m.Close(context.Background())
	require.NoError(b, m.Start(context.Background(), newHost(nil)))
	calls0, ops0 := m.Stats()
	b.ReportAllocs()
	b.SetParallelism(32) // × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: codec.NewStringNodeId(2, "a"), AttributeId: 13}}, Results: make([]codec.DataValue, 1)}
		var wg sync.WaitGroup
		for pb.Next() {
			wg.Add(1)
			m.Served().(nodemgr.Reader).Read(context.Background(), op, wg.Done)
			wg.Wait()
			if op.Results[0].Status != status.Good {
				b.Fatal(op.Results[0].Status)
			}
		}
	})
	calls, ops := m.Stats()
	b.ReportMetric(float64(ops-ops0)/float64(max(calls-calls0, 1)), "reads/call")
}

// nopLink is a Link for the in-process guest.
type nopLink struct{}

func (nopLink) Push([]byte)    {}
func (nopLink) Log([]byte)     {}
func (nopLink) Now() time.Time { return time.Now() }
