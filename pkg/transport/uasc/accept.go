package uasc

import (
	"context"
	"net"
	"sync"

	"uastack.dev/pkg/transport/uacp"
)

// Serve accepts connections on ln until ctx ends or ln fails, runs the UACP handshake and
// ServeConn on each in its own goroutine. It closes ln when ctx ends and waits for its
// connections to finish.
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := uacp.Accept(ctx, nc, s.cfg.UACP)
			if err != nil {
				return
			}
			_ = s.ServeConn(ctx, c)
		}()
	}
}
