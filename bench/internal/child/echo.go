package child

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
)

// runEcho is the ceiling of the read suite: a TCP server that answers every complete
// frame (an OPC UA chunk: 8-byte header with the size at offset 4) with the response
// frame args[0] (hex), the request id at offset 20 copied from the request, and answers
// everything one read returned with one write, as the best batching server would.
func runEcho(args []string) error {
	if len(args) != 1 {
		return errors.New("echo wants the response frame in hex")
	}
	resp, err := hex.DecodeString(args[0])
	if err != nil || len(resp) < 24 {
		return fmt.Errorf("echo: bad response frame: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println("listening", ln.Addr())
	go func() {
		waitStdin()
		_ = ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil
		}
		go echoConn(c, resp)
	}
}

func echoConn(c net.Conn, resp []byte) {
	defer c.Close()
	in := make([]byte, 256<<10)
	var out []byte
	have := 0
	for {
		n, err := c.Read(in[have:])
		if err != nil {
			return
		}
		have += n
		out = out[:0]
		off := 0
		for have-off >= 8 {
			size := int(binary.LittleEndian.Uint32(in[off+4:]))
			if size < 24 || size > len(in) {
				return
			}
			if have-off < size {
				break
			}
			out = append(out, resp...)
			copy(out[len(out)-len(resp)+20:], in[off+20:off+24])
			off += size
		}
		have = copy(in, in[off:have])
		if len(out) > 0 {
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
}
