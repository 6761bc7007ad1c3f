package codec

// OPC UA JSON encoder (Part 6 §5.4, version 1.05): CompactEncoding and VerboseEncoding.

import (
	"io"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"uastack.dev/pkg/status"
)

// DefaultJSONFlushThreshold is the number of buffered bytes past which a JSONEncoder
// writes to its io.Writer at the next member boundary.
const DefaultJSONFlushThreshold = 4 << 10

// JSON encoder buffers come from one size class. A buffer that grew past
// jsonPoolMaxCap (a single huge value) is zeroed and left to the collector.
const (
	jsonPoolCap    = 8 << 10
	jsonPoolMaxCap = 64 << 10
)

// jsonBufPool holds *[]byte of capacity jsonPoolCap to jsonPoolMaxCap whose bytes are all
// zero.
//
// Ownership: a JSONEncoder takes a buffer on its first write and owns it until Flush
// (or Reset) zeroes the bytes it used and puts it back; after Put nobody may touch it.
var jsonBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, jsonPoolCap)
	return &b
}}

// JSON container kinds, shared by the encoder and decoder stacks.
const (
	jsonObject byte = 1
	jsonArray  byte = 2
)

// encFrame is one open container of the encoder.
type encFrame struct {
	kind  byte
	count int // members or elements written so far: a comma precedes all but the first
	want  int // elements announced by FieldArray, -1 when not checked
}

// JSONEncoder writes the OPC UA JSON encoding of values to an io.Writer, in the compact or
// the verbose form (Part 6 §5.4.1).
//
// Output is built in a pooled buffer and written to the io.Writer only at structural
// boundaries (the end of an object member or array element) once more than the flush
// threshold is buffered, so a reader never sees a write end inside a token. Flush writes
// the rest and returns the buffer to the pool, zeroed first since it may have held
// secrets. After the first error every write is discarded; Err reports it (a status.Code
// for invalid values, the io.Writer's error for failed writes). Once warm, encoding
// allocates nothing per value. Values written at the top level, outside any object or
// array, are separated by newlines. A JSONEncoder is not safe for concurrent use.
type JSONEncoder struct {
	w         io.Writer
	verbose   bool
	threshold int
	err       error

	buf  *[]byte // the pool's handle for b; nil when b was grown here or none is held
	b    []byte  // the buffer; nil when none is held
	high int     // most bytes b has held since it was taken: the part to zero

	frames   []encFrame
	frameBuf [16]encFrame
	afterKey bool // a member name was written and its value is due
	top      int  // top-level values written; later ones are separated by '\n'
	depth    int  // OPC UA nesting (Variants, structures, ...), limited like the binary Encoder

	// typeIDPending makes the next BeginObject write "UaTypeId" first (ExtensionObject).
	typeIDPending bool
	typeID        NodeId

	namespaces []string
	scratch    []byte // NodeId and QualifiedName text before quoting
}

// NewJSONEncoder returns an encoder streaming to w.
func NewJSONEncoder(w io.Writer, verbose bool) *JSONEncoder {
	e := &JSONEncoder{w: w, verbose: verbose, threshold: DefaultJSONFlushThreshold}
	e.frames = e.frameBuf[:0]
	return e
}

// Reset makes e write to w from a clean state, keeping the form, threshold and namespace
// table. Buffered bytes not yet flushed are dropped and the buffer is returned.
func (e *JSONEncoder) Reset(w io.Writer) {
	e.release()
	e.w, e.err = w, nil
	e.frames = e.frameBuf[:0]
	e.afterKey, e.top, e.depth = false, 0, 0
	e.typeIDPending, e.typeID = false, NodeId{}
}

// Verbose reports whether the verbose form is written.
func (e *JSONEncoder) Verbose() bool { return e.verbose }

// SetFlushThreshold sets how many buffered bytes trigger a write at the next member
// boundary; n <= 0 restores DefaultJSONFlushThreshold.
func (e *JSONEncoder) SetFlushThreshold(n int) {
	if n <= 0 {
		n = DefaultJSONFlushThreshold
	}
	e.threshold = n
}

// SetNamespaceURIs gives the NamespaceArray of the context (uris[i] is namespace index i).
// With it, NodeIds, ExpandedNodeIds and QualifiedNames outside namespace 0 are written in
// the "nsu=" form of Part 6 §5.1.12; without it, or for an index it does not cover, the
// index form is written, as §5.4.2.10 prescribes when no URI is known. The slice is
// retained and must not change while e uses it.
func (e *JSONEncoder) SetNamespaceURIs(uris []string) { e.namespaces = uris }

