package uacp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"reflect"
	"testing"
	"time"

	"uastack.dev/pkg/status"
)

func addMessageSeeds(f *testing.F) {
	for _, tc := range wireCases {
		f.Add(tc.wire)
	}
	f.Add((&Hello{ProtocolVersion: 1, EndpointURL: ""}).Append(nil))
	f.Add((&Error{Code: status.BadTimeout}).Append(nil))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("HELF\x08\x00\x00\x00"))
}

// checkRoundTrip re-encodes a decoded message and decodes it again: the result must equal the
// first decoding and re-encode to the same bytes. (The input itself need not come back byte
// for byte: any negative string length decodes as null and re-encodes as -1, later protocol
// versions may carry ignored trailing bytes, and an over-long Error reason is dropped.)
func checkRoundTrip(t *testing.T, b []byte, m Message) {
	again := m.Append(nil)
	m2, err := DecodeMessage(again)
	if err != nil {
		t.Fatalf("re-decoding %x: %v", again, err)
	}
	if !reflect.DeepEqual(m, m2) {
		t.Fatalf("%x decodes to %+v, its re-encoding to %+v", b, m, m2)
	}
	if !bytes.Equal(m2.Append(nil), again) {
		t.Fatalf("unstable encoding of %x", b)
	}
	if len(again) > len(b) {
		t.Fatalf("re-encoding grew from %d to %d bytes", len(b), len(again))
	}
}

func checkDecodeError(t *testing.T, err error) {
	switch StatusOf(err) {
	case status.BadDecodingError, status.BadTcpMessageTypeInvalid, status.BadTcpEndpointUrlInvalid:
	default:
		t.Fatalf("error without a precise status: %v", err)
	}
}

func FuzzDecodeMessage(f *testing.F) {
	addMessageSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		checkRoundTrip(t, b, m)
	})
}

func FuzzDecodeHello(f *testing.F) {
	addMessageSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		hel, err := DecodeHello(b)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if len(hel.EndpointURL) > MaxURLLength {
			t.Fatalf("EndpointUrl of %d bytes accepted", len(hel.EndpointURL))
		}
		checkRoundTrip(t, b, hel)
		// Negotiation never panics and never grants more than either side offered.
		ack, n, err := NegotiateServer(Limits{}, hel)
		if err != nil {
			if c := StatusOf(err); c != status.BadTcpNotEnoughResources {
				t.Fatalf("negotiation error %v", err)
			}
			return
		}
		if ack.ReceiveBufferSize > hel.SendBufferSize || ack.SendBufferSize > hel.ReceiveBufferSize ||
			n.ReceiveBufferSize > DefaultLimits.ReceiveBufferSize || n.SendBufferSize < MinBufferSize {
			t.Fatalf("bad negotiation %+v for %+v", n, hel)
		}
	})
}

// splitConn is a net.Conn whose reads return the stream in pieces whose sizes come from the
// fuzz input. Writes are recorded; the read deadline is recorded, and a split of
// splitTimeout stands for a read whose deadline passes, when one is set.
type splitConn struct {
	stream []byte
	splits []byte
	out    bytes.Buffer
	closed bool
	// read is the number of bytes read so far, readDeadline the read deadline last set,
	// deadlineSets how often it was set, and timeouts how many reads timed out.
	read         int
	readDeadline time.Time
	deadlineSets int
	timeouts     int
	// beforeRead, when set, is called before each read that may wait.
	beforeRead func()
}

// splitTimeout is the split that stands for a read whose deadline passes.
const splitTimeout = 0xfe

func (c *splitConn) Read(p []byte) (int, error) {
	if c.closed {
		return 0, net.ErrClosed
	}
	if c.beforeRead != nil {
		c.beforeRead()
	}
	if len(c.splits) > 0 && c.splits[0] == splitTimeout && !c.readDeadline.IsZero() {
		c.splits = c.splits[1:]
		c.timeouts++
		return 0, os.ErrDeadlineExceeded
	}
	return c.take(p)
}

