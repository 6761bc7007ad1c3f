package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"uastack.dev/pkg/status"
)

// TypeID is a built-in type id (Part 6 §5.1.2, Table 1); 0 means null.
type TypeID byte

// The built-in types.
const (
	TypeNull TypeID = iota
	TypeBoolean
	TypeSByte
	TypeByte
	TypeInt16
	TypeUInt16
	TypeInt32
	TypeUInt32
	TypeInt64
	TypeUInt64
	TypeFloat
	TypeDouble
	TypeString
	TypeDateTime
	TypeGuid
	TypeByteString
	TypeXmlElement
	TypeNodeId
	TypeExpandedNodeId
	TypeStatusCode
	TypeQualifiedName
	TypeLocalizedText
	TypeExtensionObject
	TypeDataValue
	TypeVariant
	TypeDiagnosticInfo
	typeCount
)

var typeNames = [typeCount]string{"Null", "Boolean", "SByte", "Byte", "Int16", "UInt16", "Int32",
	"UInt32", "Int64", "UInt64", "Float", "Double", "String", "DateTime", "Guid", "ByteString",
	"XmlElement", "NodeId", "ExpandedNodeId", "StatusCode", "QualifiedName", "LocalizedText",
	"ExtensionObject", "DataValue", "Variant", "DiagnosticInfo"}

// String returns the type's name from Part 6 Table 1.
func (t TypeID) String() string {
	if t < typeCount {
		return typeNames[t]
	}
	return fmt.Sprintf("TypeID(%d)", byte(t))
}

// fixedSize is the wire size of the fixed-size scalar types, 0 for the others.
var fixedSize = [32]byte{
	TypeBoolean: 1, TypeSByte: 1, TypeByte: 1, TypeInt16: 2, TypeUInt16: 2, TypeInt32: 4,
	TypeUInt32: 4, TypeInt64: 8, TypeUInt64: 8, TypeFloat: 4, TypeDouble: 8, TypeDateTime: 8,
	TypeStatusCode: 4,
}

// Variant holds a value of any built-in type, a scalar or an array (Part 6 §5.2.2.16).
//
// Numeric scalars, strings, byte strings, Guids, NodeIds and QualifiedNames are kept
// without boxing, so making or decoding one allocates at most the string's bytes. Arrays
// are kept as typed Go slices ([]int32, []string, []Variant, ...), multi-dimensional
// arrays as a flat slice plus their dimensions. The zero value is the null Variant.
type Variant struct {
	typ   TypeID
	array bool
	num   uint64 // fixed-size scalars; the namespace, kind and number of a NodeId
	str   string // String, XmlElement, ByteString, raw Guid, NodeId and QualifiedName text
	obj   any    // arrays (typed slices or *matrix) and boxed scalars of the other types
}

// matrix is a multi-dimensional array: the elements in row-major order and the lengths.
type matrix struct {
	flat any
	dims []int32
}

// Type returns the built-in type of the value or of the array's elements.
func (v *Variant) Type() TypeID { return v.typ }

// IsNull reports whether v holds no value.
func (v *Variant) IsNull() bool { return v.typ == TypeNull }

// IsArray reports whether v holds an array.
func (v *Variant) IsArray() bool { return v.array }

// Dimensions returns the array dimensions of a multi-dimensional array, the length of a
// one-dimensional array as a single dimension, and nil for a scalar.
func (v *Variant) Dimensions() []int32 {
	if !v.array {
		return nil
	}
	if m, ok := v.obj.(*matrix); ok {
		return m.dims
	}
	return []int32{int32(sliceLen(v.obj))}
}

// Scalar constructors. They never allocate beyond what the value itself holds.

// BooleanVariant returns a Boolean Variant.
func BooleanVariant(b bool) Variant {
	var n uint64
	if b {
		n = 1
	}
	return Variant{typ: TypeBoolean, num: n}
}

// SByteVariant returns an SByte Variant.
func SByteVariant(x int8) Variant { return Variant{typ: TypeSByte, num: uint64(uint8(x))} }

// ByteVariant returns a Byte Variant.
func ByteVariant(x byte) Variant { return Variant{typ: TypeByte, num: uint64(x)} }

// Int16Variant returns an Int16 Variant.
func Int16Variant(x int16) Variant { return Variant{typ: TypeInt16, num: uint64(uint16(x))} }

// UInt16Variant returns a UInt16 Variant.
func UInt16Variant(x uint16) Variant { return Variant{typ: TypeUInt16, num: uint64(x)} }

