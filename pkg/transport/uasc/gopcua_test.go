package uasc

import (
	"context"
	"crypto/sha1"
	"sync/atomic"
	"testing"
	"time"

	goua "github.com/gopcua/opcua/ua"
	gouacp "github.com/gopcua/opcua/uacp"
	gouasc "github.com/gopcua/opcua/uasc"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// TestGopcuaClient drives our server with gopcua's secure channel, an independent
// implementation, for every policy × mode: open, two reads, a read larger than one chunk.
func TestGopcuaClient(t *testing.T) {
	ts := startServer(t, nil)
	for _, c := range allCombos() {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// gopcua v0.8.0 sizes encrypted chunks as if the buffer were a whole number of
			// cipher blocks: with its default 65535-byte buffers it sends 65536-byte chunks,
			// which we rightly refuse. Offer 65536.
			d := &gouacp.Dialer{ClientACK: &gouacp.Acknowledge{ReceiveBufSize: 1 << 16, SendBufSize: 1 << 16}}
			conn, err := d.Dial(ctx, "opc.tcp://"+ts.addr)
			require.NoError(t, err)
			defer conn.Close()
			cfg := &gouasc.Config{
				SecurityPolicyURI: c.uri,
				SecurityMode:      goua.MessageSecurityMode(c.mode),
				Lifetime:          uint32((10 * time.Minute).Milliseconds()),
				RequestTimeout:    10 * time.Second,
			}
			if c.uri != policy.URINone {
				tp := sha1.Sum(serverID.der)
				cfg.Certificate, cfg.LocalKey = clientID.der, clientID.key
				cfg.RemoteCertificate, cfg.Thumbprint = serverID.der, tp[:]
			}
			errCh := make(chan error, 16)
			sc, err := gouasc.NewSecureChannel("opc.tcp://"+ts.addr, conn, cfg, errCh)
			require.NoError(t, err)
			require.NoError(t, sc.Open(ctx))
			defer sc.Close()
			big := make([]byte, 200000)
			for i := range big {
				big[i] = 'a' + byte(i%26)
			}
			for i, r := range []string{"first", "second", string(big)} {
				req := &goua.ReadRequest{
					NodesToRead: []*goua.ReadValueID{{NodeID: goua.NewNumericNodeID(0, 2258), AttributeID: 13, IndexRange: r,
						// gopcua writes nothing for a nil *QualifiedName.
						DataEncoding: &goua.QualifiedName{}}},
				}
				var got *goua.ReadResponse
				err := sc.SendRequest(ctx, req, nil, func(v goua.Response) error {
					resp, ok := v.(*goua.ReadResponse)
					if f, isF := v.(*goua.ServiceFault); isF {
						t.Logf("fault %v", f.ResponseHeader.ServiceResult)
					}
					require.True(t, ok, "response %T", v)
					got = resp
					return nil
				})
				require.NoError(t, err, "request %d", i)
				require.NotNil(t, got)
				require.Len(t, got.Results, 1)
				require.Equal(t, r, got.Results[0].Value.Value())
			}
			select {
			case err := <-errCh:
				t.Fatalf("gopcua reported %v", err)
			default:
			}
		})
	}
	_ = ua.MessageSecurityModeNone
}

// TestGopcuaRenewal has gopcua renew its token twice between requests: our server issues
// a new token each time and keeps answering. The renewals are asked for with Renew from
// the test's goroutine rather than by gopcua's own timer: gopcua v0.8.0 renews from its
// timer goroutine without synchronising with a concurrent SendRequest, a data race in
// gopcua that the race detector reports.
func TestGopcuaRenewal(t *testing.T) {
	var maxToken atomic.Uint32
	ts := startServerWith(t, nil, func(ctx context.Context, r Request) {
		if id := r.Channel.TokenID(); id > maxToken.Load() {
			maxToken.Store(id) // handlers of one channel run on its reading goroutine
		}
		echoHandler(ctx, r)
	})
	for _, c := range []combo{{policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}, {policy.URIAes256Sha256RsaPss, ua.MessageSecurityModeSign}} {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			conn, err := gouacp.Dial(ctx, "opc.tcp://"+ts.addr)
			require.NoError(t, err)
			defer conn.Close()
			tp := sha1.Sum(serverID.der)
			cfg := &gouasc.Config{
				SecurityPolicyURI: c.uri, SecurityMode: goua.MessageSecurityMode(c.mode),
				Certificate: clientID.der, LocalKey: clientID.key, RemoteCertificate: serverID.der, Thumbprint: tp[:],
				Lifetime: 600000, RequestTimeout: 10 * time.Second, // no renewal by gopcua's timer
			}
			errCh := make(chan error, 16)
			sc, err := gouasc.NewSecureChannel("opc.tcp://"+ts.addr, conn, cfg, errCh)
			require.NoError(t, err)
			require.NoError(t, sc.Open(ctx))
			defer sc.Close()
			for n := range 9 {
				if n == 3 || n == 6 {
					require.NoError(t, sc.Renew(ctx), "renewal before request %d", n)
				}
				req := &goua.ReadRequest{NodesToRead: []*goua.ReadValueID{{NodeID: goua.NewNumericNodeID(0, 2258), AttributeID: 13,
					IndexRange: "r", DataEncoding: &goua.QualifiedName{}}}}
				err := sc.SendRequest(ctx, req, nil, func(v goua.Response) error {
					_, ok := v.(*goua.ReadResponse)
					require.True(t, ok, "response %T", v)
					return nil
				})
				require.NoError(t, err, "request %d", n)
			}
			select {
			case err := <-errCh:
				t.Fatalf("gopcua reported %v", err)
			default:
			}
		})
	}
	t.Cleanup(func() { require.GreaterOrEqual(t, maxToken.Load(), uint32(3), "tokens renewed at least twice") })
}
