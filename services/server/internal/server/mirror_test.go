package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/mirror/natsnode"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// mirrorClient is a client application identity for raw secured sessions.
type mirrorClient struct {
	der []byte
	key *rsa.PrivateKey
}

func newMirrorClient(t *testing.T) mirrorClient {
	t.Helper()
	p, err := pki.Open(filepath.Join(t.TempDir(), "client"), pki.Options{})
	require.NoError(t, err)
	defer p.Close()
	cert, key, err := p.EnsureOwn("urn:uastack:mirrortest:client", []string{"localhost"}, pki.OwnOptions{ApplicationName: "mirrortest"})
	require.NoError(t, err)
	return mirrorClient{der: cert.Raw, key: key}
}

// mirrorNode is a server of a test's redundant set.
type mirrorNode struct {
	ts   *servertest.Server
	cert []byte // its certificate
	logs *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startMirrorNode starts a server mirrored through natsURL into set cluster with key,
// trusting client c.
func startMirrorNode(t *testing.T, natsURL, cluster, key, name string, c mirrorClient, configure ...func(*config.Config)) *mirrorNode {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pki-"+name)
	certs := filepath.Join(dir, "trusted", "certs")
	require.NoError(t, os.MkdirAll(certs, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(certs, "client.der"), c.der, 0o600))
	logs := &syncBuffer{}
	ts := servertest.New(t, servertest.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Configure: func(cfg *config.Config) {
		cfg.Security.PKIDir = dir
		cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:mirrortest:" + name
		cfg.Mirror.URLs = []string{natsURL}
		cfg.Mirror.Cluster = cluster
		cfg.Mirror.Key = key
		cfg.Redundancy.DrainTimeout = 0 // the raw sessions of these tests never leave
		for _, f := range configure {
			f(cfg)
		}
	}})
	own, err := os.ReadDir(filepath.Join(dir, "own", "certs"))
	require.NoError(t, err)
	require.Len(t, own, 1)
	der, err := os.ReadFile(filepath.Join(dir, "own", "certs", own[0].Name()))
	require.NoError(t, err)
	return &mirrorNode{ts: ts, cert: der, logs: logs}
}

func newClusterKey(t *testing.T) string {
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(k)
}

// secureChannel opens a Basic256Sha256 SignAndEncrypt channel to n as client c.
func (n *mirrorNode) secureChannel(t *testing.T, ctx context.Context, c mirrorClient) *uasc.ClientChannel {
	t.Helper()
	nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", n.ts.Addr.String())
	require.NoError(t, err)
	conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: n.ts.URL})
	require.NoError(t, err)
	ch, err := uasc.Dial(ctx, conn, uasc.ClientConfig{PolicyURI: policy.URIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt,
		Certificate: c.der, Key: c.key, ServerCertificate: n.cert})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	return ch
}

// activation builds the ActivateSession of token whose client signature signs
// serverCert and nonce (Part 4 §5.6.3).
func activation(t *testing.T, c mirrorClient, token codec.NodeId, serverCert, nonce []byte) *ua.ActivateSessionRequest {
	t.Helper()
	cert, err := x509.ParseCertificate(serverCert)
	require.NoError(t, err)
	asym, err := policy.Basic256Sha256.NewAsymmetric(c.key, cert)
	require.NoError(t, err)
	sig, err := asym.Sign(nil, append(append([]byte{}, serverCert...), nonce...))
	require.NoError(t, err)
	return &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: token},
		ClientSignature:   ua.SignatureData{Algorithm: policy.Basic256Sha256.Info().AsymmetricSignatureURI, Signature: sig},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: "Anonymous"}),
	}
}

// createSession creates a session on ch and returns its token and server nonce.
func createSession(t *testing.T, ctx context.Context, ch *uasc.ClientChannel, n *mirrorNode, c mirrorClient) (codec.NodeId, []byte) {
	t.Helper()
	nonce := make([]byte, 32)
	_, _ = rand.Read(nonce)
	resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "mirrortest", ClientNonce: nonce,
		ClientCertificate: c.der, EndpointUrl: n.ts.URL, RequestedSessionTimeout: 60000,
		ClientDescription: ua.ApplicationDescription{ApplicationUri: "urn:uastack:mirrortest:client", ApplicationType: ua.ApplicationTypeClient}})
	require.NoError(t, err)
	cs := resp.(*ua.CreateSessionResponse)
	return cs.AuthenticationToken, cs.ServerNonce
}

// activateOn sends req on ch and returns the ActivateSession's status and new nonce.
func activateOn(ctx context.Context, ch *uasc.ClientChannel, req *ua.ActivateSessionRequest) (status.Code, []byte) {
	resp, err := ch.Request(ctx, req)
	if err != nil {
		if f, ok := resp.(*ua.ServiceFault); ok {
			return f.ResponseHeader.ServiceResult, nil
		}
		return status.BadUnexpectedError, nil
	}
	a := resp.(*ua.ActivateSessionResponse)
	return a.ResponseHeader.ServiceResult, a.ServerNonce
}