// Int32Variant returns an Int32 Variant.
func Int32Variant(x int32) Variant { return Variant{typ: TypeInt32, num: uint64(uint32(x))} }

// UInt32Variant returns a UInt32 Variant.
func UInt32Variant(x uint32) Variant { return Variant{typ: TypeUInt32, num: uint64(x)} }

// Int64Variant returns an Int64 Variant.
func Int64Variant(x int64) Variant { return Variant{typ: TypeInt64, num: uint64(x)} }

// UInt64Variant returns a UInt64 Variant.
func UInt64Variant(x uint64) Variant { return Variant{typ: TypeUInt64, num: x} }

// FloatVariant returns a Float Variant.
func FloatVariant(x float32) Variant {
	return Variant{typ: TypeFloat, num: uint64(math.Float32bits(x))}
}

// DoubleVariant returns a Double Variant.
func DoubleVariant(x float64) Variant { return Variant{typ: TypeDouble, num: math.Float64bits(x)} }

// StringVariant returns a String Variant; a null string stays null inside it.
func StringVariant(s string) Variant { return Variant{typ: TypeString, str: s} }

// DateTimeVariant returns a DateTime Variant.
func DateTimeVariant(t DateTime) Variant {
	return Variant{typ: TypeDateTime, num: uint64(t.clamp())}
}

// StatusCodeVariant returns a StatusCode Variant.
func StatusCodeVariant(c status.Code) Variant { return Variant{typ: TypeStatusCode, num: uint64(c)} }

// GuidVariant returns a Guid Variant.
func GuidVariant(g Guid) Variant {
	var b [16]byte
	putGuid(b[:], g)
	return Variant{typ: TypeGuid, str: string(b[:])}
}

// ByteStringVariant returns a ByteString Variant holding a copy of b; nil stays null.
func ByteStringVariant(b []byte) Variant {
	if b == nil {
		return Variant{typ: TypeByteString}
	}
	if len(b) == 0 {
		return Variant{typ: TypeByteString, str: EmptyString}
	}
	return Variant{typ: TypeByteString, str: string(b)}
}

// XmlElementVariant returns an XmlElement Variant.
func XmlElementVariant(s string) Variant { return Variant{typ: TypeXmlElement, str: s} }

// NodeIdVariant returns a NodeId Variant.
func NodeIdVariant(n NodeId) Variant {
	return Variant{typ: TypeNodeId, num: uint64(n.ns)<<40 | uint64(n.typ)<<32 | uint64(n.num), str: n.str}
}

// QualifiedNameVariant returns a QualifiedName Variant.
func QualifiedNameVariant(q QualifiedName) Variant {
	return Variant{typ: TypeQualifiedName, num: uint64(q.NamespaceIndex), str: q.Name}
}

// VariantOf wraps x, which must be a value of a built-in type (Go bool, int8, byte, int16,
// uint16, int32, uint32, int64, uint64, float32, float64, string, DateTime, Guid, []byte,
// NodeId, ExpandedNodeId, status.Code, QualifiedName, LocalizedText, ExtensionObject,
// *DataValue, *DiagnosticInfo, a Structure (wrapped in an ExtensionObject), a slice of any
// of these or of Variant, or nil). Use XmlElementVariant for XML and NewMatrix for arrays
// of more than one dimension.
//
// Go boxes every empty string as the same null one, so an EmptyString passed in x arrives
// as the null String; use StringVariant(EmptyString) for an empty, non-null String.
func VariantOf(x any) (Variant, error) {
	switch x := x.(type) {
	case nil:
		return Variant{}, nil
	case Variant:
		return x, nil
	case bool:
		return BooleanVariant(x), nil
	case int8:
		return SByteVariant(x), nil
	case byte:
		return ByteVariant(x), nil
	case int16:
		return Int16Variant(x), nil
	case uint16:
		return UInt16Variant(x), nil
	case int32:
		return Int32Variant(x), nil
	case uint32:
		return UInt32Variant(x), nil
	case int64:
		return Int64Variant(x), nil
	case uint64:
		return UInt64Variant(x), nil
	case float32:
		return FloatVariant(x), nil
	case float64:
		return DoubleVariant(x), nil
	case string:
		return StringVariant(x), nil
	case DateTime:
		return DateTimeVariant(x), nil
	case Guid:
		return GuidVariant(x), nil
	case []byte:
		return ByteStringVariant(x), nil
	case NodeId:
		return NodeIdVariant(x), nil
	case ExpandedNodeId:
		return Variant{typ: TypeExpandedNodeId, obj: x}, nil
	case status.Code:
		return StatusCodeVariant(x), nil
	case QualifiedName:
		return QualifiedNameVariant(x), nil
	case LocalizedText:
		return Variant{typ: TypeLocalizedText, obj: x}, nil
	case ExtensionObject:
		return Variant{typ: TypeExtensionObject, obj: x}, nil
	case *ExtensionObject:
		return Variant{typ: TypeExtensionObject, obj: *x}, nil
	case *DataValue:
		return Variant{typ: TypeDataValue, obj: x}, nil
	case DataValue:
		return Variant{typ: TypeDataValue, obj: &x}, nil
	case *DiagnosticInfo:
		return Variant{typ: TypeDiagnosticInfo, obj: x}, nil
	case Structure:
		return Variant{typ: TypeExtensionObject, obj: ExtensionObject{Value: x}}, nil
	}
	if t, ok := sliceType(x); ok {
		return Variant{typ: t, array: true, obj: x}, nil
	}
	return Variant{}, fmt.Errorf("codec: %T is not a built-in type", x)
}