// Err returns the first error met, or nil.
func (e *JSONEncoder) Err() error { return e.err }

// Fail records err unless an earlier error is recorded; later output is discarded.
func (e *JSONEncoder) Fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// Flush writes all buffered bytes and returns the buffer to the pool. It returns Err.
func (e *JSONEncoder) Flush() error {
	e.flushBuf()
	e.release()
	return e.err
}

// ---- buffer management ----

// grow makes room for n more bytes. It never lets append reallocate: a larger buffer is
// made here and the old one is zeroed (and, if pooled, put back) before it is dropped.
func (e *JSONEncoder) grow(n int) {
	if e.b == nil {
		e.buf = jsonBufPool.Get().(*[]byte)
		e.b = (*e.buf)[:0]
	}
	if cap(e.b)-len(e.b) >= n {
		return
	}
	nb := make([]byte, len(e.b), 2*cap(e.b)+n)
	copy(nb, e.b)
	clear(e.b[:cap(e.b)])
	if e.buf != nil {
		*e.buf = e.b[:0]
		jsonBufPool.Put(e.buf)
		e.buf = nil
	}
	e.b = nb
	e.high = len(nb)
}

// flushBuf writes the buffered bytes unless an error is recorded, then empties the buffer.
func (e *JSONEncoder) flushBuf() {
	if len(e.b) > e.high {
		e.high = len(e.b)
	}
	if len(e.b) > 0 && e.err == nil {
		if _, err := e.w.Write(e.b); err != nil {
			e.err = err
		}
	}
	e.b = e.b[:0]
}

// release zeroes the used part of the buffer and returns it to the pool; a buffer grown
// past jsonPoolMaxCap is zeroed and dropped.
func (e *JSONEncoder) release() {
	if e.b == nil {
		return
	}
	if len(e.b) > e.high {
		e.high = len(e.b)
	}
	clear(e.b[:e.high])
	if cap(e.b) <= jsonPoolMaxCap {
		p := e.buf
		if p == nil {
			p = new([]byte)
		}
		*p = e.b[:0]
		jsonBufPool.Put(p)
	}
	e.buf, e.b, e.high = nil, nil, 0
}

func (e *JSONEncoder) raw(s string) {
	e.grow(len(s))
	e.b = append(e.b, s...)
}

func (e *JSONEncoder) rawBytes(p []byte) {
	e.grow(len(p))
	e.b = append(e.b, p...)
}

func (e *JSONEncoder) rawByte(c byte) {
	e.grow(1)
	e.b = append(e.b, c)
}

// ---- structure: separators, containers, boundaries ----

// beforeValue writes what must precede a value: nothing after a member name, a comma
// between array elements, a newline between top-level values.
func (e *JSONEncoder) beforeValue() {
	if e.afterKey {
		e.afterKey = false
		return
	}
	n := len(e.frames)
	if n == 0 {
		if e.top > 0 {
			e.rawByte('\n')
		}
		e.top++
		return
	}
	f := &e.frames[n-1]
	if f.kind != jsonArray {
		// A value in an object needs a member name first.
		e.Fail(status.BadEncodingError)
	}
	if f.count > 0 {
		e.rawByte(',')
	}
	f.count++
}

// afterValue marks the end of a member or element: the only place output is written.
func (e *JSONEncoder) afterValue() {
	if len(e.b) >= e.threshold {
		e.flushBuf()
	}
}

func (e *JSONEncoder) push(kind byte, want int) {
	e.frames = append(e.frames, encFrame{kind: kind, want: want})
}

// key writes the name of the next member of the open object.
func (e *JSONEncoder) key(name string) {
	if e.afterKey {
		// The previous member got no value.
		e.Fail(status.BadEncodingError)
		e.afterKey = false
		e.raw("null")
	}
	n := len(e.frames)
	if n == 0 || e.frames[n-1].kind != jsonObject {
		e.Fail(status.BadEncodingError)
		return
	}
	f := &e.frames[n-1]
	if f.count > 0 {
		e.rawByte(',')
	}
	f.count++
	e.quote(name)
	e.rawByte(':')
	e.afterKey = true
}