func startNATS(t *testing.T) *natsnode.Node {
	t.Helper()
	n, err := natsnode.Start(natsnode.Config{DataDir: filepath.Join(t.TempDir(), "nats")})
	require.NoError(t, err)
	t.Cleanup(n.Shutdown)
	return n
}

// TestMirrorNonceOnce: a server nonce is used once in the whole set. An ActivateSession
// replayed after its session moved on is refused by the server that holds the session
// and by every other server, which reads the set's record; of two servers that get the
// same valid ActivateSession at once, exactly one takes it (a compare-and-swap on the
// record), and the session carries on there.
func TestMirrorNonceOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nats := startNATS(t)
	key := newClusterKey(t)
	c := newMirrorClient(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	metricsA := ln.Addr().String()
	require.NoError(t, ln.Close())
	a := startMirrorNode(t, nats.ClientURL(), "nonce", key, "A", c, func(cfg *config.Config) { cfg.Observability.MetricsAddr = metricsA })
	b := startMirrorNode(t, nats.ClientURL(), "nonce", key, "B", c)
	metric := func(line string) bool {
		resp, err := http.Get("http://" + metricsA + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return strings.Contains(string(body), "\n"+line+"\n")
	}

	ch := a.secureChannel(t, ctx, c)
	token, n1 := createSession(t, ctx, ch, a, c)
	first := activation(t, c, token, a.cert, n1)
	code, n2 := activateOn(ctx, ch, first)
	require.Equal(t, status.Good, code)
	require.Eventually(t, func() bool {
		return metric(`uastack_mirror_records{kind="session"} 1`)
	}, 5*time.Second, 50*time.Millisecond, "A holds one session in the set")

	// Replayed: on A over another channel, and on B, which reads the set's record.
	code, _ = activateOn(ctx, a.secureChannel(t, ctx, c), first)
	require.Equal(t, status.BadApplicationSignatureInvalid, code, "replayed on A")
	code, _ = activateOn(ctx, b.secureChannel(t, ctx, c), first)
	require.Equal(t, status.BadApplicationSignatureInvalid, code, "replayed on B")

	// The next valid activation, sent to A and B at once: one of them takes it.
	next := activation(t, c, token, a.cert, n2)
	chA, chB := a.secureChannel(t, ctx, c), b.secureChannel(t, ctx, c)
	var codes [2]status.Code
	var nonces [2][]byte
	var wg sync.WaitGroup
	for i, ch := range []*uasc.ClientChannel{chA, chB} {
		wg.Go(func() { codes[i], nonces[i] = activateOn(ctx, ch, next) })
	}
	wg.Wait()
	good := 0
	for i, code := range codes {
		if code == status.Good {
			good++
			// The winner holds the session: a Read on its channel is served.
			ch := []*uasc.ClientChannel{chA, chB}[i]
			resp, err := ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: token},
				NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13}}})
			require.NoError(t, err)
			require.Equal(t, status.Good, resp.(*ua.ReadResponse).Results[0].Status)
			continue
		}
		// The other finds the session taken (both checked the nonce before either
		// swapped the record), or, when it came second, the nonce used.
		require.Contains(t, []status.Code{status.BadSessionIdInvalid, status.BadApplicationSignatureInvalid}, code)
	}
	require.Equal(t, 1, good, "exactly one server takes the activation: %v", codes)
	if codes[1] == status.Good {
		require.Eventually(t, func() bool {
			return metric(`uastack_mirror_sessions_moved_total{direction="out"} 1`)
		}, 5*time.Second, 50*time.Millisecond, "A counts the session B took")
	}
}

// TestMirrorWrongKey: a server whose cluster key differs cannot open the set's records:
// it refuses to take a session over (BadSessionIdInvalid) and says why in its log.
func TestMirrorWrongKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nats := startNATS(t)
	c := newMirrorClient(t)
	a := startMirrorNode(t, nats.ClientURL(), "keys", newClusterKey(t), "A", c)
	other := startMirrorNode(t, nats.ClientURL(), "keys", newClusterKey(t), "other", c)

	ch := a.secureChannel(t, ctx, c)
	token, n1 := createSession(t, ctx, ch, a, c)
	code, n2 := activateOn(ctx, ch, activation(t, c, token, a.cert, n1))
	require.Equal(t, status.Good, code)
	code, _ = activateOn(ctx, other.secureChannel(t, ctx, c), activation(t, c, token, a.cert, n2))
	require.Equal(t, status.BadSessionIdInvalid, code)
	require.Contains(t, other.logs.String(), "is mirror.key the same on every server?")
	// A still holds it.
	code, _ = activateOn(ctx, a.secureChannel(t, ctx, c), activation(t, c, token, a.cert, n2))
	require.Equal(t, status.Good, code)
}
