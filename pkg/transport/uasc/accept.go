package uasc

import (
	"context"
	"net"
	"runtime/debug"
	"sync"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
)

// Refusal is a connection Serve turned away before reading from it.
type Refusal struct {
	// Remote is the peer's address.
	Remote net.Addr
	// Code is the status of the ERR: BadTcpNotEnoughResources for MaxChannelCount, or
	// the code ServerConfig.Admit refused with.
	Code status.Code
	// MaxChannelCount is the limit that was reached, or 0 when Admit refused.
	MaxChannelCount int
	// Unanswered says that the connection was closed without the ERR: too many
	// refusals were in progress.
	Unanswered bool
}

// Serve accepts connections on ln until ctx ends or ln fails, and serves each on its own
// goroutine: the UACP handshake, then ServeConn. Before anything is read from a
// connection it applies ServerConfig.MaxChannelCount, then ServerConfig.Admit; a refused
// connection gets an ERR (uacp.Refuse) and ServerConfig.Refused hears of it. Serve closes
// ln when ctx ends and waits for its connections to finish. It may run on several
// listeners at once; MaxChannelCount counts the connections of them all.
//
// The connections are counted here rather than by wrapping the net.Conn, so that uacp keeps
// the *net.TCPConn and its vectored writes (net.Buffers).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case s.slots <- struct{}{}:
		default:
			s.refuse(&wg, nc, Refusal{Code: status.BadTcpNotEnoughResources, MaxChannelCount: cap(s.slots)})
			continue
		}
		var release func()
		if s.cfg.Admit != nil {
			var code status.Code
			release, code = s.cfg.Admit(nc.RemoteAddr())
			if !code.IsGood() {
				<-s.slots
				if release != nil {
					release()
				}
				s.refuse(&wg, nc, Refusal{Code: code})
				continue
			}
		}
		wg.Go(func() {
			defer func() {
				if release != nil {
					release()
				}
				<-s.slots
			}()
			defer s.recoverConn(nc)
			c, err := uacp.Accept(ctx, nc, s.cfg.UACP)
			if err != nil {
				// The handshake has one deadline, HelloTimeout; ctx's end shows as it.
				if uacp.StatusOf(err) == status.BadTimeout && ctx.Err() == nil {
					s.expired(DeadlineHello)
				}
				return
			}
			_ = s.ServeConn(ctx, c)
		})
	}
}

// refuse answers nc with an ERR of r.Code on a goroutine that wg counts, or closes it
// unanswered when ServerConfig.MaxRefusing refusals are in progress, and tells ServerConfig.Refused.
func (s *Server) refuse(wg *sync.WaitGroup, nc net.Conn, r Refusal) {
	r.Remote = nc.RemoteAddr()
	select {
	case s.refusing <- struct{}{}:
	default:
		r.Unanswered = true
	}
	if s.cfg.Refused != nil {
		s.cfg.Refused(r)
	}
	if r.Unanswered {
		_ = nc.Close()
		return
	}
	wg.Go(func() {
		defer func() { <-s.refusing }()
		_ = uacp.Refuse(nc, r.Code, errReason(r.Code))
	})
}

// recoverConn, deferred on a connection's goroutine, turns a panic there into the end of
// that connection when ServerConfig.Panicked is set; otherwise the panic goes on.
func (s *Server) recoverConn(nc net.Conn) {
	if s.cfg.Panicked == nil {
		return
	}
	if v := recover(); v != nil {
		s.cfg.Panicked(v, debug.Stack())
		_ = nc.Close()
	}
}
