package codec_test

// Shared machinery for the binary codec tests (Part 6 §5.2): annotated wire tables checked
// in both directions, value equality that sees null apart from empty and compares floats
// by their bits, and a registered structure for ExtensionObject bodies.
//
// Test helpers here and in the other *_test.go files of the binary codec start with "bin"
// so that they cannot collide with the JSON codec's tests in the same package.

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// binCase is one row of an annotated wire table. val encodes to canon (wire unless canon is
// set); wire decodes to val; and the decoded value re-encodes to canon. canon is set only
// for inputs a decoder accepts but an encoder never writes (Boolean 0x02, a non-compact
// NodeId, picoseconds without a timestamp, ...).
type binCase[T any] struct {
	name  string
	val   T
	wire  []byte
	canon []byte
}

// binCodec adapts one type's encoder, decoder and equality to the table runner.
type binCodec[T any] struct {
	enc func(*codec.Encoder, *T)
	dec func(*codec.Decoder, *T)
	eq  func(a, b *T) bool
}

// binRunTable checks every row: value → exact bytes, bytes → value with nothing left over,
// value → same bytes again, and every truncation of the bytes → BadDecodingError without
// a panic.
func binRunTable[T any](t *testing.T, c binCodec[T], cases []binCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			canon := tc.wire
			if tc.canon != nil {
				canon = tc.canon
			}

			e := codec.NewEncoder(nil)
			c.enc(e, &tc.val)
			require.NoError(t, e.Err(), "encode")
			require.Equal(t, binHex(canon), binHex(e.Bytes()), "encode %v", tc.val)

			d := codec.NewDecoder(tc.wire)
			var got T
			c.dec(d, &got)
			require.NoError(t, d.Err(), "decode")
			require.Zero(t, d.Remaining(), "decode left bytes unread")
			require.True(t, c.eq(&tc.val, &got), "decode:\nwant %v\ngot  %v", tc.val, got)

			e.Reset(nil)
			c.enc(e, &got)
			require.NoError(t, e.Err(), "re-encode")
			require.Equal(t, binHex(canon), binHex(e.Bytes()), "re-encode")

			binRequireTruncationFails(t, tc.wire, func(d *codec.Decoder) { var x T; c.dec(d, &x) })
		})
	}
}

// binRequireTruncationFails decodes every proper prefix of wire and requires
// BadDecodingError. A panic fails the test.
func binRequireTruncationFails(t *testing.T, wire []byte, decode func(*codec.Decoder)) {
	t.Helper()
	for n := range len(wire) {
		d := codec.NewDecoder(wire[:n:n])
		decode(d)
		require.Equal(t, error(status.BadDecodingError), d.Err(), "truncated to %d of %d bytes", n, len(wire))
	}
}

// binHex formats b as "01 02 ff" so that table mismatches are readable.
func binHex(b []byte) string {
	var s []byte
	for i, c := range b {
		if i > 0 {
			s = append(s, ' ')
		}
		s = fmt.Appendf(s, "%02x", c)
	}
	return string(s)
}

// binCat concatenates byte slices; tables use it to build a row from annotated parts.
func binCat(parts ...[]byte) []byte { return slices.Concat(parts...) }

// binStr returns the String encoding of s: Int32 length, then the UTF-8 bytes.
func binStr(s string) []byte {
	return binCat([]byte{byte(len(s)), byte(len(s) >> 8), byte(len(s) >> 16), byte(len(s) >> 24)}, []byte(s))
}

