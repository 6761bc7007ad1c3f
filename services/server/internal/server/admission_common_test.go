package server

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"net"
	"net/url"
	"strings"
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

// The hostile tests of issue 18's admission: each attacks from one or more loopback
// addresses other than the legitimate client's (127.0.0.x all reach the server on
// 127.0.0.1) and shows the legitimate client served meanwhile.

// dialFrom opens a TCP connection from the loopback address source to the server of
// endpoint URL url.
func dialFrom(ctx context.Context, source, url string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
	return d.DialContext(ctx, "tcp", strings.TrimPrefix(url, "opc.tcp://"))
}

// refusalOf waits up to d for what the listener sends a connection that has sent
// nothing: the code of an ERR, or held when nothing came (the connection was admitted).
// A connection closed without an ERR (too many refusals in progress) gives neither.
func refusalOf(nc net.Conn, d time.Duration) (code status.Code, held bool) {
	_ = nc.SetReadDeadline(time.Now().Add(d))
	var b [12]byte
	n, err := io.ReadFull(nc, b[:])
	var ne net.Error
	switch {
	case n == 0 && errors.As(err, &ne) && ne.Timeout():
		return 0, true
	case err != nil || string(b[:4]) != "ERRF":
		return 0, false
	}
	return status.Code(binary.LittleEndian.Uint32(b[8:])), false
}

// applicationIdentity returns a self-signed client application instance certificate
// (DER) of ApplicationUri uri, and its key.
func applicationIdentity(t *testing.T, uri string) ([]byte, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	u, err := url.Parse(uri)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "admission test client"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		URIs:                  []*url.URL{u},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return der, key
}

// secureChannel is a Basic256Sha256 SignAndEncrypt channel with the client certificate
// cert and key, over nc.
func secureChannel(ctx context.Context, nc net.Conn, url string, serverCert, cert []byte, key *rsa.PrivateKey) (*uasc.ClientChannel, error) {
	conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: url})
	if err != nil {
		return nil, err
	}
	return uasc.Dial(ctx, conn, uasc.ClientConfig{PolicyURI: policy.URIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt,
		Certificate: cert, Key: key, ServerCertificate: serverCert})
}

// noneChannel is a None channel over a connection from source.
func noneChannel(ctx context.Context, source, url string) (*uasc.ClientChannel, error) {
	nc, err := dialFrom(ctx, source, url)
	if err != nil {
		return nil, err
	}
	conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: url})
	if err != nil {
		return nil, err
	}
	return uasc.Dial(ctx, conn, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
}

// anonymousSession creates and activates an anonymous session on ch.
func anonymousSession(ctx context.Context, ch *uasc.ClientChannel) (codec.NodeId, error) {
	resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "legit", ClientNonce: make([]byte, 32)})
	if err != nil {
		return codec.NodeId{}, err
	}
	token := resp.(*ua.CreateSessionResponse).AuthenticationToken
	_, err = ch.Request(ctx, &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: token},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyIDAnonymous}),
	})
	return token, err
}

// busyHint returns the RetryAfterMs hint of a BadServerTooBusy fault, or 0.
func busyHint(resp codec.Structure) time.Duration {
	f, ok := resp.(*ua.ServiceFault)
	if !ok || f.ResponseHeader.ServiceResult != status.BadServerTooBusy {
		return 0
	}
	params, ok := f.ResponseHeader.AdditionalHeader.Value.(*ua.AdditionalParametersType)
	if !ok {
		return 0
	}
	for _, p := range params.Parameters {
		if p.Key == (codec.QualifiedName{Name: "RetryAfterMs"}) && p.Value.Type() == codec.TypeInt64 {
			return time.Duration(p.Value.Value().(int64)) * time.Millisecond
		}
	}
	return 0
}

// legitRead is a legitimate client from source as a cooperative one acts: it opens a
// None channel, an anonymous session and reads ServerStatus.State, and when the server
// says it is busy (an ERR BadTcpServerTooBusy or BadTcpNotEnoughResources, a
// BadServerTooBusy) it waits (the RetryAfterMs hint, or 50 ms) and tries again, until ctx
// ends. It returns the tries it took.
func legitRead(ctx context.Context, source, url string) (int, error) {
	for try := 1; ; try++ {
		wait := 50 * time.Millisecond
		err := func() error {
			ch, err := noneChannel(ctx, source, url)
			if err != nil {
				return err
			}
			defer ch.Close()
			token, err := anonymousSession(ctx, ch)
			if err != nil {
				return err
			}
			_, err = ch.Request(ctx, &ua.ReadRequest{
				RequestHeader: ua.RequestHeader{AuthenticationToken: token},
				NodesToRead:   []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2259), AttributeId: 13}},
			})
			return err
		}()
		if err == nil {
			return try, nil
		}
		if !errors.Is(err, status.BadServerTooBusy) && !errors.Is(err, status.BadTcpServerTooBusy) && !errors.Is(err, status.BadTcpNotEnoughResources) {
			return try, err
		}
		select {
		case <-ctx.Done():
			return try, err
		case <-time.After(wait):
		}
	}
}
