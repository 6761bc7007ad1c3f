package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/telemetry"
)

// The tests of this file act as hostile peers with raw TCP writes and read what the
// server counts of them: the deadlines that end their connections and sessions
// (opcua_server_deadline_expiries_total{stage}) and the refusals of the retained-bytes
// stage (opcua_server_isolation_rejections_total{stage="retained",reason}), with its use
// (opcua_server_isolation_usage and _owners{stage="retained"}).

// meteredServer is a server on 127.0.0.1:0 with its /metrics on a test HTTP server.
type meteredServer struct {
	*Server
	addr, url string
	metrics   string // the URL of /metrics
}

// startMetered starts a server of the default configuration changed by configure.
func startMetered(t *testing.T, configure func(*config.Config)) *meteredServer {
	t.Helper()
	cfg := config.Default()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.Endpoint.ListenAddress = ln.Addr().String()
	cfg.Endpoint.EndpointURL = "opc.tcp://" + ln.Addr().String()
	if configure != nil {
		configure(cfg)
	}
	require.NoError(t, cfg.Validate())
	s, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	hs := httptest.NewServer(s.tel.Handler())
	t.Cleanup(func() {
		hs.Close()
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, s.Close())
	})
	return &meteredServer{Server: s, addr: ln.Addr().String(), url: cfg.Endpoint.EndpointURL, metrics: hs.URL + "/metrics"}
}

// scrape returns what /metrics answers.
func (ms *meteredServer) scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(ms.metrics)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// requireExpired waits up to five seconds until every deadline is counted as often as
// want says (absent: 0): a connection is counted as it ends, after its ERR.
func (ms *meteredServer) requireExpired(t *testing.T, want map[telemetry.Deadline]uint64) {
	t.Helper()
	all := []telemetry.Deadline{telemetry.DeadlineHello, telemetry.DeadlineOpen, telemetry.DeadlineChunk,
		telemetry.DeadlineAssembly, telemetry.DeadlineWrite, telemetry.DeadlineSession}
	got := func() map[telemetry.Deadline]uint64 {
		m := map[telemetry.Deadline]uint64{}
		for _, d := range all {
			if n := ms.tel.Admission().Expired(d); n > 0 {
				m[d] = n
			}
		}
		return m
	}
	require.Eventually(t, func() bool { return fmt.Sprint(got()) == fmt.Sprint(want) }, 5*time.Second, 5*time.Millisecond,
		"want %v", want)
	// Nothing more comes of the same peers.
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, want, got())
}

// dialPeer opens a raw TCP connection to addr, closed when the test ends.
func dialPeer(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return nc
}

// sendHello sends a Hello with 64 KiB buffers and no message size limit on nc and reads
// the Acknowledge.
func sendHello(t *testing.T, nc net.Conn, url string) *uacp.Acknowledge {
	t.Helper()
	_, err := nc.Write((&uacp.Hello{ReceiveBufferSize: 1 << 16, SendBufferSize: 1 << 16, EndpointURL: url}).Append(nil))
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
	b := make([]byte, uacp.AcknowledgeSize)
	_, err = io.ReadFull(nc, b)
	require.NoError(t, err)
	m, err := uacp.DecodeMessage(b)
	require.NoError(t, err)
	ack, ok := m.(*uacp.Acknowledge)
	require.True(t, ok, "got %T", m)
	return ack
}

// errCode reads until the server's ERR, within wait, and returns its status. The server
// closes after it, and so does the peer, as Part 6 §7.1.5 asks of a client (the server
// waits a little for that before it lets the connection go).
func errCode(t *testing.T, nc net.Conn, wait time.Duration) status.Code {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(wait)))
	b, err := io.ReadAll(nc)
	nc.Close()
	require.NoError(t, err, "the server closes after its ERR, within %v", wait)
	m, err := uacp.DecodeMessage(b)
	require.NoError(t, err, "got %q", b)
	e, ok := m.(*uacp.Error)
	require.True(t, ok, "got %T", m)
	return e.Code
}

// openRaw opens a None channel by hand over nc (rawClient of bench_pipeline_test.go);
// the test then writes what it likes to nc.
func openRaw(t *testing.T, nc net.Conn, url string) *rawClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	uc, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: url})
	require.NoError(t, err)
	c := &rawClient{uc: uc}
	m := c.call(t, "OPN", &ua.OpenSecureChannelRequest{RequestType: ua.SecurityTokenRequestTypeIssue,
		SecurityMode: ua.MessageSecurityModeNone, ClientNonce: []byte{}, RequestedLifetime: 3600000})
	opn, ok := m.(*ua.OpenSecureChannelResponse)
	require.True(t, ok, "OPN answered with %T", m)
	c.channel, c.token = opn.SecurityToken.ChannelId, opn.SecurityToken.TokenId
	return c
}

