package uacp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/status"
)

// Timeouts used when a config leaves them zero.
const (
	// DefaultHandshakeTimeout bounds the wait for the first message; Part 6 §7.1.3 asks for a
	// configurable period of at most two minutes.
	DefaultHandshakeTimeout = 30 * time.Second
	// DefaultChunkTimeout bounds the reading of one chunk on a server, from its first byte:
	// a 64 KiB chunk needs about 20 kbit/s to make it.
	DefaultChunkTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds how long a server's write waits for a peer that takes
	// none of it.
	DefaultWriteTimeout = 30 * time.Second
	// errorWriteTimeout bounds writing an ERR message before closing.
	errorWriteTimeout = time.Second
	// lingerTimeout bounds how long SendError and Refuse wait for the peer to close after
	// the ERR, so that unread input does not turn the close into a reset that destroys the
	// ERR.
	lingerTimeout = 500 * time.Millisecond
	// lingerMaxBytes bounds how much input SendError and Refuse discard while they wait.
	lingerMaxBytes = 1 << 20
)

// ServerConfig configures Accept.
type ServerConfig struct {
	// Limits are the server's own limits; zero fields take DefaultLimits.
	Limits Limits
	// ValidateEndpoint, if set, is asked whether the Hello's EndpointUrl names an endpoint of
	// this server. A non-nil error refuses the client with the status it carries (see
	// StatusOf), or with BadTcpEndpointUrlInvalid when it carries none; the error's text is
	// sent to the client as the ERR reason. It runs on the
	// accepting goroutine and must be safe for concurrent use across connections.
	ValidateEndpoint func(endpointURL string) error
	// HelloTimeout bounds the wait for the Hello; zero means DefaultHandshakeTimeout.
	HelloTimeout time.Duration
	// ReadTimeout, if positive, bounds each ReadChunk, waiting for the chunk included;
	// expiry closes the connection with BadTimeout.
	ReadTimeout time.Duration
	// ChunkTimeout bounds the reading of one chunk once its first byte has arrived; expiry
	// closes the connection with BadTimeout. A connection idle between chunks is not
	// affected. Zero means DefaultChunkTimeout, negative no bound.
	ChunkTimeout time.Duration
	// WriteTimeout bounds how long a write waits while the peer takes none of it (at most
	// twice as long; see Conn.WriteChunks); expiry closes the connection. A peer that
	// takes some in each period may take as long as it needs. Zero means
	// DefaultWriteTimeout, negative no bound.
	WriteTimeout time.Duration
	// Pool supplies receive buffers; nil means DefaultPool.
	Pool *Pool
}

// ClientConfig configures Dial.
type ClientConfig struct {
	// Limits are the client's own limits; zero fields take DefaultLimits.
	Limits Limits
	// EndpointURL is sent in the Hello; at most MaxURLLength bytes.
	EndpointURL string
	// HandshakeTimeout bounds the wait for the Acknowledge; zero means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// ReadTimeout, ChunkTimeout and WriteTimeout are as in ServerConfig, except that zero
	// means no bound.
	ReadTimeout  time.Duration
	ChunkTimeout time.Duration
	WriteTimeout time.Duration
	// Pool supplies receive buffers; nil means DefaultPool.
	Pool *Pool
}

// Conn is a UACP connection after a successful Hello/Acknowledge exchange.
//
// ReadChunk must not be called concurrently with itself. WriteChunks, SendError, Close and
// the accessors are safe for concurrent use with each other and with ReadChunk.
type Conn struct {
	nc           net.Conn
	server       bool
	neg          Negotiated
	pool         *Pool
	readTimeout  time.Duration
	writeTimeout time.Duration    // 0: none
	hdr          [HeaderSize]byte // read side only
	lend         bool             // LendChunks
	// r reads ahead of ReadChunk, so that one system call brings several small chunks
	// and ChunkBuffered can tell whether the next one is here; read side only, made by
	// the first ReadChunk (the handshake reads exactly what it needs from nc).
	r *bufio.Reader
	// in is what r reads from: nc, noting when each read returned data.
	in stampedReader

	wmu      sync.Mutex // guards writes to nc, wscratch, wbufs, wArmed
	wscratch [][]byte
	wbufs    net.Buffers
	wArmed   bool // a write deadline was set (armWrite)

	closed atomic.Bool // set before nc is closed; checked before each write
	// ending is set by SendError before it waits for a write in progress: that write
	// then stops at its deadline, even if the peer is still taking bytes.
	ending    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

func newConn(nc net.Conn, server bool, pool *Pool, rt, wt time.Duration) *Conn {
	if pool == nil {
		pool = DefaultPool
	}
	return &Conn{nc: nc, server: server, pool: pool, readTimeout: rt, writeTimeout: max(wt, 0)}
}

// orDefault returns d for zero, 0 (no bound) for a negative t, else t.
func orDefault(t, d time.Duration) time.Duration {
	switch {
	case t == 0:
		return d
	case t < 0:
		return 0
	}
	return t
}

// Negotiated returns the outcome of the handshake.
func (c *Conn) Negotiated() Negotiated { return c.neg }

// LocalAddr returns the local network address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// RemoteAddr returns the peer's network address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Close closes the underlying connection; it does not wait for a write in progress, which
// fails. Closing twice is harmless.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.closeErr = c.nc.Close()
	})
	return c.closeErr
}