// MustVariant is VariantOf for values known to be valid; it panics otherwise.
func MustVariant(x any) Variant {
	v, err := VariantOf(x)
	if err != nil {
		panic(err)
	}
	return v
}

// NewMatrix returns a multi-dimensional array Variant: flat holds the elements in
// row-major order (a slice VariantOf accepts) and dims the length of each dimension.
// The binary encoding carries the dimensions only when there are at least two and all
// are greater than 0 (Part 6 §5.2.2.16); other shapes travel as a flat array.
func NewMatrix(flat any, dims []int32) (Variant, error) {
	t, ok := sliceType(flat)
	if !ok {
		return Variant{}, fmt.Errorf("codec: %T is not a built-in array type", flat)
	}
	n := 1
	for _, d := range dims {
		if d < 0 {
			return Variant{}, fmt.Errorf("codec: negative dimension %d", d)
		}
		n *= int(d)
	}
	if n != sliceLen(flat) || len(dims) == 0 {
		return Variant{}, fmt.Errorf("codec: dimensions %v do not match %d elements", dims, sliceLen(flat))
	}
	return Variant{typ: t, array: true, obj: &matrix{flat: flat, dims: dims}}, nil
}

func sliceType(x any) (TypeID, bool) {
	switch x.(type) {
	case []bool:
		return TypeBoolean, true
	case []int8:
		return TypeSByte, true
	case []byte:
		return TypeByte, true
	case []int16:
		return TypeInt16, true
	case []uint16:
		return TypeUInt16, true
	case []int32:
		return TypeInt32, true
	case []uint32:
		return TypeUInt32, true
	case []int64:
		return TypeInt64, true
	case []uint64:
		return TypeUInt64, true
	case []float32:
		return TypeFloat, true
	case []float64:
		return TypeDouble, true
	case []string:
		return TypeString, true
	case []DateTime:
		return TypeDateTime, true
	case []Guid:
		return TypeGuid, true
	case [][]byte:
		return TypeByteString, true
	case []NodeId:
		return TypeNodeId, true
	case []ExpandedNodeId:
		return TypeExpandedNodeId, true
	case []status.Code:
		return TypeStatusCode, true
	case []QualifiedName:
		return TypeQualifiedName, true
	case []LocalizedText:
		return TypeLocalizedText, true
	case []ExtensionObject:
		return TypeExtensionObject, true
	case []DataValue:
		return TypeDataValue, true
	case []Variant:
		return TypeVariant, true
	case []DiagnosticInfo:
		return TypeDiagnosticInfo, true
	}
	return TypeNull, false
}

// XmlElementArray returns an array Variant of XmlElements.
func XmlElementArray(x []string) Variant {
	return Variant{typ: TypeXmlElement, array: true, obj: x}
}

// ByteArray returns an array Variant of Bytes. VariantOf takes a []byte for a ByteString,
// the more common meaning.
func ByteArray(x []byte) Variant {
	return Variant{typ: TypeByte, array: true, obj: x}
}

