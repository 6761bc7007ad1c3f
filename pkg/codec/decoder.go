package codec

import (
	"encoding/binary"
	"math"

	"uastack.dev/pkg/status"
)

// Decoder reads OPC UA binary values from a byte slice.
//
// Every length read from the wire is checked against the Limits and against the bytes left
// before memory is allocated, and the memory the decoded values take is charged against a
// budget of Limits.MaxDecodeMultiple times the message's size (see Charge). The first
// error sticks: once Err is set, every read returns a zero value and consumes nothing, so
// callers check Err once at the end. Decoded strings and byte strings are copies; nothing
// returned aliases the input. A Decoder is not safe for concurrent use.
type Decoder struct {
	buf    []byte
	pos    int
	err    error
	depth  int
	budget int // bytes of memory the values of this message may still take (see Charge)
	limits Limits
	ids    *idCache // nil unless CacheNodeIds turned it on
}

// NewDecoder returns a Decoder over b with DefaultLimits.
func NewDecoder(b []byte) *Decoder {
	d := &Decoder{limits: DefaultLimits}
	d.Reset(b)
	return d
}

// NewDecoderLimits returns a Decoder over b with the given limits; zero fields take the
// defaults.
func NewDecoderLimits(b []byte, l Limits) *Decoder {
	d := &Decoder{limits: l.withDefaults()}
	d.Reset(b)
	return d
}

// Reset makes d read b from its start and forgets any error. The limits are kept, and the
// decode budget starts afresh from len(b).
func (d *Decoder) Reset(b []byte) {
	if d.limits.MaxDepth == 0 {
		d.limits = DefaultLimits
	}
	d.buf, d.pos, d.err, d.depth = b, 0, nil, 0
	d.budget = d.limits.decodeBudget(len(b))
	if len(b) > d.limits.MaxMessageSize {
		d.Fail(status.BadEncodingLimitsExceeded)
	}
}

// SetLimits replaces the limits; zero fields take the defaults. The decode budget starts
// afresh from the size of the buffer.
func (d *Decoder) SetLimits(l Limits) {
	d.limits = l.withDefaults()
	d.budget = d.limits.decodeBudget(len(d.buf))
}

// Limits returns the limits in force.
func (d *Decoder) Limits() Limits { return d.limits }

// Err returns the first error met, as a status.Code, or nil.
func (d *Decoder) Err() error { return d.err }

// Pos returns the offset of the next byte to read.
func (d *Decoder) Pos() int { return d.pos }

// Remaining returns the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.pos }

// Fail records err unless an earlier error is recorded, and stops all further reads.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.pos = len(d.buf)
}

// Charge counts n bytes of memory that a decoded value is about to take against the
// message's budget, Limits.MaxDecodeMultiple times its size on the wire (at least
// Limits.MinDecodeBudget), and reports whether they fit. When they do not, it fails the
// decode with BadEncodingLimitsExceeded and reports false, and the caller allocates
// nothing. The Decoder charges its own allocations (arrays, strings, byte strings, boxed
// and nested values); a decoder of a structure calls Charge before it makes memory the
// Decoder does not, such as an optional field's value, and reads arrays with
// SizedArrayLength.
func (d *Decoder) Charge(n int) bool {
	// Unsigned, so that a negative n (an overflowed product) does not fit.
	if uint(n) <= uint(d.budget) {
		d.budget -= n
		return true
	}
	d.Fail(status.BadEncodingLimitsExceeded)
	return false
}