// BeginObject starts a JSON object.
func (e *JSONEncoder) BeginObject() {
	e.beforeValue()
	e.rawByte('{')
	e.push(jsonObject, -1)
	if e.typeIDPending {
		// Part 6 §5.4.2.16: the ExtensionObject's UaTypeId is inserted, first, into the
		// structure's own object.
		e.typeIDPending = false
		e.key("UaTypeId")
		e.NodeId(e.typeID)
	}
}

// EndObject ends a JSON object.
func (e *JSONEncoder) EndObject() {
	n := len(e.frames)
	if n == 0 || e.frames[n-1].kind != jsonObject {
		e.Fail(status.BadEncodingError)
		return
	}
	if e.afterKey {
		e.Fail(status.BadEncodingError)
		e.afterKey = false
		e.raw("null")
	}
	e.rawByte('}')
	e.frames = e.frames[:n-1]
	e.afterValue()
}

// beginArray starts an array value of n elements (n < 0: not checked).
func (e *JSONEncoder) beginArray(n int) {
	e.beforeValue()
	e.rawByte('[')
	e.push(jsonArray, n)
}

// EndArray ends an array started by FieldArray. Writing another number of elements than
// announced is an error.
func (e *JSONEncoder) EndArray() {
	n := len(e.frames)
	if n == 0 || e.frames[n-1].kind != jsonArray {
		e.Fail(status.BadEncodingError)
		return
	}
	if f := e.frames[n-1]; f.want >= 0 && f.count != f.want {
		e.Fail(status.BadEncodingError)
	}
	e.rawByte(']')
	e.frames = e.frames[:n-1]
	e.afterValue()
}

// Field writes the key of the next member; the next value writer writes its value.
func (e *JSONEncoder) Field(name string) { e.key(name) }

// FieldArray starts an array member. It reports whether the caller should write the n
// elements and then call EndArray; false means the member was omitted or written as null.
// A null array is left out of the compact form and written as null in the verbose form;
// an empty array is written as [] (Part 6 §5.4.2.1, §5.4.5).
func (e *JSONEncoder) FieldArray(name string, n int, null bool) bool {
	if null {
		if e.verbose {
			e.key(name)
			e.null()
		}
		return false
	}
	if n > math.MaxInt32 {
		e.Fail(status.BadEncodingLimitsExceeded)
	}
	e.key(name)
	e.beginArray(n)
	return true
}

// FieldEncodingMask writes the EncodingMask of a structure with optional fields where the
// form requires it: in the compact form only, and not when it is 0 (Part 6 §5.4.7). The
// verbose form marks optional fields by their presence.
func (e *JSONEncoder) FieldEncodingMask(mask uint32) {
	if e.verbose || mask == 0 {
		return
	}
	e.key("EncodingMask")
	e.UInt32(mask)
}

// FieldSwitch writes the SwitchField of a union where the form requires it: in the
// compact form only, and not for 0, the union with no field, which is an empty object
// (Part 6 §5.4.8). The verbose form names the active field.
func (e *JSONEncoder) FieldSwitch(sw uint32) {
	if e.verbose || sw == 0 {
		return
	}
	e.key("SwitchField")
	e.UInt32(sw)
}

func (e *JSONEncoder) enter() bool {
	if e.depth >= DefaultLimits.MaxDepth {
		e.Fail(status.BadEncodingLimitsExceeded)
		return false
	}
	e.depth++
	return true
}

func (e *JSONEncoder) leave() { e.depth-- }

// FieldStruct writes a structure member; a nil v is left out of the compact form and
// written as null in the verbose form.
func (e *JSONEncoder) FieldStruct(name string, v Structure) {
	if v == nil {
		if e.verbose {
			e.key(name)
			e.null()
		}
		return
	}
	e.key(name)
	e.Struct(v)
}

// Struct writes a structure value (its EncodeJSON), or null for nil.
func (e *JSONEncoder) Struct(v Structure) {
	if v == nil {
		e.null()
		return
	}
	if !e.enter() {
		e.null()
		return
	}
	n := len(e.frames)
	v.EncodeJSON(e)
	if len(e.frames) != n {
		e.Fail(status.BadEncodingError)
	}
	e.leave()
}

// FieldEnum writes an enumeration member; names gives the symbolic name of a value. The
// compact form leaves out 0.
func (e *JSONEncoder) FieldEnum(name string, v int64, names func(int64) string) {
	if !e.verbose && v == 0 {
		return
	}
	e.key(name)
	e.Enum(v, names)
}