// rawChunk returns a MSG chunk of c's channel of type chunkType carrying body, with the
// next sequence number.
func rawChunk(c *rawClient, chunkType byte, requestID uint32, body []byte) []byte {
	c.seq++
	b := append(make([]byte, 0, 24+len(body)), 'M', 'S', 'G', chunkType, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, c.channel)
	b = binary.LittleEndian.AppendUint32(b, c.token)
	b = binary.LittleEndian.AppendUint32(b, c.seq)
	b = binary.LittleEndian.AppendUint32(b, requestID)
	b = append(b, body...)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	return b
}

// TestDeadlineExpiriesCounted has a hostile peer pass each deadline in turn: a
// connection that sends nothing, one that sends only a Hello, a chunk begun and never
// finished, a message of several chunks left partial, a peer that stops reading its
// answers, a session nobody activates. Each ends with an ERR Bad_Timeout (the session
// with its sweep), and each is counted once, by its stage, in
// opcua_server_deadline_expiries_total. A legitimate client is served after them.
func TestDeadlineExpiriesCounted(t *testing.T) {
	t.Parallel()
	ms := startMetered(t, func(c *config.Config) {
		c.Limits.HandshakeTimeout = 300 * time.Millisecond
		c.Limits.ChunkTimeout = 400 * time.Millisecond
		c.Limits.AssemblyTimeout = 400 * time.Millisecond
		c.Limits.WriteTimeout = 300 * time.Millisecond
		c.Limits.UnactivatedSessionTimeout = 300 * time.Millisecond
	})
	want := map[telemetry.Deadline]uint64{}
	expect := func(d telemetry.Deadline) {
		t.Helper()
		want[d]++
		ms.requireExpired(t, want)
	}

	// Silence after the TCP connection: the Hello's deadline.
	nc := dialPeer(t, ms.addr)
	require.Equal(t, status.BadTimeout, errCode(t, nc, 5*time.Second))
	expect(telemetry.DeadlineHello)

	// A Hello and then nothing: the OpenSecureChannel's.
	nc = dialPeer(t, ms.addr)
	sendHello(t, nc, ms.url)
	require.Equal(t, status.BadTimeout, errCode(t, nc, 5*time.Second))
	expect(telemetry.DeadlineOpen)

	// Half a chunk on an open channel: the chunk's.
	nc = dialPeer(t, ms.addr)
	c := openRaw(t, nc, ms.url)
	_, err := nc.Write(rawChunk(c, 'F', 7, make([]byte, 100))[:40])
	require.NoError(t, err)
	require.Equal(t, status.BadTimeout, errCode(t, nc, 5*time.Second))
	expect(telemetry.DeadlineChunk)

	// The first chunk of a message of several, and no more: the assembly's.
	nc = dialPeer(t, ms.addr)
	c = openRaw(t, nc, ms.url)
	_, err = nc.Write(rawChunk(c, 'C', 7, make([]byte, 1000)))
	require.NoError(t, err)
	require.Equal(t, status.BadTimeout, errCode(t, nc, 5*time.Second))
	expect(telemetry.DeadlineAssembly)

	// GetEndpoints after GetEndpoints, none of their answers read: the write's. 2000
	// answers of about 7 KB are more than loopback's socket buffers take (4 MiB at most
	// on the server's side) and less than the send backlog allows (twice the 16 MiB the
	// Hello accepts).
	nc = dialPeer(t, ms.addr)
	c = openRaw(t, nc, ms.url)
	var flood []byte
	for range 2000 {
		flood = c.chunk(flood, "MSG", &ua.GetEndpointsRequest{EndpointUrl: ms.url})
	}
	go func() { _, _ = nc.Write(flood) }() // may wait for the server, which stops reading
	expect(telemetry.DeadlineWrite)

	// CreateSession and no ActivateSession: the session's.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := noneChannel(ctx, "127.0.0.1", ms.url)
	require.NoError(t, err)
	defer ch.Close()
	_, err = ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "never activated", RequestedSessionTimeout: 3_600_000})
	require.NoError(t, err)
	expect(telemetry.DeadlineSession)

	tries, err := legitRead(ctx, "127.0.0.2", ms.url)
	require.NoError(t, err)
	require.Equal(t, 1, tries)
	body := ms.scrape(t)
	for _, stage := range []string{"hello", "open", "chunk", "assembly", "write", "session"} {
		require.Contains(t, body, `opcua_server_deadline_expiries_total{stage="`+stage+`"} 1`+"\n")
	}
}

