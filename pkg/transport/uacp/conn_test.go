package uacp

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"uastack.dev/pkg/status"
)

// testServer is an in-process UACP server on 127.0.0.1:0 that echoes every chunk.
type testServer struct {
	addr    string
	results chan error // one per accepted connection: Accept's error, then ReadChunk's final error
	conns   chan *Conn
}

func startServer(t *testing.T, cfg ServerConfig) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &testServer{addr: ln.Addr().String(), results: make(chan error, 64), conns: make(chan *Conn, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := Accept(ctx, nc, cfg)
				s.results <- err
				if err != nil {
					return
				}
				s.conns <- c
				for {
					ch, err := c.ReadChunk()
					if err != nil {
						s.results <- err
						return
					}
					_ = c.WriteChunks(ch.Bytes)
					ch.Release()
				}
			}()
		}
	}()
	return s
}

func (s *testServer) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.results:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no result from server")
		return nil
	}
}

// rawExchange writes b to the server, half-closes if asked, and returns everything the
// server sends until it closes the connection.
func rawExchange(t *testing.T, addr string, b []byte, closeWrite bool) []byte {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(5*time.Second)))
	if len(b) > 0 {
		_, err = nc.Write(b)
		require.NoError(t, err)
	}
	if closeWrite {
		require.NoError(t, nc.(*net.TCPConn).CloseWrite())
	}
	got, err := io.ReadAll(nc)
	require.NoError(t, err, "the server closes after its answer")
	return got
}

// requireERR checks that b is exactly one ERR message with the code.
func requireERR(t *testing.T, b []byte, want status.Code) {
	t.Helper()
	require.GreaterOrEqual(t, len(b), HeaderSize)
	h, err := ParseHeader(b)
	require.NoError(t, err)
	require.Equal(t, TypeError, h.Type, "got %q", b)
	require.Equal(t, int(h.Size), len(b), "nothing follows the ERR")
	m, err := DecodeMessage(b)
	require.NoError(t, err)
	require.Equal(t, want, m.(*Error).Code, "reason: %s", m.(*Error).Reason)
}

func dial(t *testing.T, addr string, cfg ClientConfig) (*Conn, error) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return Dial(ctx, nc, cfg)
}

func TestHandshakeNegotiation(t *testing.T) {
	t.Parallel()
	server := ServerConfig{Limits: Limits{ReceiveBufferSize: 65536, SendBufferSize: 32768, MaxMessageSize: 1 << 20, MaxChunkCount: 32}}
	s := startServer(t, server)
	cases := []struct {
		name         string
		client       Limits
		sRecv, sSend uint32
	}{
		{"defaults", Limits{}, 65536, 32768},
		{"small client", Limits{ReceiveBufferSize: 8192, SendBufferSize: 8192}, 8192, 8192},
		{"big client", Limits{ReceiveBufferSize: 1 << 24, SendBufferSize: 1 << 24, MaxMessageSize: 99, MaxChunkCount: 3}, 65536, 32768},
		{"asymmetric", Limits{ReceiveBufferSize: 10000, SendBufferSize: 50000}, 50000, 10000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := dial(t, s.addr, ClientConfig{Limits: tc.client, EndpointURL: "opc.tcp://x"})
			require.NoError(t, err)
			require.NoError(t, s.result(t))
			defer func() {
				c.Close()
				require.ErrorIs(t, s.result(t), status.BadConnectionClosed)
			}()
			sc := <-s.conns
			sn, cn := sc.Negotiated(), c.Negotiated()
			require.Equal(t, tc.sRecv, sn.ReceiveBufferSize)
			require.Equal(t, tc.sSend, sn.SendBufferSize)
			require.Equal(t, sn.ReceiveBufferSize, cn.SendBufferSize)
			require.Equal(t, sn.SendBufferSize, cn.ReceiveBufferSize)
			require.Equal(t, uint32(1<<20), sn.MaxReceiveMessageSize)
			require.Equal(t, uint32(1<<20), cn.MaxSendMessageSize)
			require.Equal(t, uint32(32), cn.MaxSendChunkCount)
			require.Equal(t, cn.MaxReceiveMessageSize, sn.MaxSendMessageSize)
			require.Equal(t, cn.MaxReceiveChunkCount, sn.MaxSendChunkCount)
			require.Equal(t, "opc.tcp://x", sn.EndpointURL)

			// Chunks of the negotiated size go through both ways.
			chunk := make([]byte, cn.SendBufferSize)
			copy(chunk, AppendHeader(nil, Header{Type: TypeMessage, ChunkType: ChunkFinal, Size: uint32(len(chunk))}))
			for i := HeaderSize; i < len(chunk); i++ {
				chunk[i] = byte(i)
			}
			if len(chunk) <= int(cn.ReceiveBufferSize) {
				require.NoError(t, c.WriteChunks(chunk, chunk))
				for range 2 {
					ch, err := c.ReadChunk()
					require.NoError(t, err)
					require.Equal(t, chunk, ch.Bytes)
					require.Equal(t, TypeMessage, ch.Header.Type)
					require.Equal(t, ChunkFinal, ch.Header.ChunkType)
					require.Equal(t, chunk[HeaderSize:], ch.Body())
					ch.Release()
					require.Nil(t, ch.Bytes)
				}
			}
			require.Error(t, c.WriteChunks(make([]byte, cn.SendBufferSize+1)), "over the send buffer")
		})
	}
}