// Accept runs the server side of the handshake on nc (Part 6 §7.1.3): it waits for a Hello
// for at most cfg.HelloTimeout (or until ctx ends), checks it, asks cfg.ValidateEndpoint,
// negotiates with NegotiateServer and answers with an Acknowledge. Anything else ends with an
// ERR message carrying the precise status and the connection closed: a first message other
// than HEL gets BadTcpMessageTypeInvalid, a Hello over MaxHandshakeMessageSize
// BadTcpMessageTooLarge, a malformed or truncated one BadDecodingError, an EndpointUrl over
// 4096 bytes or refused BadTcpEndpointUrlInvalid, buffers below the minimum
// BadTcpNotEnoughResources, and silence BadTimeout. The returned error carries that status.
// Accept owns nc from the start: on failure nc is closed.
func Accept(ctx context.Context, nc net.Conn, cfg ServerConfig) (*Conn, error) {
	c := newConn(nc, true, cfg.Pool, cfg.ReadTimeout, orDefault(cfg.WriteTimeout, DefaultWriteTimeout))
	c.in.chunkTimeout = orDefault(cfg.ChunkTimeout, DefaultChunkTimeout)
	lim, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, c.fail(fmt.Errorf("%w: %w", err, status.BadTcpInternalError))
	}
	stop := c.handshakeDeadline(ctx, cfg.HelloTimeout)
	m, err := c.readHandshake(ctx, TypeHello)
	if err != nil {
		stop()
		return nil, c.fail(err)
	}
	hel := m.(*Hello)
	if cfg.ValidateEndpoint != nil {
		if verr := cfg.ValidateEndpoint(hel.EndpointURL); verr != nil {
			stop()
			code := StatusOf(verr)
			if code == status.BadTcpInternalError {
				code = status.BadTcpEndpointUrlInvalid
			}
			return nil, c.fail(fmt.Errorf("uacp: endpoint %q refused: %w: %w", hel.EndpointURL, code, verr))
		}
	}
	ack, neg, err := NegotiateServer(lim, hel)
	if err != nil {
		stop()
		return nil, c.fail(err)
	}
	c.neg = neg
	if err := c.writeRaw(ack.Append(make([]byte, 0, AcknowledgeSize))); err != nil {
		stop()
		return nil, c.fail(err)
	}
	if err := c.endHandshake(ctx, stop); err != nil {
		return nil, c.fail(err)
	}
	return c, nil
}

// Dial runs the client side of the handshake on nc: it sends a Hello built from cfg and waits
// for the Acknowledge for at most cfg.HandshakeTimeout (or until ctx ends). An ERR answer is
// returned as an *Error carrying the server's status and reason. Dial owns nc from the start:
// on failure nc is closed.
func Dial(ctx context.Context, nc net.Conn, cfg ClientConfig) (*Conn, error) {
	c := newConn(nc, false, cfg.Pool, cfg.ReadTimeout, cfg.WriteTimeout)
	c.in.chunkTimeout = max(cfg.ChunkTimeout, 0)
	lim, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, c.fail(fmt.Errorf("%w: %w", err, status.BadTcpInternalError))
	}
	if len(cfg.EndpointURL) > MaxURLLength {
		return nil, c.fail(fmt.Errorf("uacp: EndpointUrl of %d bytes: %w", len(cfg.EndpointURL), status.BadTcpEndpointUrlInvalid))
	}
	stop := c.handshakeDeadline(ctx, cfg.HandshakeTimeout)
	hel := helloFor(lim, cfg.EndpointURL)
	if err := c.writeRaw(hel.Append(make([]byte, 0, HelloMinSize+len(cfg.EndpointURL)))); err != nil {
		stop()
		return nil, c.fail(err)
	}
	m, err := c.readHandshake(ctx, TypeAcknowledge, TypeError)
	if err != nil {
		stop()
		return nil, c.fail(err)
	}
	if e, ok := m.(*Error); ok {
		stop()
		c.Close()
		return nil, e
	}
	neg, err := NegotiateClient(lim, hel, m.(*Acknowledge))
	if err != nil {
		stop()
		return nil, c.fail(err)
	}
	c.neg = neg
	if err := c.endHandshake(ctx, stop); err != nil {
		return nil, c.fail(err)
	}
	return c, nil
}

