package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
)

// BenchmarkCreateActivateDiagnostics is BenchmarkCreateActivateSession with the
// diagnostics on and off: what describing a session (and dropping its description)
// adds to CreateSession + ActivateSession on a None channel.
func BenchmarkCreateActivateDiagnostics(b *testing.B) {
	for _, enabled := range []bool{true, false} {
		b.Run(fmt.Sprintf("enabled=%v", enabled), func(b *testing.B) {
			bs := newBenchSessionWith(b, func(c *config.Config) { c.Observability.DiagnosticsEnabled = enabled })
			createBody := encodeBody(b, &ua.CreateSessionRequest{
				RequestHeader:           ua.RequestHeader{RequestHandle: 1},
				ClientDescription:       ua.ApplicationDescription{ApplicationUri: "urn:bench", ApplicationType: ua.ApplicationTypeClient},
				EndpointUrl:             "opc.tcp://127.0.0.1:4840",
				SessionName:             "bench",
				RequestedSessionTimeout: 60000,
			})
			placeholder := codec.NewOpaqueNodeId(0, make([]byte, 32))
			activateBody := encodeBody(b, &ua.ActivateSessionRequest{
				RequestHeader:     ua.RequestHeader{AuthenticationToken: placeholder, RequestHandle: 2},
				LocaleIds:         []string{"en"},
				UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyIDAnonymous}),
			})
			d := codec.NewDecoder(nil)
			e := codec.NewEncoder(make([]byte, 0, 1<<16))
			once := func() {
				d.Reset(createBody)
				cm := d.Message()
				require.NoError(b, d.Err())
				cr, ok := bs.srv.createSession(bs.srv.pipe.Request(context.Background(), uasc.Request{Message: cm, Channel: bs.ch}, nil), cm.(*ua.CreateSessionRequest)).(*ua.CreateSessionResponse)
				require.True(b, ok, "CreateSession failed")
				e.Reset(e.Bytes()[:0])
				e.Message(cr)
				d.Reset(activateBody)
				am := d.Message().(*ua.ActivateSessionRequest)
				require.NoError(b, d.Err())
				am.RequestHeader.AuthenticationToken = cr.AuthenticationToken
				ar, ok := bs.srv.activateSession(bs.srv.pipe.Request(context.Background(), uasc.Request{Message: am, Channel: bs.ch}, nil), am).(*ua.ActivateSessionResponse)
				require.True(b, ok, "ActivateSession failed")
				e.Reset(e.Bytes()[:0])
				e.Message(ar)
				require.NoError(b, e.Err())
				bs.srv.sessions.Abort(cr.AuthenticationToken)
			}
			once()
			b.ReportAllocs()
			for b.Loop() {
				once()
			}
			// Every session but the benchmark's own was dropped again; the benchmark's own
			// is described only while enabled.
			require.Equal(b, 1, bs.srv.sessions.Count())
			require.Equal(b, enabled, bs.srv.diag.CountersOf(bs.token) != nil)
		})
	}
}