func sliceLen(x any) int {
	switch x := x.(type) {
	case []bool:
		return len(x)
	case []int8:
		return len(x)
	case []byte:
		return len(x)
	case []int16:
		return len(x)
	case []uint16:
		return len(x)
	case []int32:
		return len(x)
	case []uint32:
		return len(x)
	case []int64:
		return len(x)
	case []uint64:
		return len(x)
	case []float32:
		return len(x)
	case []float64:
		return len(x)
	case []string:
		return len(x)
	case []DateTime:
		return len(x)
	case []Guid:
		return len(x)
	case [][]byte:
		return len(x)
	case []NodeId:
		return len(x)
	case []ExpandedNodeId:
		return len(x)
	case []status.Code:
		return len(x)
	case []QualifiedName:
		return len(x)
	case []LocalizedText:
		return len(x)
	case []ExtensionObject:
		return len(x)
	case []DataValue:
		return len(x)
	case []Variant:
		return len(x)
	case []DiagnosticInfo:
		return len(x)
	case *matrix:
		return sliceLen(x.flat)
	}
	return 0
}

// Value returns the held value as the Go type VariantOf accepts for it: a scalar value, a
// typed slice for an array (the flat elements of a multi-dimensional one), or nil. A
// String or XmlElement scalar comes back boxed, which makes an empty one null (see
// VariantOf); Str keeps the difference.
func (v *Variant) Value() any {
	if v.array {
		if m, ok := v.obj.(*matrix); ok {
			return m.flat
		}
		return v.obj
	}
	switch v.typ {
	case TypeNull:
		return nil
	case TypeBoolean:
		return v.num != 0
	case TypeSByte:
		return int8(v.num)
	case TypeByte:
		return byte(v.num)
	case TypeInt16:
		return int16(v.num)
	case TypeUInt16:
		return uint16(v.num)
	case TypeInt32:
		return int32(v.num)
	case TypeUInt32:
		return uint32(v.num)
	case TypeInt64:
		return int64(v.num)
	case TypeUInt64:
		return v.num
	case TypeFloat:
		return math.Float32frombits(uint32(v.num))
	case TypeDouble:
		return math.Float64frombits(v.num)
	case TypeString, TypeXmlElement:
		return v.str
	case TypeDateTime:
		return DateTime(v.num)
	case TypeStatusCode:
		return status.Code(v.num)
	case TypeGuid:
		return v.Guid()
	case TypeByteString:
		return v.ByteString()
	case TypeNodeId:
		return v.NodeId()
	case TypeQualifiedName:
		return QualifiedName{NamespaceIndex: uint16(v.num), Name: v.str}
	}
	return v.obj
}

// Bits returns the raw payload of a fixed-size scalar: the integer, the IEEE bits of a
// float, 0 or 1 for a Boolean. It lets hot paths read a value without boxing.
func (v *Variant) Bits() uint64 { return v.num }

// Str returns the text of a String or XmlElement scalar.
func (v *Variant) Str() string { return v.str }

// Guid returns a Guid scalar, or the zero Guid.
func (v *Variant) Guid() Guid {
	if v.typ != TypeGuid || v.array || len(v.str) != 16 {
		return Guid{}
	}
	return readGuid([]byte(v.str))
}

// ByteString returns a copy of a ByteString scalar; nil when null.
func (v *Variant) ByteString() []byte {
	if v.typ != TypeByteString || v.array || IsNull(v.str) {
		return nil
	}
	return []byte(v.str)
}

// NodeId returns a NodeId scalar, or the null NodeId.
func (v *Variant) NodeId() NodeId {
	if v.typ != TypeNodeId || v.array {
		return NodeId{}
	}
	return NodeId{ns: uint16(v.num >> 40), typ: IDType(v.num >> 32), num: uint32(v.num), str: v.str}
}

// String formats v for people.
func (v Variant) String() string {
	if v.typ == TypeNull {
		return "null"
	}
	if v.array {
		return fmt.Sprintf("%s%v", v.typ, v.Value())
	}
	return fmt.Sprintf("%s(%v)", v.typ, v.Value())
}

const (
	variantArray      = 0x80
	variantDimensions = 0x40
)

// Variant writes v (Part 6 §5.2.2.16).
func (e *Encoder) Variant(v *Variant) {
	// Fast path for a fixed-size scalar when the buffer has room: store all 8 payload
	// bytes and keep sz of them, which is exact for every fixed-size type because the
	// payload is little-endian. Everything else, growth included, is out of line so
	// that this path needs no spills and a small frame.
	n := len(e.buf)
	if sz := int(fixedSize[v.typ&31]); sz != 0 && !v.array && n+9 <= cap(e.buf) {
		b := e.buf[n : n+9]
		b[0] = byte(v.typ)
		binary.LittleEndian.PutUint64(b[1:], v.num)
		e.buf = e.buf[:n+1+sz]
		return
	}
	e.variant(v)
}

