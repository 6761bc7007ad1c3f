package server

import (
	"testing"
	"time"

	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// BenchmarkServed is what recording the answer time adds to every answer (Server.served,
// through pipeline.Config.Served): the lookup of the service's histogram, a monotonic
// clock reading and the record.
func BenchmarkServed(b *testing.B) {
	bs := newBenchSession(b)
	req := uasc.Request{RequestID: 1, Message: &ua.ReadRequest{}, Channel: bs.ch, Received: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		bs.srv.served(req)
	}
}
