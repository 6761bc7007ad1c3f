package child

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"

	"github.com/gopcua/opcua/server"
	gua "github.com/gopcua/opcua/ua"
)

// runGopcua runs gopcua v0.8.0's server over SecurityPolicy None, anonymous (its secured
// endpoints fail on the first secured message; see bench/clientpeer).
func runGopcua([]string) error {
	// gopcua's server cannot listen on port 0 and report the port: take a free one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return err
	}
	log.SetOutput(io.Discard) // gopcua's server logs its namespace loading through package log
	srv := server.New(
		server.EndPoint("127.0.0.1", port),
		server.EnableSecurity("None", gua.MessageSecurityModeNone),
		server.EnableAuthMode(gua.UserTokenTypeAnonymous),
		server.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	if err := srv.Start(context.Background()); err != nil {
		return err
	}
	fmt.Printf("listening opc.tcp://127.0.0.1:%d\n", port)
	waitStdin()
	return srv.Close()
}
