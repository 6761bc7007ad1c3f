package uasc

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

var secure = combo{policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}

// sealedRead returns a sealed MSG chunk carrying a ReadRequest, taking the channel's next
// sequence number.
func sealedRead(t *testing.T, cc *ClientChannel, requestID uint32, chunkType byte, indexRange string) []byte {
	t.Helper()
	buf := make([]byte, cc.neg.SendBufferSize)
	e := codec.NewEncoder(buf[:0])
	e.Raw(zeroHeader[:])
	e.Message(&ua.ReadRequest{RequestHeader: ua.RequestHeader{RequestHandle: requestID},
		NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13, IndexRange: indexRange}}})
	require.NoError(t, e.Err())
	cc.smu.Lock()
	n, err := cc.sealSym(buf, uacp.TypeMessage, chunkType, requestID, e.Len()-symBodyOffset)
	cc.smu.Unlock()
	require.NoError(t, err)
	return buf[:n]
}

// requireChannelError waits for the client channel to end and checks the status the
// server sent in its ERR.
func requireChannelError(t *testing.T, cc *ClientChannel, want status.Code) {
	t.Helper()
	select {
	case <-cc.done:
	case <-time.After(10 * time.Second):
		t.Fatal("channel still open")
	}
	var ue *uacp.Error
	require.ErrorAs(t, cc.Err(), &ue, "want an ERR from the server, got %v", cc.Err())
	require.Equal(t, want, ue.Code, "%v", cc.Err())
}

// requireERR reads from a raw connection until the server's ERR and checks its status.
func requireERR(t *testing.T, c *uacp.Conn, want status.Code) {
	t.Helper()
	for {
		ch, err := c.ReadChunk()
		if err == nil {
			ch.Release()
			continue
		}
		var ue *uacp.Error
		require.ErrorAs(t, err, &ue, "want an ERR from the server, got %v", err)
		require.Equal(t, want, ue.Code, "%v", err)
		return
	}
}

