package server

import (
	"context"
	"io"
	"net"
	"sync"
	"time"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/services/server/internal/config"
)

// refuseTimeout bounds the time spent answering a connection over MaxChannelCount, and
// maxRefusing the connections answered at once; beyond that they are closed unanswered.
const (
	refuseTimeout = time.Second
	maxRefusing   = 16
)

// serveChannels is uasc.Server.Serve with Limits.MaxChannelCount: it accepts connections
// on ln until ctx ends or ln fails and serves each (UACP handshake, then one secure
// channel) on its own goroutine. A connection beyond MaxChannelCount open ones is refused
// before anything is read from it, so before any crypto work: it gets an ERR
// BadTcpNotEnoughResources (Part 6 §7.1.5 Table 74: "not enough resources to process the
// request") and is closed. ln is closed when ctx ends; serveChannels waits for its
// connections to finish.
//
// The connections are counted here rather than by wrapping net.Conn so that uacp keeps
// the *net.TCPConn and its vectored writes (net.Buffers).
func (s *Server) serveChannels(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	slots := make(chan struct{}, s.cfg.Limits.MaxChannelCount)
	refusing := make(chan struct{}, maxRefusing)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case slots <- struct{}{}:
		default:
			s.log.Warn("connection refused: limits.maxChannelCount reached", "remote", nc.RemoteAddr().String(), "max", cap(slots))
			select {
			case refusing <- struct{}{}:
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-refusing }()
					refuse(nc, status.BadTcpNotEnoughResources)
				}()
			default:
				_ = nc.Close()
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			c, err := uacp.Accept(ctx, nc, uacpConfig(s.cfg))
			if err != nil {
				return
			}
			_ = s.channels.ServeConn(ctx, c)
		}()
	}
}

// refuse sends an ERR with code on nc without reading its Hello, then closes it after
// letting the peer's Hello drain, so that the ERR is not lost to a reset.
func refuse(nc net.Conn, code status.Code) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(refuseTimeout))
	if _, err := nc.Write((&uacp.Error{Code: code, Reason: "too many connections"}).Append(nil)); err != nil {
		return
	}
	if cw, ok := nc.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_, _ = io.CopyN(io.Discard, nc, 64<<10)
	}
}

// uacpConfig is the connection protocol configuration of cfg; New gives the same to the
// secure channel server.
func uacpConfig(cfg *config.Config) uacp.ServerConfig {
	return uacp.ServerConfig{Limits: uacp.Limits{
		ReceiveBufferSize: uint32(cfg.Encoding.ReceiveBufferSize),
		SendBufferSize:    uint32(cfg.Encoding.SendBufferSize),
		MaxMessageSize:    uint32(cfg.Encoding.MaxMessageSize),
		MaxChunkCount:     uint32(cfg.Encoding.MaxChunkCount),
	}}
}