// binI32 returns the little-endian bytes of v.
func binI32(v int32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// binScalar makes a binCodec from a value-returning decoder method and an encoder method,
// comparing with ==.
func binScalar[T comparable](enc func(*codec.Encoder, T), dec func(*codec.Decoder) T) binCodec[T] {
	return binCodec[T]{
		enc: func(e *codec.Encoder, v *T) { enc(e, *v) },
		dec: func(d *codec.Decoder, v *T) { *v = dec(d) },
		eq:  func(a, b *T) bool { return *a == *b },
	}
}

// The binCodecs of the composite types.
var (
	binVariantCodec = binCodec[codec.Variant]{
		enc: (*codec.Encoder).Variant,
		dec: (*codec.Decoder).Variant,
		eq:  binEqVariant,
	}
	binDataValueCodec = binCodec[codec.DataValue]{
		enc: (*codec.Encoder).DataValue,
		dec: (*codec.Decoder).DataValue,
		eq:  binEqDataValue,
	}
	binDiagCodec = binCodec[codec.DiagnosticInfo]{
		enc: (*codec.Encoder).DiagnosticInfo,
		dec: (*codec.Decoder).DiagnosticInfo,
		eq:  binEqDiag,
	}
	binExtObjCodec = binCodec[codec.ExtensionObject]{
		enc: (*codec.Encoder).ExtensionObject,
		dec: (*codec.Decoder).ExtensionObject,
		eq:  binEqExtObj,
	}
	binNodeIdCodec         = binScalar((*codec.Encoder).NodeId, (*codec.Decoder).NodeId)
	binExpandedNodeIdCodec = binScalar((*codec.Encoder).ExpandedNodeId, (*codec.Decoder).ExpandedNodeId)
)

// binEqString compares content and null-ness: the binary encoding keeps a null String
// (length -1) apart from an empty one (length 0).
func binEqString(a, b string) bool { return a == b && codec.IsNull(a) == codec.IsNull(b) }

// binEqBytes compares content and null-ness of ByteStrings.
func binEqBytes(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

func binEqVariant(a, b *codec.Variant) bool {
	if a.Type() != b.Type() || a.IsArray() != b.IsArray() {
		return false
	}
	if a.IsArray() && !slices.Equal(a.Dimensions(), b.Dimensions()) {
		return false
	}
	if !a.IsArray() && (a.Type() == codec.TypeString || a.Type() == codec.TypeXmlElement) {
		// Value boxes the string, and boxing makes an empty String null; Str does not.
		return binEqString(a.Str(), b.Str())
	}
	return binEqValue(a.Value(), b.Value())
}

// binEqValue compares two results of Variant.Value.
func binEqValue(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case string:
		y, ok := b.(string)
		return ok && binEqString(x, y)
	case []byte:
		y, ok := b.([]byte)
		return ok && binEqBytes(x, y)
	case codec.QualifiedName:
		y, ok := b.(codec.QualifiedName)
		return ok && binEqQName(&x, &y)
	case codec.ExtensionObject:
		y, ok := b.(codec.ExtensionObject)
		return ok && binEqExtObj(&x, &y)
	case *codec.DataValue:
		y, ok := b.(*codec.DataValue)
		return ok && (x == nil) == (y == nil) && (x == nil || binEqDataValue(x, y))
	case *codec.DiagnosticInfo:
		y, ok := b.(*codec.DiagnosticInfo)
		return ok && (x == nil) == (y == nil) && (x == nil || binEqDiag(x, y))
	case []bool:
		return binEqSlice(x, b, binEqComparable[bool])
	case []int8:
		return binEqSlice(x, b, binEqComparable[int8])
	case []int16:
		return binEqSlice(x, b, binEqComparable[int16])
	case []uint16:
		return binEqSlice(x, b, binEqComparable[uint16])
	case []int32:
		return binEqSlice(x, b, binEqComparable[int32])
	case []uint32:
		return binEqSlice(x, b, binEqComparable[uint32])
	case []int64:
		return binEqSlice(x, b, binEqComparable[int64])
	case []uint64:
		return binEqSlice(x, b, binEqComparable[uint64])
	case []float32:
		return binEqSlice(x, b, func(p, q *float32) bool { return math.Float32bits(*p) == math.Float32bits(*q) })
	case []float64:
		return binEqSlice(x, b, func(p, q *float64) bool { return math.Float64bits(*p) == math.Float64bits(*q) })
	case []string:
		return binEqSlice(x, b, func(p, q *string) bool { return binEqString(*p, *q) })
	case []codec.DateTime:
		return binEqSlice(x, b, binEqComparable[codec.DateTime])
	case []codec.Guid:
		return binEqSlice(x, b, binEqComparable[codec.Guid])
	case [][]byte:
		return binEqSlice(x, b, func(p, q *[]byte) bool { return binEqBytes(*p, *q) })
	case []codec.NodeId:
		return binEqSlice(x, b, binEqComparable[codec.NodeId])
	case []codec.ExpandedNodeId:
		return binEqSlice(x, b, binEqComparable[codec.ExpandedNodeId])
	case []status.Code:
		return binEqSlice(x, b, binEqComparable[status.Code])
	case []codec.QualifiedName:
		return binEqSlice(x, b, binEqQName)
	case []codec.LocalizedText:
		return binEqSlice(x, b, binEqComparable[codec.LocalizedText])
	case []codec.ExtensionObject:
		return binEqSlice(x, b, binEqExtObj)
	case []codec.DataValue:
		return binEqSlice(x, b, binEqDataValue)
	case []codec.Variant:
		return binEqSlice(x, b, binEqVariant)
	case []codec.DiagnosticInfo:
		return binEqSlice(x, b, binEqDiag)
	case bool, int8, byte, int16, uint16, int32, uint32, int64, uint64, codec.DateTime, codec.Guid,
		codec.NodeId, codec.ExpandedNodeId, status.Code, codec.LocalizedText:
		return a == b
	}
	panic(fmt.Sprintf("binEqValue: unexpected %T", a))
}

func binEqComparable[T comparable](p, q *T) bool { return *p == *q }

// binEqSlice compares a with b, which must be a []T of the same length and null-ness.
func binEqSlice[T any](a []T, b any, eq func(p, q *T) bool) bool {
	y, ok := b.([]T)
	if !ok || (a == nil) != (y == nil) || len(a) != len(y) {
		return false
	}
	for i := range a {
		if !eq(&a[i], &y[i]) {
			return false
		}
	}
	return true
}

func binEqQName(a, b *codec.QualifiedName) bool {
	return a.NamespaceIndex == b.NamespaceIndex && binEqString(a.Name, b.Name)
}

func binEqDataValue(a, b *codec.DataValue) bool {
	return binEqVariant(&a.Value, &b.Value) && a.Status == b.Status &&
		a.SourceTimestamp == b.SourceTimestamp && a.SourcePicoseconds == b.SourcePicoseconds &&
		a.ServerTimestamp == b.ServerTimestamp && a.ServerPicoseconds == b.ServerPicoseconds
}

func binEqDiag(a, b *codec.DiagnosticInfo) bool {
	if a.Mask != b.Mask || a.SymbolicID != b.SymbolicID || a.NamespaceURI != b.NamespaceURI ||
		a.Locale != b.Locale || a.LocalizedText != b.LocalizedText ||
		!binEqString(a.AdditionalInfo, b.AdditionalInfo) || a.InnerStatusCode != b.InnerStatusCode {
		return false
	}
	if a.InnerDiagnosticInfo == nil || b.InnerDiagnosticInfo == nil {
		return a.InnerDiagnosticInfo == b.InnerDiagnosticInfo
	}
	return binEqDiag(a.InnerDiagnosticInfo, b.InnerDiagnosticInfo)
}

func binEqExtObj(a, b *codec.ExtensionObject) bool {
	if a.TypeID != b.TypeID || a.Encoding != b.Encoding || !binEqBytes(a.Body, b.Body) {
		return false
	}
	if a.Value == nil || b.Value == nil {
		return a.Value == nil && b.Value == nil
	}
	if a.Value.TypeInfo() != b.Value.TypeInfo() {
		return false
	}
	if x, ok := a.Value.(*binStruct); ok {
		y := b.Value.(*binStruct)
		return x.ID == y.ID && binEqString(x.Name, y.Name) && binEqVariant(&x.Value, &y.Value)
	}
	// Other registered types (the JSON tests register their own in the same registry)
	// are compared by their binary encoding.
	ea, eb := codec.NewEncoder(nil), codec.NewEncoder(nil)
	a.Value.EncodeBinary(ea)
	b.Value.EncodeBinary(eb)
	return ea.Err() == nil && eb.Err() == nil && bytes.Equal(ea.Bytes(), eb.Bytes())
}

// binNS is the namespace index of the test structure's ids; no generated type uses it.
const binNS = 201

// binStruct is a structure registered for the binary ExtensionObject tests. Its body holds
// a Variant, so that ExtensionObject → Variant → ExtensionObject nesting can be built.
type binStruct struct {
	ID    int32
	Name  string
	Value codec.Variant
}

var binStructInfo = &codec.TypeInfo{
	Name:           "BinStruct",
	DataType:       codec.NewNumericNodeId(binNS, 1),
	BinaryEncoding: codec.NewNumericNodeId(binNS, 2),
	New:            func() codec.Structure { return new(binStruct) },
	Size:           int(unsafe.Sizeof(binStruct{})),
}

func init() {
	if !codec.Register(binStructInfo) {
		panic("binary codec tests: ids of BinStruct already registered")
	}
}

func (s *binStruct) EncodeBinary(e *codec.Encoder) {
	e.Int32(s.ID)
	e.String(s.Name)
	e.Variant(&s.Value)
}

func (s *binStruct) DecodeBinary(d *codec.Decoder) {
	s.ID = d.Int32()
	s.Name = d.String()
	d.Variant(&s.Value)
}

func (s *binStruct) EncodeJSON(*codec.JSONEncoder) { panic("BinStruct is for binary tests only") }
func (s *binStruct) DecodeJSON(*codec.JSONDecoder) { panic("BinStruct is for binary tests only") }
func (s *binStruct) TypeInfo() *codec.TypeInfo     { return binStructInfo }