// SendReverseHello writes a ReverseHello on nc, the first message of a server that
// connected to a client (Part 6 §7.1.3); the server then calls Accept on the same nc. The
// write is bounded by ctx's deadline, if any. nc is not closed on failure.
func SendReverseHello(ctx context.Context, nc net.Conn, rhe *ReverseHello) error {
	if len(rhe.ServerURI) > MaxURLLength || len(rhe.EndpointURL) > MaxURLLength {
		return fmt.Errorf("uacp: ReverseHello URI too long: %w", status.BadTcpEndpointUrlInvalid)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetWriteDeadline(dl)
		defer func() { _ = nc.SetWriteDeadline(time.Time{}) }()
	}
	if _, err := nc.Write(rhe.Append(nil)); err != nil {
		return readError("writing ReverseHello", err)
	}
	return nil
}

// ReadReverseHello waits for the ReverseHello a server sends after connecting to a client,
// for at most timeout (zero means DefaultHandshakeTimeout) or until ctx ends; the client
// then calls Dial on the same nc with the EndpointURL it names. Failures carry a status as
// in Accept; nc is closed on failure.
func ReadReverseHello(ctx context.Context, nc net.Conn, timeout time.Duration) (*ReverseHello, error) {
	c := newConn(nc, false, nil, 0, 0)
	stop := c.handshakeDeadline(ctx, timeout)
	m, err := c.readHandshake(ctx, TypeReverseHello)
	if err != nil {
		stop()
		return nil, c.fail(err)
	}
	if err := c.endHandshake(ctx, stop); err != nil {
		return nil, c.fail(err)
	}
	return m.(*ReverseHello), nil
}

// handshakeDeadline sets nc's deadline to the earlier of now+timeout and ctx's deadline, and
// makes ctx's cancellation expire it. The returned stop reports whether cancellation had not
// fired yet.
func (c *Conn) handshakeDeadline(ctx context.Context, timeout time.Duration) (stop func() bool) {
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	dl := time.Now().Add(timeout)
	if cdl, ok := ctx.Deadline(); ok && cdl.Before(dl) {
		dl = cdl
	}
	_ = c.nc.SetDeadline(dl)
	return context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
}

// endHandshake clears the handshake deadline unless ctx ended meanwhile.
func (c *Conn) endHandshake(ctx context.Context, stop func() bool) error {
	if !stop() {
		return fmt.Errorf("uacp: handshake: %w: %w", status.BadTimeout, context.Cause(ctx))
	}
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		return readError("handshake", err)
	}
	return nil
}

// readHandshake reads one connection-protocol message of one of the wanted types.
func (c *Conn) readHandshake(ctx context.Context, want ...MessageType) (Message, error) {
	if _, err := io.ReadFull(c.nc, c.hdr[:]); err != nil {
		return nil, ctxError(ctx, readError("reading header", err))
	}
	h, _ := ParseHeader(c.hdr[:])
	ok := false
	for _, t := range want {
		ok = ok || h.Type == t
	}
	if !ok || h.ChunkType != ChunkFinal {
		return nil, fmt.Errorf("uacp: %v%c where %v expected: %w", h.Type, h.ChunkType, want[0], status.BadTcpMessageTypeInvalid)
	}
	if h.Size > MaxHandshakeMessageSize {
		return nil, fmt.Errorf("uacp: %v of %d bytes: %w", h.Type, h.Size, status.BadTcpMessageTooLarge)
	}
	if h.Size < HeaderSize {
		return nil, fmt.Errorf("uacp: %v of %d bytes: %w", h.Type, h.Size, status.BadDecodingError)
	}
	b := make([]byte, h.Size)
	copy(b, c.hdr[:])
	if _, err := io.ReadFull(c.nc, b[HeaderSize:]); err != nil {
		return nil, ctxError(ctx, readError("reading "+h.Type.String(), truncated(err)))
	}
	return DecodeMessage(b)
}

