package uacp

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChunkBuffered sends three whole chunks and the start of a fourth in one write:
// ChunkBuffered is true while a whole chunk waits in the read-ahead buffer, false before
// the partial one, and every chunk arrives intact, including the one completed later.
func TestChunkBuffered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan *Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		c, err := Accept(context.Background(), nc, ServerConfig{})
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = nc.Write((&Hello{ReceiveBufferSize: 8192, SendBufferSize: 8192}).Append(nil))
	require.NoError(t, err)
	_, err = io.ReadFull(nc, make([]byte, AcknowledgeSize))
	require.NoError(t, err)
	c := <-accepted
	require.NotNil(t, c)
	defer c.Close()

	chunk := func(n int, fill byte) []byte {
		b := AppendHeader(nil, Header{Type: TypeMessage, ChunkType: ChunkFinal, Size: uint32(n)})
		return append(b, bytes.Repeat([]byte{fill}, n-HeaderSize)...)
	}
	chunks := [][]byte{chunk(100, 1), chunk(200, 2), chunk(300, 3), chunk(5000, 4)}
	all := bytes.Join(chunks, nil)
	cut := len(all) - 4000
	_, err = nc.Write(all[:cut])
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // let all of it reach the server's socket

	require.False(t, c.ChunkBuffered(), "nothing read yet")
	for i, want := range []bool{true, true, false} {
		ch, err := c.ReadChunk()
		require.NoError(t, err)
		require.Equal(t, chunks[i], ch.Bytes)
		ch.Release()
		require.Equal(t, want, c.ChunkBuffered(), "after chunk %d", i)
	}
	_, err = nc.Write(all[cut:])
	require.NoError(t, err)
	ch, err := c.ReadChunk()
	require.NoError(t, err)
	require.Equal(t, chunks[3], ch.Bytes)
	ch.Release()
	require.False(t, c.ChunkBuffered())
}
