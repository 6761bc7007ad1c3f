package codec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// binExtObjCases are ExtensionObject rows (Part 6 §5.2.2.15).
var binExtObjCases = []binCase[codec.ExtensionObject]{
	{name: "null", val: codec.ExtensionObject{}, wire: []byte{
		0x00, 0x00, // TypeId: null NodeId
		0x00, // Encoding: no body
	}},
	{name: "no body", val: codec.ExtensionObject{TypeID: codec.NewNumericNodeId(1, 300)}, wire: []byte{
		0x01, 0x01, 0x2C, 0x01, // TypeId: ns=1;i=300
		0x00, // Encoding: no body
	}},
	// A body of an unknown type is kept as bytes and written back unchanged.
	{name: "unknown binary body", val: binUnknownExtObj, wire: binUnknownExtObjWire},
	{name: "unknown binary body, string TypeId", val: codec.ExtensionObject{
		TypeID: codec.NewStringNodeId(2, "T"), Encoding: codec.ExtensionObjectBinary, Body: []byte{0x00, 0x01, 0x02},
	}, wire: []byte{
		0x03, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 'T', // TypeId: ns=2;s=T
		0x01,                   // Encoding: ByteString body
		0x03, 0x00, 0x00, 0x00, // Length
		0x00, 0x01, 0x02, // Body
	}},
	{name: "empty binary body", val: codec.ExtensionObject{
		TypeID: codec.NewNumericNodeId(1, 300), Encoding: codec.ExtensionObjectBinary, Body: []byte{},
	}, wire: []byte{0x01, 0x01, 0x2C, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00}},
	{name: "XML body", val: codec.ExtensionObject{
		TypeID: codec.NewNumericNodeId(1, 301), Encoding: codec.ExtensionObjectXML, Body: []byte("<a/>"),
	}, wire: []byte{
		0x01, 0x01, 0x2D, 0x01, // TypeId: ns=1;i=301
		0x02,                   // Encoding: XmlElement body
		0x04, 0x00, 0x00, 0x00, // Length
		'<', 'a', '/', '>', // Body
	}},
	// A registered type's body is decoded into Value.
	{name: "registered", val: codec.NewExtensionObject(&binStruct{ID: -1, Name: "", Value: binV(binGuidExample)}), wire: binCat(
		[]byte{0x01, binNS, 0x02, 0x00},  // TypeId: BinStruct binary encoding ns=201;i=2
		[]byte{0x01},                     // Encoding: ByteString body
		[]byte{0x19, 0x00, 0x00, 0x00},   // Length 25
		[]byte{0xFF, 0xFF, 0xFF, 0xFF},   // ID -1
		[]byte{0xFF, 0xFF, 0xFF, 0xFF},   // Name: null
		[]byte{0x0E}, binGuidExampleWire, // Value: Variant Guid
	)},
	{name: "registered, nested", val: codec.NewExtensionObject(&binStruct{
		ID: 1, Name: "o", Value: binV(codec.NewExtensionObject(&binStruct{ID: 2, Name: "i"})),
	}), wire: []byte{
		0x01, binNS, 0x02, 0x00, // TypeId
		0x01,                   // Encoding: ByteString body
		0x1D, 0x00, 0x00, 0x00, // Length 29
		0x01, 0x00, 0x00, 0x00, // ID 1
		0x01, 0x00, 0x00, 0x00, 'o', // Name
		0x16,                    // Value: Variant ExtensionObject
		0x01, binNS, 0x02, 0x00, // inner TypeId
		0x01,                   // inner Encoding
		0x0A, 0x00, 0x00, 0x00, // inner Length 10
		0x02, 0x00, 0x00, 0x00, // inner ID 2
		0x01, 0x00, 0x00, 0x00, 'i', // inner Name
		0x00, // inner Value: null Variant
	}},
	// The DataType id of a registered type is not an encoding id: the body stays bytes.
	{name: "registered DataType id is not an encoding", val: codec.ExtensionObject{
		TypeID: binStructInfo.DataType, Encoding: codec.ExtensionObjectBinary, Body: []byte{0x01},
	}, wire: []byte{0x01, binNS, 0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01}},
	// An XML body of a registered type is kept as bytes too.
	{name: "registered type, XML body", val: codec.ExtensionObject{
		TypeID: binStructInfo.BinaryEncoding, Encoding: codec.ExtensionObjectXML, Body: []byte("<x/>"),
	}, wire: []byte{0x01, binNS, 0x02, 0x00, 0x02, 0x04, 0x00, 0x00, 0x00, '<', 'x', '/', '>'}},
	// A null body length is read as an empty body.
	{name: "body length -1", val: codec.ExtensionObject{
		TypeID: codec.NewNumericNodeId(1, 300), Encoding: codec.ExtensionObjectBinary, Body: []byte{},
	}, wire: []byte{0x01, 0x01, 0x2C, 0x01, 0x01, 0xFF, 0xFF, 0xFF, 0xFF},
		canon: []byte{0x01, 0x01, 0x2C, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00}},
	// A registered type's id in a longer NodeId form is still recognised.
	{name: "registered, numeric TypeId form", val: codec.NewExtensionObject(&binStruct{ID: 3, Name: "n"}), wire: []byte{
		0x02, binNS, 0x00, 0x02, 0x00, 0x00, 0x00, // TypeId ns=201;i=2 in numeric form
		0x01, 0x0A, 0x00, 0x00, 0x00, // Encoding, Length 10
		0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 'n', 0x00,
	}, canon: []byte{
		0x01, binNS, 0x02, 0x00, // TypeId in four-byte form
		0x01, 0x0A, 0x00, 0x00, 0x00,
		0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 'n', 0x00,
	}},
}

