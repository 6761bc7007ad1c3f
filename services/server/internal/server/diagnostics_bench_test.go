package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

// BenchmarkCreateActivateDiagnostics is BenchmarkCreateActivateSession with the
// diagnostics on and off: what describing a session (and dropping its description)
// adds to CreateSession + ActivateSession on a None channel.
func BenchmarkCreateActivateDiagnostics(b *testing.B) {
	for _, enabled := range []bool{true, false} {
		b.Run(fmt.Sprintf("enabled=%v", enabled), func(b *testing.B) {
			bs := newBenchSession(b)
			bs.srv.diag.enabled = enabled
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
				cr, ok := bs.srv.createSession(bs.ch, cm.(*ua.CreateSessionRequest)).(*ua.CreateSessionResponse)
				require.True(b, ok, "CreateSession failed")
				e.Reset(e.Bytes()[:0])
				e.Message(cr)
				d.Reset(activateBody)
				am := d.Message().(*ua.ActivateSessionRequest)
				require.NoError(b, d.Err())
				am.RequestHeader.AuthenticationToken = cr.AuthenticationToken
				ar, ok := bs.srv.activateSession(bs.ch, am).(*ua.ActivateSessionResponse)
				require.True(b, ok, "ActivateSession failed")
				e.Reset(e.Bytes()[:0])
				e.Message(ar)
				require.NoError(b, e.Err())
				bs.srv.sessions.drop(cr.AuthenticationToken)
			}
			once()
			b.ReportAllocs()
			for b.Loop() {
				once()
			}
			// Every session but the benchmark's own was dropped again.
			require.EqualValues(b, 1, bs.srv.diag.currentSessions.Load())
			bs.srv.diag.mu.Lock()
			described := len(bs.srv.diag.sessions)
			bs.srv.diag.mu.Unlock()
			require.Equal(b, 1, described) // the benchmark's own, made while enabled
		})
	}
}

// BenchmarkDiagnosticsRebuild is one rebuild of the diagnostics snapshot with n
// described sessions, each with a subscription: what the first read after the
// throttling interval costs.
func BenchmarkDiagnosticsRebuild(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			bs := newBenchSession(b)
			bs.srv.sessions.max = n + 1
			for i := range n {
				info, code := bs.srv.sessions.create(fmt.Sprintf("s%d", i), time.Hour, bs.ch.ID(), nil)
				require.True(b, code.IsGood())
				_, _, code = bs.srv.subs.Create(info.id, "", subscriptionParams(1000, 0, 0, 0, 0), true)
				require.True(b, code.IsGood())
			}
			d := bs.srv.diag
			b.ReportAllocs()
			var snap *diagSnapshot
			for b.Loop() {
				d.mu.Lock()
				snap = d.buildLocked(time.Now())
				d.mu.Unlock()
			}
			require.EqualValues(b, n+1, snap.summary.CurrentSessionCount)
			require.EqualValues(b, n, snap.summary.CurrentSubscriptionCount)
		})
	}
}