// Enum writes an enumeration value: a number in the compact form, the string
// "<name>_<value>" in the verbose form, or the value as a string when names (which may be
// nil) does not know it (Part 6 §5.4.4).
func (e *JSONEncoder) Enum(v int64, names func(int64) string) {
	if !e.verbose {
		e.int(v)
		return
	}
	e.beforeValue()
	e.grow(24)
	e.b = append(e.b, '"')
	if names != nil {
		if s := names(v); s != "" {
			e.escape(s)
			e.rawByte('_')
		}
	}
	e.grow(24)
	e.b = strconv.AppendInt(e.b, v, 10)
	e.b = append(e.b, '"')
	e.afterValue()
}

func (e *JSONEncoder) null() {
	e.beforeValue()
	e.raw("null")
	e.afterValue()
}

// ---- scalars (Part 6 §5.4.2.2 - §5.4.2.9) ----

// FieldBoolean writes a Boolean member; the compact form leaves out false.
func (e *JSONEncoder) FieldBoolean(name string, v bool) {
	if !e.verbose && !v {
		return
	}
	e.key(name)
	e.Boolean(v)
}

// Boolean writes true or false.
func (e *JSONEncoder) Boolean(v bool) {
	e.beforeValue()
	if v {
		e.raw("true")
	} else {
		e.raw("false")
	}
	e.afterValue()
}

func (e *JSONEncoder) int(v int64) {
	e.beforeValue()
	e.grow(24)
	e.b = strconv.AppendInt(e.b, v, 10)
	e.afterValue()
}

func (e *JSONEncoder) uint(v uint64) {
	e.beforeValue()
	e.grow(24)
	e.b = strconv.AppendUint(e.b, v, 10)
	e.afterValue()
}

// FieldSByte writes a SByte member; the compact form leaves out 0.
func (e *JSONEncoder) FieldSByte(name string, v int8) {
	if !e.verbose && v == 0 {
		return
	}
	e.key(name)
	e.SByte(v)
}

// SByte writes v as a JSON number.
func (e *JSONEncoder) SByte(v int8) { e.int(int64(v)) }

// FieldByte writes a Byte member; the compact form leaves out 0.
func (e *JSONEncoder) FieldByte(name string, v byte) {
	if !e.verbose && v == 0 {
		return
	}
	e.key(name)
	e.Byte(v)
}

// Byte writes v as a JSON number.
func (e *JSONEncoder) Byte(v byte) { e.uint(uint64(v)) }

// FieldInt16 writes a Int16 member; the compact form leaves out 0.
func (e *JSONEncoder) FieldInt16(name string, v int16) {
	if !e.verbose && v == 0 {
		return
	}
	e.key(name)
	e.Int16(v)
}

// Int16 writes v as a JSON number.
func (e *JSONEncoder) Int16(v int16) { e.int(int64(v)) }

// FieldUInt16 writes a UInt16 member; the compact form leaves out 0.
func (e *JSONEncoder) FieldUInt16(name string, v uint16) {
	if !e.verbose && v == 0 {
		return
	}
	e.key(name)
	e.UInt16(v)
}

// UInt16 writes v as a JSON number.
func (e *JSONEncoder) UInt16(v uint16) { e.uint(uint64(v)) }

// FieldInt32 writes a Int32 member; the compact form leaves out 0.
func (e *JSONEncoder) FieldInt32(name string, v int32) {
	if !e.verbose && v == 0 {
		return
	}
	e.key(name)
	e.Int32(v)
}

// Int32 writes v as a JSON number.
func (e *JSONEncoder) Int32(v int32) { e.int(int64(v)) }

// FieldUInt32 writes a UInt32 member; the compact form leaves out 0.
func (e *JSONEncoder) FieldUInt32(name string, v uint32) {
	if !e.verbose && v == 0 {
		return
	}
	e.key(name)
	e.UInt32(v)
}

// UInt32 writes v as a JSON number.
func (e *JSONEncoder) UInt32(v uint32) { e.uint(uint64(v)) }

// FieldInt64 writes a Int64 member; the compact form leaves out 0.
func (e *JSONEncoder) FieldInt64(name string, v int64) {
	if !e.verbose && v == 0 {
		return
	}
	e.key(name)
	e.Int64(v)
}