func TestBinaryExtensionObject(t *testing.T) {
	t.Parallel()
	binRunTable(t, binExtObjCodec, binExtObjCases)
}

func TestExtensionObjectBodyLength(t *testing.T) {
	t.Parallel()
	// A registered body must use exactly the bytes its Length declares.
	for _, tc := range []struct {
		name string
		wire []byte
	}{
		{"body shorter than Length", []byte{
			0x01, binNS, 0x02, 0x00, 0x01,
			0x0B, 0x00, 0x00, 0x00, // Length 11: one byte more than the structure
			0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 'n', 0x00,
			0x00, // unread by the structure
		}},
		// A null Length is an empty body, for a registered type too (fuzz crasher
		// 998c81e352fe59f1: the null body used to be kept as bytes, and re-encoding it
		// with Length 0 made a value that no longer decoded).
		{"registered type, null Length", []byte{
			0x01, binNS, 0x02, 0x00, 0x01, // TypeId, Encoding
			0xFF, 0xFF, 0xFF, 0xFF, // Length -1: BinStruct cannot be read from no bytes
		}},
		{"body longer than Length", []byte{
			0x01, binNS, 0x02, 0x00, 0x01,
			0x09, 0x00, 0x00, 0x00, // Length 9: the Variant lies outside
			0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 'n',
			0x00, // a byte the body must not reach
		}},
	} {
		d := codec.NewDecoder(tc.wire)
		var x codec.ExtensionObject
		d.ExtensionObject(&x)
		require.Equal(t, error(status.BadDecodingError), d.Err(), tc.name)
		require.Nil(t, x.Value, tc.name)
		require.Zero(t, d.Remaining(), tc.name)
	}
}

func TestEncodeExtensionObject(t *testing.T) {
	t.Parallel()
	// A nil Body with a body encoding is written as an empty body.
	e := codec.NewEncoder(nil)
	e.ExtensionObject(&codec.ExtensionObject{TypeID: codec.NewNumericNodeId(0, 5), Encoding: codec.ExtensionObjectXML})
	require.NoError(t, e.Err())
	require.Equal(t, []byte{0x00, 0x05, 0x02, 0x00, 0x00, 0x00, 0x00}, e.Bytes())

	// Value wins over TypeID and Body.
	e.Reset(nil)
	e.ExtensionObject(&codec.ExtensionObject{TypeID: codec.NewNumericNodeId(0, 5), Body: []byte{1}, Value: &binStruct{}})
	require.NoError(t, e.Err())
	require.Equal(t, []byte{0x01, binNS, 0x02, 0x00, 0x01, 0x09, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x00}, e.Bytes())

	// "Other DataEncodings may not be serialized in an ExtensionObject" (§5.2.2.15).
	for _, enc := range []byte{0x03, 0x04, 0xFF} {
		e.Reset(nil)
		e.ExtensionObject(&codec.ExtensionObject{TypeID: codec.NewNumericNodeId(0, 5), Encoding: enc, Body: []byte("{}")})
		require.Equal(t, error(status.BadEncodingError), e.Err(), "encoding %#x", enc)
	}
}

func TestExtensionObjectRegistry(t *testing.T) {
	t.Parallel()
	require.Same(t, binStructInfo, codec.LookupType(binStructInfo.DataType))
	require.Same(t, binStructInfo, codec.LookupType(binStructInfo.BinaryEncoding))
	require.Nil(t, codec.LookupType(codec.NewNumericNodeId(binNS, 99)))
	require.Nil(t, codec.LookupType(codec.NodeId{}), "null ids are not registered")

	// Registering an id twice keeps the first type and reports false.
	dup := &codec.TypeInfo{Name: "Dup", DataType: binStructInfo.DataType, BinaryEncoding: codec.NewNumericNodeId(binNS, 98)}
	require.False(t, codec.Register(dup))
	require.Same(t, binStructInfo, codec.LookupType(binStructInfo.DataType))

	x := codec.NewExtensionObject(&binStruct{})
	require.False(t, x.IsNull())
	require.True(t, (&codec.ExtensionObject{}).IsNull())
	require.False(t, (&codec.ExtensionObject{TypeID: codec.NewNumericNodeId(0, 1)}).IsNull())
}
