package codec

// OPC UA JSON decoder (Part 6 §5.4, version 1.05, with the deprecated 1.04 reversible
// forms of Annex H accepted where they can be told apart).

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"uastack.dev/pkg/status"
)

// minKeyLimit is the longest member name accepted even when MaxStringLength is lower.
const minKeyLimit = 256

// decFrame is one open container of the decoder.
type decFrame struct {
	kind  byte
	count int // members or elements started
}

// JSONDecoder reads the OPC UA JSON encoding (compact and verbose forms) from a byte
// slice. The first error sticks; Err reports it as a status.Code: BadDecodingError for
// malformed or mistyped input, BadEncodingLimitsExceeded when a Limit is passed.
//
// The tokenizer works on the input directly. Every length is checked against the Limits
// before anything is allocated: MaxMessageSize for the input, MaxStringLength and
// MaxByteStringLength for strings, MaxArrayLength for the elements of each array, MaxDepth
// for nested Variants, ExtensionObjects, DataValues, DiagnosticInfos and structures, and
// 2*MaxDepth+16 for nested JSON objects and arrays, skipped ones included. Decoded strings
// and byte strings are copies; keys returned by NextField alias the decoder. A
// JSONDecoder is not safe for concurrent use.
type JSONDecoder struct {
	data   []byte
	pos    int
	err    error
	limits Limits

	maxNest  int // JSON containers open at once
	depth    int // OPC UA nesting, as the binary Decoder counts it
	frames   []decFrame
	frameBuf [16]decFrame

	// hideLevel is the frame depth at which NextField hides "UaTypeId" (the object of an
	// ExtensionObject being decoded as its structure); 0 hides nothing. hidePending makes
	// the next BeginObject set it.
	hideLevel   int
	hidePending bool

	// eoEncoding and eoBody are the offsets of the UaEncoding and UaBody values NextField
	// held back from the structure being decoded at hideLevel, or -1.
	eoEncoding, eoBody int

	keyPos     int    // offset of the opening quote of the last key NextField read
	key        []byte // unescaped keys
	str        []byte // unescaped string values
	skipStack  []byte // container kinds while skipping
	keyArena   []byte // ExtensionObject member names, for the duplicate check
	spans      []memberSpan
	namespaces []string
}

// memberSpan locates one member of an object being scanned ahead.
type memberSpan struct {
	keyStart, valueStart, valueEnd int // offsets in data
	nameStart, nameEnd             int // the unescaped name in keyArena
}

// NewJSONDecoder returns a decoder over data with DefaultLimits.
func NewJSONDecoder(data []byte) *JSONDecoder { return NewJSONDecoderLimits(data, DefaultLimits) }

// NewJSONDecoderLimits returns a decoder over data with the given limits; zero fields
// take the defaults.
func NewJSONDecoderLimits(data []byte, l Limits) *JSONDecoder {
	d := &JSONDecoder{limits: l.withDefaults()}
	d.Reset(data)
	return d
}

// Reset makes d read data from its start and forgets any error; limits and the namespace
// table are kept.
func (d *JSONDecoder) Reset(data []byte) {
	if d.limits.MaxDepth == 0 {
		d.limits = DefaultLimits
	}
	d.data, d.pos, d.err, d.depth = data, 0, nil, 0
	d.frames = d.frameBuf[:0]
	d.hideLevel, d.hidePending = 0, false
	d.maxNest = 2*d.limits.MaxDepth + 16
	if len(data) > d.limits.MaxMessageSize {
		d.fail(status.BadEncodingLimitsExceeded)
	}
}

// Limits returns the limits in force.
func (d *JSONDecoder) Limits() Limits { return d.limits }

// SetNamespaceURIs gives the NamespaceArray used to map "nsu=" NamespaceUris to indexes
// (uris[i] is index i). The OPC UA namespace always maps to 0. The slice is retained.
func (d *JSONDecoder) SetNamespaceURIs(uris []string) { d.namespaces = uris }

// Err returns the first error met.
func (d *JSONDecoder) Err() error { return d.err }