// take reads the next piece of the stream.
func (c *splitConn) take(p []byte) (int, error) {
	if len(c.stream) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(c.splits) > 0 {
		n = min(n, int(c.splits[0])+1)
		c.splits = c.splits[1:]
	}
	n = copy(p, c.stream[:min(n, len(c.stream))])
	c.stream = c.stream[n:]
	c.read += n
	return n, nil
}

// readNow is a read without waiting: a split of 0x80 or more stands for nothing arrived.
func (c *splitConn) readNow(p []byte) (int, error) {
	if len(c.splits) > 0 && c.splits[0] >= 0x80 && !c.closed && len(c.stream) > 0 {
		c.splits = c.splits[1:]
		return 0, errWouldBlock
	}
	if c.closed {
		return 0, net.ErrClosed
	}
	return c.take(p)
}

func (c *splitConn) Write(p []byte) (int, error) {
	if c.closed {
		return 0, net.ErrClosed
	}
	return c.out.Write(p)
}
func (c *splitConn) Close() error                { c.closed = true; return nil }
func (c *splitConn) LocalAddr() net.Addr         { return &net.TCPAddr{} }
func (c *splitConn) RemoteAddr() net.Addr        { return &net.TCPAddr{} }
func (c *splitConn) SetDeadline(time.Time) error { return nil }
func (c *splitConn) SetReadDeadline(t time.Time) error {
	c.readDeadline = t
	c.deadlineSets++
	return nil
}
func (c *splitConn) SetWriteDeadline(time.Time) error { return nil }