func TestAcceptRejects(t *testing.T) {
	t.Parallel()
	s := startServer(t, ServerConfig{
		HelloTimeout: 300 * time.Millisecond,
		ValidateEndpoint: func(url string) error {
			switch url {
			case "busy":
				return status.BadTcpServerTooBusy
			case "unknown":
				return errors.New("no such endpoint")
			}
			return nil
		},
	})
	hel := func(recv, send uint32, url string) []byte {
		return (&Hello{ReceiveBufferSize: recv, SendBufferSize: send, EndpointURL: url}).Append(nil)
	}
	withSize := func(b []byte, size uint32) []byte {
		b = append([]byte(nil), b...)
		b[4], b[5], b[6], b[7] = byte(size), byte(size>>8), byte(size>>16), byte(size>>24)
		return b
	}
	msg := append(AppendHeader(nil, Header{Type: TypeMessage, ChunkType: ChunkFinal, Size: 16}), 1, 0, 0, 0, 1, 0, 0, 0)
	cases := []struct {
		name       string
		send       []byte
		closeWrite bool
		want       status.Code
	}{
		{"zero sizes", hel(0, 0, "u"), false, status.BadTcpNotEnoughResources},
		{"receive below 8192", hel(8191, 65536, "u"), false, status.BadTcpNotEnoughResources},
		{"send below 8192", hel(65536, 100, "u"), false, status.BadTcpNotEnoughResources},
		{"URL over 4096", hel(65536, 65536, strings.Repeat("u", 4097)), false, status.BadTcpEndpointUrlInvalid},
		{"URL refused", hel(65536, 65536, "unknown"), false, status.BadTcpEndpointUrlInvalid},
		{"validator status", hel(65536, 65536, "busy"), false, status.BadTcpServerTooBusy},
		{"MSG before HEL", msg, false, status.BadTcpMessageTypeInvalid},
		{"ACK from client", (&Acknowledge{}).Append(nil), false, status.BadTcpMessageTypeInvalid},
		{"HEL chunk type C", append([]byte("HELC"), hel(8192, 8192, "u")[4:]...), false, status.BadTcpMessageTypeInvalid},
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: example\r\n\r\n"), false, status.BadTcpMessageTypeInvalid},
		{"HEL too large", withSize(hel(8192, 8192, "u"), 1<<20), false, status.BadTcpMessageTooLarge},
		{"HEL size below header", withSize(hel(8192, 8192, "u"), 4), false, status.BadDecodingError},
		{"HEL body malformed", withSize(hel(8192, 8192, "u"), 20), false, status.BadDecodingError},
		{"truncated header", []byte("HELF"), true, status.BadDecodingError},
		{"truncated body", hel(8192, 8192, "opc.tcp://x")[:30], true, status.BadDecodingError},
		{"silence", nil, false, status.BadTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rawExchange(t, s.addr, tc.send, tc.closeWrite)
			requireERR(t, got, tc.want)
			err := s.result(t)
			require.ErrorIs(t, err, tc.want)
		})
	}
	// The listener keeps serving a fresh client.
	c, err := dial(t, s.addr, ClientConfig{EndpointURL: "opc.tcp://ok"})
	require.NoError(t, err)
	require.NoError(t, s.result(t))
	c.Close()
}

