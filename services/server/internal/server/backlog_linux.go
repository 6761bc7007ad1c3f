package server

import (
	"fmt"
	"net"
	"syscall"
)

// setBacklog sets the listen(2) backlog of ln to n: Linux takes a second listen on a
// listening socket as a new backlog (capped at net.core.somaxconn). Go's own listen asks
// for somaxconn, so a smaller n makes the kernel refuse a burst of handshakes sooner.
func setBacklog(ln net.Listener, n int) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return fmt.Errorf("not a TCP listener: %T", ln)
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), n) }); err != nil {
		return err
	}
	return lerr
}