func chunkSeed(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func msgChunk(typ MessageType, ct byte, body int) []byte {
	b := AppendHeader(nil, Header{Type: typ, ChunkType: ct, Size: uint32(HeaderSize + body)})
	for i := range body {
		b = append(b, byte(i))
	}
	return b
}

func FuzzReadChunks(f *testing.F) {
	f.Add([]byte{0, 3, 1, 7}, chunkSeed(msgChunk(TypeMessage, ChunkFinal, 20), msgChunk(TypeOpen, ChunkFinal, 4)), false)
	f.Add([]byte{}, chunkSeed(msgChunk(TypeMessage, ChunkIntermediate, 100), msgChunk(TypeMessage, ChunkAbort, 8), msgChunk(TypeClose, ChunkFinal, 4)), true)
	f.Add([]byte{255, 255}, chunkSeed(msgChunk(TypeMessage, ChunkFinal, 9000)), false)
	f.Add([]byte{1}, (&Error{Code: status.BadTimeout, Reason: "x"}).Append(nil), false)
	f.Add([]byte{2}, (&Hello{}).Append(nil), true)
	f.Add([]byte{0}, []byte("MSGF\xff\xff\xff\xff"), true)
	var burst [][]byte
	for range 40 {
		burst = append(burst, msgChunk(TypeMessage, ChunkFinal, 120))
	}
	f.Add([]byte{}, chunkSeed(burst...), true)
	f.Add([]byte{0x7f, 0x90, 0x7f}, chunkSeed(burst...), true)
	// Chunks cut across reads, and deadlines that pass: in the middle of a chunk, and
	// before one has begun (the caller's, in every fourth read). With an odd last split
	// the chunk timeout has passed whenever it is looked at; with an even one it has not,
	// and a deadline that passes is an earlier chunk's, set again.
	f.Add([]byte{9, 200, 50, 3, 0x7f, 0xff, 0x7f}, chunkSeed(msgChunk(TypeMessage, ChunkIntermediate, 300), msgChunk(TypeMessage, ChunkFinal, 600), msgChunk(TypeMessage, ChunkFinal, 40)), true)
	f.Add([]byte{9, 200, 50, 3, 0x7f, 0xff, 0x7f, 2}, chunkSeed(msgChunk(TypeMessage, ChunkIntermediate, 300), msgChunk(TypeMessage, ChunkFinal, 600), msgChunk(TypeMessage, ChunkFinal, 40)), true)
	f.Add([]byte{20, 5, splitTimeout, 3}, chunkSeed(msgChunk(TypeMessage, ChunkFinal, 100)), true)
	f.Add([]byte{20, 5, splitTimeout, 7, splitTimeout, splitTimeout, 0}, chunkSeed(msgChunk(TypeMessage, ChunkFinal, 100), msgChunk(TypeMessage, ChunkFinal, 100)), true)
	f.Add([]byte{0x7f, 0x7f, splitTimeout, 1}, chunkSeed(burst...), false)
	f.Add([]byte{4, splitTimeout, 0x7f, 5}, (&Error{Code: status.BadTimeout, Reason: "late"}).Append(nil), true)
	f.Fuzz(func(t *testing.T, splits, stream []byte, server bool) {
		nc := &splitConn{stream: stream, splits: splits}
		c := newConn(nc, server, nil, 0, 0)
		c.neg = Negotiated{ReceiveBufferSize: 8192, SendBufferSize: 8192}
		c.in.chunkTimeout = time.Minute
		if len(splits) > 0 && splits[len(splits)-1]&1 == 1 {
			c.in.chunkTimeout = time.Nanosecond
		}
		if server {
			c.LendChunks() // as a server channel reads: chunks held whole come in place
			c.in.readNow = nc.readNow
		}
		off := 0 // where the next chunk starts in stream
		var limit time.Time
		// A read that may wait has a deadline when a chunk has begun (its first bytes were
		// read) or the caller gave one, and never a later one than the caller's. (Between
		// chunks it may have one of an earlier chunk's.)
		nc.beforeRead = func() {
			if begun := nc.read > off; (begun || !limit.IsZero()) && nc.readDeadline.IsZero() {
				t.Fatalf("read at %d, chunk from %d: no deadline", nc.read, off)
			}
			if !limit.IsZero() && nc.readDeadline.After(limit) {
				t.Fatalf("read at %d: deadline %v after the limit %v", nc.read, nc.readDeadline, limit)
			}
		}
		for i := range 1000 {
			limit = time.Time{}
			if i%4 == 3 {
				limit = time.Now().Add(time.Hour)
			}
			sets, timeouts := nc.deadlineSets, nc.timeouts
			ch, err := c.ReadChunkBefore(limit)
			if err != nil {
				var peer *Error
				switch code := StatusOf(err); {
				case errors.As(err, &peer):
				case code == status.BadTimeout && !nc.readDeadline.IsZero():
				case code == status.BadConnectionClosed || code == status.BadDecodingError ||
					code == status.BadTcpMessageTypeInvalid || code == status.BadTcpMessageTooLarge:
				default:
					t.Fatalf("error without a precise status: %v", err)
				}
				if !nc.closed {
					t.Fatal("connection left open after an error")
				}
				if server && nc.out.Len() > 0 {
					m, derr := DecodeMessage(nc.out.Bytes())
					if derr != nil || m.(*Error).Code != StatusOf(err) {
						t.Fatalf("server sent %x for %v", nc.out.Bytes(), err)
					}
				}
				return
			}
			h := ch.Header
			if len(ch.Bytes) > 8192 || uint32(len(ch.Bytes)) != h.Size || len(ch.Bytes) < HeaderSize+4 {
				t.Fatalf("chunk of %d bytes, header %+v", len(ch.Bytes), h)
			}
			if !bytes.Equal(ch.Bytes, stream[off:off+len(ch.Bytes)]) {
				t.Fatalf("chunk at %d is not the bytes sent", off)
			}
			// At most the caller's deadline and the chunk's, and once more after each
			// deadline that passed early.
			if n := nc.deadlineSets - sets - (nc.timeouts - timeouts); n > 2 {
				t.Fatalf("chunk at %d set the read deadline %d times", off, n)
			}
			off += len(ch.Bytes)
			switch {
			case h.Type == TypeMessage && bytes.IndexByte([]byte("CFA"), h.ChunkType) >= 0:
			case (h.Type == TypeOpen || h.Type == TypeClose) && h.ChunkType == ChunkFinal:
			default:
				t.Fatalf("chunk %+v accepted", h)
			}
			ch.Release()
			if server && !c.ChunkBuffered() {
				// As a server channel that holds its answers does before letting them go.
				c.ReadArrived()
			}
		}
	})
}
