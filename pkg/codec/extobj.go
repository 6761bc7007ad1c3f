package codec

import (
	"sync"

	"uastack.dev/pkg/status"
)

// Structure is a structured DataType with generated encoders (Part 6 §5.2.6). Generated
// types implement it on their pointer.
type Structure interface {
	EncodeBinary(e *Encoder)
	DecodeBinary(d *Decoder)
	EncodeJSON(e *JSONEncoder)
	DecodeJSON(d *JSONDecoder)
	// TypeInfo describes the DataType and its encodings; it is shared and read-only.
	TypeInfo() *TypeInfo
}

// TypeInfo names a structured DataType, its encoding nodes, and how to make a zero value.
type TypeInfo struct {
	Name           string
	DataType       NodeId
	BinaryEncoding NodeId
	XMLEncoding    NodeId
	JSONEncoding   NodeId
	New            func() Structure
	// Size is the size in memory of a value New makes (unsafe.Sizeof), which a Decoder
	// charges against its decode budget before it makes one (see Decoder.Charge); the
	// generated types set it. A type registered without it is charged nothing.
	Size int
}

// registry maps encoding and DataType ids to types. Generated packages fill it at init;
// after that it is only read, so lookups take no lock.
var registry struct {
	sync.RWMutex // guards byID against concurrent registration
	byID         map[NodeId]*TypeInfo
}

// Register makes t known to ExtensionObject decoding under each of its non-null ids.
// Registering an id twice keeps the first and reports false.
func Register(t *TypeInfo) bool {
	registry.Lock()
	defer registry.Unlock()
	if registry.byID == nil {
		registry.byID = make(map[NodeId]*TypeInfo)
	}
	ok := true
	for _, id := range []NodeId{t.DataType, t.BinaryEncoding, t.XMLEncoding, t.JSONEncoding} {
		if id.IsNull() {
			continue
		}
		if _, dup := registry.byID[id]; dup {
			ok = false
			continue
		}
		registry.byID[id] = t
	}
	return ok
}

// LookupType returns the type registered under id (a DataType or any of its encodings).
func LookupType(id NodeId) *TypeInfo {
	registry.RLock()
	t := registry.byID[id]
	registry.RUnlock()
	return t
}

// ExtensionObject is a structure carried inside another value (Part 6 §5.2.2.15).
//
// A body whose type is registered is decoded into Value. Any other body is kept as Body
// with its TypeID and Encoding and written back unchanged.
type ExtensionObject struct {
	// TypeID is the encoding NodeId of Body; ignored when Value is set.
	TypeID NodeId
	// Encoding is how Body is encoded: ExtensionObjectNoBody, ExtensionObjectBinary or
	// ExtensionObjectXML (or JSON text kept from a JSON decode).
	Encoding byte
	Body     []byte
	// Value is the decoded body, or nil.
	Value Structure
}

// ExtensionObject body encodings.
const (
	ExtensionObjectNoBody = 0x00
	ExtensionObjectBinary = 0x01
	ExtensionObjectXML    = 0x02
)

// NewExtensionObject wraps a structure.
func NewExtensionObject(v Structure) ExtensionObject { return ExtensionObject{Value: v} }

// IsNull reports whether x carries nothing.
func (x *ExtensionObject) IsNull() bool {
	return x.Value == nil && x.Encoding == ExtensionObjectNoBody && x.TypeID.IsNull()
}

// ExtensionObject writes x. A decoded or wrapped Value is written with its binary
// encoding id and a length patched in after the body.
func (e *Encoder) ExtensionObject(x *ExtensionObject) {
	e.fit()
	if x.Value == nil && x.Encoding == ExtensionObjectNoBody && x.TypeID == (NodeId{}) {
		// Every request and response header's AdditionalHeader. Only the numeric null
		// NodeId: a null String or Guid one keeps its own form (IsNull is true for both).
		e.buf = append(e.buf, nodeIDTwoByte, 0, ExtensionObjectNoBody)
		return
	}
	if x.Value != nil {
		e.NodeId(x.Value.TypeInfo().BinaryEncoding)
		e.buf = append(e.buf, ExtensionObjectBinary)
		if !e.enter() {
			return
		}
		at := e.reserveLength()
		x.Value.EncodeBinary(e)
		e.patchLength(at)
		e.leave()
		return
	}
	e.NodeId(x.TypeID)
	switch x.Encoding {
	case ExtensionObjectNoBody:
		e.buf = append(e.buf, ExtensionObjectNoBody)
		return
	case ExtensionObjectBinary, ExtensionObjectXML:
	default:
		// "Other DataEncodings may not be serialized in an ExtensionObject" (Part 6
		// §5.2.2.15): a body kept from another encoding has no binary form.
		e.Fail(status.BadEncodingError)
		e.buf = append(e.buf, ExtensionObjectNoBody)
		return
	}
	e.buf = append(e.buf, x.Encoding)
	if x.Body == nil {
		e.Int32(0)
		return
	}
	e.ByteString(x.Body)
}

// ExtensionObject reads an ExtensionObject into x, decoding the body when its type is
// registered. The body must use exactly the length it declares.
func (d *Decoder) ExtensionObject(x *ExtensionObject) {
	*x = ExtensionObject{}
	if d.pos+3 <= len(d.buf) && d.buf[d.pos] == nodeIDTwoByte && d.buf[d.pos+1] == 0 && d.buf[d.pos+2] == ExtensionObjectNoBody {
		d.pos += 3 // null, as in nearly every request header
		return
	}
	x.TypeID = d.NodeId()
	x.Encoding = d.Byte()
	switch x.Encoding {
	case ExtensionObjectNoBody:
		return
	case ExtensionObjectBinary, ExtensionObjectXML:
	default:
		d.Fail(status.BadDecodingError)
		return
	}
	n := d.length(d.limits.MaxByteStringLength)
	if d.err != nil {
		return
	}
	if n < 0 {
		// A null body is read as an empty one, for registered types too, so that it
		// decodes the same after being written back with length 0.
		n = 0
	}
	var t *TypeInfo
	if x.Encoding == ExtensionObjectBinary {
		t = LookupType(x.TypeID)
	}
	if t == nil || !t.BinaryEncoding.Equal(x.TypeID) {
		if !d.Charge(n) {
			return
		}
		x.Body = make([]byte, n)
		copy(x.Body, d.buf[d.pos:])
		d.pos += n
		return
	}
	if !d.Charge(t.Size) || !d.Enter() {
		return
	}
	// Decode the body within its declared length: a body that reads past it or leaves
	// bytes unread is malformed.
	end := d.pos + n
	full := d.buf
	d.buf = d.buf[:end]
	v := t.New()
	v.DecodeBinary(d)
	if d.err == nil && d.pos != end {
		d.Fail(status.BadDecodingError)
	}
	d.buf = full
	d.Leave()
	if d.err != nil {
		d.pos = len(d.buf)
		return
	}
	x.TypeID = NodeId{}
	x.Encoding = ExtensionObjectNoBody
	x.Value = v
}

// Equal reports whether n and o are the same NodeId.
func (n NodeId) Equal(o NodeId) bool { return n == o }
