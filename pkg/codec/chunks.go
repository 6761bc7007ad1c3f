package codec

import "unsafe"

// ChunkSource supplies the windows a chunked Encoder writes into (see ResetChunks).
type ChunkSource interface {
	// NextChunk returns the next window: an empty slice with a capacity of at least
	// MinChunkWindow bytes, which the Encoder fills up to its capacity and never beyond.
	NextChunk() []byte
}

// MinChunkWindow is the smallest window a ChunkSource may hand out.
const MinChunkWindow = 4 * chunkSlack

// chunkSlack is the room a chunked Encoder keeps in its window at every writer that is not
// inlined: the fixed-size writes inlined between two such writers (a header, a run of
// numeric fields) fit in it, so they need no test of their own and cost what they cost
// unchunked.
const chunkSlack = 64

// ResetChunks makes e write into first and, when a window is nearly full, into the next
// one from src, instead of growing one buffer: the secure channel encodes a message
// straight into the bodies of its chunks (Part 6 §6.7.2.2, open62541's exchangeBuffer).
// A window may end up to chunkSlack bytes short of its capacity; strings and byte strings
// are split wherever it ends. A run of inlined fixed-size writes longer than the slack (a
// long array of numbers) may overflow a window: append then moves the bytes to a new
// array, and the next writer that is not inlined (or Chunks) copies them back into
// windows, which costs an allocation but no correctness. The length of an ExtensionObject
// body is patched in place, in whichever window holds it, so no window may be sealed
// before the encoding ends. Reset (or another ResetChunks) ends chunked mode.
func (e *Encoder) ResetChunks(first []byte, src ChunkSource) {
	e.Reset(first)
	e.src, e.win = src, first[:0:cap(first)]
}

// Chunks returns the windows written, in order, the current one last; each is the
// written part of a window handed in. Call it once, when the encoding is done; the slices
// alias the windows and the returned slice is valid until e is used again.
func (e *Encoder) Chunks() [][]byte {
	if e.src == nil {
		return nil
	}
	if e.overflowed() {
		e.spill()
	}
	out := append(e.done, e.buf)
	e.done = out[:len(out)-1] // keeps the capacity for the next message
	return out
}

// fit is called at the start of every writer that is not inlined; unchunked it costs one
// test.
func (e *Encoder) fit() {
	if e.src != nil {
		e.fitChunk()
	}
}

// fitChunk repairs an overflow and moves to the next window when fewer than chunkSlack
// bytes are left.
func (e *Encoder) fitChunk() {
	if e.overflowed() {
		e.spill()
	}
	if cap(e.buf)-len(e.buf) < chunkSlack {
		e.exchange()
	}
}

// overflowed reports whether append has moved the current window's bytes to a new array.
func (e *Encoder) overflowed() bool {
	return unsafe.SliceData(e.buf) != unsafe.SliceData(e.win)
}

// spill copies the bytes of an overflowed window back: those that fit into the window,
// the rest into the following windows.
func (e *Encoder) spill() {
	b := e.buf
	n := copy(e.win[:cap(e.win)], b)
	e.buf = e.win[:n]
	e.put(b[n:])
}

// exchange moves a chunked Encoder to its next window.
func (e *Encoder) exchange() {
	e.done = append(e.done, e.buf)
	e.base += len(e.buf)
	w := e.src.NextChunk()
	e.win, e.buf = w[:0:cap(w)], w[:0]
}

// put appends b, split over windows when chunked.
func (e *Encoder) put(b []byte) {
	if e.src == nil {
		e.buf = append(e.buf, b...)
		return
	}
	if e.overflowed() {
		e.spill()
	}
	for {
		n := copy(e.buf[len(e.buf):cap(e.buf)], b)
		e.buf = e.buf[:len(e.buf)+n]
		b = b[n:]
		if len(b) == 0 {
			return
		}
		e.exchange()
	}
}

// putString is put for a string, without converting it.
func (e *Encoder) putString(s string) {
	if e.src == nil {
		e.buf = append(e.buf, s...)
		return
	}
	e.put(unsafe.Slice(unsafe.StringData(s), len(s))) // only read
}

// patchUint32 stores v little-endian at offset at of the whole encoding, which lies before
// the current buffer; its bytes may lie in two windows.
func (e *Encoder) patchUint32(at int, v uint32) {
	for k := range 4 {
		pos := at + k
		if pos >= e.base {
			e.buf[pos-e.base] = byte(v >> (8 * k))
			continue
		}
		start := e.base
		for i := len(e.done) - 1; i >= 0; i-- {
			start -= len(e.done[i])
			if pos >= start {
				e.done[i][pos-start] = byte(v >> (8 * k))
				break
			}
		}
	}
}
