package uasc

import (
	"fmt"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua/status"
)

// encodeBuf carries an Encoder and the chunk buffers of one message between messages, so
// that sending allocates nothing in steady state.
type encodeBuf struct {
	e      codec.Encoder
	chunks [][]byte // the chunk buffers the encoder writes into, in order; own first
	src    chunkSource
	// own is the buffer the first chunk of every message is encoded in. A small message is
	// copied out of it into the send queue and own stays here, warm for the next message;
	// a larger one is queued in it, and the next message takes a buffer from the pool.
	own []byte
}

var encodePool = sync.Pool{New: func() any { return new(encodeBuf) }}

// copyMax is the largest sealed chunk that is copied into the send queue rather than queued
// in its own buffer: copying it costs less than a buffer from the pool, and the responses to
// pipelined requests then leave as one contiguous write.
const copyMax = 2048

var zeroHeader [symBodyOffset]byte

// chunkSource hands the Encoder the body of one pooled chunk buffer after another: the
// bytes after the space for the headers, up to the largest body a chunk may carry, so
// that padding and signature fit behind it.
type chunkSource struct {
	c       *channel
	eb      *encodeBuf
	maxBody int
	// limit is the peer's MaxChunkCount (0: none). Past it the message cannot be sent:
	// the encoding goes on into one scratch window, so that it costs no more memory, and
	// windows counts how many chunks it would have needed.
	limit   int
	windows int
	scratch []byte
}

// first returns the window of the message's first chunk, in the encodeBuf's own buffer.
func (s *chunkSource) first() []byte {
	size := int(s.c.neg.SendBufferSize)
	if cap(s.eb.own) < size {
		s.c.pool.Put(s.eb.own)
		s.eb.own = s.c.pool.Get(size)
	}
	s.windows = 1
	s.eb.chunks = append(s.eb.chunks, s.eb.own[:size])
	return s.eb.own[symBodyOffset : symBodyOffset : symBodyOffset+s.maxBody]
}

func (s *chunkSource) NextChunk() []byte {
	s.windows++
	if s.limit != 0 && s.windows > s.limit {
		if s.scratch == nil {
			s.scratch = make([]byte, s.maxBody)
		}
		return s.scratch[:0]
	}
	cb := s.c.pool.Get(int(s.c.neg.SendBufferSize))
	s.eb.chunks = append(s.eb.chunks, cb)
	return cb[symBodyOffset : symBodyOffset : symBodyOffset+s.maxBody]
}

// errTooLarge is returned by sendMessage when the message exceeds the peer's limits; the
// caller chooses the status (BadRequestTooLarge or BadResponseTooLarge).
type errTooLarge struct{ size, chunks int }

func (e *errTooLarge) Error() string {
	return fmt.Sprintf("uasc: message of %d bytes in %d chunks over the peer's limits", e.size, e.chunks)
}

// sendMessage encodes msg as a service message and sends it as MSG (or CLO) chunks for
// requestID.
//
// The message is encoded straight into the bodies of chunk buffers, behind the space
// reserved for the headers (codec.Encoder.ResetChunks): when one is full the encoder
// continues in the next, and a message of several chunks is never copied. Once it is
// encoded, every chunk is padded, signed and encrypted in place, under one lock so that no
// other message's chunks come between them, and queued; a chunk of at most copyMax bytes is
// copied behind the last one queued (enqueueCopyLocked). A message over the peer's
// MaxMessageSize or MaxChunkCount is not sent and returns *errTooLarge; its encoding stops
// taking buffers at MaxChunkCount. Safe for concurrent use.
func (c *channel) sendMessage(t uacp.MessageType, requestID uint32, msg codec.Structure) error {
	return c.send(t, requestID, msg, false)
}

// send is sendMessage; with async the write, when due, happens on another goroutine.
func (c *channel) send(t uacp.MessageType, requestID uint32, msg codec.Structure, async bool) error {
	eb := encodePool.Get().(*encodeBuf)
	defer encodePool.Put(eb)
	eb.src = chunkSource{c: c, eb: eb, maxBody: c.maxSymBody(), limit: int(c.neg.MaxSendChunkCount)}
	eb.e.ResetChunks(eb.src.first(), &eb.src)
	eb.e.Message(msg)
	bodies := eb.e.Chunks()
	n, err := eb.e.Len(), eb.e.Err()
	chunks := eb.chunks
	defer func() {
		eb.e.Reset(nil) // forgets the windows
		clear(eb.chunks)
		eb.chunks = eb.chunks[:0]
		eb.src = chunkSource{}
	}()
	if err != nil {
		c.putAll(chunks[1:])
		return fmt.Errorf("uasc: encoding %s: %w", msg.TypeInfo().Name, err)
	}
	if eb.src.windows > len(chunks) || (c.neg.MaxSendMessageSize != 0 && uint64(n) > uint64(c.neg.MaxSendMessageSize)) {
		c.putAll(chunks[1:])
		return &errTooLarge{size: n, chunks: eb.src.windows}
	}
	c.smu.Lock()
	for i, cb := range chunks {
		ct := uacp.ChunkIntermediate
		if i == len(chunks)-1 {
			ct = uacp.ChunkFinal
		}
		sz, err := c.sealSym(cb, t, ct, requestID, len(bodies[i]))
		if err != nil {
			c.smu.Unlock()
			c.putAll(chunks[1:])
			return err
		}
		chunks[i] = cb[:sz]
	}
	if len(chunks) == 1 && len(chunks[0]) <= copyMax {
		return c.enqueueCopyLocked(async, chunks[0])
	}
	eb.own = nil // queued with the message
	return c.enqueueLocked(async, chunks)
}

// putAll returns chunk buffers to the pool.
func (c *channel) putAll(chunks [][]byte) {
	for _, b := range chunks {
		c.pool.Put(b)
	}
}

// sendAbort sends an abort chunk (Part 6 §6.7.3) for requestID carrying code and reason.
func (c *channel) sendAbort(requestID uint32, code status.Code, reason string) error {
	buf := c.pool.Get(int(c.neg.SendBufferSize))
	e := codec.NewEncoder(buf[:0])
	e.Raw(zeroHeader[:])
	e.StatusCode(code)
	if len(reason) > 256 {
		reason = reason[:256]
	}
	e.String(reason)
	out := e.Bytes()
	n := len(out) - symBodyOffset
	c.smu.Lock()
	sz, err := c.sealSym(buf, uacp.TypeMessage, uacp.ChunkAbort, requestID, n)
	if err != nil {
		c.smu.Unlock()
		c.pool.Put(buf)
		return err
	}
	return c.queueLocked(buf[:sz])
}