// TestRetainedStageCounted has hostile peers hold partial messages of several chunks in
// a reassembly budget of 100000 bytes, 64000 a channel: one holds 60000 bytes, which
// /metrics shows as the retained stage's use by one owner; one that would take the
// budget beyond its end is refused (Capacity, ERR BadTcpNotEnoughResources); one that
// goes beyond its share is refused (OwnerLimit; the share is the MaxMessageSize the
// server offered, so ERR BadTcpMessageTooLarge). Once the holder leaves, the stage is
// empty again, and a legitimate client is served throughout.
func TestRetainedStageCounted(t *testing.T) {
	t.Parallel()
	const budget, share = 100000, 64000
	ms := startMetered(t, func(c *config.Config) {
		c.Limits.MaxRetainedBytes, c.Limits.MaxRetainedBytesPerChannel = budget, share
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	retained := func(reason telemetry.Reason) uint64 {
		return ms.tel.Admission().Rejections(telemetry.StageRetained, reason)
	}

	holder := dialPeer(t, ms.addr)
	hc := openRaw(t, holder, ms.url)
	require.EqualValues(t, share, hc.uc.Negotiated().MaxSendMessageSize, "the share bounds the message size offered")
	_, err := holder.Write(rawChunk(hc, 'C', 1, make([]byte, 60000)))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		body := ms.scrape(t)
		return strings.Contains(body, `opcua_server_isolation_usage{stage="retained"} 60000`+"\n") &&
			strings.Contains(body, `opcua_server_isolation_owners{stage="retained"} 1`+"\n")
	}, 5*time.Second, 10*time.Millisecond, "the holder's bytes in use")

	// 60000 + 50000 is beyond the budget, though 50000 is within the share.
	nc := dialPeer(t, ms.addr)
	c := openRaw(t, nc, ms.url)
	_, err = nc.Write(rawChunk(c, 'C', 1, make([]byte, 50000)))
	require.NoError(t, err)
	require.Equal(t, status.BadTcpNotEnoughResources, errCode(t, nc, 5*time.Second))
	require.Eventually(t, func() bool { return retained(telemetry.ReasonCapacity) == 1 }, 5*time.Second, 5*time.Millisecond)

	// 30000 + 40000 is beyond the share, though the budget has room for the first part.
	nc = dialPeer(t, ms.addr)
	c = openRaw(t, nc, ms.url)
	_, err = nc.Write(append(rawChunk(c, 'C', 1, make([]byte, 30000)), rawChunk(c, 'C', 1, make([]byte, 40000))...))
	require.NoError(t, err)
	require.Equal(t, status.BadTcpMessageTooLarge, errCode(t, nc, 5*time.Second))
	require.Eventually(t, func() bool { return retained(telemetry.ReasonOwnerLimit) == 1 }, 5*time.Second, 5*time.Millisecond)

	tries, err := legitRead(ctx, "127.0.0.2", ms.url)
	require.NoError(t, err)
	require.Equal(t, 1, tries)

	require.NoError(t, holder.Close())
	require.Eventually(t, func() bool {
		body := ms.scrape(t)
		return strings.Contains(body, `opcua_server_isolation_usage{stage="retained"} 0`+"\n") &&
			strings.Contains(body, `opcua_server_isolation_owners{stage="retained"} 0`+"\n")
	}, 5*time.Second, 10*time.Millisecond, "the holder's bytes given back")
	body := ms.scrape(t)
	require.Contains(t, body, `opcua_server_isolation_rejections_total{reason="Capacity",stage="retained"} 1`+"\n")
	require.Contains(t, body, `opcua_server_isolation_rejections_total{reason="OwnerLimit",stage="retained"} 1`+"\n")
	require.Contains(t, body, `opcua_server_isolation_rejections_total{reason="OwnerTableFull",stage="retained"} 0`+"\n")
	require.Equal(t, uint64(1), retained(telemetry.ReasonCapacity))
	require.Equal(t, uint64(1), retained(telemetry.ReasonOwnerLimit))
	require.Zero(t, ms.tel.Admission().Expired(telemetry.DeadlineAssembly), "no partial message outlived its minute")
}
