package uasc

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
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

// rawWriteCounter is a writeCounter that keeps the socket's descriptor, so that the
// connection can still be read without waiting (uacp.Conn.ReadArrived).
type rawWriteCounter struct {
	writeCounter
	tcp *net.TCPConn
}

func (w *rawWriteCounter) SyscallConn() (syscall.RawConn, error) { return w.tcp.SyscallConn() }

// TestBurstOneWrite sends a burst of Reads larger than the server's read-ahead buffer in
// one write. The server answers them inline, holding the answers while requests are
// buffered: the rest of the burst, read without waiting once the buffer's requests are
// done, keeps them held, and all the answers leave in one write.
func TestBurstOneWrite(t *testing.T) {
	ids(t)
	srv, err := NewServer(ServerConfig{Security: []SecurityConfig{{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone}}},
		HandlerFunc(func(_ context.Context, r Request) {
			m := r.Message.(*ua.ReadRequest)
			_ = r.Respond(&ua.ReadResponse{ResponseHeader: ua.ResponseHeader{RequestHandle: m.RequestHeader.RequestHandle}})
		}))
	require.NoError(t, err)
	var wc *rawWriteCounter
	cconn, sconn := connPairWrapped(t, func(nc net.Conn) net.Conn {
		wc = &rawWriteCounter{writeCounter: writeCounter{Conn: nc}, tcp: nc.(*net.TCPConn)}
		return wc
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeConn(ctx, sconn) }()
	t.Cleanup(func() {
		cancel()
		sconn.Close()
		<-served
	})
	cc, err := Dial(ctx, cconn, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })

	const n = 80 // about 7 KiB of requests
	cc.hold(true)
	cc.smu.Lock()
	seq := cc.sendSeq
	cc.smu.Unlock()
	wc.writes.Store(0)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := &ua.ReadRequest{RequestHeader: ua.RequestHeader{RequestHandle: uint32(i)},
				NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2259), AttributeId: 13}}}
			m, err := cc.Request(ctx, req)
			if err == nil && m.(*ua.ReadResponse).ResponseHeader.RequestHandle != uint32(i) {
				t.Errorf("request %d answered as %d", i, m.(*ua.ReadResponse).ResponseHeader.RequestHandle)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	require.Eventually(t, func() bool {
		cc.smu.Lock()
		defer cc.smu.Unlock()
		return cc.sendSeq-seq == n
	}, 10*time.Second, time.Millisecond, "all requests queued")
	cc.smu.Lock()
	require.Greater(t, cc.backlog, 4096, "a burst larger than the read-ahead buffer")
	cc.smu.Unlock()
	cc.hold(false)
	wg.Wait()
	require.EqualValues(t, 1, wc.writes.Load(), "answers to one burst, in one write")
}
