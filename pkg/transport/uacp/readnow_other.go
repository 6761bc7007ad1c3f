//go:build !unix

package uacp

import "net"

// readNowFunc returns nil: here no connection is read without waiting, and ReadArrived
// reads nothing.
func readNowFunc(net.Conn) func(p []byte) (int, error) { return nil }
