package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/session"
)

// BenchmarkCreateActivateSession is CreateSession and ActivateSession on a None channel
// with an anonymous identity token: each request is decoded, answered by createSession
// and activateSession (the functions the handler's workers run) and its response encoded.
// The ActivateSession body is encoded once with a placeholder token of the same size; the
// decoded request gets the new token. The session is then dropped from the table, so
// that the table stays at one session (not measured as CloseSession).
func BenchmarkCreateActivateSession(b *testing.B) {
	bs := newBenchSession(b)
	createBody := encodeBody(b, &ua.CreateSessionRequest{
		RequestHeader:           ua.RequestHeader{RequestHandle: 1},
		ClientDescription:       ua.ApplicationDescription{ApplicationUri: "urn:bench", ApplicationType: ua.ApplicationTypeClient},
		EndpointUrl:             "opc.tcp://127.0.0.1:4840",
		SessionName:             "bench",
		RequestedSessionTimeout: 60000,
	})
	placeholder := codec.NewOpaqueNodeId(0, make([]byte, 32))
	require.Equal(b, len(encodeBody(b, &ua.ActivateSessionRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: placeholder}})),
		len(encodeBody(b, &ua.ActivateSessionRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: bs.token}})))
	activateBody := encodeBody(b, &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: placeholder, RequestHandle: 2},
		LocaleIds:         []string{"en"},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyIDAnonymous}),
	})
	d := codec.NewDecoder(nil)
	e := codec.NewEncoder(make([]byte, 0, 1<<16))
	once := func() *ua.ActivateSessionResponse {
		d.Reset(createBody)
		cm := d.Message()
		if d.Err() != nil {
			b.Fatalf("decode CreateSession: %v", d.Err())
		}
		cr, ok := bs.srv.createSession(bs.srv.pipe.Request(context.Background(), uasc.Request{Message: cm, Channel: bs.ch}, nil), cm.(*ua.CreateSessionRequest)).(*ua.CreateSessionResponse)
		if !ok {
			b.Fatal("CreateSession failed")
		}
		e.Reset(e.Bytes()[:0])
		e.Message(cr)
		d.Reset(activateBody)
		am := d.Message().(*ua.ActivateSessionRequest)
		if d.Err() != nil {
			b.Fatalf("decode ActivateSession: %v", d.Err())
		}
		am.RequestHeader.AuthenticationToken = cr.AuthenticationToken
		ar, ok := bs.srv.activateSession(bs.srv.pipe.Request(context.Background(), uasc.Request{Message: am, Channel: bs.ch}, nil), am).(*ua.ActivateSessionResponse)
		if !ok {
			b.Fatal("ActivateSession failed")
		}
		e.Reset(e.Bytes()[:0])
		e.Message(ar)
		if e.Err() != nil {
			b.Fatalf("encode: %v", e.Err())
		}
		bs.srv.sessions.Abort(cr.AuthenticationToken)
		return ar
	}
	once()
	b.ReportAllocs()
	var last *ua.ActivateSessionResponse
	for b.Loop() {
		last = once()
	}
	require.Len(b, last.ServerNonce, session.NonceLength)
	require.Equal(b, uint32(2), last.ResponseHeader.RequestHandle)
}
