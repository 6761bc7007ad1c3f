package uasc

import (
	"fmt"
	"runtime/debug"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
)

var zeroHeader [symBodyOffset]byte

// chunkSource hands the Encoder the windows of a message's chunks after the first: the
// body of one pooled chunk buffer after another, behind the space for the headers and up
// to the largest body a chunk may carry, so that padding and signature fit behind it. It
// belongs to the send half (channel.smu).
type chunkSource struct {
	c       *channel
	maxBody int
	// more are the buffers of the chunks after the first, in order.
	more [][]byte
	// limit is the peer's MaxChunkCount (0: none). Past it the message cannot be sent:
	// the encoding goes on into one scratch window, so that it costs no more memory, and
	// windows counts how many chunks it would have needed.
	limit   int
	windows int
	scratch []byte
	// panicked is set when the encoding of the message panicked (encodeLocked), for
	// send to return.
	panicked *EncodePanic
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
	s.more = append(s.more, cb)
	return cb[symBodyOffset : symBodyOffset : symBodyOffset+s.maxBody]
}

// errTooLarge is returned by sendMessage when the message exceeds the peer's limits; the
// caller chooses the status (BadRequestTooLarge or BadResponseTooLarge). short says that
// the first chunk was shorter than a full one, so that in full chunks it might fit.
type errTooLarge struct {
	size, chunks int
	short        bool
}

func (e *errTooLarge) Error() string {
	return fmt.Sprintf("uasc: message of %d bytes in %d chunks over the peer's limits", e.size, e.chunks)
}

// sendMessage encodes msg as a service message and sends it as MSG (or CLO) chunks for
// requestID.
//
// The message is encoded straight into the queue (codec.Encoder.ResetChunks): its first
// chunk behind the last chunk queued when that one's buffer has room for a window, so that
// the responses to pipelined requests leave as one contiguous write, and every further
// chunk in a pooled buffer of its own, so that a message of several chunks is never
// copied. Each chunk is padded, signed and encrypted in place once the whole message is
// encoded. It all happens under the send half's lock, so that no other message's chunks
// come between them. A message over the peer's MaxMessageSize or MaxChunkCount is not sent
// and returns *errTooLarge; its encoding stops taking buffers at MaxChunkCount. Safe for
// concurrent use.
func (c *channel) sendMessage(t uacp.MessageType, requestID uint32, msg codec.Structure) error {
	return c.send(t, requestID, msg, false)
}

// send is sendMessage; with async the write, when due, happens on another goroutine.
func (c *channel) send(t uacp.MessageType, requestID uint32, msg codec.Structure, async bool) error {
	c.smu.Lock()
	if c.sendErr != nil {
		err := c.sendErr
		c.smu.Unlock()
		return err
	}
	err := c.encodeLocked(t, requestID, msg, true)
	if tl, ok := err.(*errTooLarge); ok && tl.short {
		err = c.encodeLocked(t, requestID, msg, false)
	}
	if ep := c.src.panicked; ep != nil {
		c.src.panicked = nil
		ep.Type = typeName(msg)
		err = ep
	}
	if err != nil {
		c.smu.Unlock()
		return err
	}
	return c.pushUnlock(async)
}

// minFirstWindow is the least room for a first chunk's body behind the last chunk queued;
// with less, the message starts in a buffer of its own.
const minFirstWindow = 4 * codec.MinChunkWindow

// encodeLocked encodes, seals and queues msg as described at sendMessage; behind lets its
// first chunk go behind the last one queued. It must run under smu.
func (c *channel) encodeLocked(t uacp.MessageType, requestID uint32, msg codec.Structure, behind bool) error {
	size := int(c.neg.SendBufferSize)
	full := c.maxSymBody(size)
	var b []byte // the first chunk's buffer, holding queued chunks before start
	last := len(c.pending) - 1
	if behind && last >= 0 && c.maxSymBody(cap(c.pending[last])-len(c.pending[last])) >= minFirstWindow {
		b = c.pending[last]
	} else {
		b, last = c.pool.Get(size)[:0], -1
	}
	start := len(b)
	firstBody := min(full, c.maxSymBody(cap(b)-start))
	c.src.c, c.src.maxBody, c.src.limit, c.src.windows = c, full, int(c.neg.MaxSendChunkCount), 1
	c.enc.ResetChunks(b[start+symBodyOffset:start+symBodyOffset:start+symBodyOffset+firstBody], &c.src)
	defer func() {
		// A Structure whose encoding panics (a node manager's value) must not leave smu
		// held: the channel would never send again. The queue stays as it was, the
		// buffers taken are left to the collector, and send returns the panic
		// (c.src.panicked; encodeLocked returns nil then).
		if v := recover(); v != nil {
			c.src.panicked = &EncodePanic{Value: v, Stack: debug.Stack()}
		}
		c.enc.Reset(nil) // forgets the windows
		clear(c.src.more)
		c.src.more, c.src.scratch = c.src.more[:0], nil
	}()
	c.enc.Message(msg)
	bodies := c.enc.Chunks()
	n, err := c.enc.Len(), c.enc.Err()
	more := c.src.more
	if err == nil && (c.src.windows > 1+len(more) || (c.neg.MaxSendMessageSize != 0 && uint64(n) > uint64(c.neg.MaxSendMessageSize))) {
		err = &errTooLarge{size: n, chunks: c.src.windows, short: firstBody < full && c.src.windows > 1}
	} else if err != nil {
		err = fmt.Errorf("uasc: encoding %s: %w", msg.TypeInfo().Name, err)
	}
	// Seal in place, then queue: a failure leaves the queue as it was.
	for i := 0; err == nil && i < len(bodies); i++ {
		ct := uacp.ChunkIntermediate
		if i == len(bodies)-1 {
			ct = uacp.ChunkFinal
		}
		var sz int
		if i == 0 {
			sz, err = c.sealSym(b[start:cap(b)], t, ct, requestID, len(bodies[0]))
			b = b[:start+sz]
		} else {
			sz, err = c.sealSym(more[i-1], t, ct, requestID, len(bodies[i]))
			more[i-1] = more[i-1][:sz]
		}
	}
	if err != nil {
		c.putAll(more)
		if last < 0 {
			c.pool.Put(b)
		}
		return err
	}
	c.backlog += len(b) - start
	if last >= 0 {
		c.pending[last] = b
	} else {
		c.pending = append(c.pending, b)
	}
	for _, cb := range more {
		c.backlog += len(cb)
		c.pending = append(c.pending, cb)
	}
	return nil
}

// EncodePanic is the error of a message whose encoding panicked: a value of a
// Structure of another package whose EncodeBinary panics, typically. Nothing of the
// message was sent, and the channel goes on. A server's Request.Respond that returns it
// has answered the request with a ServiceFault BadInternalError in the message's place.
type EncodePanic struct {
	// Type names the message's type.
	Type string
	// Value is what the encoding panicked with, Stack the stack where it did.
	Value any
	Stack []byte
}

func (e *EncodePanic) Error() string {
	return fmt.Sprintf("uasc: encoding %s panicked: %v", e.Type, e.Value)
}

// Unwrap returns BadInternalError: the fault the request was answered with.
func (e *EncodePanic) Unwrap() error { return status.BadInternalError }

// typeName names msg's type for an EncodePanic, even when its TypeInfo panics too.
func typeName(msg codec.Structure) (name string) {
	defer func() {
		if recover() != nil {
			name = fmt.Sprintf("%T", msg)
		}
	}()
	return msg.TypeInfo().Name
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
	return c.queueUnlock(buf[:sz])
}
