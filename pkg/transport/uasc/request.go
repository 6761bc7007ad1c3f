package uasc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// Handler makes the handler of each channel a Server serves. Channel is called once per
// channel, on the channel's reading goroutine, once its first OpenSecureChannel has been
// answered and before its first request; the ChannelHandler it returns gets every request
// of that channel and is the place for the state the server keeps per channel. Channel
// must not return nil, and must be safe for concurrent use: channels open concurrently.
type Handler interface {
	Channel(ch *ServerChannel) ChannelHandler
}

// ChannelHandler handles the requests of one channel. Handle gets every complete request,
// one after another, on the channel's reading goroutine: state that only Handle uses needs
// no lock, and a handler that may block should hand the request to another goroutine and
// return. The Request may be answered from any goroutine, once.
//
// A ChannelHandler may implement ChannelEnder, to learn that its channel ended, and
// Repeater, to be handed repeated requests without a decode.
type ChannelHandler interface {
	Handle(ctx context.Context, req Request)
}

// ChannelEnder is implemented by a ChannelHandler that releases what it holds for its
// channel when the channel ends. ChannelEnded is called once, on the channel's reading
// goroutine, after the last Handle has returned and the connection is closed, with the
// error ServeConn returns (nil after a CloseSecureChannel). A request handed to another
// goroutine may still be answered after it; Respond then fails.
type ChannelEnder interface {
	ChannelEnded(err error)
}

// Repeater is implemented by a ChannelHandler that opts in to repeated requests. Clients
// poll: a request often repeats the last one but for its RequestHeader's Timestamp and
// RequestHandle (ua.RequestStampLen bytes). When RepeatRecycled reports true, a channel
// keeps the body of the request that Handle hands back with Request.Recycle, and a later
// request that repeats that body but for those two fields is the recycled message again,
// with the new Timestamp and RequestHandle set: it is not decoded. The handler promises in exchange
// that every message it recycles is as it was decoded: a field it changed would show in
// the repeat. It is asked once, when the channel's handler is made.
type Repeater interface {
	RepeatRecycled() bool
}

// HandlerFunc is a Handler that handles the requests of every channel alike, and is its
// own ChannelHandler: for handlers that keep no state per channel (the discovery service,
// tests). It is a Repeater that opts in: a HandlerFunc that calls Request.Recycle hands
// back messages as they were decoded.
type HandlerFunc func(ctx context.Context, req Request)

// Channel returns f.
func (f HandlerFunc) Channel(*ServerChannel) ChannelHandler { return f }

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req Request) { f(ctx, req) }

// RepeatRecycled reports true.
func (HandlerFunc) RepeatRecycled() bool { return true }

var (
	_ Handler        = HandlerFunc(nil)
	_ ChannelHandler = HandlerFunc(nil)
	_ Repeater       = HandlerFunc(nil)
)

// startHandler makes the channel's handler (Handler.Channel) once the channel is open, and
// asks it whether it takes repeated requests (Repeater).
func (sc *ServerChannel) startHandler() error {
	h := sc.srv.handler.Channel(sc)
	if h == nil {
		return fmt.Errorf("uasc: Handler.Channel returned nil: %w", status.BadInternalError)
	}
	r, ok := h.(Repeater)
	sc.handler, sc.spare.repeats = h, ok && r.RepeatRecycled()
	return nil
}

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
// type into it (codec.Decoder.MessageInto: every field is overwritten) instead of
// allocating one; when the channel's handler is a Repeater, it may also hand it out again
// for a request that repeats this one but for the RequestHeader's Timestamp and
// RequestHandle. It is for a request answered inline, on the channel's reading goroutine:
// call it in Handle, at most once, and only when nothing refers to the message or to a
// slice decoded into it any more (after Respond returned). Strings decoded into it may be kept: they are never overwritten. A request
// answered on another goroutine is not recycled: the channel's spare belongs to its
// reading goroutine, so that taking and returning it costs no lock.
func (r Request) Recycle() { r.Channel.spare.recycle(r.Message, &r.Channel.dec) }

// Respond sends msg as the response to r. It is safe for concurrent use. A response over
// the client's MaxMessageSize or MaxChunkCount is replaced by a ServiceFault with
// BadResponseTooLarge. A response whose encoding panics is replaced by a ServiceFault
// with BadInternalError and reported as an *EncodePanic. Other errors mean the channel
// is closed.
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
		if sc.asm.active && sc.asm.deadline.IsZero() && sc.srv.cfg.AssemblyTimeout > 0 {
			// The first chunk of a message of several: the rest must follow in time.
			sc.asm.deadline = arrivalOf(ch).Add(sc.srv.cfg.AssemblyTimeout)
		}
		return err
	}
	// A message of one chunk is the chunk's body, valid until Handle returns; one of
	// several is the assembler's, which reset clears.
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
	sc.handler.Handle(ctx, Request{RequestID: reqID, Message: m, Channel: sc, Received: at})
	sc.spare.handled()
	return nil
}

// arrivalOf returns when ch was read, on the clock the network's deadlines run on.
func arrivalOf(ch *uacp.Chunk) time.Time {
	if !ch.Received.IsZero() {
		return ch.Received
	}
	return time.Now()
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
	var ep *EncodePanic
	if errors.As(err, &ep) {
		// The handle from the header only: encoding msg again would panic again.
		var handle uint32
		if r, ok := msg.(ua.Response); ok {
			handle = r.Header().RequestHandle
		}
		if ferr := sc.fault(requestID, handle, status.BadInternalError); ferr != nil {
			return errors.Join(err, ferr)
		}
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
