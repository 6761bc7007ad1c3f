package server

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/pipeline"
)

// The in-process benchmarks (Read1, Read100, BrowseObjects, CreateActivateSession) drive
// the server's own handler functions with a real *uasc.ServerChannel: a None channel is
// opened and a session activated over loopback once, then the server's end of the TCP
// connection is switched to discarding its writes (discardConn). Each operation decodes
// an encoded request body as the secure channel's read loop does (with a NodeId cache,
// into the request the server recycled after the previous Read) and calls Server.handle
// on the benchmark goroutine; the response is encoded by the channel's send path
// (straight into a pooled chunk buffer, sealed for None) and the chunk handed to the
// discarding conn. No socket I/O and no client-side decoding
// is measured. The simulation of the demo namespace is not running (Serve is not called).

// discardConn is the server's end of a benchmark connection. Once discard is set, writes
// are not sent: the last one is kept in last (without allocating), for the benchmark to
// check the response.
type discardConn struct {
	net.Conn
	discard atomic.Bool
	sunk    atomic.Int64 // chunks discarded
	reading atomic.Bool  // the channel's goroutine waits in Read

	mu   sync.Mutex // guards last
	last []byte
}

func (c *discardConn) Read(b []byte) (int, error) {
	c.reading.Store(true)
	n, err := c.Conn.Read(b)
	c.reading.Store(false)
	return n, err
}

func (c *discardConn) Write(b []byte) (int, error) {
	if !c.discard.Load() {
		return c.Conn.Write(b)
	}
	c.sunk.Add(int64(c.sink(b)))
	return len(b), nil
}

// sink keeps the last of the chunks in b, which may hold several back to back, and
// returns how many it holds.
func (c *discardConn) sink(b []byte) int {
	n, last := 0, b
	for rest := b; len(rest) >= 8; n++ {
		size := int(binary.LittleEndian.Uint32(rest[4:8]))
		if size < 8 || size > len(rest) {
			break // kept whole, for lastResponse to reject
		}
		last, rest = rest[:size], rest[size:]
	}
	c.mu.Lock()
	c.last = append(c.last[:0], last...)
	c.mu.Unlock()
	return n
}

// lastResponse decodes the service message of the last chunk written (a single MSG
// chunk of a None channel).
func (c *discardConn) lastResponse(tb testing.TB) codec.Structure {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	const bodyOffset = 8 + 4 + 4 + 8 // header, SecureChannelId, TokenId, sequence header
	require.Greater(tb, len(c.last), bodyOffset, "no response written")
	require.Equal(tb, "MSGF", string(c.last[:4]))
	require.Equal(tb, uint32(len(c.last)), binary.LittleEndian.Uint32(c.last[4:8]))
	d := codec.NewDecoder(c.last[bodyOffset:])
	m := d.Message()
	require.NoError(tb, d.Err())
	return m
}

// discardListener wraps every accepted connection in a discardConn and hands it out on
// conns.
type discardListener struct {
	net.Listener
	conns chan *discardConn
}

func (l *discardListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := &discardConn{Conn: nc, last: make([]byte, 0, 1<<16)}
	l.conns <- dc
	return dc, nil
}

