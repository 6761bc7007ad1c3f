package discovery

import (
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

// BenchmarkGetEndpoints answers one GetEndpoints of a five-endpoint server and encodes
// the answer, from the cache and built from scratch as a server without one does
// (descriptions assembled for the caller, then encoded).
func BenchmarkGetEndpoints(b *testing.B) {
	c := NewCache()
	srv := testServer("urn:a", "opc.tcp://plant-a:4840", 200)
	c.Set("self", srv)
	req := &ua.GetEndpointsRequest{EndpointUrl: "opc.tcp://127.0.0.1:4840", RequestHeader: ua.RequestHeader{RequestHandle: 7}}
	e := codec.NewEncoder(make([]byte, 0, 16<<10))
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a := c.GetEndpoints("self", req, codec.Now())
			e.Reset(e.Bytes())
			a.EncodeBinary(e)
			a.Release()
		}
		b.SetBytes(int64(e.Len()))
	})
	b.Run("scratch", func(b *testing.B) {
		b.ReportAllocs()
		k := answerKey{server: "self", host: "127.0.0.1", profiles: ^uint64(0)}
		for b.Loop() {
			resp := ua.GetEndpointsResponse{ResponseHeader: ua.ResponseHeader{Timestamp: codec.Now(), RequestHandle: req.RequestHeader.RequestHandle}}
			for _, ep := range srv.Endpoints {
				ep.Server = localized(srv, k.locale)
				ep.EndpointUrl = withHost(ep.EndpointUrl, k.host)
				ep.Server.DiscoveryUrls = withHosts(ep.Server.DiscoveryUrls, k.host)
				ep.UserIdentityTokens = append([]ua.UserTokenPolicy(nil), ep.UserIdentityTokens...)
				resp.Endpoints = append(resp.Endpoints, ep)
			}
			e.Reset(e.Bytes())
			resp.EncodeBinary(e)
		}
		b.SetBytes(int64(e.Len()))
	})
}
