// Package wire is what crosses a plugin boundary, in both directions and for both
// hosts: batches of nodemgr frames, and the JSON log records a plugin hands its host.
//
// A batch is UInt32 n, then n frames, each as a UInt32 length and the frame's bytes
// (nodemgr.Frame, in the OPC UA binary encoding). The host sends a batch of requests and
// gets back a batch with one reply per request, in the same order, so that one call
// across the boundary carries the work of many concurrent requests. All integers are
// little-endian, as everywhere in OPC UA binary.
package wire

import (
	"encoding/binary"
	"fmt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
)

// MaxFrames bounds the frames of one batch: a batch claiming more is malformed.
const MaxFrames = 4096

// Batch builds a batch of frames in one buffer. Its zero value is ready; it keeps its
// buffer and encoder across Resets, so that a batch built again allocates nothing.
type Batch struct {
	buf []byte
	n   int
	e   codec.Encoder
}

// Reset empties b, keeping its buffer.
func (b *Batch) Reset() { b.buf, b.n = append(b.buf[:0], 0, 0, 0, 0), 0 }

// ResetTo empties b and builds the next batch in buf's memory (buf's length is
// ignored), so that the caller owns the buffer Bytes returns.
func (b *Batch) ResetTo(buf []byte) {
	b.buf = buf[:0]
	b.Reset()
}

// Add appends f. On an encoding error b is unchanged and the error is returned.
func (b *Batch) Add(f *nodemgr.Frame) error {
	if len(b.buf) == 0 {
		b.Reset()
	}
	if b.n == MaxFrames {
		return fmt.Errorf("wire: more than %d frames in a batch: %w", MaxFrames, status.BadTooManyOperations)
	}
	at := len(b.buf)
	b.buf = append(b.buf, 0, 0, 0, 0)
	// Encoded into the spare capacity: when it suffices, the append below copies the
	// bytes onto themselves; when it does not, the encoder grew a buffer of its own.
	b.e.Reset(b.buf[len(b.buf):])
	f.EncodeBinary(&b.e)
	if err := b.e.Err(); err != nil {
		b.buf = b.buf[:at]
		return err
	}
	b.buf = append(b.buf, b.e.Bytes()...)
	binary.LittleEndian.PutUint32(b.buf[at:], uint32(len(b.buf)-at-4))
	b.n++
	return nil
}

// Len returns the number of frames added since Reset.
func (b *Batch) Len() int { return b.n }

// Bytes returns the batch; it is valid until the next Reset or Add.
func (b *Batch) Bytes() []byte {
	if len(b.buf) == 0 {
		b.Reset()
	}
	binary.LittleEndian.PutUint32(b.buf, uint32(b.n))
	return b.buf
}

// Split calls each with the bytes of every frame of batch, in order, and fails with
// BadDecodingError when the batch is malformed (a length past the end, bytes left over,
// more than MaxFrames frames); each is not called for a malformed batch. The bytes
// passed alias batch.
func Split(batch []byte, each func(i int, frame []byte)) error {
	n, err := Count(batch)
	if err != nil {
		return err
	}
	rest := batch[4:]
	for i := range n {
		size := int(binary.LittleEndian.Uint32(rest))
		each(i, rest[4:4+size])
		rest = rest[4+size:]
	}
	return nil
}

// Count checks batch and returns the number of frames it holds.
func Count(batch []byte) (int, error) {
	if len(batch) < 4 {
		return 0, fmt.Errorf("wire: batch of %d bytes: %w", len(batch), status.BadDecodingError)
	}
	n := binary.LittleEndian.Uint32(batch)
	if n > MaxFrames {
		return 0, fmt.Errorf("wire: batch of %d frames: %w", n, status.BadDecodingError)
	}
	rest := batch[4:]
	for i := range int(n) {
		if len(rest) < 4 {
			return 0, fmt.Errorf("wire: frame %d: length cut off: %w", i, status.BadDecodingError)
		}
		size := binary.LittleEndian.Uint32(rest)
		if uint64(size) > uint64(len(rest)-4) {
			return 0, fmt.Errorf("wire: frame %d: %d bytes, %d left: %w", i, size, len(rest)-4, status.BadDecodingError)
		}
		rest = rest[4+size:]
	}
	if len(rest) != 0 {
		return 0, fmt.Errorf("wire: %d bytes after the last frame: %w", len(rest), status.BadDecodingError)
	}
	return int(n), nil
}

// Limits are the decoding limits for frames from a plugin: a plugin is not trusted
// more than a client.
var Limits = codec.DefaultLimits