// benchConfig is a valid configuration listening on 127.0.0.1:0 with its PKI in pkiDir.
func benchConfig(tb testing.TB, pkiDir string) *config.Config {
	tb.Helper()
	cfg := config.Default()
	cfg.Endpoint.ListenAddress = "127.0.0.1:0"
	cfg.Endpoint.EndpointURL = "opc.tcp://127.0.0.1:0"
	cfg.Endpoint.Hostnames = []string{"127.0.0.1", "localhost"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:bench"
	cfg.Security.PKIDir = pkiDir
	require.NoError(tb, cfg.Validate())
	return cfg
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// benchSession is a Server with an activated anonymous session on a None channel whose
// server end discards its writes.
type benchSession struct {
	srv   *Server
	ch    *uasc.ServerChannel
	c     *pipeline.Channel[*conn] // the server's state of ch, its handler
	conn  *discardConn
	token codec.NodeId
	spare codec.Structure // the request the server recycled last
	// received stands for the time each request was read, so that its answer time is
	// taken (Server.served) as the channel's read loop has it taken.
	received time.Time
}

// newBenchSession creates a Server (with a fresh PKI), serves its handler on a loopback
// listener through a uasc.Server built like New's, opens a None channel with our client
// role, creates and activates an anonymous session, and switches the server's end of the
// connection to discarding.
func newBenchSession(tb testing.TB) *benchSession { return newBenchSessionWith(tb, nil) }

// newBenchSessionWith is newBenchSession with the configuration changed by configure
// (nil: unchanged).
func newBenchSessionWith(tb testing.TB, configure func(*config.Config)) *benchSession {
	tb.Helper()
	cfg := benchConfig(tb, filepath.Join(tb.TempDir(), "pki"))
	if configure != nil {
		configure(cfg)
	}
	srv, err := New(cfg, Options{Logger: discardLogger()})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = srv.Close() })

	sec, err := channelSecurity(cfg)
	require.NoError(tb, err)
	var captured atomic.Pointer[uasc.ServerChannel]
	var handled atomic.Int32 // requests the channel's goroutine has handed over
	// One channel is opened: its state serves its requests and the benchmark's own.
	bsConn := srv.newConn()
	channels, err := uasc.NewServer(uasc.ServerConfig{
		Certificate: srv.cert.Raw,
		Key:         srv.key,
		Security:    sec,
		// Only None channels are opened here.
		ValidateCertificate: func([]*x509.Certificate) error { return status.BadCertificateUntrusted },
		UACP:                uacpConfig(cfg),
	}, uasc.HandlerFunc(func(ctx context.Context, req uasc.Request) {
		captured.Store(req.Channel)
		bsConn.Handle(ctx, req)
		handled.Add(1)
	}))
	require.NoError(tb, err)

	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	ln := &discardListener{Listener: tcp, conns: make(chan *discardConn, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = channels.Serve(ctx, ln)
	}()
	tb.Cleanup(func() {
		cancel()
		<-served
		srv.pipe.Queue().Wait()
	})

	nc, err := net.Dial("tcp", tcp.Addr().String())
	require.NoError(tb, err)
	uc, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: cfg.Endpoint.EndpointURL})
	require.NoError(tb, err)
	cc, err := uasc.Dial(ctx, uc, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = cc.Close() })
	resp, err := cc.Request(ctx, &ua.CreateSessionRequest{SessionName: "bench"})
	require.NoError(tb, err)
	token := resp.(*ua.CreateSessionResponse).AuthenticationToken
	_, err = cc.Request(ctx, &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: token},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyIDAnonymous}),
	})
	require.NoError(tb, err)

	dc := <-ln.conns
	dc.discard.Store(true)
	sc := captured.Load()
	require.NotNil(tb, sc)
	bs := &benchSession{srv: srv, ch: sc, c: bsConn, conn: dc, token: token, received: time.Now()}
	bs.settle(tb, &handled)
	return bs
}

// settle waits until the server's goroutines are done with the channel, so that the
// benchmark's requests are answered on its own goroutine, as the channel's reading
// goroutine answers them. TCP orders nothing for the race detector: the channel's
// goroutine says when it has handed over CreateSession and ActivateSession, and is back
// in Read once it is through with the second (the channel keeps state of a request after
// its handler returns). The goroutine that wrote ActivateSession's response may still be
// the channel's writer, and would then write what the benchmark sends: Reads are sent
// until three in a row are written before Handle returns.
func (bs *benchSession) settle(tb testing.TB, handled *atomic.Int32) {
	tb.Helper()
	req := &ua.ReadRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: bs.token},
		NodesToRead:   readValues(ns0StatusNodes, 1),
	}
	deadline := time.Now().Add(10 * time.Second)
	for handled.Load() < 2 || !bs.conn.reading.Load() {
		require.True(tb, time.Now().Before(deadline), "the channel's goroutine kept the session's requests")
		time.Sleep(time.Millisecond)
	}
	for sent, inRow := int64(0), 0; inRow < 3; {
		bs.c.Handle(context.Background(), uasc.Request{RequestID: 1, Message: req, Channel: bs.ch})
		sent++
		if bs.conn.sunk.Load() == sent {
			inRow++
			continue
		}
		inRow = 0
		require.True(tb, time.Now().Before(deadline), "the channel's writer never stopped")
		time.Sleep(time.Millisecond)
	}
}

// encodeBody returns the body of a MSG as the secure channel hands it to the decoder.
func encodeBody(tb testing.TB, m codec.Structure) []byte {
	tb.Helper()
	e := codec.NewEncoder(nil)
	e.Message(m)
	require.NoError(tb, e.Err())
	return slices.Clone(e.Bytes())
}

// serve decodes body and runs it through the server's handler, which encodes and sends
// the response synchronously for Read and Browse. It decodes as the channel's read loop
// does: with a NodeId cache, and into the last request the server recycled (the server
// hands back the ReadRequests it answers inline, see Server.read).
func (bs *benchSession) serve(tb testing.TB, ctx context.Context, d *codec.Decoder, body []byte) {
	d.Reset(body)
	m := d.MessageInto(bs.spare)
	if err := d.Err(); err != nil {
		tb.Fatalf("decode: %v", err)
	}
	bs.spare = nil
	bs.c.Handle(ctx, uasc.Request{RequestID: 1, Message: m, Channel: bs.ch, Received: bs.received})
	if _, ok := m.(*ua.ReadRequest); ok { // no node manager is mounted: every Read is inline
		bs.spare = m
	}
}

// run benchmarks serve of body and returns the last response.
func (bs *benchSession) run(b *testing.B, body []byte) codec.Structure {
	ctx := context.Background()
	d := codec.NewDecoder(nil)
	d.CacheNodeIds(512)       // as a ServerChannel's decoder
	bs.serve(b, ctx, d, body) // warm: caches, pools and encode hints
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		bs.serve(b, ctx, d, body)
	}
	return bs.conn.lastResponse(b)
}