// Chunk is one secure-channel chunk read by ReadChunk.
//
// Bytes is the whole chunk, header included, in a buffer from the Conn's Pool. The caller
// owns it, may modify it in place (decrypt, verify), and must call Release exactly once when
// done; after Release neither Bytes nor any slice of it may be used. Copies of a Chunk share
// the buffer: release only one of them.
type Chunk struct {
	Header Header
	Bytes  []byte
	// Received is when the read that completed the chunk returned: one clock reading
	// per system call, shared by every chunk it brought.
	Received time.Time
	pool     *Pool
	// lent is set for a chunk left in the Conn's read-ahead buffer (LendChunks): its bytes
	// are valid until the next ReadChunk.
	lent bool
}

// Body returns the bytes after the eight-byte header.
func (ch *Chunk) Body() []byte { return ch.Bytes[HeaderSize:] }

// Release returns the buffer to its pool. Calling it on a released or zero Chunk does
// nothing.
func (ch *Chunk) Release() {
	if ch.pool != nil && ch.Bytes != nil {
		ch.pool.Put(ch.Bytes)
	}
	ch.Bytes, ch.pool, ch.lent = nil, nil, false
}

// ReleaseZeroed zeroes the buffer, then releases it: for chunks decrypted in place. Only
// the chunk's own bytes are zeroed (its Header.Size, however Bytes was resliced): nothing
// else of the buffer was written since it left the pool.
func (ch *Chunk) ReleaseZeroed() {
	if ch.lent {
		clear(ch.Bytes[:cap(ch.Bytes)]) // the chunk, however Bytes was resliced
	}
	if ch.pool != nil && ch.Bytes != nil {
		b := ch.Bytes[:cap(ch.Bytes)]
		clear(b[:min(max(int(ch.Header.Size), len(ch.Bytes)), len(b))])
		ch.pool.Put(b)
	}
	ch.Bytes, ch.pool, ch.lent = nil, nil, false
}

// ReadChunk reads the next chunk (Part 6 §7.1.2.2). Before reading the body it checks the
// header: the type must be MSG (chunk type C, F or A), OPN or CLO (chunk type F), else
// BadTcpMessageTypeInvalid; the size must hold a SecureChannelId (else BadDecodingError) and
// fit the negotiated ReceiveBufferSize (else BadTcpMessageTooLarge). An ERR from the peer is
// returned as an *Error. Expiry of the read timeout or of the chunk timeout (counted from
// the chunk's first byte) gives BadTimeout, a clean end of stream BadConnectionClosed (with
// io.EOF in the chain), a stream cut mid-chunk BadDecodingError.
//
// Every error is final: the connection is closed, and on the server side an ERR message with
// the error's status is sent first (except when the peer closed, or sent ERR itself). The
// returned Chunk is owned by the caller until Release. ReadChunk does not allocate when it
// succeeds and the pool is warm.
func (c *Conn) ReadChunk() (Chunk, error) { return c.ReadChunkBefore(time.Time{}) }