// Finish reports an error unless the input ends (but for white space) after the value
// read and every container is closed. It returns Err.
func (d *JSONDecoder) Finish() error {
	if d.err == nil && (len(d.frames) != 0 || d.ws() != 0 || d.pos != len(d.data)) {
		d.malformed()
	}
	return d.err
}

// Fail records err unless an earlier error is recorded, and stops all further reads.
// Generated code uses it for values the JSON grammar allows but the type does not (an
// unknown SwitchField, say).
func (d *JSONDecoder) Fail(err error) { d.fail(err) }

func (d *JSONDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.pos = len(d.data)
}

func (d *JSONDecoder) malformed() { d.fail(status.BadDecodingError) }

func (d *JSONDecoder) enter() bool {
	if d.depth >= d.limits.MaxDepth {
		d.fail(status.BadEncodingLimitsExceeded)
		return false
	}
	d.depth++
	return true
}

func (d *JSONDecoder) leave() { d.depth-- }

// ---- tokens ----

// ws skips white space and returns the next byte without consuming it, 0 at the end.
func (d *JSONDecoder) ws() byte {
	for d.pos < len(d.data) {
		switch c := d.data[d.pos]; c {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return c
		}
	}
	return 0
}

func (d *JSONDecoder) literal(lit string) bool {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		d.malformed()
		return false
	}
	d.pos += len(lit)
	return true
}

// null consumes a JSON null if one is next.
func (d *JSONDecoder) null() bool {
	if d.ws() == 'n' {
		return d.literal("null")
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number consumes a JSON number (RFC 8259 §6) and reports whether it is an integer.
func (d *JSONDecoder) number() (tok []byte, integer bool) {
	s, i := d.data, d.pos
	start := i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		d.malformed()
		return nil, false
	}
	integer = true
	if i < len(s) && s[i] == '.' {
		integer = false
		i++
		if i >= len(s) || !isDigit(s[i]) {
			d.malformed()
			return nil, false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		integer = false
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			d.malformed()
			return nil, false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	d.pos = i
	return s[start:i], integer
}

// parseInt reads an optionally negative run of digits.
func parseInt(s []byte) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if neg {
		v, ok := parseDecimal(s, 1<<63)
		return -int64(v), ok
	}
	v, ok := parseDecimal(s, math.MaxInt64)
	return int64(v), ok
}

// scanString finds the end of the string token at d.pos (which holds '"'). It checks the
// escapes and control characters but not the UTF-8; plain reports that there is no escape.
func (d *JSONDecoder) scanString() (end int, plain bool) {
	s := d.data
	plain = true
	for i := d.pos + 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1, plain
		case c == '\\':
			plain = false
			i++
			if i >= len(s) {
				return -1, false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s) {
					return -1, false
				}
				for _, h := range s[i+1 : i+5] {
					if _, ok := unhex(h); !ok {
						return -1, false
					}
				}
				i += 4
			default:
				return -1, false
			}
		case c < 0x20:
			return -1, false
		}
	}
	return -1, false
}

// strToken reads the string token at d.pos into a view valid until the next read into
// buf: the input itself when it needs no change, else *buf. The decoded text is limited
// to max bytes; invalid UTF-8 and lone surrogates become U+FFFD.
func (d *JSONDecoder) strToken(max int, buf *[]byte) ([]byte, bool) {
	if d.err != nil {
		return nil, false
	}
	end, plain := d.scanString()
	if end < 0 {
		d.malformed()
		return nil, false
	}
	raw := d.data[d.pos+1 : end-1]
	if plain && utf8.Valid(raw) {
		if len(raw) > max {
			d.fail(status.BadEncodingLimitsExceeded)
			return nil, false
		}
		d.pos = end
		return raw, true
	}
	out := (*buf)[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch e := raw[i+1]; e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(raw[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						r2 = hex4(raw[i+2:])
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
				if len(out) > max {
					d.fail(status.BadEncodingLimitsExceeded)
					return nil, false
				}
				continue
			default: // '"', '\\', '/'
				out = append(out, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, "\uFFFD"...)
			} else {
				out = append(out, raw[i:i+size]...)
			}
			i += size
		}
		if len(out) > max {
			d.fail(status.BadEncodingLimitsExceeded)
			return nil, false
		}
	}
	*buf = out
	d.pos = end
	return out, true
}

