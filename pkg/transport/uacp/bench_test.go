package uacp

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// loopConn replays one buffer forever: a net.Conn that costs nothing, to measure ReadChunk.
type loopConn struct {
	splitConn
	data []byte
	r    bytes.Reader
}

func (c *loopConn) Read(p []byte) (int, error) {
	if c.r.Len() == 0 {
		c.r.Reset(c.data)
	}
	return c.r.Read(p)
}

func BenchmarkReadChunk64K(b *testing.B) {
	chunk := msgChunk(TypeMessage, ChunkFinal, 65536-HeaderSize)
	nc := &loopConn{data: bytes.Repeat(chunk, 4)}
	c := newConn(nc, true, new(Pool), 0, 0)
	c.neg = Negotiated{ReceiveBufferSize: 65536, SendBufferSize: 65536}
	c.in.chunkTimeout = DefaultChunkTimeout // as a server's
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		ch, err := c.ReadChunk()
		if err != nil {
			b.Fatal(err)
		}
		ch.Release()
	}
}

// BenchmarkReadChunk64KTCP reads 64 KiB chunks that a writer sends over loopback TCP with
// WriteChunks.
func BenchmarkReadChunk64KTCP(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	chunk := msgChunk(TypeMessage, ChunkFinal, 65536-HeaderSize)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		w := newConn(nc, true, nil, 0, time.Minute)
		w.neg = Negotiated{ReceiveBufferSize: 65536, SendBufferSize: 65536}
		for w.WriteChunks(chunk, chunk, chunk, chunk) == nil {
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c := newConn(nc, false, new(Pool), 0, 0)
	c.neg = Negotiated{ReceiveBufferSize: 65536, SendBufferSize: 65536}
	c.in.chunkTimeout = DefaultChunkTimeout // as a server's
	defer c.Close()
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		ch, err := c.ReadChunk()
		if err != nil {
			b.Fatal(err)
		}
		ch.Release()
	}
}

func BenchmarkWriteChunks(b *testing.B) {
	chunk := msgChunk(TypeMessage, ChunkFinal, 1000)
	c := newConn(&discardConn{}, true, nil, 0, DefaultWriteTimeout) // as a server's
	c.neg = Negotiated{ReceiveBufferSize: 65536, SendBufferSize: 65536}
	b.SetBytes(int64(3 * len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.WriteChunks(chunk, chunk, chunk); err != nil {
			b.Fatal(err)
		}
	}
}

type discardConn struct{ splitConn }

func (*discardConn) Write(p []byte) (int, error) { return len(p), nil }

var _ io.Writer = (*discardConn)(nil)

func BenchmarkPoolGetPut(b *testing.B) {
	for _, n := range []int{8192, 65536, 1 << 20} {
		b.Run(byteSize(n), func(b *testing.B) {
			var p Pool
			b.ReportAllocs()
			for b.Loop() {
				p.Put(p.Get(n))
			}
		})
	}
}

func BenchmarkPoolGetPutParallel(b *testing.B) {
	var p Pool
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p.Put(p.Get(65536))
		}
	})
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return itoa(n>>20) + "MiB"
	default:
		return itoa(n>>10) + "KiB"
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// BenchmarkReadChunkSmallTCP reads pipelined 200-byte chunks, as a server channel does
// (LendChunks), that a writer sends over loopback TCP 32 at a time: the read path of
// small requests, where most chunks are already in the read-ahead buffer and the last
// one of each read is cut.
func BenchmarkReadChunkSmallTCP(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	chunk := msgChunk(TypeMessage, ChunkFinal, 200-HeaderSize)
	batch := bytes.Repeat(chunk, 32)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		w := newConn(nc, true, nil, 0, time.Minute)
		w.neg = Negotiated{ReceiveBufferSize: 65536, SendBufferSize: 65536}
		for w.WriteChunks(batch) == nil {
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c := newConn(nc, true, new(Pool), 0, 0)
	c.neg = Negotiated{ReceiveBufferSize: 65536, SendBufferSize: 65536}
	c.in.chunkTimeout = DefaultChunkTimeout // as a server's
	c.LendChunks()
	defer c.Close()
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		ch, err := c.ReadChunk()
		if err != nil {
			b.Fatal(err)
		}
		ch.Release()
	}
}
