package uasc

import (
	"context"
	"errors"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// Handler receives every complete request of a channel, on the channel's reading
// goroutine: a handler that may block should hand the request to another goroutine and
// return. The Request may be answered from any goroutine, once.
type Handler func(ctx context.Context, req Request)

// Request is one service request received on a ServerChannel.
type Request struct {
	// RequestID is the id the client gave the request in its sequence header.
	RequestID uint32
	// Message is the decoded request.
	Message codec.Structure
	// Channel is the channel the request arrived on.
	Channel *ServerChannel
	// Received is when the request's last chunk was read (the server's configured clock
	// when it has one). A handler that answers at once may use it as the current time
	// and save a clock reading.
	Received time.Time
}

// Recycle hands r.Message back to its channel, which decodes a later request of the same
// type into it (codec.Decoder.MessageInto) instead of allocating one, or hands it out as it
// is for a request that repeats this one but for the RequestHeader's Timestamp and
// RequestHandle. It is for a request answered on the Handler's goroutine: call it there,
// at most once, before the Handler returns, and only when nothing refers to the message
// or to a slice decoded into it any more (after Respond returned) and the message is as it
// was decoded. Strings decoded into it may be kept: they are never overwritten. A request
// answered on another goroutine is not recycled: the channel's spare belongs to its
// reading goroutine, so that taking and returning it costs no lock.
func (r Request) Recycle() { r.Channel.spare.recycle(r.Message, &r.Channel.dec) }

// Respond sends msg as the response to r. It is safe for concurrent use. A response over
// the client's MaxMessageSize or MaxChunkCount is replaced by a ServiceFault with
// BadResponseTooLarge. Errors mean the channel is closed.
func (r Request) Respond(msg codec.Structure) error {
	return r.Channel.respond(r.RequestID, msg, false)
}

// RespondNoWait is Respond for a caller that must not wait on the peer: msg is encoded
// and queued before it returns, but when the channel's socket must be written to, a
// goroutine of its own does it. A server that answers many channels from one goroutine
// (published notifications) uses it, so that one peer that stops reading delays no
// other. A peer that leaves more than ServerConfig.MaxSendBacklog unread loses its
// channel.
func (r Request) RespondNoWait(msg codec.Structure) error {
	return r.Channel.respond(r.RequestID, msg, true)
}

// sendBacklog returns the bound on the bytes a channel holds for its peer: configured,
// or twice the largest message the peer accepts (32 MiB when it names no limit), at
// least 1 MiB.
func sendBacklog(configured int, maxMessage uint32) int {
	if configured > 0 {
		return configured
	}
	n := 2 * int(maxMessage)
	if maxMessage == 0 {
		n = 32 << 20
	}
	return max(n, 1<<20)
}

// message handles one MSG chunk.
func (sc *ServerChannel) message(ctx context.Context, ch *uacp.Chunk) error {
	at := sc.timeOf(ch)
	reqID, body, tok, err := sc.openSym(ch.Bytes, at)
	if err != nil {
		return err
	}
	if tok.id > sc.activeID {
		sc.activate(tok)
	}
	msg, done, aborted, err := sc.asm.add(ch.Header.ChunkType, reqID, body)
	if err != nil || aborted || !done {
		return err
	}
	// A message of one chunk is the chunk's body, valid until the Handler returns; one
	// of several is the assembler's, which reset clears.
	kept := msg
	if sc.asm.active {
		kept = nil
	}
	m, repeated, err := sc.spare.decode(msg, &sc.dec)
	sc.asm.reset()
	if err != nil {
		code := statusOf(err)
		if code != status.BadServiceUnsupported && code != status.BadEncodingLimitsExceeded {
			code = status.BadDecodingError
		}
		return sc.fault(reqID, 0, code)
	}
	sc.spare.handling(kept, m, repeated)
	sc.srv.handler(ctx, Request{RequestID: reqID, Message: m, Channel: sc, Received: at})
	sc.spare.handled()
	return nil
}

// fault answers requestID with a ServiceFault.
func (sc *ServerChannel) fault(requestID, handle uint32, code status.Code) error {
	f := &ua.ServiceFault{ResponseHeader: ua.ResponseHeader{Timestamp: codec.Now(), RequestHandle: handle, ServiceResult: code}}
	return sc.channel.sendMessage(uacp.TypeMessage, requestID, f)
}

func (sc *ServerChannel) respond(requestID uint32, msg codec.Structure, async bool) error {
	err := sc.channel.send(uacp.TypeMessage, requestID, msg, async)
	if err == nil {
		// Return before errors.As, whose target would escape and allocate per response.
		return nil
	}
	var tl *errTooLarge
	if errors.As(err, &tl) {
		return sc.fault(requestID, responseHandle(msg), status.BadResponseTooLarge)
	}
	return err
}

// responseHandle returns the RequestHandle of a response: the second field of the
// ResponseHeader that every response starts with.
func responseHandle(msg codec.Structure) uint32 {
	if r, ok := msg.(ua.Response); ok {
		return r.Header().RequestHandle
	}
	e := codec.NewEncoder(make([]byte, 0, 64))
	msg.EncodeBinary(e)
	b := e.Bytes()
	if len(b) < 12 {
		return 0
	}
	return uint32(b[8]) | uint32(b[9])<<8 | uint32(b[10])<<16 | uint32(b[11])<<24
}