func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		h, _ := unhex(c)
		r = r<<4 | rune(h)
	}
	return r
}

// stringValue reads a JSON string token (not null) with the given limit.
func (d *JSONDecoder) stringValue(max int) ([]byte, bool) {
	if d.ws() != '"' {
		d.malformed()
		return nil, false
	}
	return d.strToken(max, &d.str)
}

// ---- containers ----

func (d *JSONDecoder) push(kind byte) bool {
	if len(d.frames) >= d.maxNest {
		d.fail(status.BadEncodingLimitsExceeded)
		return false
	}
	d.frames = append(d.frames, decFrame{kind: kind})
	return true
}

func (d *JSONDecoder) pop() {
	if len(d.frames) == d.hideLevel {
		d.hideLevel = 0
	}
	d.frames = d.frames[:len(d.frames)-1]
}

// BeginObject consumes the start of an object. It returns false for JSON null or on error.
func (d *JSONDecoder) BeginObject() bool {
	if d.err != nil {
		return false
	}
	switch d.ws() {
	case '{':
		if !d.push(jsonObject) {
			return false
		}
		d.pos++
		if d.hidePending {
			d.hidePending = false
			d.hideLevel = len(d.frames)
		}
		return true
	case 'n':
		d.literal("null")
		return false
	}
	d.malformed()
	return false
}

// NextField returns the key of the next member, valid until the next call, or false at the
// end of the object. The caller reads the member's value or calls Skip. Inside the object
// of an ExtensionObject being decoded as its structure, "UaTypeId" is skipped here.
func (d *JSONDecoder) NextField() ([]byte, bool) {
	for d.err == nil {
		n := len(d.frames)
		if n == 0 || d.frames[n-1].kind != jsonObject {
			d.malformed()
			return nil, false
		}
		f := &d.frames[n-1]
		c := d.ws()
		if c == '}' {
			d.pos++
			d.pop()
			return nil, false
		}
		if f.count > 0 {
			if c != ',' {
				d.malformed()
				return nil, false
			}
			d.pos++
			c = d.ws()
		}
		f.count++
		if c != '"' {
			d.malformed()
			return nil, false
		}
		d.keyPos = d.pos
		k, ok := d.strToken(max(d.limits.MaxStringLength, minKeyLimit), &d.key)
		if !ok {
			return nil, false
		}
		if d.ws() != ':' {
			d.malformed()
			return nil, false
		}
		d.pos++
		if n == d.hideLevel && d.holdBack(k) {
			continue
		}
		return k, true
	}
	return nil, false
}

// holdBack records a member of the object of an ExtensionObject being decoded as its
// structure, for the duplicate check, and consumes the members that are the
// ExtensionObject's own rather than the structure's.
func (d *JSONDecoder) holdBack(k []byte) bool {
	s := memberSpan{keyStart: d.keyPos, nameStart: len(d.keyArena)}
	d.keyArena = append(d.keyArena, k...)
	s.nameEnd = len(d.keyArena)
	d.spans = append(d.spans, s)
	switch string(k) {
	case "UaTypeId":
	case "UaEncoding":
		d.ws()
		d.eoEncoding = d.pos
	case "UaBody":
		d.ws()
		d.eoBody = d.pos
	default:
		return false
	}
	d.Skip()
	return true
}

// BeginArray consumes the start of an array. It returns false for JSON null or on error.
func (d *JSONDecoder) BeginArray() bool {
	if d.err != nil {
		return false
	}
	switch d.ws() {
	case '[':
		if !d.push(jsonArray) {
			return false
		}
		d.pos++
		return true
	case 'n':
		d.literal("null")
		return false
	}
	d.malformed()
	return false
}

