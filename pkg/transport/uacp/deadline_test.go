package uacp

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
)

// TestChunkTimeout trickles a chunk to a server whose chunk timeout is 300 ms: the server
// ends the connection with an ERR BadTimeout about 300 ms after the chunk's first byte,
// while a connection that is only idle between whole chunks, for twice as long, is
// served on.
func TestChunkTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	s := startServer(t, ServerConfig{ChunkTimeout: timeout})

	idle := handshaken(t, s)
	trickle := handshaken(t, s)
	chunk := msgChunk(TypeMessage, ChunkFinal, 40)
	_, err := trickle.Write(chunk[:5]) // the header, begun
	require.NoError(t, err)
	begun := time.Now()
	stop := make(chan struct{})
	go func() {
		for _, b := range chunk[5:] {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := trickle.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	defer close(stop)
	type answer struct {
		got []byte
		err error
		at  time.Duration
	}
	answered := make(chan answer, 1)
	go func() {
		got, err := io.ReadAll(trickle)
		answered <- answer{got, err, time.Since(begun)}
	}()

	for range 2 {
		_, err := idle.Write(chunk)
		require.NoError(t, err)
		echo := make([]byte, len(chunk))
		_, err = io.ReadFull(idle, echo)
		require.NoError(t, err)
		require.Equal(t, chunk, echo)
		time.Sleep(2 * timeout)
	}

	a := <-answered
	require.NoError(t, a.err)
	requireERR(t, a.got, status.BadTimeout)
	require.GreaterOrEqual(t, a.at, timeout)
	require.Less(t, a.at, timeout+time.Second)
	err = s.result(t)
	require.ErrorIs(t, err, status.BadTimeout)
	require.ErrorContains(t, err, "not whole 300ms after its first byte")
	require.ErrorIs(t, err, ErrChunkTimeout, "the deadline that passed is named")

	_, err = idle.Write(chunk)
	require.NoError(t, err, "the idle connection is still served")
	_, err = io.ReadFull(idle, make([]byte, len(chunk)))
	require.NoError(t, err)
}

// TestReadChunkBefore gives ReadChunkBefore a deadline that passes before any chunk, and
// one that passes while a chunk arrives: both end in BadTimeout and an ERR; a chunk that
// is whole in time is returned.
func TestReadChunkBefore(t *testing.T) {
	t.Parallel()
	chunk := msgChunk(TypeMessage, ChunkFinal, 40)
	t.Run("in time", func(t *testing.T) {
		t.Parallel()
		c, nc := acceptedPair(t)
		_, err := nc.Write(chunk)
		require.NoError(t, err)
		ch, err := c.ReadChunkBefore(time.Now().Add(5 * time.Second))
		require.NoError(t, err)
		require.Equal(t, chunk, ch.Bytes)
		ch.Release()
	})
	t.Run("nothing comes", func(t *testing.T) {
		t.Parallel()
		c, nc := acceptedPair(t)
		start := time.Now()
		_, err := c.ReadChunkBefore(start.Add(200 * time.Millisecond))
		require.ErrorIs(t, err, status.BadTimeout)
		require.ErrorContains(t, err, "deadline passed")
		require.NotErrorIs(t, err, ErrChunkTimeout, "the caller's deadline, not the chunk timeout")
		require.Less(t, time.Since(start), 2*time.Second)
		got, err := io.ReadAll(nc)
		require.NoError(t, err)
		requireERR(t, got, status.BadTimeout)
	})
	t.Run("chunk begun", func(t *testing.T) {
		t.Parallel()
		c, nc := acceptedPair(t)
		_, err := nc.Write(chunk[:20])
		require.NoError(t, err)
		_, err = c.ReadChunkBefore(time.Now().Add(200 * time.Millisecond))
		require.ErrorIs(t, err, status.BadTimeout)
		require.ErrorContains(t, err, "deadline passed")
		require.NotErrorIs(t, err, ErrChunkTimeout, "the caller's deadline, not the chunk timeout")
		got, err := io.ReadAll(nc)
		require.NoError(t, err)
		requireERR(t, got, status.BadTimeout)
	})
}

// deadlineCounter counts the read deadlines set on a connection.
type deadlineCounter struct {
	net.Conn
	sets atomic.Int32
}

func (d *deadlineCounter) SetReadDeadline(t time.Time) error {
	d.sets.Add(1)
	return d.Conn.SetReadDeadline(t)
}

// TestChunkTimeoutCostsNoCallWhileChunksComeWhole checks the cost of the chunk timeout:
// no read deadline is set while chunks arrive whole in each read (here 50 chunks in one
// write); the first chunk cut across two reads sets it once, and neither the waits
// between chunks nor later cut chunks set it again: the deadline left in place is
// earlier than theirs, or not needed.
func TestChunkTimeoutCostsNoCallWhileChunksComeWhole(t *testing.T) {
	t.Parallel()
	var counter *deadlineCounter
	c, nc := acceptedPairWith(t, ServerConfig{ChunkTimeout: time.Minute}, func(nc net.Conn) net.Conn {
		counter = &deadlineCounter{Conn: nc}
		return counter
	})
	c.LendChunks()
	chunk := msgChunk(TypeMessage, ChunkFinal, 60)
	_, err := nc.Write(bytes.Repeat(chunk, 50))
	require.NoError(t, err)
	for i := range 50 {
		ch, err := c.ReadChunk()
		require.NoError(t, err, "chunk %d", i)
		require.Equal(t, chunk, ch.Bytes)
	}
	require.Zero(t, counter.sets.Load())

	for i := range 3 {
		_, err = nc.Write(chunk[:30])
		require.NoError(t, err)
		go func() {
			time.Sleep(50 * time.Millisecond)
			_, _ = nc.Write(chunk[30:])
		}()
		ch, err := c.ReadChunk()
		require.NoError(t, err)
		require.Equal(t, chunk, ch.Bytes)
		require.EqualValues(t, 1, counter.sets.Load(), "cut chunk %d", i)
		go func() {
			time.Sleep(50 * time.Millisecond)
			_, _ = nc.Write(chunk)
		}()
		ch, err = c.ReadChunk()
		require.NoError(t, err)
		require.Equal(t, chunk, ch.Bytes)
		require.EqualValues(t, 1, counter.sets.Load(), "after the wait for whole chunk %d", i)
	}
}

// TestEarlierDeadlineLeftInPlace has a chunk cut across reads with a 200 ms chunk
// timeout, then waits 400 ms before the next chunk, cut as well: the deadline left from
// the first passes during the wait, is set again, and neither the wait nor the second
// chunk fails.
func TestEarlierDeadlineLeftInPlace(t *testing.T) {
	t.Parallel()
	c, nc := acceptedPairWith(t, ServerConfig{ChunkTimeout: 200 * time.Millisecond}, nil)
	chunk := msgChunk(TypeMessage, ChunkFinal, 60)
	for i := range 2 {
		go func() {
			time.Sleep(time.Duration(i) * 400 * time.Millisecond)
			_, _ = nc.Write(chunk[:30])
			time.Sleep(50 * time.Millisecond)
			_, _ = nc.Write(chunk[30:])
		}()
		ch, err := c.ReadChunk()
		require.NoError(t, err, "chunk %d", i)
		require.Equal(t, chunk, ch.Bytes)
		ch.Release()
	}
}

// smallBuffers bounds the kernel's buffers of a TCP connection (loopback's grow to
// megabytes), so that a peer that does not read blocks its writer soon. They stay above
// twice loopback's segment size: below it a reader that takes only part of its buffer
// may advertise no window, and its writer then waits on the kernel's probes.
func smallBuffers(t *testing.T, nc net.Conn) {
	t.Helper()
	tc := nc.(*net.TCPConn)
	require.NoError(t, tc.SetReadBuffer(128<<10))
	require.NoError(t, tc.SetWriteBuffer(128<<10))
}

// TestWriteTimeout writes to a peer that reads slowly, then to one that stopped reading,
// through a server Conn with a 200 ms write timeout. The slow reader takes one write of
// 4 MiB that lasts several timeouts, since it takes some in each; for the stopped one a
// write ends with BadTimeout after one to two timeouts, and the connection is closed.
func TestWriteTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	c, nc := acceptedPairWith(t, ServerConfig{WriteTimeout: timeout}, func(nc net.Conn) net.Conn {
		smallBuffers(t, nc)
		return nc
	})
	smallBuffers(t, nc)
	require.NoError(t, nc.SetDeadline(time.Time{}))
	chunk := msgChunk(TypeMessage, ChunkFinal, 8192-HeaderSize)
	batch := make([][]byte, 512)
	for i := range batch {
		batch[i] = chunk
	}
	total := len(batch) * len(chunk)

	// Slow: what has arrived, every 40 ms.
	read := make(chan error, 1)
	go func() {
		buf := make([]byte, 1<<20)
		for n := 0; n < total; {
			time.Sleep(40 * time.Millisecond)
			k, err := nc.Read(buf[:min(len(buf), total-n)])
			n += k
			if err != nil {
				read <- err
				return
			}
		}
		read <- nil
	}()
	start := time.Now()
	require.NoError(t, c.WriteChunks(batch...), "to a slow reader")
	require.Greater(t, time.Since(start), timeout*3/2, "the write outlasted its deadline")
	require.NoError(t, <-read)

	// Stopped: nothing is read any more.
	var err error
	var last time.Time
	for range 1000 {
		last = time.Now()
		if err = c.WriteChunks(chunk); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, status.BadTimeout)
	waited := time.Since(last)
	require.GreaterOrEqual(t, waited, timeout)
	require.Less(t, waited, 2*timeout+time.Second)
	require.ErrorIs(t, c.WriteChunks(chunk), status.BadConnectionClosed)
}

// TestSendErrorDoesNotWaitForAStuckWrite ends a connection with SendError while a write
// without a write timeout waits on a peer that does not read: the write ends at the ERR's
// own deadline, and SendError returns within it and the linger.
func TestSendErrorDoesNotWaitForAStuckWrite(t *testing.T) {
	t.Parallel()
	c, nc := acceptedPairWith(t, ServerConfig{WriteTimeout: -1}, func(nc net.Conn) net.Conn {
		smallBuffers(t, nc)
		return nc
	})
	smallBuffers(t, nc)
	chunk := msgChunk(TypeMessage, ChunkFinal, 8192-HeaderSize)
	stuck := make(chan error, 1)
	go func() {
		for {
			if err := c.WriteChunks(chunk); err != nil {
				stuck <- err
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the writer is blocked by now
	start := time.Now()
	_ = c.SendError(status.BadTimeout, "bye")
	require.Less(t, time.Since(start), errorWriteTimeout+lingerTimeout+time.Second)
	select {
	case err := <-stuck:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the write still waits")
	}
}