// take returns the next n bytes, or nil after recording BadDecodingError when fewer remain.
func (d *Decoder) take(n int) []byte {
	if n > len(d.buf)-d.pos {
		d.Fail(status.BadDecodingError)
		return nil
	}
	b := d.buf[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return b
}

// Boolean reads one byte; any non-zero value is true (Part 6 §5.2.2.1).
func (d *Decoder) Boolean() bool { return d.Byte() != 0 }

// SByte reads a signed byte.
func (d *Decoder) SByte() int8 { return int8(d.Byte()) }

// Byte reads a byte.
func (d *Decoder) Byte() byte {
	if d.pos >= len(d.buf) {
		d.Fail(status.BadDecodingError)
		return 0
	}
	b := d.buf[d.pos]
	d.pos++
	return b
}

// Int16 reads a little-endian Int16.
func (d *Decoder) Int16() int16 { return int16(d.UInt16()) }

// UInt16 reads a little-endian UInt16.
func (d *Decoder) UInt16() uint16 {
	if d.pos+2 > len(d.buf) {
		d.Fail(status.BadDecodingError)
		return 0
	}
	v := binary.LittleEndian.Uint16(d.buf[d.pos:])
	d.pos += 2
	return v
}

// Int32 reads a little-endian Int32.
func (d *Decoder) Int32() int32 { return int32(d.UInt32()) }

// UInt32 reads a little-endian UInt32.
func (d *Decoder) UInt32() uint32 {
	if d.pos+4 > len(d.buf) {
		d.Fail(status.BadDecodingError)
		return 0
	}
	v := binary.LittleEndian.Uint32(d.buf[d.pos:])
	d.pos += 4
	return v
}

// Int64 reads a little-endian Int64.
func (d *Decoder) Int64() int64 { return int64(d.UInt64()) }

// UInt64 reads a little-endian UInt64.
func (d *Decoder) UInt64() uint64 {
	if d.pos+8 > len(d.buf) {
		d.Fail(status.BadDecodingError)
		return 0
	}
	v := binary.LittleEndian.Uint64(d.buf[d.pos:])
	d.pos += 8
	return v
}

// Float reads an IEEE-754 single.
func (d *Decoder) Float() float32 { return math.Float32frombits(d.UInt32()) }

// Double reads an IEEE-754 double.
func (d *Decoder) Double() float64 { return math.Float64frombits(d.UInt64()) }

// StatusCode reads a StatusCode.
func (d *Decoder) StatusCode() status.Code { return status.Code(d.UInt32()) }

// DateTime reads a DateTime, clamped as Part 6 §5.2.2.5 requires.
func (d *Decoder) DateTime() DateTime { return DateTime(d.Int64()).clamp() }

// Guid reads a Guid.
func (d *Decoder) Guid() Guid {
	b := d.take(16)
	if b == nil {
		return Guid{}
	}
	var g Guid
	g.Data1 = binary.LittleEndian.Uint32(b)
	g.Data2 = binary.LittleEndian.Uint16(b[4:])
	g.Data3 = binary.LittleEndian.Uint16(b[6:])
	copy(g.Data4[:], b[8:])
	return g
}

// length reads an Int32 length prefix: -1 for null, the length otherwise. A length over max
// or over the bytes left fails before anything is allocated.
func (d *Decoder) length(max int) int {
	n := d.Int32()
	if d.err != nil {
		return -1
	}
	if n < 0 {
		// Part 6 treats any negative length as null.
		return -1
	}
	if int(n) > max {
		d.Fail(status.BadEncodingLimitsExceeded)
		return -1
	}
	if int(n) > len(d.buf)-d.pos {
		d.Fail(status.BadDecodingError)
		return -1
	}
	return int(n)
}

// String reads a String. A null string decodes to "" and an empty one to EmptyString, so
// that re-encoding keeps the difference (see IsNull).
func (d *Decoder) String() string {
	n := d.length(d.limits.MaxStringLength)
	switch {
	case n < 0:
		return ""
	case n == 0:
		return EmptyString
	}
	if !d.Charge(n) {
		return ""
	}
	s := string(d.buf[d.pos : d.pos+n])
	d.pos += n
	return s
}

// XmlElement reads an XmlElement like a String.
func (d *Decoder) XmlElement() string { return d.String() }

// ByteString reads a ByteString: nil when null, a non-nil empty slice when empty.
func (d *Decoder) ByteString() []byte {
	n := d.length(d.limits.MaxByteStringLength)
	if n < 0 || !d.Charge(n) {
		return nil
	}
	b := make([]byte, n)
	copy(b, d.buf[d.pos:])
	d.pos += n
	return b
}

// ArrayLength reads an array's Int32 length prefix; -1 means null (or an error). Each
// element takes at least minSize bytes on the wire, so a length the remaining bytes
// cannot hold fails before the caller allocates. It charges nothing against the decode
// budget: a caller that makes a slice of the length uses SizedArrayLength.
func (d *Decoder) ArrayLength(minSize int) int {
	n := d.Int32()
	if d.err != nil || n < 0 {
		return -1
	}
	if int(n) > d.limits.MaxArrayLength {
		d.Fail(status.BadEncodingLimitsExceeded)
		return -1
	}
	if minSize > 0 && int(n) > (len(d.buf)-d.pos)/minSize {
		d.Fail(status.BadDecodingError)
		return -1
	}
	return int(n)
}

// SizedArrayLength is ArrayLength for an array whose elements take elemSize bytes each in
// memory (unsafe.Sizeof of one): it charges the slice, length × elemSize, against the
// decode budget (see Charge), so that a length the budget cannot hold fails with
// BadEncodingLimitsExceeded before the caller allocates.
func (d *Decoder) SizedArrayLength(minSize, elemSize int) int {
	n := d.ArrayLength(minSize)
	if n > 0 && !d.Charge(n*elemSize) {
		return -1
	}
	return n
}

// Enter counts one level of nesting and reports whether it is within MaxDepth. Each Enter
// that returns true must be paired with Leave.
func (d *Decoder) Enter() bool {
	if d.depth >= d.limits.MaxDepth {
		d.Fail(status.BadEncodingLimitsExceeded)
		return false
	}
	d.depth++
	return true
}

// Leave undoes one Enter.
func (d *Decoder) Leave() { d.depth-- }