// ReadChunkBefore is ReadChunk for a chunk that must be read whole by deadline, whether
// it has begun to arrive or not; zero means no deadline of the caller's. Expiry gives
// BadTimeout, as the connection's own timeouts do, and is as final. A secure channel
// bounds the arrival of its first OpenSecureChannel, and the rest of a message it is
// reassembling, with it.
//
// The deadlines cost no timer operation while the chunk is in the read-ahead buffer
// already or arrives in one read, and about one per chunk timeout while chunks are cut
// across reads: the connection's read deadline is set only before a read that may wait,
// and only when the one set is later than the chunk's.
func (c *Conn) ReadChunkBefore(deadline time.Time) (Chunk, error) {
	if c.readTimeout > 0 {
		if dl := time.Now().Add(c.readTimeout); deadline.IsZero() || dl.Before(deadline) {
			deadline = dl
		}
	}
	if c.r == nil {
		c.in.nc = c.nc
		c.in.readNow = readNowFunc(c.nc)
		c.r = bufio.NewReaderSize(&c.in, readAhead)
	}
	// Bytes in the read-ahead buffer are the start of this chunk: it began with the read
	// that brought them.
	c.in.begin(deadline, c.r.Buffered() > 0)
	// A Conn that lends peeks at the header: a chunk the read-ahead holds whole is then
	// consumed with it, in place.
	if c.lend {
		p, err := c.r.Peek(HeaderSize)
		if err != nil {
			if len(p) > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF // as io.ReadFull reports a cut header
			}
			return Chunk{}, c.fail(c.readFailed("reading chunk header", err))
		}
		copy(c.hdr[:], p)
	} else if err := c.readFull(c.hdr[:]); err != nil {
		return Chunk{}, c.fail(c.readFailed("reading chunk header", err))
	}
	h, _ := ParseHeader(c.hdr[:])
	whole := c.lend && h.Type != TypeError && h.Size >= HeaderSize && int(h.Size) <= c.r.Buffered()
	if c.lend && !whole {
		_, _ = c.r.Discard(HeaderSize)
	}
	switch {
	case h.Type == TypeMessage && (h.ChunkType == ChunkFinal || h.ChunkType == ChunkIntermediate || h.ChunkType == ChunkAbort):
	case (h.Type == TypeOpen || h.Type == TypeClose) && h.ChunkType == ChunkFinal:
	case h.Type == TypeError && h.ChunkType == ChunkFinal:
		return Chunk{}, c.readPeerError(h)
	default:
		return Chunk{}, c.fail(fmt.Errorf("uacp: chunk type %v%c: %w", h.Type, h.ChunkType, status.BadTcpMessageTypeInvalid))
	}
	if h.Size > c.neg.ReceiveBufferSize {
		return Chunk{}, c.fail(fmt.Errorf("uacp: chunk of %d bytes over receive buffer of %d: %w", h.Size, c.neg.ReceiveBufferSize, status.BadTcpMessageTooLarge))
	}
	if h.Size < HeaderSize+4 {
		return Chunk{}, c.fail(fmt.Errorf("uacp: chunk of %d bytes: %w", h.Size, status.BadDecodingError))
	}
	if whole {
		b, _ := c.r.Peek(int(h.Size))
		_, _ = c.r.Discard(int(h.Size))
		return Chunk{Header: h, Bytes: b[:len(b):len(b)], Received: c.in.at, lent: true}, nil
	}
	b := c.pool.Get(int(h.Size))
	copy(b, c.hdr[:])
	if err := c.readFull(b[HeaderSize:]); err != nil {
		c.pool.Put(b)
		return Chunk{}, c.fail(c.readFailed("reading chunk body", truncated(err)))
	}
	return Chunk{Header: h, Bytes: b, Received: c.in.at, pool: c.pool}, nil
}

// LendChunks makes ReadChunk return a chunk that its read-ahead buffer holds whole in
// place, without copying it into a pooled buffer: such a chunk's Bytes are valid only
// until the next ReadChunk, and Release does nothing (ReleaseZeroed still clears them).
// For a reader that is done with each chunk before it reads the next, as a server's
// channel is.
func (c *Conn) LendChunks() { c.lend = true }

// readFull fills p from the read-ahead buffer: straight from it when it holds p whole,
// the common case of pipelined requests, else through io.ReadFull.
func (c *Conn) readFull(p []byte) error {
	if c.r.Buffered() >= len(p) {
		b, _ := c.r.Peek(len(p))
		copy(p, b)
		_, _ = c.r.Discard(len(p))
		return nil
	}
	_, err := io.ReadFull(c.r, p)
	return err
}

// stampedReader reads from nc and keeps the time of the last read that returned data, and
// whether that read filled the room it was given. It bounds each read that may wait by the
// deadline of the chunk being read (begin, wait). On a connection with a descriptor it can
// also read without waiting (ReadArrived).
type stampedReader struct {
	nc   net.Conn
	at   time.Time
	full bool
	// The deadlines of the chunk being read: limit is the caller's (zero: none), and once
	// the chunk has begun (its first byte arrived at start) it must be whole within
	// chunkTimeout (0: no bound). armed is the read deadline set on nc (zero: none); it
	// is never later than the chunk's, and may be earlier (see wait).
	limit        time.Time
	chunkTimeout time.Duration
	started      bool
	start        time.Time
	armed        time.Time
	// now is set while a read must not wait: Read then reads with readNow, returns
	// errWouldBlock when nothing has arrived, and keeps any other error in err for the next
	// Read. readNow is nil on a connection that cannot be read without waiting.
	now     bool
	err     error
	readNow func(p []byte) (int, error)
}

// begin starts the reading of a chunk that must be whole by limit (zero: none); started
// says that its first bytes are buffered already, brought by the last read.
func (r *stampedReader) begin(limit time.Time, started bool) {
	r.limit, r.started = limit, started
	if started {
		r.start = r.at
	}
}