// variant writes v when the fast path of Variant does not apply.
func (e *Encoder) variant(v *Variant) {
	if !v.array {
		if fixedSize[v.typ&31] != 0 {
			// Only reached when the buffer has fewer than 9 bytes spare: make room, and
			// the fast path applies.
			if e.src != nil {
				e.fitChunk()
			} else {
				e.grow(9)
			}
			e.Variant(v)
			return
		}
		e.variantScalar(v)
		return
	}
	flat, dims := v.obj, []int32(nil)
	if m, ok := v.obj.(*matrix); ok {
		flat = m.flat
		if wireDims(m.dims) {
			dims = m.dims
		}
	}
	mask := byte(v.typ) | variantArray
	if dims != nil {
		mask |= variantDimensions
	}
	e.fit()
	e.buf = append(e.buf, mask)
	if !e.enter() {
		return
	}
	e.array(v.typ, flat)
	e.leave()
	if dims != nil {
		e.ArrayLength(len(dims), false)
		for _, d := range dims {
			e.Int32(d)
		}
	}
}

// wireDims reports whether dims may be written as ArrayDimensions: "only if the number of
// dimensions is 2 or greater and all dimensions have a length greater than 0" (Part 6
// §5.2.2.16). Other shapes are written as a flat array.
func wireDims(dims []int32) bool {
	if len(dims) < 2 {
		return false
	}
	for _, d := range dims {
		if d <= 0 {
			return false
		}
	}
	return true
}

func (e *Encoder) grow(n int) {
	b := make([]byte, len(e.buf), 2*cap(e.buf)+n)
	copy(b, e.buf)
	e.buf = b
}

func (e *Encoder) variantScalar(v *Variant) {
	if v.typ >= typeCount || v.typ == TypeVariant {
		e.Fail(status.BadEncodingError)
		e.buf = append(e.buf, 0)
		return
	}
	e.fit()
	e.buf = append(e.buf, byte(v.typ))
	e.scalarValue(v)
}

// scalarValue writes the value of the scalar v (not a fixed-size one) without its type.
func (e *Encoder) scalarValue(v *Variant) {
	switch v.typ {
	case TypeNull:
	case TypeString, TypeXmlElement, TypeByteString:
		e.String(v.str)
	case TypeGuid:
		if len(v.str) == 16 {
			e.buf = append(e.buf, v.str...)
		} else {
			e.buf = append(e.buf, zeroGuid...)
		}
	case TypeNodeId:
		e.NodeId(v.NodeId())
	case TypeQualifiedName:
		e.UInt16(uint16(v.num))
		e.String(v.str)
	case TypeExpandedNodeId:
		x, _ := v.obj.(ExpandedNodeId)
		e.ExpandedNodeId(x)
	case TypeLocalizedText:
		x, _ := v.obj.(LocalizedText)
		e.LocalizedText(x)
	case TypeExtensionObject:
		x, _ := v.obj.(ExtensionObject)
		e.ExtensionObject(&x)
	case TypeDataValue:
		x, _ := v.obj.(*DataValue)
		if x == nil {
			x = &DataValue{}
		}
		if e.enter() {
			e.DataValue(x)
			e.leave()
		}
	case TypeDiagnosticInfo:
		x, _ := v.obj.(*DiagnosticInfo)
		if x == nil {
			x = &DiagnosticInfo{}
		}
		e.DiagnosticInfo(x)
	}
}

// array writes the length and elements of a typed slice.
func (e *Encoder) array(t TypeID, x any) {
	switch x := x.(type) {
	case []bool:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.Boolean(b)
		}
	case []int8:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.SByte(b)
		}
	case []byte:
		e.ArrayLength(len(x), x == nil)
		e.put(x)
	case []int16:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.Int16(b)
		}
	case []uint16:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.UInt16(b)
		}
	case []int32:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.Int32(b)
		}
	case []uint32:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.UInt32(b)
		}
	case []int64:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.Int64(b)
		}
	case []uint64:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.UInt64(b)
		}
	case []float32:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.Float(b)
		}
	case []float64:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.Double(b)
		}
	case []string:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.String(b)
		}
	case []DateTime:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.DateTime(b)
		}
	case []Guid:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.Guid(b)
		}
	case [][]byte:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.ByteString(b)
		}
	case []NodeId:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.NodeId(b)
		}
	case []ExpandedNodeId:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.ExpandedNodeId(b)
		}
	case []status.Code:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.StatusCode(b)
		}
	case []QualifiedName:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.QualifiedName(b)
		}
	case []LocalizedText:
		e.ArrayLength(len(x), x == nil)
		for _, b := range x {
			e.LocalizedText(b)
		}
	case []ExtensionObject:
		e.ArrayLength(len(x), x == nil)
		for i := range x {
			e.ExtensionObject(&x[i])
		}
	case []DataValue:
		e.ArrayLength(len(x), x == nil)
		for i := range x {
			e.DataValue(&x[i])
		}
	case []Variant:
		e.ArrayLength(len(x), x == nil)
		for i := range x {
			e.Variant(&x[i])
		}
	case []DiagnosticInfo:
		e.ArrayLength(len(x), x == nil)
		for i := range x {
			e.DiagnosticInfo(&x[i])
		}
	default:
		e.Fail(status.BadEncodingError)
		e.ArrayLength(0, true)
	}
}