func TestAcceptHugeSizesRevised(t *testing.T) {
	t.Parallel()
	s := startServer(t, ServerConfig{})
	nc, err := net.Dial("tcp", s.addr)
	require.NoError(t, err)
	defer nc.Close()
	_, err = nc.Write((&Hello{ReceiveBufferSize: 0xFFFFFFFF, SendBufferSize: 0xFFFFFFFF, MaxMessageSize: 0xFFFFFFFF, MaxChunkCount: 0xFFFFFFFF}).Append(nil))
	require.NoError(t, err)
	b := make([]byte, AcknowledgeSize)
	_, err = io.ReadFull(nc, b)
	require.NoError(t, err)
	m, err := DecodeMessage(b)
	require.NoError(t, err)
	require.Equal(t, &Acknowledge{
		ReceiveBufferSize: DefaultLimits.ReceiveBufferSize, SendBufferSize: DefaultLimits.SendBufferSize,
		MaxMessageSize: DefaultLimits.MaxMessageSize, MaxChunkCount: DefaultLimits.MaxChunkCount,
	}, m)
	require.NoError(t, s.result(t))
}

// handshaken returns a raw client socket that has completed HEL/ACK with s.
func handshaken(t *testing.T, s *testServer) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = nc.Write((&Hello{ReceiveBufferSize: 8192, SendBufferSize: 16384}).Append(nil))
	require.NoError(t, err)
	b := make([]byte, AcknowledgeSize)
	_, err = io.ReadFull(nc, b)
	require.NoError(t, err)
	require.NoError(t, s.result(t))
	return nc
}

func TestReadChunkRejects(t *testing.T) {
	t.Parallel()
	s := startServer(t, ServerConfig{})
	chunk := func(typ MessageType, ct byte, size uint32, n int) []byte {
		b := AppendHeader(nil, Header{Type: typ, ChunkType: ct, Size: size})
		return append(b, make([]byte, n)...)
	}
	cases := []struct {
		name string
		send []byte
		want status.Code
	}{
		{"larger than negotiated", chunk(TypeMessage, ChunkFinal, 16385, 16377), status.BadTcpMessageTooLarge},
		{"huge header size", chunk(TypeMessage, ChunkFinal, 0xFFFFFFFF, 8), status.BadTcpMessageTooLarge},
		{"HEL again", (&Hello{ReceiveBufferSize: 8192, SendBufferSize: 8192}).Append(nil), status.BadTcpMessageTypeInvalid},
		{"unknown type", chunk(MessageType('X'|'Y'<<8|'Z'<<16), ChunkFinal, 16, 8), status.BadTcpMessageTypeInvalid},
		{"MSG chunk type X", chunk(TypeMessage, 'X', 16, 8), status.BadTcpMessageTypeInvalid},
		{"OPN intermediate", chunk(TypeOpen, ChunkIntermediate, 16, 8), status.BadTcpMessageTypeInvalid},
		{"CLO abort", chunk(TypeClose, ChunkAbort, 16, 8), status.BadTcpMessageTypeInvalid},
		{"no SecureChannelId", chunk(TypeMessage, ChunkFinal, 10, 2), status.BadDecodingError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := handshaken(t, s)
			_, err := nc.Write(tc.send)
			require.NoError(t, err)
			got, err := io.ReadAll(nc)
			require.NoError(t, err)
			nc.Close() // as Part 6 §7.1.5 asks of a client after ERR
			requireERR(t, got, tc.want)
			require.ErrorIs(t, s.result(t), tc.want)
		})
	}
	t.Run("truncated chunk", func(t *testing.T) {
		nc := handshaken(t, s)
		_, err := nc.Write(chunk(TypeMessage, ChunkFinal, 100, 50))
		require.NoError(t, err)
		require.NoError(t, nc.(*net.TCPConn).CloseWrite())
		got, err := io.ReadAll(nc)
		require.NoError(t, err)
		nc.Close()
		requireERR(t, got, status.BadDecodingError)
		require.ErrorIs(t, s.result(t), status.BadDecodingError)
	})
	t.Run("clean close", func(t *testing.T) {
		nc := handshaken(t, s)
		nc.Close()
		err := s.result(t)
		require.ErrorIs(t, err, status.BadConnectionClosed)
		require.ErrorIs(t, err, io.EOF)
	})
}