// deadline returns the read deadline of the chunk being read: the earlier of the limit
// and, once it has begun, its start plus chunkTimeout; zero for none.
func (r *stampedReader) deadline() time.Time {
	dl := r.limit
	if r.started && r.chunkTimeout > 0 {
		if cd := r.start.Add(r.chunkTimeout); dl.IsZero() || cd.Before(dl) {
			dl = cd
		}
	}
	return dl
}

// chunkExpired reports whether the chunk's deadline is the chunk timeout's rather than
// the limit's.
func (r *stampedReader) chunkExpired() bool {
	return r.started && r.chunkTimeout > 0 && r.deadline().Equal(r.start.Add(r.chunkTimeout))
}

// wait reads from nc, which may wait, by the chunk's deadline. Setting a deadline is a
// timer operation, so the one set is left in place while it is not later than the
// chunk's: a deadline of an earlier chunk, or none needed at all between chunks. When
// such a deadline passes early, the chunk's own is set and the read goes on. A connection
// whose chunks arrive whole sets no deadline; one whose chunks are cut across reads sets
// one about once per chunk timeout, not once per chunk.
func (r *stampedReader) wait(p []byte) (int, error) {
	dl := r.deadline()
	if !dl.IsZero() && (r.armed.IsZero() || dl.Before(r.armed)) {
		r.arm(dl)
	}
	for {
		n, err := r.nc.Read(p)
		if n > 0 || err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if !dl.IsZero() && !time.Now().Before(dl) {
			return n, err // the chunk's own deadline
		}
		r.arm(dl)
	}
}

// arm sets nc's read deadline to dl (zero: none).
func (r *stampedReader) arm(dl time.Time) {
	_ = r.nc.SetReadDeadline(dl)
	r.armed = dl
}

// errWouldBlock is what a read that must not wait returns when nothing has arrived.
var errWouldBlock = errors.New("uacp: nothing to read yet")

func (r *stampedReader) Read(p []byte) (int, error) {
	if err := r.err; err != nil {
		r.err = nil
		return 0, err
	}
	var n int
	var err error
	if r.now {
		n, err = r.readNow(p)
		switch {
		case err == nil || err == errWouldBlock:
		case errors.Is(err, os.ErrDeadlineExceeded):
			// A later read has a deadline of its own.
			err = errWouldBlock
		default:
			r.err, err = err, errWouldBlock
		}
	} else {
		n, err = r.wait(p)
	}
	r.full = n == len(p)
	if n > 0 {
		r.at = time.Now()
		if !r.started {
			r.started, r.start = true, r.at
		}
	}
	return n, err
}

// readAhead is the size of a connection's read-ahead buffer: a few dozen typical requests.
// A chunk body at least this long is read straight into its pooled buffer.
const readAhead = 4096

// ChunkBuffered reports whether the next chunk has been read from the network already,
// whole, so that ReadChunk returns it without waiting. A server holds its responses while
// it is true and writes them together when it turns false (see uasc). Like ReadChunk, it
// must only be called from the reading goroutine.
func (c *Conn) ChunkBuffered() bool {
	if c.r == nil || c.r.Buffered() < HeaderSize {
		return false
	}
	b, _ := c.r.Peek(HeaderSize) // buffered: does not read
	return c.r.Buffered() >= int(chunkSize(b))
}

// ReadArrived reads what has arrived from the network since the last read, without
// waiting, when that read filled the room it had: the peer may have sent more. It reports
// whether the next chunk is then buffered whole (ChunkBuffered). A server that holds its
// responses while requests are buffered asks it before it lets them go, so that a burst
// larger than the read-ahead buffer is answered with one write. It reads nothing on a
// connection without a descriptor. It must only be called from the reading goroutine, and
// not while a lent chunk is held: reading may move the buffered bytes.
func (c *Conn) ReadArrived() bool {
	if c.r != nil && c.in.full && c.in.readNow != nil && c.r.Buffered() < readAhead && !c.ChunkBuffered() {
		c.in.now = true
		_, _ = c.r.Peek(c.r.Buffered() + 1) // one read; errWouldBlock when nothing came
		c.in.now = false
	}
	return c.ChunkBuffered()
}

// readPeerError reads and returns the ERR whose header is h, and closes the connection.
func (c *Conn) readPeerError(h Header) error {
	defer c.Close()
	if h.Size > MaxHandshakeMessageSize || h.Size > c.neg.ReceiveBufferSize {
		return fmt.Errorf("uacp: ERR of %d bytes: %w", h.Size, status.BadTcpMessageTooLarge)
	}
	if h.Size < HeaderSize {
		return fmt.Errorf("uacp: ERR of %d bytes: %w", h.Size, status.BadDecodingError)
	}
	b := make([]byte, h.Size)
	copy(b, c.hdr[:])
	if _, err := io.ReadFull(c.r, b[HeaderSize:]); err != nil {
		return c.readFailed("reading ERR", truncated(err))
	}
	m, err := DecodeMessage(b)
	if err != nil {
		return err
	}
	return m.(*Error)
}

