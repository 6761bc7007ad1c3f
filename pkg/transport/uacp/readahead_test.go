package uacp

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
)

// TestChunkBuffered sends three whole chunks and the start of a fourth in one write:
// ChunkBuffered is true while a whole chunk waits in the read-ahead buffer, false before
// the partial one, and every chunk arrives intact, including the one completed later.
func TestChunkBuffered(t *testing.T) {
	c, nc := acceptedPair(t)
	chunks := [][]byte{testChunk(100, 1), testChunk(200, 2), testChunk(300, 3), testChunk(5000, 4)}
	all := bytes.Join(chunks, nil)
	cut := len(all) - 4000
	_, err := nc.Write(all[:cut])
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

// acceptedPair returns the server end of a connection after Hello and Acknowledge, and the
// raw client end; both are closed when the test ends.
func acceptedPair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	return acceptedPairWith(t, ServerConfig{}, nil)
}

// acceptedPairWith is acceptedPair with the server's config, and its net.Conn passed
// through wrap when wrap is not nil.
func acceptedPairWith(t *testing.T, cfg ServerConfig, wrap func(net.Conn) net.Conn) (*Conn, net.Conn) {
	t.Helper()
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
		if wrap != nil {
			nc = wrap(nc)
		}
		c, err := Accept(context.Background(), nc, cfg)
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = nc.Write((&Hello{ReceiveBufferSize: 8192, SendBufferSize: 8192}).Append(nil))
	require.NoError(t, err)
	_, err = io.ReadFull(nc, make([]byte, AcknowledgeSize))
	require.NoError(t, err)
	c := <-accepted
	require.NotNil(t, c)
	t.Cleanup(func() { c.Close() })
	return c, nc
}

// testChunk is a final MSG chunk of n bytes whose body bytes are fill.
func testChunk(n int, fill byte) []byte {
	b := AppendHeader(nil, Header{Type: TypeMessage, ChunkType: ChunkFinal, Size: uint32(n)})
	return append(b, bytes.Repeat([]byte{fill}, n-HeaderSize)...)
}

// TestLendChunks reads pipelined chunks from a Conn that lends: the ones its read-ahead
// holds whole come in place (and ReleaseZeroed clears them there), a longer one in a
// pooled buffer, and an ERR after them is still the peer's error.
func TestLendChunks(t *testing.T) {
	c, nc := acceptedPair(t)
	c.LendChunks()
	chunks := [][]byte{testChunk(100, 1), testChunk(200, 2), testChunk(5000, 3), testChunk(300, 4)}
	errMsg := (&Error{Code: status.BadTcpInternalError, Reason: "bye"}).Append(nil)
	_, err := nc.Write(append(bytes.Join(chunks, nil), errMsg...))
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // let all of it reach the server's socket

	for i, lent := range []bool{true, true, false, true} {
		ch, err := c.ReadChunk()
		require.NoError(t, err)
		require.Equal(t, chunks[i], ch.Bytes, "chunk %d", i)
		require.Equal(t, lent, ch.lent, "chunk %d lent", i)
		b := ch.Bytes
		ch.ReleaseZeroed()
		require.Nil(t, ch.Bytes)
		if lent {
			require.Equal(t, make([]byte, len(b)), b, "chunk %d cleared where it was read", i)
		}
	}
	_, err = c.ReadChunk()
	var pe *Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "bye", pe.Reason)
}

// TestReadArrived sends a burst of small chunks larger than the read-ahead buffer in one
// write. The first read fills the buffer; once its chunks are taken, ReadArrived reads the
// rest without waiting, and every chunk arrives intact. With nothing more sent it reads
// nothing and does not wait, and the end of the stream it meets is ReadChunk's next error.
func TestReadArrived(t *testing.T) {
	c, nc := acceptedPair(t)
	c.LendChunks()
	var chunks [][]byte
	for i := range 48 { // 48 × 128 bytes: 6 KiB
		chunks = append(chunks, testChunk(128, byte(i)))
	}
	_, err := nc.Write(bytes.Join(chunks, nil))
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // let all of it reach the server's socket

	next := 0
	take := func() {
		t.Helper()
		ch, err := c.ReadChunk()
		require.NoError(t, err)
		require.Equal(t, chunks[next], ch.Bytes, "chunk %d", next)
		ch.ReleaseZeroed()
		next++
	}
	for c.ChunkBuffered() || next == 0 {
		take()
	}
	require.Equal(t, readAhead/128, next, "the first read filled the buffer")
	require.True(t, c.ReadArrived(), "the rest of the burst")
	for next < len(chunks) {
		require.True(t, c.ChunkBuffered(), "chunk %d", next)
		take()
	}

	done := make(chan bool)
	go func() { done <- c.ReadArrived() }()
	select {
	case more := <-done:
		require.False(t, more)
	case <-time.After(5 * time.Second):
		t.Fatal("ReadArrived waited for input")
	}

	// A burst that fills the buffer exactly, then the end of the stream.
	_, err = nc.Write(bytes.Join(chunks[:readAhead/128], nil))
	require.NoError(t, err)
	require.NoError(t, nc.(*net.TCPConn).CloseWrite())
	time.Sleep(50 * time.Millisecond)
	for next = 0; next < readAhead/128; {
		take()
	}
	require.False(t, c.ReadArrived())
	_, err = c.ReadChunk()
	require.ErrorIs(t, err, status.BadConnectionClosed)
}

// TestReadArrivedWithoutDescriptor: on a connection that hides its descriptor,
// ReadArrived reads nothing and only reports what is buffered.
func TestReadArrivedWithoutDescriptor(t *testing.T) {
	c, nc := acceptedPair(t)
	c.nc = struct{ net.Conn }{c.nc}
	c.LendChunks()
	var burst []byte
	for i := range 40 {
		burst = append(burst, testChunk(128, byte(i))...)
	}
	_, err := nc.Write(burst)
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	for i := range readAhead / 128 {
		ch, err := c.ReadChunk()
		require.NoError(t, err, "chunk %d", i)
		ch.ReleaseZeroed()
	}
	require.False(t, c.ReadArrived(), "read without a descriptor")
	ch, err := c.ReadChunk() // an ordinary read brings the rest
	require.NoError(t, err)
	require.Equal(t, testChunk(128, readAhead/128), ch.Bytes)
}