// minSize is the fewest bytes an encoded element of each type takes, used to reject array
// lengths the message cannot hold before allocating.
var minSize = [typeCount]int{
	TypeBoolean: 1, TypeSByte: 1, TypeByte: 1, TypeInt16: 2, TypeUInt16: 2, TypeInt32: 4,
	TypeUInt32: 4, TypeInt64: 8, TypeUInt64: 8, TypeFloat: 4, TypeDouble: 8, TypeString: 4,
	TypeDateTime: 8, TypeGuid: 16, TypeByteString: 4, TypeXmlElement: 4, TypeNodeId: 2,
	TypeExpandedNodeId: 2, TypeStatusCode: 4, TypeQualifiedName: 6, TypeLocalizedText: 1,
	TypeExtensionObject: 3, TypeDataValue: 1, TypeVariant: 1, TypeDiagnosticInfo: 1,
}

// memSize is the size in memory of an array element of each type, charged against the
// decode budget before an array is made (see Decoder.Charge).
var memSize = [typeCount]int{
	TypeBoolean: 1, TypeSByte: 1, TypeByte: 1, TypeInt16: 2, TypeUInt16: 2, TypeInt32: 4,
	TypeUInt32: 4, TypeInt64: 8, TypeUInt64: 8, TypeFloat: 4, TypeDouble: 8,
	TypeString:          int(unsafe.Sizeof("")),
	TypeDateTime:        int(unsafe.Sizeof(DateTime(0))),
	TypeGuid:            int(unsafe.Sizeof(Guid{})),
	TypeByteString:      int(unsafe.Sizeof([]byte(nil))),
	TypeXmlElement:      int(unsafe.Sizeof("")),
	TypeNodeId:          int(unsafe.Sizeof(NodeId{})),
	TypeExpandedNodeId:  int(unsafe.Sizeof(ExpandedNodeId{})),
	TypeStatusCode:      int(unsafe.Sizeof(status.Code(0))),
	TypeQualifiedName:   int(unsafe.Sizeof(QualifiedName{})),
	TypeLocalizedText:   int(unsafe.Sizeof(LocalizedText{})),
	TypeExtensionObject: int(unsafe.Sizeof(ExtensionObject{})),
	TypeDataValue:       int(unsafe.Sizeof(DataValue{})),
	TypeVariant:         int(unsafe.Sizeof(Variant{})),
	TypeDiagnosticInfo:  int(unsafe.Sizeof(DiagnosticInfo{})),
}

// boxedSliceSize is what storing a non-nil slice in a Variant's interface allocates: the
// slice header.
const boxedSliceSize = int(unsafe.Sizeof([]byte(nil)))

// Variant reads a Variant into v.
func (d *Decoder) Variant(v *Variant) {
	*v = Variant{}
	mask := d.Byte()
	t := TypeID(mask & 0x3f)
	if t >= typeCount {
		// Part 6 §5.2.2.16: ids 26 to 31 are reserved, and decoders shall read them as
		// ByteStrings and pass them on; everything above is not a Variant.
		if t > 31 {
			d.Fail(status.BadDecodingError)
			return
		}
		t = TypeByteString
	}
	if mask&variantArray == 0 {
		if mask&variantDimensions != 0 {
			d.Fail(status.BadDecodingError)
			return
		}
		d.variantScalar(v, t)
		return
	}
	if t == TypeNull {
		d.Fail(status.BadDecodingError)
		return
	}
	if !d.Enter() {
		return
	}
	flat := d.array(t)
	d.Leave()
	if d.err != nil {
		return
	}
	v.typ, v.array, v.obj = t, true, flat
	if mask&variantDimensions == 0 {
		return
	}
	if !d.arrayDimensions(v, flat) {
		*v = Variant{}
	}
}