func TestSecurityFailures(t *testing.T) {
	ts := startServer(t, nil)
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"FlippedBit", func(t *testing.T) {
			for _, mode := range []ua.MessageSecurityMode{ua.MessageSecurityModeSign, ua.MessageSecurityModeSignAndEncrypt} {
				cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URIBasic256Sha256, mode}))
				require.NoError(t, err)
				b := sealedRead(t, cc, 1000, uacp.ChunkFinal, "x")
				b[len(b)/2] ^= 0x10
				require.NoError(t, cc.conn.WriteChunks(b))
				requireChannelError(t, cc, status.BadSecurityChecksFailed)
			}
		}},
		{"ReplayedSequenceNumber", func(t *testing.T) {
			cc, err := dialChannel(t, ts.addr, clientConfig(secure))
			require.NoError(t, err)
			b := sealedRead(t, cc, 1000, uacp.ChunkFinal, "x")
			require.NoError(t, cc.conn.WriteChunks(b, b))
			requireChannelError(t, cc, status.BadSequenceNumberInvalid)
		}},
		{"SkippedSequenceNumber", func(t *testing.T) {
			cc, err := dialChannel(t, ts.addr, clientConfig(secure))
			require.NoError(t, err)
			read(t, cc, 1, "ok")
			cc.smu.Lock()
			cc.sendSeq++
			cc.smu.Unlock()
			_, err = cc.Request(context.Background(), &ua.ReadRequest{})
			require.Error(t, err)
			requireChannelError(t, cc, status.BadSequenceNumberInvalid)
		}},
		{"MessageBeforeOpen", func(t *testing.T) {
			c, _ := dialUACP(t, ts.addr, uacp.Limits{})
			b := make([]byte, symBodyOffset+4)
			putHeader(b, uacp.TypeMessage, uacp.ChunkFinal, len(b), 0)
			putSeqHeader(b, symHeaderLen, 1, 1)
			require.NoError(t, c.WriteChunks(b))
			requireERR(t, c, status.BadTcpSecureChannelUnknown)
		}},
		{"ChunkLargerThanNegotiated", func(t *testing.T) {
			cc, err := dialChannel(t, ts.addr, clientConfig(secure))
			require.NoError(t, err)
			_ = cc
			c, nc := dialUACP(t, ts.addr, uacp.Limits{})
			hdr := uacp.AppendHeader(nil, uacp.Header{Type: uacp.TypeMessage, ChunkType: uacp.ChunkFinal, Size: c.Negotiated().SendBufferSize + 1})
			_, err = nc.Write(hdr)
			require.NoError(t, err)
			requireERR(t, c, status.BadTcpMessageTooLarge)
		}},
		{"WrongReceiverThumbprint", func(t *testing.T) {
			cfg := clientConfig(secure)
			cfg.ServerCertificate = strangerID.der
			_, err := dialChannel(t, ts.addr, cfg)
			require.Equal(t, status.BadCertificateInvalid, statusOf(err), "%v", err)
		}},
		{"GarbageBytes", func(t *testing.T) {
			c, nc := dialUACP(t, ts.addr, uacp.Limits{})
			_, err := nc.Write([]byte("\x00\x01\x02\x03garbage garbage garbage garbage"))
			require.NoError(t, err)
			requireERR(t, c, status.BadTcpMessageTypeInvalid)
		}},
		{"GarbageAfterOpen", func(t *testing.T) {
			cc, err := dialChannel(t, ts.addr, clientConfig(secure))
			require.NoError(t, err)
			b := sealedRead(t, cc, 1000, uacp.ChunkFinal, strings.Repeat("z", 100))
			for i := symHeaderLen; i < len(b); i++ {
				b[i] = byte(i * 7)
			}
			require.NoError(t, cc.conn.WriteChunks(b))
			requireChannelError(t, cc, status.BadSecurityChecksFailed)
		}},
		{"ShortNonce", func(t *testing.T) {
			c, _ := dialUACP(t, ts.addr, uacp.Limits{})
			require.NoError(t, c.WriteChunks(clientOPNWith(t, policy.Basic256Sha256, &ua.OpenSecureChannelRequest{
				RequestType: ua.SecurityTokenRequestTypeIssue, SecurityMode: ua.MessageSecurityModeSignAndEncrypt,
				ClientNonce: []byte("too short"), RequestedLifetime: 60000})))
			requireERR(t, c, status.BadNonceInvalid)
		}},
		{"RenewBeforeIssue", func(t *testing.T) {
			c, _ := dialUACP(t, ts.addr, uacp.Limits{})
			nonce, err := policy.Basic256Sha256.NewNonce(rand.Reader)
			require.NoError(t, err)
			require.NoError(t, c.WriteChunks(clientOPNWith(t, policy.Basic256Sha256, &ua.OpenSecureChannelRequest{
				RequestType: ua.SecurityTokenRequestTypeRenew, SecurityMode: ua.MessageSecurityModeSignAndEncrypt,
				ClientNonce: nonce.Value, RequestedLifetime: 60000})))
			requireERR(t, c, status.BadRequestTypeInvalid)
		}},
		{"UnknownToken", func(t *testing.T) {
			cc, err := dialChannel(t, ts.addr, clientConfig(secure))
			require.NoError(t, err)
			b := sealedRead(t, cc, 1000, uacp.ChunkFinal, "x")
			binary.LittleEndian.PutUint32(b[12:], 99)
			require.NoError(t, cc.conn.WriteChunks(b))
			requireChannelError(t, cc, status.BadSecureChannelTokenUnknown)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
			requireServing(t, ts)
		})
	}
}

// TestPolicyChecks covers the checks of the server's configuration: policy, mode and the
// certificate-validation callback.
func TestPolicyChecks(t *testing.T) {
	ts := startServer(t, func(cfg *ServerConfig) {
		cfg.Security = []SecurityConfig{{PolicyURI: secure.uri, Mode: secure.mode}}
		cfg.ValidateCertificate = func(chain []*x509.Certificate) error {
			switch {
			case chain[0].Equal(strangerID.cert):
				return status.BadCertificateUntrusted
			case chain[0].Equal(serverID.cert): // used as a revoked client certificate
				return status.BadCertificateRevoked
			}
			return nil
		}
	})
	tests := []struct {
		name string
		cfg  func() ClientConfig
		want status.Code
	}{
		{"UnsupportedPolicy", func() ClientConfig {
			return clientConfig(combo{policy.URIBasic128Rsa15, ua.MessageSecurityModeSignAndEncrypt})
		}, status.BadSecurityPolicyRejected},
		{"NoneNotOffered", func() ClientConfig {
			return clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone})
		}, status.BadSecurityPolicyRejected},
		{"UnsupportedMode", func() ClientConfig {
			return clientConfig(combo{secure.uri, ua.MessageSecurityModeSign})
		}, status.BadSecurityModeRejected},
		{"UntrustedCertificate", func() ClientConfig {
			cfg := clientConfig(secure)
			cfg.Certificate, cfg.Key = strangerID.der, strangerID.key
			return cfg
		}, status.BadSecurityChecksFailed},
		{"RevokedCertificate", func() ClientConfig {
			cfg := clientConfig(secure)
			cfg.Certificate, cfg.Key = serverID.der, serverID.key
			return cfg
		}, status.BadCertificateRevoked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := dialChannel(t, ts.addr, tc.cfg())
			var ue *uacp.Error
			require.ErrorAs(t, err, &ue, "want an ERR from the server, got %v", err)
			require.Equal(t, tc.want, ue.Code, "%v", err)
			requireServing(t, ts)
		})
	}
}