// WriteChunks writes buffers of whole chunks, in order and coalesced into as few system
// calls as the platform allows (net.Buffers). Each buffer holds one or more chunks back to
// back, each between HeaderSize and the negotiated SendBufferSize long and carrying its own
// length in its header. The bufs are only read, and the caller keeps them: they may be
// reused or released once WriteChunks returns. Writers are serialized by a mutex held only
// for the write itself, so build chunks before calling. A failed write closes the
// connection, since part of a chunk may have gone out.
//
// With a write timeout, a write ends with BadTimeout once the peer has taken none of it
// for at least the timeout and at most twice as long; a peer that takes some in each
// period may take as long as it needs. The deadline is not renewed per write, which
// would cost a clock reading and a timer operation each: the one set stays until it
// passes, and a write it cuts short that had not waited a whole period for nothing gets
// another.
func (c *Conn) WriteChunks(bufs ...[]byte) error {
	for _, b := range bufs {
		if err := c.checkChunks(b); err != nil {
			return err
		}
	}
	c.wmu.Lock()
	if c.closed.Load() {
		c.wmu.Unlock()
		return errClosed
	}
	var err error
	if len(bufs) == 1 {
		err = c.writeLocked(bufs[0], nil)
	} else {
		c.wscratch = append(c.wscratch[:0], bufs...)
		c.wbufs = c.wscratch
		err = c.writeLocked(nil, &c.wbufs)
		clear(c.wscratch)
	}
	c.wmu.Unlock()
	if err != nil {
		c.Close()
		return readError("writing chunks", err)
	}
	return nil
}

// writeLocked writes b, or bufs when b is nil, under wmu, by the write timeout (see
// WriteChunks).
func (c *Conn) writeLocked(b []byte, bufs *net.Buffers) error {
	fresh := false // whether this write set the deadline: a whole period was left
	if c.writeTimeout > 0 && !c.wArmed {
		c.armWrite()
		fresh = true
	}
	for {
		var n int64
		var err error
		if bufs == nil {
			var k int
			k, err = c.nc.Write(b)
			b, n = b[k:], int64(k)
		} else {
			n, err = bufs.WriteTo(c.nc) // takes what was written off bufs
		}
		if err == nil || c.writeTimeout == 0 || c.ending.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if n == 0 && fresh {
			return err // a whole period, and the peer took nothing
		}
		// The deadline was set before this write began, or the peer took some of it:
		// another period.
		c.armWrite()
		fresh = true
	}
}

// armWrite sets the write deadline a write timeout from now, under wmu.
func (c *Conn) armWrite() {
	c.wArmed = true
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
}

// checkChunks checks that b is whole chunks back to back, none over the send buffer size.
func (c *Conn) checkChunks(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("uacp: empty chunk buffer: %w", status.BadTcpInternalError)
	}
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < HeaderSize {
			return fmt.Errorf("uacp: %d bytes after the last whole chunk: %w", len(rest), status.BadTcpInternalError)
		}
		n := chunkSize(rest)
		if n < HeaderSize || n > c.neg.SendBufferSize || uint64(n) > uint64(len(rest)) {
			return fmt.Errorf("uacp: chunk of %d bytes (%d in the buffer) malformed or over send buffer of %d: %w", n, len(rest), c.neg.SendBufferSize, status.BadTcpInternalError)
		}
		off += int(n)
	}
	return nil
}

// writeRaw writes one message under the write mutex.
func (c *Conn) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return errClosed
	}
	if _, err := c.nc.Write(b); err != nil {
		return readError("writing", err)
	}
	return nil
}

