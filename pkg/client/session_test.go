package client

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// secureFake is a Basic256Sha256 SignAndEncrypt server on uasc whose CreateSession
// answer can be spoiled in one way (corrupt), to check that the client verifies it
// (Part 4 §5.6.2). It checks the client's ActivateSession signature.
type secureFake struct {
	url     string
	cert    *x509.Certificate
	key     *rsa.PrivateKey
	other   *x509.Certificate // another certificate, for the "certificate" corruption
	corrupt string
	nonce   []byte
}

func (f *secureFake) endpoints() []ua.EndpointDescription {
	return []ua.EndpointDescription{{
		EndpointUrl: f.url, ServerCertificate: f.cert.Raw,
		SecurityPolicyUri: policy.URIBasic256Sha256, SecurityMode: ua.MessageSecurityModeSignAndEncrypt,
		UserIdentityTokens:  []ua.UserTokenPolicy{{PolicyId: "anon", TokenType: ua.UserTokenTypeAnonymous}},
		TransportProfileUri: uacp.TransportProfile, SecurityLevel: 1,
	}}
}

func (f *secureFake) handle(_ context.Context, req uasc.Request) {
	pol, _ := policy.Lookup(policy.URIBasic256Sha256)
	hdr := func(h ua.RequestHeader, code status.Code) ua.ResponseHeader {
		return ua.ResponseHeader{Timestamp: codec.Now(), RequestHandle: h.RequestHandle, ServiceResult: code}
	}
	var resp codec.Structure
	switch m := req.Message.(type) {
	case *ua.GetEndpointsRequest:
		resp = &ua.GetEndpointsResponse{ResponseHeader: hdr(m.RequestHeader, status.Good), Endpoints: f.endpoints()}
	case *ua.CreateSessionRequest:
		asym, _ := pol.NewAsymmetric(f.key, nil)
		sig, _ := asym.Sign(nil, append(append([]byte{}, m.ClientCertificate...), m.ClientNonce...))
		f.nonce = make([]byte, 32)
		_, _ = rand.Read(f.nonce)
		r := &ua.CreateSessionResponse{
			ResponseHeader: hdr(m.RequestHeader, status.Good),
			SessionId:      codec.NewNumericNodeId(1, 1), AuthenticationToken: codec.NewNumericNodeId(1, 2),
			RevisedSessionTimeout: 60000, ServerNonce: f.nonce, ServerCertificate: f.cert.Raw,
			ServerEndpoints: f.endpoints(),
			ServerSignature: ua.SignatureData{Algorithm: pol.Info().AsymmetricSignatureURI, Signature: sig},
		}
		switch f.corrupt {
		case "signature":
			r.ServerSignature.Signature[7] ^= 1
		case "algorithm":
			r.ServerSignature.Algorithm = "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
		case "nonce":
			r.ServerNonce = r.ServerNonce[:16]
		case "certificate":
			r.ServerCertificate = f.other.Raw
		case "endpoints":
			r.ServerEndpoints[0].SecurityMode = ua.MessageSecurityModeSign
		}
		resp = r
	case *ua.ActivateSessionRequest:
		asym, _ := pol.NewAsymmetric(nil, req.Channel.ClientCertificate())
		data := append(append([]byte{}, f.cert.Raw...), f.nonce...)
		if m.ClientSignature.Algorithm != pol.Info().AsymmetricSignatureURI || asym.Verify(data, m.ClientSignature.Signature) != nil {
			resp = &ua.ServiceFault{ResponseHeader: hdr(m.RequestHeader, status.BadApplicationSignatureInvalid)}
			break
		}
		resp = &ua.ActivateSessionResponse{ResponseHeader: hdr(m.RequestHeader, status.Good), ServerNonce: make([]byte, 32)}
	case *ua.CloseSessionRequest:
		resp = &ua.CloseSessionResponse{ResponseHeader: hdr(m.RequestHeader, status.Good)}
	default:
		resp = &ua.ServiceFault{ResponseHeader: ua.ResponseHeader{ServiceResult: status.BadServiceUnsupported}}
	}
	_ = req.Respond(resp)
}

// TestCreateSessionChecks spoils the server's CreateSession answer in each way the
// client must notice, and checks the good answer passes (with the client's own
// signature verified by the fake).
func TestCreateSessionChecks(t *testing.T) {
	t.Parallel()
	serverCert, serverKey := selfSigned(t)
	other, _ := selfSigned(t)
	clientCert, clientKey := selfSigned(t)
	for _, tc := range []struct {
		corrupt string
		want    status.Code
	}{
		{"", status.Good},
		{"signature", status.BadApplicationSignatureInvalid},
		{"algorithm", status.BadApplicationSignatureInvalid},
		{"nonce", status.BadNonceInvalid},
		{"certificate", status.BadCertificateInvalid},
		{"endpoints", status.BadSecurityChecksFailed},
	} {
		t.Run("corrupt="+tc.corrupt, func(t *testing.T) {
			t.Parallel()
			f := &secureFake{cert: serverCert, key: serverKey, other: other, corrupt: tc.corrupt}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			f.url = "opc.tcp://" + ln.Addr().String()
			srv, err := uasc.NewServer(uasc.ServerConfig{
				Certificate: serverCert.Raw, Key: serverKey,
				Security: []uasc.SecurityConfig{
					{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone},
					{PolicyURI: policy.URIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt},
				},
				ValidateCertificate: func([]*x509.Certificate) error { return nil },
			}, uasc.HandlerFunc(f.handle))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(sctx, ln) }()
			defer func() { stop(); <-done }()

			c, err := Dial(ctx, f.url, Certificate(clientCert.Raw, clientKey), InsecureSkipVerify(),
				WithBackoff(Backoff{Initial: time.Millisecond}))
			if tc.want == status.Good {
				require.NoError(t, err)
				require.NoError(t, c.Close(ctx))
				return
			}
			require.ErrorIs(t, err, tc.want)
			var se *StatusError
			require.ErrorAs(t, err, &se)
			require.Equal(t, "CreateSession", se.Service)
		})
	}
}