// arrayDimensions reads the ArrayDimensions of the array flat and stores a matrix in v
// when they describe one. Dimensions whose product differs from the number of elements
// fail with BadDecodingError (Part 6 §5.2.2.16). A dimension <= 0 means the array is empty
// ("If one or more dimensions has a length <= 0 then the ArrayLength is 0"); such shapes
// and single dimensions stay flat arrays, since an encoder does not write them.
func (d *Decoder) arrayDimensions(v *Variant, flat any) bool {
	n := d.SizedArrayLength(4, int(unsafe.Sizeof(int32(0))))
	if n <= 0 {
		d.Fail(status.BadDecodingError)
		return false
	}
	if !d.Charge(int(unsafe.Sizeof(matrix{}))) {
		return false
	}
	dims := make([]int32, n)
	total, empty, over := 1, false, false
	for i := range dims {
		dim := d.Int32()
		dims[i] = dim
		switch {
		case dim <= 0:
			empty = true
		case total > d.limits.MaxArrayLength/int(dim):
			over = true
		default:
			total *= int(dim)
		}
	}
	switch {
	case d.err != nil:
		return false
	case empty:
		total = 0
	case over:
		d.Fail(status.BadEncodingLimitsExceeded)
		return false
	}
	if total != sliceLen(flat) {
		d.Fail(status.BadDecodingError)
		return false
	}
	if wireDims(dims) {
		v.obj = &matrix{flat: flat, dims: dims}
	}
	return true
}

func (d *Decoder) variantScalar(v *Variant, t TypeID) {
	v.typ = t
	switch t {
	case TypeNull:
	case TypeBoolean:
		v.num = 0
		if d.Byte() != 0 {
			v.num = 1
		}
	case TypeSByte, TypeByte:
		v.num = uint64(d.Byte())
	case TypeInt16, TypeUInt16:
		v.num = uint64(d.UInt16())
	case TypeInt32, TypeUInt32, TypeFloat, TypeStatusCode:
		v.num = uint64(d.UInt32())
	case TypeInt64, TypeUInt64, TypeDouble:
		v.num = d.UInt64()
	case TypeDateTime:
		v.num = uint64(d.DateTime())
	case TypeString, TypeXmlElement:
		v.str = d.String()
	case TypeByteString:
		v.str = d.byteStringAsString()
	case TypeGuid:
		if b := d.take(16); b != nil && d.Charge(len(b)) {
			v.str = string(b)
		}
	case TypeNodeId:
		n := d.NodeId()
		v.num, v.str = uint64(n.ns)<<40|uint64(n.typ)<<32|uint64(n.num), n.str
	case TypeQualifiedName:
		v.num = uint64(d.UInt16())
		v.str = d.String()
	// The values below are boxed in v.obj, so each is an allocation of its own.
	case TypeExpandedNodeId:
		if d.Charge(memSize[t]) {
			v.obj = d.ExpandedNodeId()
		}
	case TypeLocalizedText:
		if d.Charge(memSize[t]) {
			v.obj = d.LocalizedText()
		}
	case TypeExtensionObject:
		if d.Charge(memSize[t]) {
			var x ExtensionObject
			d.ExtensionObject(&x)
			v.obj = x
		}
	case TypeDataValue:
		if d.Charge(memSize[t]) && d.Enter() {
			x := new(DataValue)
			d.DataValue(x)
			d.Leave()
			v.obj = x
		}
	case TypeDiagnosticInfo:
		if d.Charge(memSize[t]) {
			x := new(DiagnosticInfo)
			d.DiagnosticInfo(x)
			v.obj = x
		}
	default:
		// A Variant cannot hold a scalar Variant.
		d.Fail(status.BadDecodingError)
	}
	if d.err != nil {
		*v = Variant{}
	}
}

