package wasmhost

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/api"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/internal/remote"
	"uastack.dev/plugins/wire"
)

// The ways a guest can be stopped, as the benchmarks compare them: wazero's termination
// checks, metering (what the host does), and neither (a reference only: such a guest
// cannot be stopped).
var stopModes = []string{"checks", "metered", "none"}

// benchDialer compiles the test guest to be stopped the way mode names.
func benchDialer(b testing.TB, mode string) *dialer {
	b.Helper()
	code, err := os.ReadFile(guestPath)
	require.NoError(b, err)
	cfg := Config{Name: "bench", CacheDir: cacheDir, Logger: discard(), Now: time.Now}
	modCfg, err := moduleConfig(&cfg)
	require.NoError(b, err)
	d := &dialer{cfg: cfg, modCfg: modCfg, conns: map[api.Module]*conn{}}
	rc, cache, err := runtimeConfig(&cfg)
	require.NoError(b, err)
	d.cache = cache
	if mode == "metered" {
		code, err = meter(code)
		require.NoError(b, err)
		d.metered = true
	}
	require.NoError(b, d.compileWith(context.Background(), rc.WithCloseOnContextDone(mode == "checks"), code))
	b.Cleanup(func() { d.release(context.Background()) })
	return d
}

// BenchmarkCloseOnContextDone measures what wazero's termination checks cost guest
// code that computes: sha256 of 64 KiB (calls and loops), and a tight arithmetic loop
// of 1M rounds without calls, in each of stopModes.
func BenchmarkCloseOnContextDone(b *testing.B) {
	for _, work := range []struct {
		export string
		arg    uint64
	}{{"bench_hash", 1}, {"bench_loop", 1 << 20}} {
		for _, mode := range stopModes {
			b.Run(fmt.Sprintf("%s/stop=%s", work.export, mode), func(b *testing.B) {
				d := benchDialer(b, mode)
				c, err := d.Dial(context.Background(), func([]byte) {})
				require.NoError(b, err)
				defer c.Close()
				fn := c.(*conn).mod.ExportedFunction(work.export)
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour) // a deadline, as the host's calls have
				defer cancel()
				stack := make([]uint64, 1)
				b.ResetTimer()
				for b.Loop() {
					stack[0] = work.arg
					if err := fn.CallWithStack(ctx, stack); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// readBatch returns a batch of n Read frames of one item each.
func readBatch(b *testing.B, n int) []byte {
	var batch wire.Batch
	for i := range n {
		op := &nodemgr.ReadOp{
			Items:   []ua.ReadValueId{{NodeId: codec.NewStringNodeId(2, "a"), AttributeId: 13}},
			Results: make([]codec.DataValue, 1),
		}
		require.NoError(b, batch.Add(&nodemgr.Frame{Kind: nodemgr.KindRead, ID: uint32(i), Body: op}))
	}
	return append([]byte(nil), batch.Bytes()...)
}

// BenchmarkCall measures one call into a set-up instance in steady state: a batch of 1
// Read and a batch of 64 Reads, each of one item. "conn" is the boundary alone
// (Conn.Call with an encoded batch, the reply not decoded); "manager" is the whole
// host side (remote.Manager.Read: queue, lane, encoding, the call, decoding, done),
// with 64 concurrent Reads coalesced into batches.
func BenchmarkCall(b *testing.B) {
	opts, _ := json.Marshal(map[string]any{"nodes": map[string]string{"a": "value"}})
	setup := nodemgr.Setup{Name: "bench", NamespaceURI: "urn:bench", Options: opts}
	for _, n := range []int{1, 64} {
		for _, mode := range stopModes {
			b.Run(fmt.Sprintf("conn/reads=%d/stop=%s", n, mode), func(b *testing.B) {
				d := benchDialer(b, mode)
				c, err := d.Dial(context.Background(), func([]byte) {})
				require.NoError(b, err)
				defer c.Close()
				var info wire.Batch
				require.NoError(b, info.Add(&nodemgr.Frame{Kind: nodemgr.KindInfo, Body: &setup}))
				_, err = c.Call(context.Background(), info.Bytes())
				require.NoError(b, err)
				batch := readBatch(b, n)
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					out, err := c.Call(ctx, batch)
					if err != nil {
						b.Fatal(err)
					}
					if k, _ := wire.Count(out); k != n {
						b.Fatalf("%d replies", k)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/read")
			})
		}
		b.Run(fmt.Sprintf("manager/reads=%d", n), func(b *testing.B) {
			m, err := Open(context.Background(), Config{Name: "bench", Path: guestPath, CacheDir: cacheDir, Setup: setup, Logger: discard()})
			require.NoError(b, err)
			defer m.Close(context.Background())
			require.NoError(b, m.Start(context.Background(), host{logger: discard(), n: &notifier{}, now: time.Now}))
			waitServing(b, m)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			ops := make([]*nodemgr.ReadOp, n)
			for i := range ops {
				ops[i] = &nodemgr.ReadOp{
					Items:   []ua.ReadValueId{{NodeId: codec.NewStringNodeId(2, "a"), AttributeId: 13}},
					Results: make([]codec.DataValue, 1),
				}
			}
			var wg sync.WaitGroup
			done := func() { wg.Done() }
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				wg.Add(n)
				for _, op := range ops {
					m.Served().(nodemgr.Reader).Read(ctx, op, done)
				}
				wg.Wait()
			}
			b.StopTimer()
			require.Equal(b, status.Good, ops[n-1].Results[0].Status)
			calls, reads := m.Stats()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/read")
			b.ReportMetric(float64(reads)/float64(calls), "reads/call")
		})
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func waitServing(b *testing.B, m *remote.Manager) {
	deadline := time.Now().Add(10 * time.Second)
	for m.Health(context.Background()).Status != status.Good {
		if time.Now().After(deadline) {
			b.Fatal("the guest did not get ready")
		}
		time.Sleep(time.Millisecond)
	}
}
