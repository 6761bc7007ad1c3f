package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// rawClient is a None secure channel spoken by hand over a uacp.Conn, so that a benchmark
// can put many requests on the wire with one write and knows every write it makes.
type rawClient struct {
	uc             *uacp.Conn
	channel, token uint32
	seq, req       uint32
	body           []byte // the chunks being built
	enc            codec.Encoder
}

// chunk appends a None chunk of type t carrying msg to dst.
func (c *rawClient) chunk(dst []byte, t string, msg codec.Structure) []byte {
	start := len(dst)
	dst = append(dst, t...)
	dst = append(dst, 'F', 0, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, c.channel)
	if t == "OPN" {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(policy.URINone)))
		dst = append(dst, policy.URINone...)
		dst = binary.LittleEndian.AppendUint32(dst, 0xffffffff) // SenderCertificate
		dst = binary.LittleEndian.AppendUint32(dst, 0xffffffff) // ReceiverCertificateThumbprint
	} else {
		dst = binary.LittleEndian.AppendUint32(dst, c.token)
	}
	c.seq++
	c.req++
	dst = binary.LittleEndian.AppendUint32(dst, c.seq)
	dst = binary.LittleEndian.AppendUint32(dst, c.req)
	c.enc.Reset(c.enc.Bytes())
	c.enc.Message(msg)
	dst = append(dst, c.enc.Bytes()...)
	binary.LittleEndian.PutUint32(dst[start+4:], uint32(len(dst)-start))
	return dst
}

// response reads one chunk and decodes its message.
func (c *rawClient) response(tb testing.TB) codec.Structure {
	tb.Helper()
	ch, err := c.uc.ReadChunk()
	require.NoError(tb, err)
	defer ch.Release()
	d := codec.NewDecoder(ch.Bytes[12:])
	if string(ch.Bytes[:3]) == "OPN" {
		_ = d.String()     // SecurityPolicyUri
		_ = d.ByteString() // SenderCertificate
		_ = d.ByteString() // ReceiverCertificateThumbprint
	} else {
		require.Equal(tb, "MSGF", string(ch.Bytes[:4]))
		_ = d.UInt32() // TokenId
	}
	_ = d.UInt32() // SequenceNumber
	_ = d.UInt32() // RequestId
	m := d.Message()
	require.NoError(tb, d.Err())
	return m
}

// call sends msg as one chunk of type t and returns the response.
func (c *rawClient) call(tb testing.TB, t string, msg codec.Structure) codec.Structure {
	tb.Helper()
	c.body = c.chunk(c.body[:0], t, msg)
	require.NoError(tb, c.uc.WriteChunks(c.body))
	return c.response(tb)
}

// dialRaw opens a None channel to addr and an activated anonymous session on it.
func dialRaw(tb testing.TB, addr, endpointURL string) (*rawClient, codec.NodeId) {
	tb.Helper()
	return rawOver(tb, mustDial(tb, addr), endpointURL)
}

// rawOver is dialRaw over a connection made by the caller.
func rawOver(tb testing.TB, nc net.Conn, endpointURL string) (*rawClient, codec.NodeId) {
	tb.Helper()
	ctx := context.Background()
	uc, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: endpointURL})
	require.NoError(tb, err)
	tb.Cleanup(func() { uc.Close() })
	c := &rawClient{uc: uc}
	m := c.call(tb, "OPN", &ua.OpenSecureChannelRequest{
		RequestType: ua.SecurityTokenRequestTypeIssue, SecurityMode: ua.MessageSecurityModeNone,
		ClientNonce: []byte{}, RequestedLifetime: 3600000,
	})
	opn, ok := m.(*ua.OpenSecureChannelResponse)
	require.True(tb, ok, "OPN answered with %T", m)
	c.channel, c.token = opn.SecurityToken.ChannelId, opn.SecurityToken.TokenId
	m = c.call(tb, "MSG", &ua.CreateSessionRequest{SessionName: "pipeline", RequestedSessionTimeout: 60000})
	cs, ok := m.(*ua.CreateSessionResponse)
	require.True(tb, ok, "CreateSession answered with %T", m)
	m = c.call(tb, "MSG", &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyIDAnonymous}),
	})
	_, ok = m.(*ua.ActivateSessionResponse)
	require.True(tb, ok, "ActivateSession answered with %T", m)
	return c, cs.AuthenticationToken
}

func mustDial(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(tb, err)
	return nc
}

// processWrites returns the number of write system calls this process has made
// (/proc/self/io syscw, Linux).
func processWrites(tb testing.TB) int64 {
	tb.Helper()
	f, err := os.Open("/proc/self/io")
	require.NoError(tb, err, "write counting needs Linux /proc/self/io")
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "syscw: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(tb, err)
			return n
		}
	}
	tb.Fatal("no syscw in /proc/self/io")
	return 0
}

// BenchmarkPipelinedReads runs the full server (Run, loopback TCP) and a hand-spoken None
// channel that writes depth Read requests of ServerStatus.State with one write, then reads
// the depth responses; an op is one Read. It reports the server's write system calls per
// response: the process's writes (/proc/self/io) minus the client's one per batch.
func BenchmarkPipelinedReads(b *testing.B) {
	for _, depth := range []int{1, 32} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			cfg := benchConfig(b, filepath.Join(b.TempDir(), "pki"))
			addr, stop := runServer(b, cfg)
			defer func() { require.NoError(b, stop()) }()
			c, token := dialRaw(b, addr.String(), cfg.Endpoint.EndpointURL)
			read := &ua.ReadRequest{
				RequestHeader:      ua.RequestHeader{AuthenticationToken: token, RequestHandle: 7},
				TimestampsToReturn: ua.TimestampsToReturnBoth,
				NodesToRead:        readValues([]codec.NodeId{codec.NewNumericNodeId(0, id.Server_ServerStatus_State)}, 1),
			}
			chunks := make([][]byte, depth)
			batch := func() {
				buf := c.body[:0]
				for i := range chunks {
					start := len(buf)
					buf = c.chunk(buf, "MSG", read)
					chunks[i] = buf[start:]
				}
				c.body = buf
				if err := c.uc.WriteChunks(chunks...); err != nil {
					b.Fatal(err)
				}
				for range depth {
					ch, err := c.uc.ReadChunk()
					if err != nil {
						b.Fatal(err)
					}
					ch.Release()
				}
			}
			batch() // warm
			require.IsType(b, &ua.ReadResponse{}, c.call(b, "MSG", read))
			batches := 0
			b.ReportAllocs()
			writes := processWrites(b)
			b.ResetTimer()
			for n := 0; n < b.N; n += depth {
				batch()
				batches++
			}
			b.StopTimer()
			server := processWrites(b) - writes - int64(batches)
			b.ReportMetric(float64(server)/float64(batches*depth), "writes/resp")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(batches*depth), "ns/resp")
			resp, ok := c.call(b, "MSG", read).(*ua.ReadResponse)
			require.True(b, ok)
			require.Equal(b, status.Good, resp.Results[0].Status)
		})
	}
}
