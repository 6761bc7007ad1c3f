package codec

import (
	"encoding/binary"
	"math"
	"unsafe"

	"uastack.dev/pkg/status"
)

// Encoder appends the OPC UA binary encoding of values to a buffer.
//
// The buffer belongs to the caller: Reset hands one in, Bytes hands it back. Once the buffer
// has grown to fit a message, encoding the next message of that size allocates nothing.
// The first error sticks; later writes still append but Err reports the first failure.
// An Encoder is not safe for concurrent use.
type Encoder struct {
	buf   []byte
	err   error
	depth int
	// Chunked mode (ResetChunks): win is the current window, buf its written part (or,
	// after an overflow, a copy that append made), done the full windows and base the
	// bytes in them.
	src  ChunkSource
	win  []byte
	done [][]byte
	base int
}

// NewEncoder returns an Encoder appending to buf[:0].
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf[:0]} }

// Reset makes e append to buf[:0] and forgets any error.
func (e *Encoder) Reset(buf []byte) {
	e.buf = buf[:0]
	e.err = nil
	e.depth = 0
	if e.src != nil || len(e.done) > 0 {
		clear(e.done)
		e.src, e.win, e.done, e.base = nil, nil, e.done[:0], 0
	}
}

// Bytes returns the encoded bytes. They alias the Encoder's buffer. A chunked Encoder
// returns the written part of its current window (see Chunks).
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of bytes encoded so far.
func (e *Encoder) Len() int { return e.base + len(e.buf) }

// Err returns the first error met while encoding, as a status.Code.
func (e *Encoder) Err() error { return e.err }

// Fail records err unless an earlier error is already recorded.
func (e *Encoder) Fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// Raw appends b unchanged.
func (e *Encoder) Raw(b []byte) { e.put(b) }

// Boolean writes 1 for true and 0 for false (Part 6 §5.2.2.1).
func (e *Encoder) Boolean(v bool) {
	var b byte
	if v {
		b = 1
	}
	e.buf = append(e.buf, b)
}

// SByte writes v.
func (e *Encoder) SByte(v int8) { e.buf = append(e.buf, byte(v)) }

// Byte writes v.
func (e *Encoder) Byte(v byte) { e.buf = append(e.buf, v) }

// Int16 writes v little-endian.
func (e *Encoder) Int16(v int16) { e.buf = binary.LittleEndian.AppendUint16(e.buf, uint16(v)) }

// UInt16 writes v little-endian.
func (e *Encoder) UInt16(v uint16) { e.buf = binary.LittleEndian.AppendUint16(e.buf, v) }

// Int32 writes v little-endian.
func (e *Encoder) Int32(v int32) { e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(v)) }

// UInt32 writes v little-endian.
func (e *Encoder) UInt32(v uint32) { e.buf = binary.LittleEndian.AppendUint32(e.buf, v) }

// Int64 writes v little-endian.
func (e *Encoder) Int64(v int64) { e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(v)) }

// UInt64 writes v little-endian.
func (e *Encoder) UInt64(v uint64) { e.buf = binary.LittleEndian.AppendUint64(e.buf, v) }

// Float writes v as IEEE-754 single precision.
func (e *Encoder) Float(v float32) { e.UInt32(math.Float32bits(v)) }

// Double writes v as IEEE-754 double precision.
func (e *Encoder) Double(v float64) { e.UInt64(math.Float64bits(v)) }

// StatusCode writes v as a UInt32.
func (e *Encoder) StatusCode(v status.Code) { e.UInt32(uint32(v)) }

// DateTime writes v, clamped to the range Part 6 §5.2.2.5 allows.
func (e *Encoder) DateTime(v DateTime) { e.Int64(int64(v.clamp())) }

// Guid writes v in its mixed-endian binary form (Part 6 §5.2.2.6).
func (e *Encoder) Guid(v Guid) {
	e.buf = binary.LittleEndian.AppendUint32(e.buf, v.Data1)
	e.buf = binary.LittleEndian.AppendUint16(e.buf, v.Data2)
	e.buf = binary.LittleEndian.AppendUint16(e.buf, v.Data3)
	e.buf = append(e.buf, v.Data4[:]...)
}

// String writes v with an Int32 length prefix; a null string (see IsNull) is written as -1.
func (e *Encoder) String(v string) {
	e.fit()
	if len(v) == 0 {
		if unsafe.StringData(v) == nil {
			e.Int32(-1)
		} else {
			e.Int32(0)
		}
		return
	}
	if len(v) > math.MaxInt32 {
		e.Fail(status.BadEncodingLimitsExceeded)
		e.Int32(-1)
		return
	}
	e.Int32(int32(len(v)))
	e.putString(v)
}

// XmlElement writes v like a String.
func (e *Encoder) XmlElement(v string) { e.String(v) }

// ByteString writes v with an Int32 length prefix; nil is written as -1.
func (e *Encoder) ByteString(v []byte) {
	e.fit()
	if v == nil {
		e.Int32(-1)
		return
	}
	if len(v) > math.MaxInt32 {
		e.Fail(status.BadEncodingLimitsExceeded)
		e.Int32(-1)
		return
	}
	e.Int32(int32(len(v)))
	e.put(v)
}

// ArrayLength writes the Int32 length prefix of an array; null arrays are written as -1.
func (e *Encoder) ArrayLength(n int, null bool) {
	if null {
		e.Int32(-1)
		return
	}
	if n > math.MaxInt32 {
		e.Fail(status.BadEncodingLimitsExceeded)
	}
	e.Int32(int32(n))
}

// reserveLength writes a placeholder for a length prefix and returns its offset for
// patchLength.
func (e *Encoder) reserveLength() int {
	e.fit()
	at := e.Len()
	e.buf = append(e.buf, 0, 0, 0, 0)
	return at
}

// patchLength stores the number of bytes written since the placeholder at at.
func (e *Encoder) patchLength(at int) {
	if at >= e.base {
		binary.LittleEndian.PutUint32(e.buf[at-e.base:], uint32(len(e.buf)-at+e.base-4))
		return
	}
	e.patchUint32(at, uint32(e.Len()-at-4))
}

func (e *Encoder) enter() bool {
	e.depth++
	if e.depth > DefaultLimits.MaxDepth {
		e.Fail(status.BadEncodingLimitsExceeded)
		return false
	}
	return true
}

func (e *Encoder) leave() { e.depth-- }
