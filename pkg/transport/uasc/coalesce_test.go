package uasc

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/transport/uacp"
)

// writeCounter is a net.Conn that counts its writes. It hides the socket's vectored write,
// so net.Buffers writes each buffer with a Write of its own and writes counts buffers.
type writeCounter struct {
	net.Conn
	writes atomic.Int32
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes.Add(1)
	return w.Conn.Write(b)
}

// TestHeldMessagesShareBuffers sends messages while the send half holds, as the reading
// goroutine does for pipelined requests, on a SignAndEncrypt channel. Eight small ones
// leave in one buffer, hence one write; a message of several chunks starts in the room
// left behind the last one queued, and small ones queued behind it ride in the room left
// in its last chunk's buffer. Every message arrives whole and in order.
func TestHeldMessagesShareBuffers(t *testing.T) {
	var wc *writeCounter
	cconn, sconn := connPairWrapped(t, func(nc net.Conn) net.Conn {
		wc = &writeCounter{Conn: nc}
		return wc
	})
	cl, sv := keyedPair(t, cconn, sconn)
	got := make(chan []byte, 16)
	go func() {
		defer close(got)
		for {
			ch, err := cconn.ReadChunk()
			if err != nil {
				return
			}
			reqID, body, _, err := cl.openSym(ch.Bytes, cl.now())
			if err != nil {
				t.Error(err)
				return
			}
			msg, done, _, err := cl.asm.add(ch.Header.ChunkType, reqID, body)
			if err != nil {
				t.Error(err)
				return
			}
			if done {
				got <- append([]byte{byte(reqID)}, msg...)
				cl.asm.reset()
			}
			ch.Release()
		}
	}()
	body := func(id, n int) []byte { return bytes.Repeat([]byte{byte(id)}, n) }
	batch := func(sizes ...int) {
		t.Helper()
		wc.writes.Store(0)
		sv.hold(true)
		for i, n := range sizes {
			require.NoError(t, sv.sendMessage(uacp.TypeMessage, uint32(i+1), &rawBody{b: body(i+1, n)}))
		}
		require.Zero(t, wc.writes.Load(), "written while held")
		sv.hold(false)
		for i, n := range sizes {
			select {
			case m := <-got:
				require.Equal(t, byte(i+1), m[0], "request id")
				require.True(t, bytes.HasSuffix(m, body(i+1, n)), "message %d: %d bytes", i+1, len(m))
				require.Len(t, m, 1+4+n, "message %d", i+1) // the id, the NodeId, the body
			case <-time.After(10 * time.Second):
				t.Fatalf("message %d never arrived", i+1)
			}
		}
	}

	batch(20, 40, 60, 80, 100, 120, 140, 160)
	require.EqualValues(t, 1, wc.writes.Load(), "eight small messages, one buffer")

	// One small message, one of three chunks, two small ones: the first chunk behind the
	// small message, the other two in buffers of their own, the small ones behind the last.
	big := 2*sv.maxSymBody(int(sv.neg.SendBufferSize)) + 1000
	batch(50, big, 60, 70)
	require.EqualValues(t, 3, wc.writes.Load())

	// Messages of one chunk go behind each other while the buffer has room.
	batch(30, 2500, 40, 9000, 20)
	require.EqualValues(t, 1, wc.writes.Load())

	// With the peer's MaxChunkCount at 2, a message of two full chunks is sent (batch
	// checks that): behind another it would need three, so it starts in a buffer of its
	// own. The small one after it finds no room behind the second and takes a fourth.
	sv.smu.Lock()
	sv.neg.MaxSendChunkCount = 2
	sv.smu.Unlock()
	batch(40, big-1010, 50)
	require.EqualValues(t, 4, wc.writes.Load())
}
