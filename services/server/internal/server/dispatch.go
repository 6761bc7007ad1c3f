package server

import (
	"context"
	"errors"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/status"
)

const statusInternal = status.BadInternalError

// handle is the uasc Handler: it runs on the channel's reading goroutine, answers the
// in-memory services inline and hands CreateSession and ActivateSession to a worker.
func (s *Server) handle(ctx context.Context, req uasc.Request) {
	switch m := req.Message.(type) {
	case *ua.GetEndpointsRequest:
		s.respond(req, s.getEndpoints(m))
	case *ua.FindServersRequest:
		s.respond(req, s.findServers(m))
	case *ua.CreateSessionRequest:
		s.worker(req, m.RequestHeader, func() codec.Structure { return s.createSession(req.Channel, m) })
	case *ua.ActivateSessionRequest:
		s.worker(req, m.RequestHeader, func() codec.Structure { return s.activateSession(req.Channel, m) })
	case *ua.CloseSessionRequest:
		s.respond(req, s.closeSession(req.Channel, m))
	case *ua.ReadRequest:
		s.read(ctx, req, m)
	case *ua.WriteRequest:
		s.write(ctx, req, m)
	case *ua.CallRequest:
		s.call(ctx, req, m)
	case *ua.BrowseRequest:
		s.browse(ctx, req, m)
	case *ua.BrowseNextRequest:
		s.respond(req, s.browseNext(req.Channel, m))
	case *ua.TranslateBrowsePathsToNodeIdsRequest:
		s.respond(req, s.translate(ctx, req.Channel, m))
	default:
		s.respond(req, s.fault(requestHeaderOf(req.Message), status.BadServiceUnsupported))
	}
}

// worker runs fn on its own goroutine and sends its response; when all
// MaxRequestThreadCount workers are busy the request is refused with BadServerTooBusy.
func (s *Server) worker(req uasc.Request, h ua.RequestHeader, fn func() codec.Structure) {
	select {
	case s.workers <- struct{}{}:
	default:
		s.respond(req, s.fault(h, status.BadServerTooBusy))
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.workers }()
		s.respond(req, fn())
	}()
}

// respond sends msg; a failure means the channel is gone, which the channel's own
// goroutine reports.
func (s *Server) respond(req uasc.Request, msg codec.Structure) {
	if err := req.Respond(msg); err != nil {
		s.log.Debug("response not sent", "channel", req.Channel.ID(), "err", err)
	}
}

// header returns the ResponseHeader answering h with result.
func (s *Server) header(h ua.RequestHeader, result status.Code) ua.ResponseHeader {
	return ua.ResponseHeader{
		Timestamp:     codec.DateTimeOf(s.now()),
		RequestHandle: h.RequestHandle,
		ServiceResult: result,
	}
}

// fault returns a ServiceFault answering h with code (Part 4 §7.33).
func (s *Server) fault(h ua.RequestHeader, code status.Code) *ua.ServiceFault {
	return &ua.ServiceFault{ResponseHeader: s.header(h, code)}
}

// requestHeaderOf returns the RequestHeader of any request: every service request starts
// with one (Part 4 §7.32), so it is decoded from the front of the message's encoding.
// Only unsupported services take this path.
func requestHeaderOf(msg codec.Structure) ua.RequestHeader {
	var h ua.RequestHeader
	e := codec.NewEncoder(nil)
	msg.EncodeBinary(e)
	if e.Err() != nil {
		return h
	}
	d := codec.NewDecoder(e.Bytes())
	h.DecodeBinary(d)
	if d.Err() != nil {
		return ua.RequestHeader{}
	}
	return h
}

// codeOf returns the status.Code an error carries, or def.
func codeOf(err error, def status.Code) status.Code {
	var c status.Code
	if errors.As(err, &c) {
		return c
	}
	return def
}