// Int64 writes v as a decimal JSON string (Part 6 §5.4.2.4).
func (e *JSONEncoder) Int64(v int64) {
	e.beforeValue()
	e.grow(24)
	e.b = append(e.b, '"')
	e.b = strconv.AppendInt(e.b, v, 10)
	e.b = append(e.b, '"')
	e.afterValue()
}

// FieldUInt64 writes a UInt64 member; the compact form leaves out 0.
func (e *JSONEncoder) FieldUInt64(name string, v uint64) {
	if !e.verbose && v == 0 {
		return
	}
	e.key(name)
	e.UInt64(v)
}

// UInt64 writes v as a decimal JSON string (Part 6 §5.4.2.4).
func (e *JSONEncoder) UInt64(v uint64) {
	e.beforeValue()
	e.grow(24)
	e.b = append(e.b, '"')
	e.b = strconv.AppendUint(e.b, v, 10)
	e.b = append(e.b, '"')
	e.afterValue()
}

// FieldFloat writes a Float member; the compact form leaves out 0 (but not -0).
func (e *JSONEncoder) FieldFloat(name string, v float32) {
	if !e.verbose && math.Float32bits(v) == 0 {
		return
	}
	e.key(name)
	e.Float(v)
}

// Float writes v as a JSON number, or "Infinity", "-Infinity" or "NaN" (Part 6 §5.4.2.5).
func (e *JSONEncoder) Float(v float32) { e.float(float64(v), 32) }

// FieldDouble writes a Double member; the compact form leaves out 0 (but not -0).
func (e *JSONEncoder) FieldDouble(name string, v float64) {
	if !e.verbose && math.Float64bits(v) == 0 {
		return
	}
	e.key(name)
	e.Double(v)
}

// Double writes v as a JSON number, or "Infinity", "-Infinity" or "NaN" (Part 6 §5.4.2.5).
func (e *JSONEncoder) Double(v float64) { e.float(v, 64) }

func (e *JSONEncoder) float(f float64, bits int) {
	e.beforeValue()
	switch {
	case math.IsNaN(f):
		e.raw(`"NaN"`)
	case math.IsInf(f, 1):
		e.raw(`"Infinity"`)
	case math.IsInf(f, -1):
		e.raw(`"-Infinity"`)
	default:
		// The shortest text that reads back to the same value; exponent form only for
		// very small or large magnitudes, as ECMAScript prints numbers.
		format := byte('f')
		if a := math.Abs(f); a != 0 {
			if bits == 64 && (a < 1e-6 || a >= 1e21) ||
				bits == 32 && (float32(a) < 1e-6 || float32(a) >= 1e21) {
				format = 'e'
			}
		}
		e.grow(32)
		n := len(e.b)
		e.b = strconv.AppendFloat(e.b, f, format, -1, bits)
		if format == 'e' {
			// e-09 to e-9
			b := e.b[n:]
			if m := len(b); m >= 4 && b[m-4] == 'e' && b[m-3] == '-' && b[m-2] == '0' {
				b[m-2] = b[m-1]
				e.b = e.b[:len(e.b)-1]
			}
		}
	}
	e.afterValue()
}

// FieldString writes a String member. A null String is left out of the compact form and
// written as null in the verbose form; EmptyString is written as "".
func (e *JSONEncoder) FieldString(name string, v string) {
	if !e.verbose && IsNull(v) {
		return
	}
	e.key(name)
	e.String(v)
}

// String writes v as a JSON string, or null for the null String. Invalid UTF-8 is
// replaced by U+FFFD.
func (e *JSONEncoder) String(v string) {
	e.beforeValue()
	if IsNull(v) {
		e.raw("null")
	} else {
		e.quote(v)
	}
	e.afterValue()
}

// FieldDateTime writes a DateTime member; the zero (minimum) DateTime is null: left out
// of the compact form, null in the verbose form.
func (e *JSONEncoder) FieldDateTime(name string, v DateTime) {
	if !e.verbose && v.clamp() == 0 {
		return
	}
	e.key(name)
	e.DateTime(v)
}