// NextElement reports whether another element follows, enforcing MaxArrayLength. The
// caller then reads the element.
func (d *JSONDecoder) NextElement() bool {
	if d.err != nil {
		return false
	}
	n := len(d.frames)
	if n == 0 || d.frames[n-1].kind != jsonArray {
		d.malformed()
		return false
	}
	f := &d.frames[n-1]
	c := d.ws()
	if c == ']' {
		d.pos++
		d.pop()
		return false
	}
	if f.count > 0 {
		if c != ',' {
			d.malformed()
			return false
		}
		d.pos++
	}
	f.count++
	if f.count > d.limits.MaxArrayLength {
		d.fail(status.BadEncodingLimitsExceeded)
		return false
	}
	return true
}

// Skip consumes one value of any kind, checking its syntax. It does not recurse; nesting
// counts against the same limit as open containers.
func (d *JSONDecoder) Skip() {
	d.skipStack = d.skipStack[:0]
	for d.err == nil {
		// A value starts here.
		switch c := d.ws(); {
		case c == '{' || c == '[':
			if len(d.frames)+len(d.skipStack) >= d.maxNest {
				d.fail(status.BadEncodingLimitsExceeded)
				return
			}
			d.pos++
			c2 := d.ws()
			if c == '{' && c2 == '}' || c == '[' && c2 == ']' {
				d.pos++
				break
			}
			d.skipStack = append(d.skipStack, c)
			if c == '{' && !d.skipName() {
				return
			}
			continue
		case c == '"':
			end, _ := d.scanString()
			if end < 0 {
				d.malformed()
				return
			}
			d.pos = end
		case c == 't':
			d.literal("true")
		case c == 'f':
			d.literal("false")
		case c == 'n':
			d.literal("null")
		case c == '-' || isDigit(c):
			d.number()
		default:
			d.malformed()
		}
		// A value ended here: close containers until one continues.
		for d.err == nil {
			n := len(d.skipStack)
			if n == 0 {
				return
			}
			top := d.skipStack[n-1]
			c := d.ws()
			if c == ',' {
				d.pos++
				if top == '{' && !d.skipName() {
					return
				}
				break
			}
			if top == '{' && c == '}' || top == '[' && c == ']' {
				d.pos++
				d.skipStack = d.skipStack[:n-1]
				continue
			}
			d.malformed()
		}
	}
}

// skipName consumes a member name and its colon.
func (d *JSONDecoder) skipName() bool {
	if d.ws() != '"' {
		d.malformed()
		return false
	}
	end, _ := d.scanString()
	if end < 0 {
		d.malformed()
		return false
	}
	d.pos = end
	if d.ws() != ':' {
		d.malformed()
		return false
	}
	d.pos++
	return true
}

// ---- structures and enumerations ----

// Struct reads a structure value into v (its DecodeJSON); nesting counts against MaxDepth.
func (d *JSONDecoder) Struct(v Structure) {
	if d.err != nil || !d.enter() {
		return
	}
	v.DecodeJSON(d)
	d.leave()
}

// Enum reads an enumeration value: a number, or a "<name>_<value>" or "<value>" string
// (Part 6 §5.4.4).
func (d *JSONDecoder) Enum() int64 {
	if d.err != nil {
		return 0
	}
	if d.ws() != '"' {
		return d.integer(math.MinInt32, math.MaxInt32)
	}
	s, ok := d.strToken(d.limits.MaxStringLength, &d.str)
	if !ok {
		return 0
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '_' {
			s = s[i+1:]
			break
		}
	}
	v, ok := parseInt(s)
	if !ok || v < math.MinInt32 || v > math.MaxInt32 {
		d.malformed()
		return 0
	}
	return v
}

// ---- scalars ----

// Boolean reads true or false.
func (d *JSONDecoder) Boolean() bool {
	if d.err != nil {
		return false
	}
	switch d.ws() {
	case 't':
		return d.literal("true")
	case 'f':
		d.literal("false")
		return false
	}
	d.malformed()
	return false
}