func TestDialGetsError(t *testing.T) {
	t.Parallel()
	s := startServer(t, ServerConfig{ValidateEndpoint: func(string) error { return status.BadTcpEndpointUrlInvalid }})
	_, err := dial(t, s.addr, ClientConfig{EndpointURL: "opc.tcp://nowhere"})
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, status.BadTcpEndpointUrlInvalid, e.Code)
	require.Contains(t, e.Reason, "nowhere")
	require.ErrorIs(t, err, status.BadTcpEndpointUrlInvalid)
	require.ErrorIs(t, s.result(t), status.BadTcpEndpointUrlInvalid)

	_, err = dial(t, s.addr, ClientConfig{EndpointURL: strings.Repeat("u", 4097)})
	require.ErrorIs(t, err, status.BadTcpEndpointUrlInvalid)
}

// fakeServer answers a Hello on a pipe with the given bytes.
func fakeServer(t *testing.T, answer []byte) net.Conn {
	t.Helper()
	cl, sv := net.Pipe()
	go func() {
		defer sv.Close()
		b := make([]byte, 4096)
		if _, err := sv.Read(b); err != nil {
			return
		}
		_, _ = sv.Write(answer)
		_, _ = io.Copy(io.Discard, sv)
	}()
	return cl
}

func TestDialRejectsBadAnswer(t *testing.T) {
	t.Parallel()
	ack := func(a Acknowledge) []byte { return a.Append(nil) }
	cases := []struct {
		name   string
		answer []byte
		want   status.Code
	}{
		{"MSG", append(AppendHeader(nil, Header{Type: TypeMessage, ChunkType: ChunkFinal, Size: 12}), 0, 0, 0, 0), status.BadTcpMessageTypeInvalid},
		{"HEL", (&Hello{}).Append(nil), status.BadTcpMessageTypeInvalid},
		{"ACK tiny buffers", ack(Acknowledge{ReceiveBufferSize: 10, SendBufferSize: 10}), status.BadTcpNotEnoughResources},
		{"ACK newer version", ack(Acknowledge{ProtocolVersion: 3, ReceiveBufferSize: 8192, SendBufferSize: 8192}), status.BadProtocolVersionUnsupported},
		{"ACK too large", AppendHeader(nil, Header{Type: TypeAcknowledge, ChunkType: ChunkFinal, Size: 1 << 30}), status.BadTcpMessageTooLarge},
		{"ERR", (&Error{Code: status.BadTcpServerTooBusy, Reason: "busy"}).Append(nil), status.BadTcpServerTooBusy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := Dial(ctx, fakeServer(t, tc.answer), ClientConfig{})
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, tc.want, StatusOf(err))
		})
	}
}

func TestReadTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t, ServerConfig{ReadTimeout: 100 * time.Millisecond})
	c, err := dial(t, s.addr, ClientConfig{})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, s.result(t))
	start := time.Now()
	require.ErrorIs(t, s.result(t), status.BadTimeout)
	require.Less(t, time.Since(start), 2*time.Second)
	// The client sees the server's ERR.
	_, err = c.ReadChunk()
	require.ErrorIs(t, err, status.BadTimeout)
	var e *Error
	require.ErrorAs(t, err, &e)

	// A client-side read timeout ends the client's connection.
	c2, err := dial(t, s.addr, ClientConfig{ReadTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, s.result(t))
	_, err = c2.ReadChunk()
	require.ErrorIs(t, err, status.BadTimeout)
	require.ErrorIs(t, c2.WriteChunks(), status.BadConnectionClosed)
}