// byteStringAsString reads a ByteString into a string, keeping null apart from empty.
func (d *Decoder) byteStringAsString() string {
	n := d.length(d.limits.MaxByteStringLength)
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

// array reads the length and elements of an array of t into a typed slice.
func (d *Decoder) array(t TypeID) any {
	n := d.ArrayLength(minSize[t])
	if n < 0 || !d.Charge(n*memSize[t]+boxedSliceSize) {
		return nullSlice(t)
	}
	switch t {
	case TypeBoolean:
		x := make([]bool, n)
		for i := range x {
			x[i] = d.Boolean()
		}
		return x
	case TypeSByte:
		x := make([]int8, n)
		for i := range x {
			x[i] = d.SByte()
		}
		return x
	case TypeByte:
		x := make([]byte, n)
		copy(x, d.take(n))
		return x
	case TypeInt16:
		x := make([]int16, n)
		for i := range x {
			x[i] = d.Int16()
		}
		return x
	case TypeUInt16:
		x := make([]uint16, n)
		for i := range x {
			x[i] = d.UInt16()
		}
		return x
	case TypeInt32:
		x := make([]int32, n)
		for i := range x {
			x[i] = d.Int32()
		}
		return x
	case TypeUInt32:
		x := make([]uint32, n)
		for i := range x {
			x[i] = d.UInt32()
		}
		return x
	case TypeInt64:
		x := make([]int64, n)
		for i := range x {
			x[i] = d.Int64()
		}
		return x
	case TypeUInt64:
		x := make([]uint64, n)
		for i := range x {
			x[i] = d.UInt64()
		}
		return x
	case TypeFloat:
		x := make([]float32, n)
		for i := range x {
			x[i] = d.Float()
		}
		return x
	case TypeDouble:
		x := make([]float64, n)
		for i := range x {
			x[i] = d.Double()
		}
		return x
	case TypeString, TypeXmlElement:
		x := make([]string, n)
		for i := range x {
			x[i] = d.String()
		}
		return x
	case TypeDateTime:
		x := make([]DateTime, n)
		for i := range x {
			x[i] = d.DateTime()
		}
		return x
	case TypeGuid:
		x := make([]Guid, n)
		for i := range x {
			x[i] = d.Guid()
		}
		return x
	case TypeByteString:
		x := make([][]byte, n)
		for i := range x {
			x[i] = d.ByteString()
		}
		return x
	case TypeNodeId:
		x := make([]NodeId, n)
		for i := range x {
			x[i] = d.NodeId()
		}
		return x
	case TypeExpandedNodeId:
		x := make([]ExpandedNodeId, n)
		for i := range x {
			x[i] = d.ExpandedNodeId()
		}
		return x
	case TypeStatusCode:
		x := make([]status.Code, n)
		for i := range x {
			x[i] = d.StatusCode()
		}
		return x
	case TypeQualifiedName:
		x := make([]QualifiedName, n)
		for i := range x {
			x[i] = d.QualifiedName()
		}
		return x
	case TypeLocalizedText:
		x := make([]LocalizedText, n)
		for i := range x {
			x[i] = d.LocalizedText()
		}
		return x
	case TypeExtensionObject:
		x := make([]ExtensionObject, n)
		for i := range x {
			d.ExtensionObject(&x[i])
		}
		return x
	case TypeDataValue:
		x := make([]DataValue, n)
		for i := range x {
			d.DataValue(&x[i])
		}
		return x
	case TypeVariant:
		x := make([]Variant, n)
		for i := range x {
			d.Variant(&x[i])
		}
		return x
	case TypeDiagnosticInfo:
		x := make([]DiagnosticInfo, n)
		for i := range x {
			d.DiagnosticInfo(&x[i])
		}
		return x
	}
	d.Fail(status.BadDecodingError)
	return nil
}

// nullSlice returns a nil slice of t's Go type, so that a null array keeps its type.
func nullSlice(t TypeID) any {
	switch t {
	case TypeBoolean:
		return []bool(nil)
	case TypeSByte:
		return []int8(nil)
	case TypeByte:
		return []byte(nil)
	case TypeInt16:
		return []int16(nil)
	case TypeUInt16:
		return []uint16(nil)
	case TypeInt32:
		return []int32(nil)
	case TypeUInt32:
		return []uint32(nil)
	case TypeInt64:
		return []int64(nil)
	case TypeUInt64:
		return []uint64(nil)
	case TypeFloat:
		return []float32(nil)
	case TypeDouble:
		return []float64(nil)
	case TypeString, TypeXmlElement:
		return []string(nil)
	case TypeDateTime:
		return []DateTime(nil)
	case TypeGuid:
		return []Guid(nil)
	case TypeByteString:
		return [][]byte(nil)
	case TypeNodeId:
		return []NodeId(nil)
	case TypeExpandedNodeId:
		return []ExpandedNodeId(nil)
	case TypeStatusCode:
		return []status.Code(nil)
	case TypeQualifiedName:
		return []QualifiedName(nil)
	case TypeLocalizedText:
		return []LocalizedText(nil)
	case TypeExtensionObject:
		return []ExtensionObject(nil)
	case TypeDataValue:
		return []DataValue(nil)
	case TypeVariant:
		return []Variant(nil)
	case TypeDiagnosticInfo:
		return []DiagnosticInfo(nil)
	}
	return nil
}