// SendError sends an ERR message with code and reason (cut to MaxReasonLength bytes) and
// closes the connection gracefully (Part 6 §7.1.5): it half-closes, then waits briefly for
// the peer to close so that unread input does not turn the close into a reset. It is for the
// server side; a client ends a connection with CloseSecureChannel instead. It returns the
// error of the write, if any; the connection is closed either way. A write in progress
// gets the ERR's own deadline (errorWriteTimeout) and ends at it, so SendError does not
// wait on a peer that does not read; the ERR is then lost with the connection.
func (c *Conn) SendError(code status.Code, reason string) error {
	msg := errorMessage(code, reason)
	c.ending.Store(true)
	_ = c.nc.SetWriteDeadline(time.Now().Add(errorWriteTimeout))
	c.wmu.Lock()
	var err error
	if c.closed.Load() {
		err = errClosed
	} else {
		_ = c.nc.SetWriteDeadline(time.Now().Add(errorWriteTimeout))
		if _, werr := c.nc.Write(msg); werr != nil {
			err = readError("writing ERR", werr)
		}
	}
	c.closed.Store(true)
	c.wmu.Unlock()
	if err == nil {
		linger(c.nc, time.Now().Add(lingerTimeout))
	}
	c.Close()
	return err
}

// Refuse answers nc, a connection a server accepted but has not read from, with an ERR
// carrying code and reason (cut to MaxReasonLength bytes), then closes it as SendError
// does: the Hello the peer sent is discarded unread while Refuse waits for the peer to
// close. It is for a server that turns a connection away before the handshake (a limit on
// channels or on connection rate), at no cost beyond the write: nothing of the peer's is
// parsed. It takes at most RefuseTimeout, and returns the error of the write, if any; nc
// is closed either way.
func Refuse(nc net.Conn, code status.Code, reason string) error {
	defer nc.Close()
	deadline := time.Now().Add(RefuseTimeout)
	_ = nc.SetWriteDeadline(deadline)
	if _, err := nc.Write(errorMessage(code, reason)); err != nil {
		return readError("writing ERR", err)
	}
	until := time.Now().Add(lingerTimeout)
	if until.After(deadline) {
		until = deadline
	}
	linger(nc, until)
	return nil
}

// RefuseTimeout bounds the time Refuse spends on a connection.
const RefuseTimeout = time.Second

// errorMessage returns the encoded ERR message of code and reason.
func errorMessage(code status.Code, reason string) []byte {
	return (&Error{Code: code, Reason: reason}).Append(make([]byte, 0, HeaderSize+8+min(len(reason), MaxReasonLength)))
}

// linger half-closes a TCP connection and discards input until the peer closes, until
// deadline and for at most lingerMaxBytes.
func linger(nc net.Conn, deadline time.Time) {
	cw, ok := nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	_ = nc.SetReadDeadline(deadline)
	_, _ = io.CopyN(io.Discard, nc, lingerMaxBytes)
}

// fail ends the connection after err: a server sends ERR with err's status unless the peer
// is gone; a client just closes. It returns err.
func (c *Conn) fail(err error) error {
	code := StatusOf(err)
	var peer *Error
	if c.server && code != status.BadConnectionClosed && !errors.As(err, &peer) {
		_ = c.SendError(code, err.Error())
	} else {
		c.Close()
	}
	return err
}

// errClosed is returned by writes on a closed Conn.
var errClosed = fmt.Errorf("uacp: write: %w: %w", status.BadConnectionClosed, net.ErrClosed)

// truncated turns the io.EOF of a read that had already begun into io.ErrUnexpectedEOF.
func truncated(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ErrChunkTimeout is in the chain of a ReadChunk error when the chunk timeout
// (ServerConfig.ChunkTimeout, ClientConfig.ChunkTimeout) passed: a chunk begun was not
// whole in time. The error carries BadTimeout as well. The other deadlines of a read (the
// caller's, ReadTimeout) give BadTimeout without it, so that a caller can tell which one
// passed.
var ErrChunkTimeout = errors.New("uacp: chunk timeout")

// readFailed wraps an error of the read side as readError does and, for an expired
// deadline, says which one expired.
func (c *Conn) readFailed(what string, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if c.in.chunkExpired() {
			what = fmt.Sprintf("%s: chunk not whole %v after its first byte", what, c.in.chunkTimeout)
			err = fmt.Errorf("%w: %w", ErrChunkTimeout, err)
		} else {
			what += ": deadline passed"
		}
	}
	return readError(what, err)
}

// readError wraps an I/O error with the status it means.
func readError(what string, err error) error {
	var code status.Code
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		code = status.BadTimeout
	case err == io.EOF || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe):
		code = status.BadConnectionClosed
	case err == io.ErrUnexpectedEOF:
		code = status.BadDecodingError
	default:
		code = status.BadCommunicationError
	}
	return fmt.Errorf("uacp: %s: %w: %w", what, code, err)
}

// ctxError adds ctx's cause to err when ctx has ended, since its cancellation shows up as an
// expired deadline.
func ctxError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", err, context.Cause(ctx))
	}
	return err
}