// DateTime writes v as an ISO 8601 UTC string with up to 7 fractional digits; the zero
// DateTime is null and MaxDateTime (and anything from the end of 9999 on) is
// "9999-12-31T23:59:59Z" (Part 6 §5.4.2.6).
func (e *JSONEncoder) DateTime(v DateTime) {
	e.beforeValue()
	if v.clamp() == 0 {
		e.raw("null")
	} else {
		e.grow(32)
		e.b = append(e.b, '"')
		e.b = appendDateTime(e.b, v)
		e.b = append(e.b, '"')
	}
	e.afterValue()
}

// FieldGuid writes a Guid member; the all-zero Guid is null: left out of the compact
// form, null in the verbose form.
func (e *JSONEncoder) FieldGuid(name string, v Guid) {
	if !e.verbose && v == (Guid{}) {
		return
	}
	e.key(name)
	e.Guid(v)
}

// Guid writes v as "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX" (Part 6 §5.4.2.7), or null for
// the all-zero Guid.
func (e *JSONEncoder) Guid(v Guid) {
	e.beforeValue()
	if v == (Guid{}) {
		e.raw("null")
	} else {
		e.grow(38)
		n := len(e.b)
		e.b = e.b[:n+38]
		e.b[n] = '"'
		v.format(e.b[n+1 : n+37])
		e.b[n+37] = '"'
	}
	e.afterValue()
}

// FieldByteString writes a ByteString member; nil is left out of the compact form and
// written as null in the verbose form.
func (e *JSONEncoder) FieldByteString(name string, v []byte) {
	if !e.verbose && v == nil {
		return
	}
	e.key(name)
	e.ByteString(v)
}

// ByteString writes v as a base64 JSON string (Part 6 §5.4.2.8), or null for nil.
func (e *JSONEncoder) ByteString(v []byte) {
	e.beforeValue()
	if v == nil {
		e.raw("null")
	} else {
		e.base64(v)
	}
	e.afterValue()
}

func (e *JSONEncoder) base64(v []byte) {
	n := b64.EncodedLen(len(v))
	e.grow(n + 2)
	e.b = append(e.b, '"')
	e.b = b64.AppendEncode(e.b, v)
	e.b = append(e.b, '"')
}

// FieldXmlElement writes a XmlElement member like a String member.
func (e *JSONEncoder) FieldXmlElement(name string, v string) { e.FieldString(name, v) }

// XmlElement writes v as a JSON string (Part 6 §5.4.2.9).
func (e *JSONEncoder) XmlElement(v string) { e.String(v) }

// ---- node ids and names (Part 6 §5.4.2.10, §5.4.2.11, §5.4.2.14, §5.1.12) ----

// FieldNodeId writes a NodeId member; a null NodeId is left out of the compact form and
// written as null in the verbose form.
func (e *JSONEncoder) FieldNodeId(name string, v NodeId) {
	if !e.verbose && v.IsNull() {
		return
	}
	e.key(name)
	e.NodeId(v)
}

// NodeId writes v as a string in the format of Part 6 §5.1.12 ("i=85", "ns=2;s=Temp",
// "nsu=http://example.com/;g=..." with a namespace table), or null for a null NodeId.
func (e *JSONEncoder) NodeId(v NodeId) {
	e.beforeValue()
	if v.IsNull() {
		e.raw("null")
	} else {
		e.scratch = appendNodeIDText(e.scratch[:0], v, e.namespaces)
		e.quoteBytes(e.scratch)
	}
	e.afterValue()
}

// FieldExpandedNodeId writes a ExpandedNodeId member; a null one is left out of the
// compact form and written as null in the verbose form.
func (e *JSONEncoder) FieldExpandedNodeId(name string, v ExpandedNodeId) {
	if !e.verbose && v.IsNull() {
		return
	}
	e.key(name)
	e.ExpandedNodeId(v)
}

// ExpandedNodeId writes v as a string in the format of Part 6 §5.1.12: an explicit
// NamespaceUri as "nsu=", a ServerIndex as "svr=" (no server table is known to the
// encoder), or null for a null ExpandedNodeId.
func (e *JSONEncoder) ExpandedNodeId(v ExpandedNodeId) {
	e.beforeValue()
	if v.IsNull() {
		e.raw("null")
	} else {
		e.scratch = appendExpandedNodeIDText(e.scratch[:0], v, e.namespaces)
		e.quoteBytes(e.scratch)
	}
	e.afterValue()
}