// integer reads an integral JSON number in [min, max].
func (d *JSONDecoder) integer(min, max int64) int64 {
	if d.err != nil {
		return 0
	}
	if c := d.ws(); c != '-' && !isDigit(c) {
		d.malformed()
		return 0
	}
	tok, integer := d.number()
	if !integer {
		d.malformed()
		return 0
	}
	v, ok := parseInt(tok)
	if !ok || v < min || v > max {
		d.malformed()
		return 0
	}
	return v
}

// SByte reads a SByte value.
func (d *JSONDecoder) SByte() int8 { return int8(d.integer(math.MinInt8, math.MaxInt8)) }

// Byte reads a Byte value.
func (d *JSONDecoder) Byte() byte { return byte(d.integer(0, math.MaxUint8)) }

// Int16 reads a Int16 value.
func (d *JSONDecoder) Int16() int16 { return int16(d.integer(math.MinInt16, math.MaxInt16)) }

// UInt16 reads a UInt16 value.
func (d *JSONDecoder) UInt16() uint16 { return uint16(d.integer(0, math.MaxUint16)) }

// Int32 reads a Int32 value.
func (d *JSONDecoder) Int32() int32 { return int32(d.integer(math.MinInt32, math.MaxInt32)) }

// UInt32 reads a UInt32 value.
func (d *JSONDecoder) UInt32() uint32 { return uint32(d.integer(0, math.MaxUint32)) }

// int64Token returns the digits of an Int64 or UInt64: a decimal JSON string, or a JSON
// number, which 1.04 encoders and hand-written documents use.
func (d *JSONDecoder) int64Token() []byte {
	if d.err != nil {
		return nil
	}
	c := d.ws()
	if c == '"' {
		s, ok := d.strToken(24, &d.str)
		if !ok {
			if d.err == status.BadEncodingLimitsExceeded {
				d.err = status.BadDecodingError
			}
			return nil
		}
		return s
	}
	if c != '-' && !isDigit(c) {
		d.malformed()
		return nil
	}
	tok, integer := d.number()
	if !integer {
		d.malformed()
		return nil
	}
	return tok
}

// Int64 reads a Int64 value.
func (d *JSONDecoder) Int64() int64 {
	tok := d.int64Token()
	if d.err != nil {
		return 0
	}
	v, ok := parseInt(tok)
	if !ok {
		d.malformed()
		return 0
	}
	return v
}

// UInt64 reads a UInt64 value.
func (d *JSONDecoder) UInt64() uint64 {
	tok := d.int64Token()
	if d.err != nil {
		return 0
	}
	v, ok := parseDecimal(tok, math.MaxUint64)
	if !ok {
		d.malformed()
		return 0
	}
	return v
}

