package clienttest

import (
	"context"
	"runtime"
	"testing"
	"time"

	"uastack.dev/pkg/client"
)

// BenchmarkConnect measures one full connect (GetEndpoints, channel, CreateSession,
// ActivateSession, then CloseSession and the channel closed) and one reconnect whose
// endpoints come from the client's endpoint cache, for each security. "client" runs
// against the server in a child process, so its B/op are the client's alone; "both"
// runs against an in-process server, so its B/op are client and server together: the
// server's share is their difference. The .NET stack's benchmarks found about 3.2 MB
// per connect including discovery.
func BenchmarkConnect(b *testing.B) {
	id := testIdentities(b)
	child := childServer(b)
	ts, _ := testServer(b, nil)
	for _, sec := range securities {
		for _, target := range []struct{ name, url string }{{"client", child}, {"both", ts.URL}} {
			opts := func(extra ...client.Option) []client.Option {
				return append([]client.Option{
					client.Security(sec.policy, sec.mode), client.Certificate(id.appDER, id.appKey),
					client.Application(appURI, "bench"), client.InsecureSkipVerify(),
				}, extra...)
			}
			connect := func(b *testing.B, o []client.Option) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				c, err := client.Dial(ctx, target.url, o...)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(sec.name+"/discover+connect/"+target.name, func(b *testing.B) {
				o := opts()
				connect(b, o) // warm pools and caches on both sides
				runtime.GC()
				b.ReportAllocs()
				for b.Loop() {
					connect(b, o)
				}
			})
			b.Run(sec.name+"/cached-endpoints/"+target.name, func(b *testing.B) {
				o := opts(client.WithEndpointCache(client.NewEndpointCache()))
				connect(b, o) // fills the cache
				runtime.GC()
				b.ReportAllocs()
				for b.Loop() {
					connect(b, o)
				}
			})
		}
	}
}
