package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// BenchmarkServeReads is the server's own work per Read without a system call: the whole
// server (Serve, uacp, uasc, dispatch, address space, encode) on connections held in
// memory, each of which hands it batches of depth Read requests, one batch per read, and
// takes its answers into a sink. An op is one Read; with conns=2 two connections are
// served at once (on two cores), so ns/op is half the CPU per Read when nothing they
// share slows them. Beside the server, the benchmark spends only the patching of each
// request's sequence number. The Reads/s suite's server CPU per Read is this plus the
// system calls and the runtime's network poller.
//
// A client that polls repeats its request but for the RequestHeader's Timestamp and
// RequestHandle, which the channel answers without decoding (uasc.Request.Recycle). With
// varied, every other request reads another node, so that each one is decoded.
func BenchmarkServeReads(b *testing.B) {
	for _, tc := range []struct {
		conns, depth int
		varied       bool
	}{{1, 1, false}, {1, 8, false}, {2, 8, false}, {1, 8, true}} {
		name := fmt.Sprintf("conns=%d/depth=%d", tc.conns, tc.depth)
		if tc.varied {
			name += "/varied"
		}
		b.Run(name, func(b *testing.B) {
			cfg := benchConfig(b, filepath.Join(b.TempDir(), "pki"))
			srv, err := New(cfg, Options{Logger: discardLogger()})
			require.NoError(b, err)
			defer srv.Close()
			ln := &connListener{conns: make(chan net.Conn, tc.conns), done: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ctx, ln) }()
			rcs := make([]*replayConn, tc.conns)
			defer func() {
				for _, rc := range rcs {
					if rc != nil {
						close(rc.feed)
					}
				}
				cancel()
				require.NoError(b, <-served)
			}()
			for i := range rcs {
				rcs[i] = startReplay(b, ln, cfg.Endpoint.EndpointURL, tc.depth, tc.varied)
			}

			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, rc := range rcs {
				wg.Go(func() { rc.run(b.N / tc.conns) })
			}
			wg.Wait()
			b.StopTimer()
			for _, rc := range rcs {
				require.Equal(b, "MSGF", string(rc.last[:4]), "the last answer is a MSG chunk")
				require.Greater(b, len(rc.last), 24)
			}
		})
	}
}

// startReplay hands ln a connection, opens a channel and a session on it and turns it
// into a replayConn of batches of depth Reads, warmed up.
func startReplay(b *testing.B, ln *connListener, endpointURL string, depth int, varied bool) *replayConn {
	serverEnd, clientEnd := net.Pipe()
	rc := &replayConn{discardConn: discardConn{Conn: serverEnd}, feed: make(chan int), answered: make(chan struct{}, 1)}
	ln.conns <- rc
	c, token := rawOver(b, clientEnd, endpointURL)
	read := func(node uint32) *ua.ReadRequest {
		return &ua.ReadRequest{
			RequestHeader:      ua.RequestHeader{AuthenticationToken: token, RequestHandle: 7, TimeoutHint: 10000},
			TimestampsToReturn: ua.TimestampsToReturnBoth,
			NodesToRead:        readValues([]codec.NodeId{codec.NewNumericNodeId(0, node)}, 1),
		}
	}
	rc.seq = c.seq // patch numbers the batch on from here
	for i := range depth {
		node := uint32(id.Server_ServerStatus_State)
		if varied && i%2 == 1 {
			node = id.Server_ServiceLevel
		}
		start := len(rc.batch)
		rc.batch = c.chunk(rc.batch, "MSG", read(node))
		rc.seqAt = append(rc.seqAt, start+16)
	}
	// From here on the server reads batches from rc and writes into its sink. An empty
	// write wakes the read it may be blocked in on the pipe, which then finds rc
	// discarding; if it is not blocked there, the write waits until the pipe is closed.
	rc.discard.Store(true)
	go func() { _, _ = clientEnd.Write(nil) }()
	rc.run(depth * 100) // warm
	return rc
}

// replayConn is the server's end of a connection: a pipe while the channel and session
// are set up, then, once discarding, a source of request batches and a sink of responses.
type replayConn struct {
	discardConn

	// Read side, used only by the server's reading goroutine once discarding.
	batch []byte // depth request chunks
	seqAt []int  // offset of each chunk's sequence number in batch
	seq   uint32 // the last sequence number sent
	off   int    // how much of the current batch was read
	left  int    // requests still to hand out in this run
	feed  chan int

	want     atomic.Int64 // answers still expected in this run
	answered chan struct{}
}

// run hands out n requests, rounded up to whole batches, and returns once all are
// answered.
func (r *replayConn) run(n int) {
	depth := len(r.seqAt)
	n = max(n+depth-1, depth) / depth * depth
	r.want.Store(int64(n))
	r.feed <- n
	<-r.answered
}

// patch numbers the requests of the next batch on from the last one.
func (r *replayConn) patch() {
	for _, at := range r.seqAt {
		r.seq++
		binary.LittleEndian.PutUint32(r.batch[at:], r.seq)
	}
}

func (r *replayConn) Read(p []byte) (int, error) {
	if !r.discard.Load() {
		return r.Conn.Read(p)
	}
	if r.off == 0 {
		if r.left <= 0 {
			n, ok := <-r.feed
			if !ok {
				return 0, io.EOF
			}
			r.left = n
		}
		r.patch()
		r.left -= len(r.seqAt)
	}
	n := copy(p, r.batch[r.off:])
	r.off += n
	if r.off == len(r.batch) {
		r.off = 0
	}
	return n, nil
}

func (r *replayConn) Write(p []byte) (int, error) {
	if !r.discard.Load() {
		return r.discardConn.Write(p)
	}
	if r.want.Add(-int64(r.sink(p))) == 0 {
		r.answered <- struct{}{}
	}
	return len(p), nil
}

// connListener accepts the connections sent on conns until it is closed.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