// FieldQualifiedName writes a QualifiedName member; the null QualifiedName (namespace 0,
// null name) is left out of the compact form and written as null in the verbose form.
func (e *JSONEncoder) FieldQualifiedName(name string, v QualifiedName) {
	if !e.verbose && v.NamespaceIndex == 0 && IsNull(v.Name) {
		return
	}
	e.key(name)
	e.QualifiedName(v)
}

// QualifiedName writes v as a string (Part 6 §5.4.2.14): the name in namespace 0,
// "nsu=<uri>;<name>" when the namespace table knows the index, else "<index>:<name>".
func (e *JSONEncoder) QualifiedName(v QualifiedName) {
	e.beforeValue()
	if v.NamespaceIndex == 0 && IsNull(v.Name) {
		e.raw("null")
	} else {
		e.scratch = appendQualifiedNameText(e.scratch[:0], v, e.namespaces)
		e.quoteBytes(e.scratch)
	}
	e.afterValue()
}

// FieldStatusCode writes a StatusCode member; the compact form leaves out Good.
func (e *JSONEncoder) FieldStatusCode(name string, v status.Code) {
	if !e.verbose && v == status.Good {
		return
	}
	e.key(name)
	e.StatusCode(v)
}

// StatusCode writes v as an object (Part 6 §5.4.2.12): "Code" unless Good, and in the
// verbose form "Symbol", the name of the code with its info bits ignored, when known.
func (e *JSONEncoder) StatusCode(v status.Code) {
	e.BeginObject()
	if v != status.Good {
		e.key("Code")
		e.UInt32(uint32(v))
		if e.verbose {
			sym := v.Name()
			if sym == "" {
				sym = v.Sub().Name()
			}
			if sym != "" {
				e.key("Symbol")
				e.String(sym)
			}
		}
	}
	e.EndObject()
}

// FieldLocalizedText writes a LocalizedText member; one with neither locale nor text is
// left out of the compact form and written as null in the verbose form.
func (e *JSONEncoder) FieldLocalizedText(name string, v LocalizedText) {
	if !e.verbose && IsNull(v.Locale) && IsNull(v.Text) {
		return
	}
	e.key(name)
	e.LocalizedText(v)
}

// LocalizedText writes v as {"Locale":...,"Text":...} (Part 6 §5.4.2.15); null parts are
// left out of the compact form and written as null in the verbose form. One with neither
// part is null.
func (e *JSONEncoder) LocalizedText(v LocalizedText) {
	if IsNull(v.Locale) && IsNull(v.Text) {
		e.null()
		return
	}
	e.BeginObject()
	e.FieldString("Locale", v.Locale)
	e.FieldString("Text", v.Text)
	e.EndObject()
}

// ---- escaping ----

const hexDigits = "0123456789abcdef"

// quote writes s as a JSON string (RFC 8259): quotes, backslashes and control characters
// are escaped, valid UTF-8 passes through and each invalid byte becomes U+FFFD.
func (e *JSONEncoder) quote(s string) {
	e.grow(len(s) + 2)
	e.b = append(e.b, '"')
	e.escape(s)
	e.rawByte('"')
}

func (e *JSONEncoder) quoteBytes(p []byte) {
	e.grow(len(p) + 2)
	e.b = append(e.b, '"')
	e.escapeBytes(p)
	e.rawByte('"')
}

func (e *JSONEncoder) escape(s string) {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			e.raw(s[start:i])
			e.escapeASCII(c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			e.raw(s[start:i])
			e.raw("\uFFFD")
			i++
			start = i
			continue
		}
		i += size
	}
	e.raw(s[start:])
}

func (e *JSONEncoder) escapeBytes(p []byte) {
	start := 0
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			e.rawBytes(p[start:i])
			e.escapeASCII(c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			e.rawBytes(p[start:i])
			e.raw("\uFFFD")
			i++
			start = i
			continue
		}
		i += size
	}
	e.rawBytes(p[start:])
}

func (e *JSONEncoder) escapeASCII(c byte) {
	e.grow(6)
	switch c {
	case '"', '\\':
		e.b = append(e.b, '\\', c)
	case '\b':
		e.b = append(e.b, '\\', 'b')
	case '\f':
		e.b = append(e.b, '\\', 'f')
	case '\n':
		e.b = append(e.b, '\\', 'n')
	case '\r':
		e.b = append(e.b, '\\', 'r')
	case '\t':
		e.b = append(e.b, '\\', 't')
	default:
		e.b = append(e.b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
	}
}
