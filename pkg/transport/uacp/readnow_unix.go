//go:build unix

package uacp

import (
	"io"
	"net"
	"os"
	"syscall"
)

// readNowFunc returns a function that reads nc's descriptor once without waiting for
// input (the runtime keeps network descriptors non-blocking), or nil when nc has none.
func readNowFunc(nc net.Conn) func(p []byte) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &nowReader{raw: raw}
	r.fn = r.read
	return r.readNow
}

// nowReader reads a descriptor once without waiting.
type nowReader struct {
	raw syscall.RawConn
	fn  func(fd uintptr) bool // read as a func value, made once: a read allocates nothing
	// The read in progress: where it reads to and what it got.
	p   []byte
	n   int
	err error
}

// readNow reads into p once; it returns errWouldBlock when nothing has arrived and io.EOF
// at the end of the stream.
func (r *nowReader) readNow(p []byte) (int, error) {
	r.p = p
	err := r.raw.Read(r.fn)
	n, rerr := r.n, r.err
	r.p, r.n, r.err = nil, 0, nil
	switch {
	case err != nil: // closed, or past the read deadline
		return 0, err
	case rerr == syscall.EAGAIN:
		return 0, errWouldBlock
	case rerr != nil:
		return 0, os.NewSyscallError("read", rerr)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// read is raw.Read's callback: one read, after which raw.Read returns rather than wait.
func (r *nowReader) read(fd uintptr) bool {
	for {
		n, err := syscall.Read(int(fd), r.p)
		if err == syscall.EINTR {
			continue
		}
		r.n, r.err = max(n, 0), err
		return true
	}
}
