//go:build !linux

package server

import (
	"errors"
	"net"
)

// setBacklog is not available beside Linux: the listener keeps the backlog Go asked
// for (the system's maximum).
func setBacklog(net.Listener, int) error {
	return errors.New("limits.listenBacklog applies on Linux only")
}
