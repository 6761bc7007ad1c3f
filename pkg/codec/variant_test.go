package codec_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

func binV(x any) codec.Variant { return codec.MustVariant(x) }

// binM returns a multi-dimensional array Variant; it panics on a bad shape.
func binM(flat any, dims ...int32) codec.Variant {
	v, err := codec.NewMatrix(flat, dims)
	if err != nil {
		panic(err)
	}
	return v
}

// Encoded parts reused by the Variant, DataValue and ExtensionObject tables.
var (
	binHotWaterNodeId     = codec.NewStringNodeId(1, "Hot水")
	binHotWaterNodeIdWire = []byte{0x03, 0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 'H', 'o', 't', 0xE6, 0xB0, 0xB4}

	// An ExtensionObject of a type nobody registered: ns=1;i=300, binary body DEADBEEF.
	binUnknownExtObj = codec.ExtensionObject{
		TypeID: codec.NewNumericNodeId(1, 300), Encoding: codec.ExtensionObjectBinary, Body: []byte{0xDE, 0xAD, 0xBE, 0xEF},
	}
	binUnknownExtObjWire = []byte{
		0x01, 0x01, 0x2C, 0x01, // TypeId: four-byte ns=1;i=300
		0x01,                   // Encoding: ByteString body
		0x04, 0x00, 0x00, 0x00, // Length
		0xDE, 0xAD, 0xBE, 0xEF, // Body
	}
)