// float reads a JSON number or one of "Infinity", "-Infinity" and "NaN".
func (d *JSONDecoder) float(bits int) float64 {
	if d.err != nil {
		return 0
	}
	c := d.ws()
	if c == '"' {
		s, ok := d.strToken(16, &d.str)
		if !ok {
			d.err = status.BadDecodingError
			return 0
		}
		switch string(s) {
		case "NaN":
			return math.NaN()
		case "Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
		d.malformed()
		return 0
	}
	if c != '-' && !isDigit(c) {
		d.malformed()
		return 0
	}
	tok, _ := d.number()
	if d.err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(unsafe.String(&tok[0], len(tok)), bits)
	if err != nil {
		d.malformed()
		return 0
	}
	return f
}

// Float reads a Float value.
func (d *JSONDecoder) Float() float32 { return float32(d.float(32)) }

// Double reads a Double value.
func (d *JSONDecoder) Double() float64 { return d.float(64) }

// String reads a String value: null gives the null String, "" gives EmptyString.
func (d *JSONDecoder) String() string {
	if d.err != nil || d.null() {
		return ""
	}
	s, ok := d.stringValue(d.limits.MaxStringLength)
	if !ok {
		return ""
	}
	return textString(s)
}

// XmlElement reads a XmlElement value like a String.
func (d *JSONDecoder) XmlElement() string { return d.String() }

// DateTime reads an ISO 8601 DateTime; null gives the zero DateTime.
func (d *JSONDecoder) DateTime() DateTime {
	if d.err != nil || d.null() {
		return 0
	}
	s, ok := d.stringValue(64)
	if !ok {
		d.err = status.BadDecodingError
		return 0
	}
	t, ok := parseDateTimeText(s)
	if !ok {
		d.malformed()
	}
	return t
}

// Guid reads a Guid; null gives the zero Guid.
func (d *JSONDecoder) Guid() Guid {
	if d.err != nil || d.null() {
		return Guid{}
	}
	s, ok := d.stringValue(64)
	if !ok {
		d.err = status.BadDecodingError
		return Guid{}
	}
	g, ok := parseGuidText(s)
	if !ok {
		d.malformed()
	}
	return g
}

// byteString reads a base64 ByteString into a new slice: nil for null, empty but not nil
// for "". The decoded length is checked against MaxByteStringLength before allocating.
func (d *JSONDecoder) byteString() []byte {
	if d.err != nil || d.null() {
		return nil
	}
	max := d.limits.MaxByteStringLength
	s, ok := d.stringValue(b64.EncodedLen(max) + b64.EncodedLen(max)/38 + 4)
	if !ok {
		return nil
	}
	enc := b64
	if len(s)%4 != 0 {
		enc = base64Raw
	}
	if enc.DecodedLen(len(s)) > max+2 {
		d.fail(status.BadEncodingLimitsExceeded)
		return nil
	}
	out := make([]byte, enc.DecodedLen(len(s)))
	n, err := enc.Decode(out, s)
	if err != nil {
		d.malformed()
		return nil
	}
	if n > max {
		d.fail(status.BadEncodingLimitsExceeded)
		return nil
	}
	return out[:n]
}

// ByteString reads a ByteString: nil for null, a non-nil empty slice for "".
func (d *JSONDecoder) ByteString() []byte { return d.byteString() }

// ---- node ids and names ----

// NodeId reads a NodeId: a Part 6 §5.1.12 string, null, or the deprecated 1.04 object.
func (d *JSONDecoder) NodeId() NodeId {
	if d.err != nil || d.null() {
		return NodeId{}
	}
	if d.ws() == '{' {
		v, uri := d.nodeIDObject()
		if uri != "" {
			ns, ok := namespaceIndex(uri, d.namespaces)
			if !ok {
				d.malformed()
				return NodeId{}
			}
			v.NodeId.ns = ns
		}
		if v.NodeId.IsNull() {
			return NodeId{}
		}
		return v.NodeId
	}
	s, ok := d.stringValue(d.limits.MaxStringLength)
	if !ok {
		return NodeId{}
	}
	n, ok := parseNodeIDText(s, d.namespaces)
	if !ok {
		d.malformed()
	}
	if n.IsNull() {
		// Every form of the null NodeId reads as the one null writes.
		return NodeId{}
	}
	return n
}

// ExpandedNodeId reads an ExpandedNodeId: a Part 6 §5.1.12 string, null, or the
// deprecated 1.04 object.
func (d *JSONDecoder) ExpandedNodeId() ExpandedNodeId {
	if d.err != nil || d.null() {
		return ExpandedNodeId{}
	}
	if d.ws() == '{' {
		v, uri := d.nodeIDObject()
		if uri != "" {
			if ns, ok := namespaceIndex(uri, d.namespaces); ok && v.ServerIndex == 0 {
				v.NodeId.ns = ns
			} else {
				v.NamespaceURI = uri
			}
		}
		if v.IsNull() {
			return ExpandedNodeId{}
		}
		return v
	}
	s, ok := d.stringValue(d.limits.MaxStringLength)
	if !ok {
		return ExpandedNodeId{}
	}
	v, ok := parseExpandedNodeIDText(s, d.namespaces)
	if !ok {
		d.malformed()
	}
	if v.IsNull() {
		return ExpandedNodeId{}
	}
	return v
}

// nodeIDObject reads the 1.04 {"IdType","Id","Namespace","ServerUri"} object (Annex H.2,
// H.3). A Namespace given as a URI is returned for the caller to map.
func (d *JSONDecoder) nodeIDObject() (v ExpandedNodeId, uri string) {
	if !d.BeginObject() {
		return v, ""
	}
	idType, idPos := int64(0), -1
	for {
		k, ok := d.NextField()
		if !ok {
			break
		}
		switch string(k) {
		case "IdType":
			idType = d.integer(0, 3)
		case "Id":
			d.ws()
			idPos = d.pos
			d.Skip()
		case "Namespace":
			if d.ws() == '"' {
				uri = d.String()
			} else {
				v.NodeId.ns = uint16(d.integer(0, math.MaxUint16))
			}
		case "ServerUri":
			v.ServerIndex = uint32(d.integer(0, math.MaxUint32))
		default:
			d.Skip()
		}
	}
	if d.err != nil || idPos < 0 {
		return v, uri
	}
	end := d.pos
	d.pos = idPos
	switch idType {
	case 0:
		v.NodeId.num = d.UInt32()
	case 1:
		v.NodeId.typ, v.NodeId.str = IDString, d.String()
	case 2:
		v.NodeId = NewGuidNodeId(v.NodeId.ns, d.Guid())
	case 3:
		v.NodeId.typ, v.NodeId.str = IDOpaque, string(d.byteString())
	}
	if d.err == nil {
		d.pos = end
	}
	return v, uri
}

// StatusCode reads a StatusCode: the {"Code","Symbol"} object, a bare number (1.04) or
// null for Good.
func (d *JSONDecoder) StatusCode() status.Code {
	if d.err != nil || d.null() {
		return status.Good
	}
	if d.ws() != '{' {
		return status.Code(d.integer(0, math.MaxUint32))
	}
	var c status.Code
	d.BeginObject()
	for {
		k, ok := d.NextField()
		if !ok {
			break
		}
		if string(k) == "Code" {
			c = status.Code(d.integer(0, math.MaxUint32))
		} else {
			d.Skip()
		}
	}
	return c
}

// QualifiedName reads a QualifiedName: a Part 6 §5.1.12 string, null, or the 1.04
// {"Name","Uri"} object.
func (d *JSONDecoder) QualifiedName() QualifiedName {
	if d.err != nil || d.null() {
		return QualifiedName{}
	}
	if d.ws() == '{' {
		var q QualifiedName
		d.BeginObject()
		for {
			k, ok := d.NextField()
			if !ok {
				break
			}
			switch string(k) {
			case "Name":
				q.Name = d.String()
			case "Uri":
				if d.ws() == '"' {
					uri := d.String()
					ns, ok := namespaceIndex(uri, d.namespaces)
					if !ok {
						d.malformed()
					}
					q.NamespaceIndex = ns
				} else {
					q.NamespaceIndex = uint16(d.integer(0, math.MaxUint16))
				}
			default:
				d.Skip()
			}
		}
		return q
	}
	s, ok := d.stringValue(d.limits.MaxStringLength)
	if !ok {
		return QualifiedName{}
	}
	return parseQualifiedNameText(s, d.namespaces)
}

// LocalizedText reads a LocalizedText: the {"Locale","Text"} object, null, or a bare
// string (the text alone, as the non-reversible form writes it).
func (d *JSONDecoder) LocalizedText() LocalizedText {
	var v LocalizedText
	if d.err != nil || d.null() {
		return v
	}
	if d.ws() == '"' {
		v.Text = d.String()
		return v
	}
	if !d.BeginObject() {
		return v
	}
	for {
		k, ok := d.NextField()
		if !ok {
			break
		}
		switch string(k) {
		case "Locale":
			v.Locale = d.String()
		case "Text":
			v.Text = d.String()
		default:
			d.Skip()
		}
	}
	return v
}