func TestAcceptContextCancel(t *testing.T) {
	t.Parallel()
	cl, sv := net.Pipe()
	defer cl.Close()
	go func() { _, _ = io.Copy(io.Discard, cl) }()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := Accept(ctx, sv, ServerConfig{HelloTimeout: 10 * time.Second})
	require.ErrorIs(t, err, status.BadTimeout)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 2*time.Second)
}

func TestSendErrorDuringSession(t *testing.T) {
	t.Parallel()
	s := startServer(t, ServerConfig{})
	c, err := dial(t, s.addr, ClientConfig{})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, s.result(t))
	sc := <-s.conns
	go func() { _ = sc.SendError(status.BadTcpSecureChannelUnknown, "who are you") }()
	_, err = c.ReadChunk()
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, &Error{Code: status.BadTcpSecureChannelUnknown, Reason: "who are you"}, e)
	// The server's read loop ends too.
	require.Error(t, s.result(t))
}

func TestReverseHello(t *testing.T) {
	t.Parallel()
	serverSide, clientSide := net.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	// The server keeps its end open until the client's Dial is over: net.Pipe fails the
	// client's last step (clearing its deadline) once the other end is closed, which a TCP
	// socket would not.
	dialed := make(chan struct{})
	go func() {
		if err := SendReverseHello(ctx, serverSide, &ReverseHello{ServerURI: "urn:s", EndpointURL: "opc.tcp://s:4840"}); err != nil {
			done <- err
			return
		}
		c, err := Accept(ctx, serverSide, ServerConfig{ValidateEndpoint: func(u string) error {
			if u != "opc.tcp://s:4840" {
				return status.BadTcpEndpointUrlInvalid
			}
			return nil
		}})
		if err == nil {
			<-dialed
			c.Close()
		}
		done <- err
	}()
	rhe, err := ReadReverseHello(ctx, clientSide, time.Second)
	require.NoError(t, err)
	require.Equal(t, &ReverseHello{ServerURI: "urn:s", EndpointURL: "opc.tcp://s:4840"}, rhe)
	c, err := Dial(ctx, clientSide, ClientConfig{EndpointURL: rhe.EndpointURL})
	close(dialed)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, <-done)

	require.ErrorIs(t, SendReverseHello(ctx, serverSide, &ReverseHello{ServerURI: strings.Repeat("x", 5000)}), status.BadTcpEndpointUrlInvalid)
}

func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	s := startServer(t, ServerConfig{})
	c, err := dial(t, s.addr, ClientConfig{})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, s.result(t))
	const writers, per = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := make([]byte, 100+w)
			copy(b, AppendHeader(nil, Header{Type: TypeMessage, ChunkType: ChunkIntermediate, Size: uint32(len(b))}))
			for i := HeaderSize; i < len(b); i++ {
				b[i] = byte(w)
			}
			for range per {
				if err := c.WriteChunks(b, b); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range writers * per * 2 {
		ch, err := c.ReadChunk()
		require.NoError(t, err)
		w := int(ch.Bytes[HeaderSize])
		require.Len(t, ch.Bytes, 100+w, "chunks are never interleaved")
		for _, v := range ch.Body() {
			require.Equal(t, byte(w), v)
		}
		ch.Release()
	}
	wg.Wait()
}

