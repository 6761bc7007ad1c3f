package discovery

import (
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

// BenchmarkGetEndpoints answers one GetEndpoints of a five-endpoint server and encodes
// the answer, from the cache and built from scratch as a server without one does
// (descriptions assembled for the caller, then encoded). Both stamp the response with a
// time read before: a server reads the clock once per socket read and stamps the
// requests it brought with it (uasc.Request.Received), so neither pays a clock reading.
func BenchmarkGetEndpoints(b *testing.B) {
	c := NewCache()
	srv := testServer("urn:a", "opc.tcp://plant-a:4840", 200)
	c.Set("self", srv)
	req := &ua.GetEndpointsRequest{EndpointUrl: "opc.tcp://127.0.0.1:4840", RequestHeader: ua.RequestHeader{RequestHandle: 7}}
	e := codec.NewEncoder(make([]byte, 0, 16<<10))
	now := codec.Now()
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a := c.GetEndpoints("self", req, now)
			e.Reset(e.Bytes())
			a.EncodeBinary(e)
			a.Release()
		}
		b.SetBytes(int64(e.Len()))
	})
	b.Run("scratch", func(b *testing.B) {
		// What a server without the cache does per call: the descriptions built from its
		// configuration (application, security settings, token policies; the certificate
		// referenced, not copied) for the host the client called, then encoded.
		cert := srv.Endpoints[0].ServerCertificate
		type security struct {
			policy string
			mode   ua.MessageSecurityMode
			level  byte
		}
		var secs []security
		for _, ep := range srv.Endpoints {
			secs = append(secs, security{ep.SecurityPolicyUri, ep.SecurityMode, ep.SecurityLevel})
		}
		b.ReportAllocs()
		for b.Loop() {
			url := withHost("opc.tcp://plant-a:4840", hostOf(req.EndpointUrl))
			app := ua.ApplicationDescription{
				ApplicationUri:  "urn:a",
				ProductUri:      "urn:uastack.dev:server",
				ApplicationName: codec.LocalizedText{Text: "plant urn:a"},
				ApplicationType: ua.ApplicationTypeServer,
				DiscoveryUrls:   []string{url},
			}
			resp := ua.GetEndpointsResponse{ResponseHeader: ua.ResponseHeader{Timestamp: now, RequestHandle: req.RequestHeader.RequestHandle}}
			for _, sec := range secs {
				resp.Endpoints = append(resp.Endpoints, ua.EndpointDescription{
					EndpointUrl: url, Server: app, ServerCertificate: cert,
					SecurityMode: sec.mode, SecurityPolicyUri: sec.policy,
					UserIdentityTokens: []ua.UserTokenPolicy{
						{PolicyId: "Anonymous", TokenType: ua.UserTokenTypeAnonymous},
						{PolicyId: "UserName", TokenType: ua.UserTokenTypeUserName, SecurityPolicyUri: "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"},
						{PolicyId: "Certificate", TokenType: ua.UserTokenTypeCertificate},
					},
					TransportProfileUri: tcpProfile, SecurityLevel: sec.level,
				})
			}
			e.Reset(e.Bytes())
			resp.EncodeBinary(e)
		}
		b.SetBytes(int64(e.Len()))
	})
}
