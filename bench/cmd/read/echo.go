package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/bench/internal/drive"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// msgHeader is the size of a MSG chunk's headers before the body: message header (8),
// SecureChannelId (4), TokenId (4), SequenceNumber (4), RequestId (4). The echo frames
// keep this layout, so the request id sits at offset 20 as on the wire.
const msgHeader = 24

// frameNone is the size of a MSG chunk carrying body under SecurityPolicy None.
func frameNone(body int) int { return msgHeader + body }

// frameSignAndEncrypt is its size under Basic256Sha256 SignAndEncrypt (Part 6 §6.7.2):
// the sequence header, body, padding byte(s) and a 32-byte HMAC-SHA256 signature are
// encrypted in 16-byte AES blocks after 16 bytes of plain headers.
func frameSignAndEncrypt(body int) int {
	plain := 8 + body + 1 + 32
	if rem := plain % 16; rem != 0 {
		plain += 16 - rem
	}
	return 16 + plain
}

// sampleBodies makes one Read on url over None and returns the encoded bodies of a
// request as pkg/client sends it (with a 32-byte opaque session token, as uastack issues)
// and of the response the server sent.
func sampleBodies(ctx context.Context, url string) (req, resp []byte, err error) {
	c, err := client.Dial(ctx, url, client.Security(policy.URINone, ua.MessageSecurityModeNone), client.InsecureSkipVerify())
	if err != nil {
		return nil, nil, err
	}
	defer c.Close(ctx)
	r, err := c.Read(ctx, readRequest(codec.NewOpaqueNodeId(0, make([]byte, 32))))
	if err != nil {
		return nil, nil, err
	}
	e := codec.NewEncoder(nil)
	e.Message(readRequest(codec.NewOpaqueNodeId(0, make([]byte, 32))))
	req = append([]byte(nil), e.Bytes()...)
	e.Reset(nil)
	e.Message(r)
	return req, append([]byte(nil), e.Bytes()...), e.Err()
}

// readRequest is the single-value Read every client here sends.
func readRequest(token codec.NodeId) *ua.ReadRequest {
	return &ua.ReadRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: token, Timestamp: codec.Now(), TimeoutHint: 10000},
		NodesToRead:   []ua.ReadValueId{{NodeId: readNode, AttributeId: uint32(attr.Value)}},
	}
}

// responseFrame is the frame the echo server answers with: headers, the response body
// and zeros up to size.
func responseFrame(body []byte, size int) []byte {
	f := make([]byte, size)
	copy(f, "MSGF")
	binary.LittleEndian.PutUint32(f[4:], uint32(size))
	copy(f[msgHeader:], body)
	return f
}

// echoConn is the client side of the ceiling: it does what pkg/client does for a Read
// without the OPC UA session and security (encode the request into a frame, write it
// under a lock, match the response by request id on one reading goroutine, decode it).
type echoConn struct {
	c        net.Conn
	reqSize  int
	respBody int
	token    codec.NodeId
	nextID   atomic.Uint32
	wmu      sync.Mutex // guards pending, flushing
	pending  [][]byte   // frames queued while another goroutine writes
	flushing bool       // a goroutine is writing; others only queue
	mu       sync.Mutex // guards waiters, err
	waiters  map[uint32]chan error
	err      error
}

func echoDial(addr string, reqSize, respBody int) drive.Dial {
	return func(ctx context.Context) (drive.Call, func(), error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		tok := make([]byte, 32)
		_, _ = rand.Read(tok)
		e := &echoConn{c: c, reqSize: reqSize, respBody: respBody, token: codec.NewOpaqueNodeId(0, tok), waiters: map[uint32]chan error{}}
		go e.readLoop()
		return e.call, func() { _ = c.Close() }, nil
	}
}

func (e *echoConn) call(ctx context.Context) error {
	id := e.nextID.Add(1)
	w := make(chan error, 1)
	e.mu.Lock()
	if e.err != nil {
		e.mu.Unlock()
		return e.err
	}
	e.waiters[id] = w
	e.mu.Unlock()

	enc := codec.NewEncoder(make([]byte, 0, e.reqSize))
	enc.Raw(make([]byte, msgHeader))
	enc.Message(readRequest(e.token))
	f := enc.Bytes()
	if len(f) > e.reqSize {
		return fmt.Errorf("echo: request frame %d B exceeds %d B", len(f), e.reqSize)
	}
	f = f[:e.reqSize] // the padding of a secured frame
	copy(f, "MSGF")
	binary.LittleEndian.PutUint32(f[4:], uint32(e.reqSize))
	binary.LittleEndian.PutUint32(f[20:], id)
	if err := e.send(f); err != nil {
		return err
	}
	select {
	case err := <-w:
		return err
	case <-ctx.Done():
		e.mu.Lock()
		delete(e.waiters, id)
		e.mu.Unlock()
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return errors.New("echo: no answer within 30 s")
	}
}

// send queues f and, unless another goroutine is already writing, writes the queue in
// batches with one system call each: the coalescing pkg/transport/uasc does
// (nats-server's flushOutbound), so that the ceiling's client costs what ours does.
func (e *echoConn) send(f []byte) error {
	e.wmu.Lock()
	e.pending = append(e.pending, f)
	if e.flushing {
		e.wmu.Unlock()
		return nil
	}
	e.flushing = true
	for len(e.pending) > 0 {
		batch := net.Buffers(e.pending)
		e.pending = nil
		e.wmu.Unlock()
		_, err := batch.WriteTo(e.c)
		e.wmu.Lock()
		if err != nil {
			e.flushing = false
			e.wmu.Unlock()
			return err
		}
	}
	e.flushing = false
	e.wmu.Unlock()
	return nil
}

func (e *echoConn) readLoop() {
	br := bufio.NewReaderSize(e.c, 64<<10)
	hdr := make([]byte, 8)
	fail := func(err error) {
		e.mu.Lock()
		e.err = err
		for id, w := range e.waiters {
			w <- err
			delete(e.waiters, id)
		}
		e.mu.Unlock()
	}
	for {
		if _, err := io.ReadFull(br, hdr); err != nil {
			fail(err)
			return
		}
		size := int(binary.LittleEndian.Uint32(hdr[4:]))
		if size < msgHeader+e.respBody {
			fail(fmt.Errorf("echo: frame of %d B", size))
			return
		}
		f := make([]byte, size) // a response owns its buffer, as a decoded message may
		copy(f, hdr)
		if _, err := io.ReadFull(br, f[8:]); err != nil {
			fail(err)
			return
		}
		id := binary.LittleEndian.Uint32(f[20:])
		d := codec.NewDecoder(f[msgHeader : msgHeader+e.respBody])
		_, ok := d.Message().(*ua.ReadResponse)
		var err error
		if !ok {
			err = fmt.Errorf("echo: response does not decode: %v", d.Err())
		}
		e.mu.Lock()
		w := e.waiters[id]
		delete(e.waiters, id)
		e.mu.Unlock()
		if w != nil {
			w <- err
		}
	}
}
