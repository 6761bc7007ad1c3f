package uasc

import (
	"fmt"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua/status"
)

// encodeBuf carries an Encoder and a slice of chunk buffers between messages, so that
// sending allocates nothing in steady state.
type encodeBuf struct {
	e      codec.Encoder
	chunks [][]byte
}

var encodePool = sync.Pool{New: func() any { return new(encodeBuf) }}

var zeroHeader [symBodyOffset]byte

// errTooLarge is returned by sendMessage when the message exceeds the peer's limits; the
// caller chooses the status (BadRequestTooLarge or BadResponseTooLarge).
type errTooLarge struct{ size, chunks int }

func (e *errTooLarge) Error() string {
	return fmt.Sprintf("uasc: message of %d bytes in %d chunks over the peer's limits", e.size, e.chunks)
}

// sendMessage encodes msg as a service message and sends it as MSG (or CLO) chunks for
// requestID.
//
// The body is encoded straight into a pooled buffer after the space reserved for the
// headers. A body that fits one chunk is padded, signed and encrypted in that buffer, which
// becomes the chunk. A larger body is split into C...F chunks of at most the negotiated
// SendBufferSize, each part copied behind its own headers in a pooled chunk buffer. The
// encode buffer is sized by the largest message this channel encoded recently, so that
// neither path allocates in steady state. A message over the peer's MaxMessageSize or
// MaxChunkCount is not sent and returns *errTooLarge. Safe for concurrent use; chunks of
// one message are never interleaved with another's.
func (c *channel) sendMessage(t uacp.MessageType, requestID uint32, msg codec.Structure) error {
	eb := encodePool.Get().(*encodeBuf)
	defer encodePool.Put(eb)
	size := max(int(c.neg.SendBufferSize), int(c.encodeHint.Load()))
	buf := c.pool.Get(size)
	buf = buf[:cap(buf)]
	eb.e.Reset(buf)
	eb.e.Raw(zeroHeader[:])
	eb.e.Message(msg)
	out := eb.e.Bytes()
	err := eb.e.Err()
	eb.e.Reset(nil)
	if err != nil {
		c.pool.Put(buf)
		return fmt.Errorf("uasc: encoding %s: %w", msg.TypeInfo().Name, err)
	}
	if &out[0] != &buf[0] {
		// The encoder outgrew the buffer: remember the size for next time.
		c.pool.Put(buf)
		buf = out[:cap(out)]
		if n := int64(len(out)); n <= maxEncodeHint && n > c.encodeHint.Load() {
			c.encodeHint.Store(n)
		}
	}
	return c.sendEncoded(eb, t, requestID, buf, len(out)-symBodyOffset)
}

// maxEncodeHint bounds the encode buffer a channel asks the pool for.
const maxEncodeHint = 4 << 20

// sendEncoded sends the body of n bytes at buf[symBodyOffset:] as one message. It owns buf,
// which it returns to the pool or queues as a chunk.
func (c *channel) sendEncoded(eb *encodeBuf, t uacp.MessageType, requestID uint32, buf []byte, n int) error {
	maxBody := c.maxSymBody()
	nchunks := max(1, (n+maxBody-1)/maxBody)
	if (c.neg.MaxSendMessageSize != 0 && uint64(n) > uint64(c.neg.MaxSendMessageSize)) ||
		(c.neg.MaxSendChunkCount != 0 && uint64(nchunks) > uint64(c.neg.MaxSendChunkCount)) {
		c.pool.Put(buf)
		return &errTooLarge{size: n, chunks: nchunks}
	}
	if nchunks == 1 {
		c.smu.Lock()
		sz, err := c.sealSym(buf, t, uacp.ChunkFinal, requestID, n)
		if err != nil {
			c.smu.Unlock()
			c.pool.Put(buf)
			return err
		}
		return c.queueLocked(buf[:sz])
	}
	// Several chunks: copy each part behind its headers, then seal them all in order
	// under one lock so that no other message's chunks come between them.
	body := buf[symBodyOffset : symBodyOffset+n]
	chunks := eb.chunks[:0]
	for i := range nchunks {
		part := body[i*maxBody : min((i+1)*maxBody, n)]
		cb := c.pool.Get(int(c.neg.SendBufferSize))
		copy(cb[symBodyOffset:], part)
		chunks = append(chunks, cb)
	}
	c.pool.Put(buf)
	defer func() {
		clear(chunks)
		eb.chunks = chunks[:0]
	}()
	c.smu.Lock()
	for i, cb := range chunks {
		ct := uacp.ChunkIntermediate
		if i == nchunks-1 {
			ct = uacp.ChunkFinal
		}
		sz, err := c.sealSym(cb, t, ct, requestID, min((i+1)*maxBody, n)-i*maxBody)
		if err != nil {
			c.smu.Unlock()
			for _, b := range chunks {
				c.pool.Put(b)
			}
			return err
		}
		chunks[i] = cb[:sz]
	}
	return c.queueLocked(chunks...)
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