// binVariantScalarCases have one row for each built-in type a Variant scalar can hold.
var binVariantScalarCases = []binCase[codec.Variant]{
	{name: "Null", val: codec.Variant{}, wire: []byte{0x00}},
	{name: "Boolean", val: binV(true), wire: []byte{
		0x01, // EncodingMask: Boolean scalar
		0x01, // true
	}},
	{name: "SByte", val: binV(int8(-2)), wire: []byte{0x02, 0xFE}},
	{name: "Byte", val: binV(byte(200)), wire: []byte{0x03, 0xC8}},
	{name: "Int16", val: binV(int16(-2)), wire: []byte{0x04, 0xFE, 0xFF}},
	{name: "UInt16", val: binV(uint16(0x1234)), wire: []byte{0x05, 0x34, 0x12}},
	{name: "Int32", val: binV(int32(-6)), wire: []byte{
		0x06,                   // EncodingMask: Int32 scalar
		0xFA, 0xFF, 0xFF, 0xFF, // -6
	}},
	{name: "UInt32", val: binV(uint32(0xDEADBEEF)), wire: []byte{0x07, 0xEF, 0xBE, 0xAD, 0xDE}},
	{name: "Int64", val: binV(int64(-2)), wire: []byte{0x08, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
	{name: "UInt64", val: binV(uint64(math.MaxUint64)), wire: []byte{0x09, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
	{name: "Float", val: binV(float32(-6.5)), wire: []byte{0x0A, 0x00, 0x00, 0xD0, 0xC0}},
	{name: "Double", val: binV(-6.5), wire: []byte{0x0B, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1A, 0xC0}},
	{name: "String", val: binV("水Boy"), wire: binCat([]byte{0x0C}, binStringCases[0].wire)},
	{name: "String null", val: binV(""), wire: []byte{0x0C, 0xFF, 0xFF, 0xFF, 0xFF}},
	{name: "String empty", val: codec.StringVariant(codec.EmptyString), wire: []byte{0x0C, 0x00, 0x00, 0x00, 0x00}},
	{name: "DateTime", val: binV(binDateTimeExample), wire: binCat([]byte{0x0D}, binDateTimeExampleWire)},
	{name: "Guid", val: binV(binGuidExample), wire: binCat([]byte{0x0E}, binGuidExampleWire)},
	{name: "ByteString", val: binV([]byte{1, 2, 3}), wire: []byte{
		0x0F,                   // EncodingMask: ByteString scalar
		0x03, 0x00, 0x00, 0x00, // length
		0x01, 0x02, 0x03,
	}},
	{name: "ByteString null", val: binV([]byte(nil)), wire: []byte{0x0F, 0xFF, 0xFF, 0xFF, 0xFF}},
	{name: "ByteString empty", val: binV([]byte{}), wire: []byte{0x0F, 0x00, 0x00, 0x00, 0x00}},
	{name: "XmlElement", val: codec.XmlElementVariant("<a/>"), wire: []byte{0x10, 0x04, 0x00, 0x00, 0x00, '<', 'a', '/', '>'}},
	{name: "NodeId", val: binV(binHotWaterNodeId), wire: binCat([]byte{0x11}, binHotWaterNodeIdWire)},
	{name: "NodeId two-byte", val: binV(codec.NewNumericNodeId(0, 72)), wire: []byte{0x11, 0x00, 0x48}},
	{name: "NodeId guid", val: binV(codec.NewGuidNodeId(0xFFFF, binGuidExample)), wire: binCat([]byte{0x11, 0x04, 0xFF, 0xFF}, binGuidExampleWire)},
	{name: "ExpandedNodeId", val: binV(codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, 85), ServerIndex: 2}), wire: []byte{
		0x12,       // EncodingMask: ExpandedNodeId scalar
		0x40, 0x55, // two-byte | ServerIndex; i=85
		0x02, 0x00, 0x00, 0x00, // ServerIndex
	}},
	{name: "StatusCode", val: binV(status.BadDecodingError), wire: []byte{0x13, 0x00, 0x00, 0x07, 0x80}},
	{name: "QualifiedName", val: binV(codec.QualifiedName{NamespaceIndex: 1, Name: "Temp"}), wire: []byte{
		0x14,       // EncodingMask: QualifiedName scalar
		0x01, 0x00, // NamespaceIndex
		0x04, 0x00, 0x00, 0x00, 'T', 'e', 'm', 'p',
	}},
	{name: "LocalizedText", val: binV(codec.LocalizedText{Locale: "en", Text: "Hi"}), wire: []byte{
		0x15,                             // EncodingMask: LocalizedText scalar
		0x03,                             // Locale | Text
		0x02, 0x00, 0x00, 0x00, 'e', 'n', // Locale
		0x02, 0x00, 0x00, 0x00, 'H', 'i', // Text
	}},
	{name: "ExtensionObject no body", val: binV(codec.ExtensionObject{TypeID: codec.NewNumericNodeId(1, 300)}), wire: []byte{
		0x16,                   // EncodingMask: ExtensionObject scalar
		0x01, 0x01, 0x2C, 0x01, // TypeId ns=1;i=300
		0x00, // Encoding: no body
	}},
	{name: "ExtensionObject unknown body", val: binV(binUnknownExtObj), wire: binCat([]byte{0x16}, binUnknownExtObjWire)},
	{name: "ExtensionObject registered", val: binV(codec.NewExtensionObject(&binStruct{ID: 7, Name: "x", Value: binV(int32(1))})), wire: []byte{
		0x16,                    // EncodingMask: ExtensionObject scalar
		0x01, binNS, 0x02, 0x00, // TypeId: BinStruct's binary encoding
		0x01,                   // Encoding: ByteString body
		0x0E, 0x00, 0x00, 0x00, // Length 14
		0x07, 0x00, 0x00, 0x00, // ID
		0x01, 0x00, 0x00, 0x00, 'x', // Name
		0x06, 0x01, 0x00, 0x00, 0x00, // Value: Variant Int32 1
	}},
	// Variant in a DataValue in a Variant.
	{name: "DataValue", val: binV(&codec.DataValue{Value: binV(1.5)}), wire: []byte{
		0x17,                                           // EncodingMask: DataValue scalar
		0x01,                                           // DataValue mask: Value
		0x0B,                                           // Variant EncodingMask: Double
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F, // 1.5
	}},
	{name: "DataValue empty", val: binV(&codec.DataValue{}), wire: []byte{0x17, 0x00}},
	{name: "DiagnosticInfo", val: binV(&codec.DiagnosticInfo{Mask: codec.HasSymbolicID, SymbolicID: 42}), wire: []byte{
		0x19,                   // EncodingMask: DiagnosticInfo scalar
		0x01,                   // DiagnosticInfo mask: SymbolicId
		0x2A, 0x00, 0x00, 0x00, // SymbolicId
	}},
	// Non-canonical inputs.
	{name: "Boolean 0x02", val: binV(true), wire: []byte{0x01, 0x02}, canon: []byte{0x01, 0x01}},
	{name: "DateTime before 1601", val: binV(codec.DateTime(0)), wire: []byte{0x0D, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},
		canon: binCat([]byte{0x0D}, make([]byte, 8))},
	{name: "String length -7", val: binV(""), wire: []byte{0x0C, 0xF9, 0xFF, 0xFF, 0xFF}, canon: []byte{0x0C, 0xFF, 0xFF, 0xFF, 0xFF}},
}

func TestBinaryVariantScalars(t *testing.T) {
	t.Parallel()
	binRunTable(t, binVariantCodec, binVariantScalarCases)

	// Every built-in type except Variant itself has a scalar row.
	seen := map[codec.TypeID]bool{}
	for _, c := range binVariantScalarCases {
		seen[c.val.Type()] = true
	}
	for id := codec.TypeNull; id <= codec.TypeDiagnosticInfo; id++ {
		require.Equal(t, id != codec.TypeVariant, seen[id], "scalar row for %v", id)
	}
}

// binVariantArrayCases have one row for each array type, null and empty arrays, matrices
// and arrays of Variants.
var binVariantArrayCases = []binCase[codec.Variant]{
	{name: "Boolean", val: binV([]bool{true, false}), wire: []byte{
		0x81,                   // EncodingMask: array | Boolean
		0x02, 0x00, 0x00, 0x00, // ArrayLength
		0x01, 0x00, // elements
	}},
	{name: "SByte", val: binV([]int8{-1, 1}), wire: []byte{0x82, 0x02, 0x00, 0x00, 0x00, 0xFF, 0x01}},
	// There is no 1-D Byte array constructor ([]byte is a ByteString): a 1-D matrix is one.
	{name: "Byte", val: binM([]byte{1, 2}, 2), wire: []byte{0x83, 0x02, 0x00, 0x00, 0x00, 0x01, 0x02}},
	{name: "Int16", val: binV([]int16{1, -1}), wire: []byte{0x84, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0xFF, 0xFF}},
	{name: "UInt16", val: binV([]uint16{1, 0xFFFF}), wire: []byte{0x85, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0xFF, 0xFF}},
	{name: "Int32", val: binV([]int32{1, -1}), wire: []byte{
		0x86,                   // EncodingMask: array | Int32
		0x02, 0x00, 0x00, 0x00, // ArrayLength
		0x01, 0x00, 0x00, 0x00, // [0]
		0xFF, 0xFF, 0xFF, 0xFF, // [1]
	}},
	{name: "UInt32", val: binV([]uint32{7}), wire: []byte{0x87, 0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00}},
	{name: "Int64", val: binV([]int64{-2}), wire: []byte{0x88, 0x01, 0x00, 0x00, 0x00, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
	{name: "UInt64", val: binV([]uint64{1}), wire: []byte{0x89, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
	{name: "Float", val: binV([]float32{-6.5, float32(math.NaN())}), wire: []byte{
		0x8A, 0x02, 0x00, 0x00, 0x00, // array | Float, 2 elements
		0x00, 0x00, 0xD0, 0xC0, // -6.5
		0x00, 0x00, 0xC0, 0x7F, // NaN
	}},
	{name: "Double", val: binV([]float64{1.5}), wire: []byte{0x8B, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F}},
	{name: "String", val: binV([]string{"a", "", codec.EmptyString}), wire: []byte{
		0x8C,                   // EncodingMask: array | String
		0x03, 0x00, 0x00, 0x00, // ArrayLength
		0x01, 0x00, 0x00, 0x00, 'a', // "a"
		0xFF, 0xFF, 0xFF, 0xFF, // null
		0x00, 0x00, 0x00, 0x00, // empty
	}},
	{name: "DateTime", val: binV([]codec.DateTime{binDateTimeExample, 0}), wire: binCat(
		[]byte{0x8D, 0x02, 0x00, 0x00, 0x00}, binDateTimeExampleWire, make([]byte, 8))},
	{name: "Guid", val: binV([]codec.Guid{binGuidExample}), wire: binCat([]byte{0x8E, 0x01, 0x00, 0x00, 0x00}, binGuidExampleWire)},
	{name: "ByteString", val: binV([][]byte{{1}, nil, {}}), wire: []byte{
		0x8F,                   // EncodingMask: array | ByteString
		0x03, 0x00, 0x00, 0x00, // ArrayLength
		0x01, 0x00, 0x00, 0x00, 0x01, // {1}
		0xFF, 0xFF, 0xFF, 0xFF, // null
		0x00, 0x00, 0x00, 0x00, // empty
	}},
	{name: "XmlElement", val: codec.XmlElementArray([]string{"<a/>"}), wire: []byte{0x90, 0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, '<', 'a', '/', '>'}},
	{name: "NodeId", val: binV([]codec.NodeId{codec.NewNumericNodeId(0, 72), binHotWaterNodeId}), wire: binCat(
		[]byte{0x91, 0x02, 0x00, 0x00, 0x00}, []byte{0x00, 0x48}, binHotWaterNodeIdWire)},
	{name: "ExpandedNodeId", val: binV([]codec.ExpandedNodeId{{NodeId: codec.NewNumericNodeId(0, 1), NamespaceURI: "u"}}), wire: []byte{
		0x92, 0x01, 0x00, 0x00, 0x00, // array | ExpandedNodeId, 1 element
		0x80, 0x01, // two-byte | NamespaceUri; i=1
		0x01, 0x00, 0x00, 0x00, 'u', // NamespaceUri
	}},
	{name: "StatusCode", val: binV([]status.Code{status.Good, status.BadDecodingError}), wire: []byte{
		0x93, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x80}},
	{name: "QualifiedName", val: binV([]codec.QualifiedName{{NamespaceIndex: 2, Name: "q"}}), wire: []byte{
		0x94, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 'q'}},
	{name: "LocalizedText", val: binV([]codec.LocalizedText{{}, {Text: "t"}}), wire: []byte{
		0x95, 0x02, 0x00, 0x00, 0x00, // array | LocalizedText, 2 elements
		0x00,                              // mask 0
		0x02, 0x01, 0x00, 0x00, 0x00, 't', // mask 2, Text
	}},
	{name: "ExtensionObject", val: binV([]codec.ExtensionObject{{}, binUnknownExtObj}), wire: binCat(
		[]byte{0x96, 0x02, 0x00, 0x00, 0x00}, // array | ExtensionObject, 2 elements
		[]byte{0x00, 0x00, 0x00},             // null TypeId, no body
		binUnknownExtObjWire)},
	{name: "DataValue", val: binV([]codec.DataValue{{}, {Value: binV(int32(1)), Status: status.BadDecodingError}}), wire: []byte{
		0x97, 0x02, 0x00, 0x00, 0x00, // array | DataValue, 2 elements
		0x00,                         // mask 0
		0x03,                         // mask: Value | StatusCode
		0x06, 0x01, 0x00, 0x00, 0x00, // Variant Int32 1
		0x00, 0x00, 0x07, 0x80, // StatusCode
	}},
	{name: "Variant", val: binV([]codec.Variant{binV(int32(1)), binV("a"), {}}), wire: []byte{
		0x98,                   // EncodingMask: array | Variant
		0x03, 0x00, 0x00, 0x00, // ArrayLength
		0x06, 0x01, 0x00, 0x00, 0x00, // Int32 1
		0x0C, 0x01, 0x00, 0x00, 0x00, 'a', // String "a"
		0x00, // null
	}},
	{name: "DiagnosticInfo", val: binV([]codec.DiagnosticInfo{{}, {Mask: codec.HasInnerStatusCode, InnerStatusCode: status.BadDecodingError}}), wire: []byte{
		0x99, 0x02, 0x00, 0x00, 0x00, // array | DiagnosticInfo, 2 elements
		0x00,                         // mask 0
		0x20, 0x00, 0x00, 0x07, 0x80, // InnerStatusCode
	}},
	{name: "Variant of Variant arrays", val: binV([]codec.Variant{binV([]int32{1})}), wire: []byte{
		0x98, 0x01, 0x00, 0x00, 0x00, // array | Variant, 1 element
		0x86, 0x01, 0x00, 0x00, 0x00, // array | Int32, 1 element
		0x01, 0x00, 0x00, 0x00,
	}},
	{name: "null Int32 array", val: binV([]int32(nil)), wire: []byte{
		0x86,                   // EncodingMask: array | Int32
		0xFF, 0xFF, 0xFF, 0xFF, // ArrayLength -1: null
	}},
	{name: "empty Int32 array", val: binV([]int32{}), wire: []byte{0x86, 0x00, 0x00, 0x00, 0x00}},
	// Matrices: ArrayDimensions follow the flat elements (§5.2.2.16).
	{name: "2x3 Int32 matrix", val: binM([]int32{1, 2, 3, 4, 5, 6}, 2, 3), wire: []byte{
		0xC6,                   // EncodingMask: array | ArrayDimensions | Int32
		0x06, 0x00, 0x00, 0x00, // ArrayLength: 6 elements in all
		0x01, 0x00, 0x00, 0x00, // [0,0]
		0x02, 0x00, 0x00, 0x00, // [0,1]
		0x03, 0x00, 0x00, 0x00, // [0,2]
		0x04, 0x00, 0x00, 0x00, // [1,0]
		0x05, 0x00, 0x00, 0x00, // [1,1]
		0x06, 0x00, 0x00, 0x00, // [1,2]
		0x02, 0x00, 0x00, 0x00, // ArrayDimensionsLength
		0x02, 0x00, 0x00, 0x00, // 2 rows
		0x03, 0x00, 0x00, 0x00, // 3 columns
	}},
	{name: "2x1 String matrix", val: binM([]string{"a", "bc"}, 2, 1), wire: []byte{
		0xCC, 0x02, 0x00, 0x00, 0x00, // array | dims | String, 2 elements
		0x01, 0x00, 0x00, 0x00, 'a',
		0x02, 0x00, 0x00, 0x00, 'b', 'c',
		0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // dims [2,1]
	}},
	{name: "1x1x2 Byte matrix", val: binM([]byte{9, 8}, 1, 1, 2), wire: []byte{
		0xC3, 0x02, 0x00, 0x00, 0x00, 0x09, 0x08, // array | dims | Byte, 2 elements
		0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // dims [1,1,2]
	}},
	// ArrayDimensions that an encoder does not write ("only present if the number of
	// dimensions is 2 or greater and all dimensions have a length greater than 0") are
	// accepted and the array kept flat.
	{name: "one dimension", val: binV([]int32{5}), wire: []byte{
		0xC6, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, // array | dims | Int32 [5]
		0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // dims [1]
	}, canon: []byte{0x86, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00}},
	// "If one or more dimensions has a length <= 0 then the ArrayLength is 0."
	{name: "zero dimension", val: binV([]int32{}), wire: []byte{
		0xC6, 0x00, 0x00, 0x00, 0x00, // array | dims | Int32, no elements
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, // dims [0,3]
	}, canon: []byte{0x86, 0x00, 0x00, 0x00, 0x00}},
	{name: "negative dimension", val: binV([]int32{}), wire: []byte{
		0xC6, 0x00, 0x00, 0x00, 0x00, // array | dims | Int32, no elements
		0x02, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, // dims [MaxInt32,-1]
	}, canon: []byte{0x86, 0x00, 0x00, 0x00, 0x00}},
}

func TestBinaryVariantArrays(t *testing.T) {
	t.Parallel()
	binRunTable(t, binVariantCodec, binVariantArrayCases)

	seen := map[codec.TypeID]bool{}
	for _, c := range binVariantArrayCases {
		seen[c.val.Type()] = true
	}
	for id := codec.TypeBoolean; id <= codec.TypeDiagnosticInfo; id++ {
		require.True(t, seen[id], "array row for %v", id)
	}
}

// binNullArrays returns a null array Variant of every type.
func binNullArrays() []codec.Variant {
	vs := []codec.Variant{
		binV([]bool(nil)), binV([]int8(nil)), binM([]byte(nil), 0), binV([]int16(nil)), binV([]uint16(nil)),
		binV([]int32(nil)), binV([]uint32(nil)), binV([]int64(nil)), binV([]uint64(nil)), binV([]float32(nil)),
		binV([]float64(nil)), binV([]string(nil)), binV([]codec.DateTime(nil)), binV([]codec.Guid(nil)),
		binV([][]byte(nil)), codec.XmlElementArray(nil), binV([]codec.NodeId(nil)), binV([]codec.ExpandedNodeId(nil)),
		binV([]status.Code(nil)), binV([]codec.QualifiedName(nil)), binV([]codec.LocalizedText(nil)),
		binV([]codec.ExtensionObject(nil)), binV([]codec.DataValue(nil)), binV([]codec.Variant(nil)),
		binV([]codec.DiagnosticInfo(nil)),
	}
	return vs
}

func TestBinaryVariantNullArrays(t *testing.T) {
	t.Parallel()
	var cases []binCase[codec.Variant]
	for i, v := range binNullArrays() {
		require.Equal(t, codec.TypeID(i+1), v.Type())
		cases = append(cases, binCase[codec.Variant]{name: v.Type().String(), val: v, wire: []byte{
			0x80 | byte(v.Type()),  // EncodingMask: array | type
			0xFF, 0xFF, 0xFF, 0xFF, // ArrayLength -1
		}})
	}
	binRunTable(t, binVariantCodec, cases)
}

func TestEncodeVariantMatrixShapes(t *testing.T) {
	t.Parallel()
	// Shapes that Part 6 §5.2.2.16 does not let an encoder write as ArrayDimensions
	// travel flat.
	for _, tc := range []struct {
		name string
		v    codec.Variant
		wire []byte
	}{
		{"one dimension", binM([]int32{7}, 1), []byte{0x86, 0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00}},
		{"zero dimension", binM([]int32{}, 2, 0), []byte{0x86, 0x00, 0x00, 0x00, 0x00}},
		{"null flat, zero dimension", binM([]int32(nil), 0, 4), []byte{0x86, 0xFF, 0xFF, 0xFF, 0xFF}},
	} {
		e := codec.NewEncoder(nil)
		e.Variant(&tc.v)
		require.NoError(t, e.Err(), tc.name)
		require.Equal(t, tc.wire, e.Bytes(), tc.name)
	}
}

func TestVariantOf(t *testing.T) {
	t.Parallel()
	dv := &codec.DataValue{Value: binV(int32(1))}
	di := &codec.DiagnosticInfo{Mask: codec.HasLocale, Locale: 2}
	st := &binStruct{ID: 1}
	for _, tc := range []struct {
		in   any
		typ  codec.TypeID
		want any // Value(); nil means in
	}{
		{true, codec.TypeBoolean, nil},
		{int8(-1), codec.TypeSByte, nil},
		{byte(1), codec.TypeByte, nil},
		{int16(-1), codec.TypeInt16, nil},
		{uint16(1), codec.TypeUInt16, nil},
		{int32(-1), codec.TypeInt32, nil},
		{uint32(1), codec.TypeUInt32, nil},
		{int64(-1), codec.TypeInt64, nil},
		{uint64(1), codec.TypeUInt64, nil},
		{float32(1.5), codec.TypeFloat, nil},
		{2.5, codec.TypeDouble, nil},
		{"s", codec.TypeString, nil},
		{binDateTimeExample, codec.TypeDateTime, nil},
		{codec.DateTime(-3), codec.TypeDateTime, codec.DateTime(0)},
		{binGuidExample, codec.TypeGuid, nil},
		{[]byte{1}, codec.TypeByteString, nil},
		{binHotWaterNodeId, codec.TypeNodeId, nil},
		{codec.ExpandedNodeId{ServerIndex: 1}, codec.TypeExpandedNodeId, nil},
		{status.BadDecodingError, codec.TypeStatusCode, nil},
		{codec.QualifiedName{NamespaceIndex: 1, Name: "n"}, codec.TypeQualifiedName, nil},
		{codec.LocalizedText{Text: "t"}, codec.TypeLocalizedText, nil},
		{binUnknownExtObj, codec.TypeExtensionObject, nil},
		{&binUnknownExtObj, codec.TypeExtensionObject, binUnknownExtObj},
		{st, codec.TypeExtensionObject, codec.NewExtensionObject(st)},
		{dv, codec.TypeDataValue, nil},
		{*dv, codec.TypeDataValue, dv},
		{di, codec.TypeDiagnosticInfo, nil},
		{[]int32{1}, codec.TypeInt32, nil},
		{[]codec.Variant{{}}, codec.TypeVariant, nil},
	} {
		v, err := codec.VariantOf(tc.in)
		require.NoError(t, err, "%T", tc.in)
		require.Equal(t, tc.typ, v.Type(), "%T", tc.in)
		want := tc.want
		if want == nil {
			want = tc.in
		}
		require.True(t, binEqValue(want, v.Value()), "%T: Value() = %v", tc.in, v.Value())
	}

	v, err := codec.VariantOf(nil)
	require.NoError(t, err)
	require.True(t, v.IsNull())
	require.Nil(t, v.Value())
	require.Equal(t, "null", v.String())
	v, err = codec.VariantOf(binV(int32(3)))
	require.NoError(t, err)
	require.Equal(t, int32(3), v.Value())

	for _, bad := range []any{1, uint(1), struct{}{}, map[string]int{}, []int{1}, &codec.Variant{}} {
		_, err := codec.VariantOf(bad)
		require.Error(t, err, "%T", bad)
	}
	require.Panics(t, func() { codec.MustVariant(1) })
}

func TestVariantOfEmptyStringIsNull(t *testing.T) {
	t.Parallel()
	// Converting a string to an interface turns every empty string into the same null
	// one, so VariantOf cannot see EmptyString; StringVariant can.
	boxed := binV(codec.EmptyString)
	require.True(t, codec.IsNull(boxed.Str()))
	direct := codec.StringVariant(codec.EmptyString)
	require.False(t, codec.IsNull(direct.Str()))
	require.True(t, codec.IsNull(direct.Value().(string)), "Value boxes the string")
	// Inside a slice or a struct the difference survives.
	arr := binV([]string{codec.EmptyString})
	require.False(t, codec.IsNull(arr.Value().([]string)[0]))
	qn := binV(codec.QualifiedName{Name: codec.EmptyString})
	require.False(t, codec.IsNull(qn.Value().(codec.QualifiedName).Name))
}

func TestVariantAccessors(t *testing.T) {
	t.Parallel()
	f := binV(float32(-6.5))
	require.Equal(t, uint64(0xC0D00000), f.Bits())
	require.False(t, f.IsArray())
	require.Nil(t, f.Dimensions())
	require.Equal(t, "Float(-6.5)", f.String())

	s := binV("x")
	require.Equal(t, "x", s.Str())
	g := binV(binGuidExample)
	require.Equal(t, binGuidExample, g.Guid())
	require.Equal(t, codec.Guid{}, s.Guid())

	in := []byte{1, 2}
	b := codec.ByteStringVariant(in)
	in[0] = 9
	require.Equal(t, []byte{1, 2}, b.ByteString(), "ByteStringVariant copies")
	nb, eb := codec.ByteStringVariant(nil), codec.ByteStringVariant([]byte{})
	require.Nil(t, nb.ByteString())
	require.NotNil(t, eb.ByteString())
	require.Nil(t, s.ByteString())

	n := binV(codec.NewGuidNodeId(7, binGuidExample))
	require.Equal(t, codec.NewGuidNodeId(7, binGuidExample), n.NodeId())
	require.Equal(t, codec.NodeId{}, s.NodeId())

	m := binM([]int32{1, 2, 3, 4, 5, 6}, 2, 3)
	require.True(t, m.IsArray())
	require.Equal(t, []int32{2, 3}, m.Dimensions())
	require.Equal(t, []int32{1, 2, 3, 4, 5, 6}, m.Value())
	a := binV([]int32{1, 2})
	require.Equal(t, []int32{2}, a.Dimensions())
	require.Equal(t, "Int32[1 2]", a.String())

	for _, tc := range []struct {
		flat any
		dims []int32
	}{
		{[]int32{1, 2}, []int32{3}},
		{[]int32{1, 2}, nil},
		{[]int32{}, []int32{-1, 0}},
		{[]int{1}, []int32{1}},
		{"abc", []int32{3}},
	} {
		_, err := codec.NewMatrix(tc.flat, tc.dims)
		require.Error(t, err, "%T %v", tc.flat, tc.dims)
	}

	require.Equal(t, "DiagnosticInfo", codec.TypeDiagnosticInfo.String())
	require.Equal(t, "TypeID(26)", codec.TypeID(26).String())
}