func TestWriteChunksValidates(t *testing.T) {
	t.Parallel()
	c := newConn(&discardConn{}, true, nil, 0, 0)
	c.neg = Negotiated{ReceiveBufferSize: 8192, SendBufferSize: 8192}
	good := msgChunk(TypeMessage, ChunkFinal, 8)
	require.NoError(t, c.WriteChunks(good, good))
	two := append(append([]byte(nil), good...), good...)
	require.NoError(t, c.WriteChunks(two, good), "a buffer may hold several chunks")
	badSize := append([]byte(nil), good...)
	badSize[4]++
	short := append([]byte(nil), two...)
	short[4]-- // the first chunk ends a byte early, leaving a piece of one behind
	for _, b := range [][]byte{good[:7], badSize, short, two[:len(two)-1], append(two, 'M', 'S', 'G'),
		msgChunk(TypeMessage, ChunkFinal, 8192), nil} {
		require.ErrorIs(t, c.WriteChunks(good, b), status.BadTcpInternalError)
	}
	require.NoError(t, c.WriteChunks(good), "a refused write leaves the connection usable")
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.WriteChunks(good), status.BadConnectionClosed)
	require.ErrorIs(t, c.SendError(status.BadTimeout, ""), status.BadConnectionClosed)
}

// TestChunkReceivedTime checks that a chunk carries the time of the read that brought it.
func TestChunkReceivedTime(t *testing.T) {
	t.Parallel()
	s := startServer(t, ServerConfig{})
	c, err := dial(t, s.addr, ClientConfig{})
	require.NoError(t, err)
	defer c.Close()
	before := time.Now()
	require.NoError(t, c.WriteChunks(msgChunk(TypeMessage, ChunkFinal, 16)))
	ch, err := c.ReadChunk() // the server echoes it
	after := time.Now()
	require.NoError(t, err)
	defer ch.Release()
	require.False(t, ch.Received.Before(before), "received %v, written %v", ch.Received, before)
	require.False(t, ch.Received.After(after), "received %v, returned %v", ch.Received, after)
}

// refuseOne listens on 127.0.0.1:0 and answers the first connection with Refuse; the
// result of Refuse and how long it took arrive on the returned channel.
func refuseOne(t *testing.T, code status.Code, reason string) (addr string, done <-chan refused) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	out := make(chan refused, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			out <- refused{err: err}
			return
		}
		start := time.Now()
		err = Refuse(nc, code, reason)
		out <- refused{err: err, took: time.Since(start)}
	}()
	return ln.Addr().String(), out
}

type refused struct {
	err  error
	took time.Duration
}

// TestRefuse checks Refuse against the three peers a server turns away: a client whose
// Hello is unread gets the ERR with the code and reason, not a reset; a peer that has sent
// nothing gets exactly the ERR and then EOF; a peer that neither sends nor closes costs the
// server at most RefuseTimeout.
func TestRefuse(t *testing.T) {
	t.Parallel()
	t.Run("Dial gets the ERR", func(t *testing.T) {
		t.Parallel()
		addr, done := refuseOne(t, status.BadTcpNotEnoughResources, "too many connections")
		_, err := dial(t, addr, ClientConfig{EndpointURL: "opc.tcp://" + addr})
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, &Error{Code: status.BadTcpNotEnoughResources, Reason: "too many connections"}, e)
		require.NoError(t, (<-done).err)
	})
	t.Run("silent peer", func(t *testing.T) {
		t.Parallel()
		addr, done := refuseOne(t, status.BadTcpServerTooBusy, "busy")
		requireERR(t, rawExchange(t, addr, nil, false), status.BadTcpServerTooBusy)
		require.NoError(t, (<-done).err)
	})
	t.Run("peer that stays", func(t *testing.T) {
		t.Parallel()
		addr, done := refuseOne(t, status.BadTcpServerTooBusy, "busy")
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer nc.Close()
		r := <-done // nc neither reads nor closes
		require.NoError(t, r.err)
		require.Less(t, r.took, RefuseTimeout+100*time.Millisecond)
		require.GreaterOrEqual(t, r.took, lingerTimeout/2, "Refuse waited for the peer to close")
		require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
		got, err := io.ReadAll(nc)
		require.NoError(t, err)
		requireERR(t, got, status.BadTcpServerTooBusy)
	})
	t.Run("write fails", func(t *testing.T) {
		t.Parallel()
		cl, sv := net.Pipe()
		require.NoError(t, cl.Close())
		require.Error(t, Refuse(sv, status.BadTcpServerTooBusy, "busy"))
		_, err := sv.Write([]byte{1})
		require.ErrorIs(t, err, io.ErrClosedPipe, "nc is closed")
	})
}