// TestLimits covers MaxChunkCount, MaxMessageSize and the reassembly budget.
func TestLimits(t *testing.T) {
	t.Run("TooManyChunks", func(t *testing.T) {
		t.Parallel()
		ts := startServer(t, func(cfg *ServerConfig) { cfg.UACP.Limits.MaxChunkCount = 2 })
		cc, err := dialChannel(t, ts.addr, clientConfig(secure))
		require.NoError(t, err)
		big := strings.Repeat("y", 200000) // four 64 KiB chunks
		_, err = cc.Request(context.Background(), readOf(big))
		require.Equal(t, status.BadRequestTooLarge, statusOf(err), "%v", err)
		read(t, cc, 1, "the client refused locally; the channel lives")
		cc.neg.MaxSendChunkCount = 0 // send it anyway
		_, err = cc.Request(context.Background(), readOf(big))
		require.Error(t, err)
		requireChannelError(t, cc, status.BadTcpMessageTooLarge)
		requireServing(t, ts)
	})
	t.Run("MessageTooLarge", func(t *testing.T) {
		t.Parallel()
		ts := startServer(t, func(cfg *ServerConfig) { cfg.UACP.Limits.MaxMessageSize = 100000 })
		cc, err := dialChannel(t, ts.addr, clientConfig(secure))
		require.NoError(t, err)
		cc.neg.MaxSendMessageSize = 0
		_, err = cc.Request(context.Background(), readOf(strings.Repeat("y", 150000)))
		require.Error(t, err)
		requireChannelError(t, cc, status.BadTcpMessageTooLarge)
		requireServing(t, ts)
	})
	t.Run("BudgetSpent", func(t *testing.T) {
		t.Parallel()
		budget := NewBudget(100000)
		var tl *tally
		ts := startServer(t, func(cfg *ServerConfig) {
			cfg.Budget = budget
			tl = newTally(cfg)
		})
		cc, err := dialChannel(t, ts.addr, clientConfig(secure))
		require.NoError(t, err)
		_, err = cc.Request(context.Background(), readOf(strings.Repeat("y", 150000)))
		require.Error(t, err)
		requireChannelError(t, cc, status.BadTcpNotEnoughResources)
		require.Eventually(t, func() bool { return budget.Available() == 100000 }, 5*time.Second, 10*time.Millisecond)
		requireServing(t, ts)
		cc2, err := dialChannel(t, ts.addr, clientConfig(secure))
		require.NoError(t, err)
		read(t, cc2, 2, strings.Repeat("w", 90000)) // within the budget
		tl.require(t, nil, map[Overdraft]int{OverBudget: 1})
	})
	t.Run("Abort", func(t *testing.T) {
		t.Parallel()
		ts := startServer(t, nil)
		cc, err := dialChannel(t, ts.addr, clientConfig(secure))
		require.NoError(t, err)
		// An intermediate chunk, then an abort for the same request: the server drops the
		// partial message and the channel carries on.
		c1 := sealedRead(t, cc, 500, uacp.ChunkIntermediate, "part")
		require.NoError(t, cc.conn.WriteChunks(c1))
		require.NoError(t, cc.sendAbort(500, status.BadRequestCancelledByClient, "changed my mind"))
		read(t, cc, 3, "after abort")
	})
}

func readOf(indexRange string) *ua.ReadRequest {
	return &ua.ReadRequest{NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13, IndexRange: indexRange}}}
}

// TestUnknownService checks that a request of an unknown type is answered with a
// ServiceFault carrying BadServiceUnsupported and that the channel carries on.
func TestUnknownService(t *testing.T) {
	ts := startServer(t, nil)
	cc, err := dialChannel(t, ts.addr, clientConfig(secure))
	require.NoError(t, err)
	m, err := cc.Request(context.Background(), &rawBody{b: []byte{1, 2, 3}})
	require.ErrorIs(t, err, status.BadServiceUnsupported)
	f, ok := m.(*ua.ServiceFault)
	require.True(t, ok, "got %T", m)
	require.Equal(t, status.BadServiceUnsupported, f.ResponseHeader.ServiceResult)
	read(t, cc, 4, "still open")
}
