package codec_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

var (
	jsonGuid = mustGuid("72962B91-FA75-4AE6-8D28-B404DC7DAF63")
	// 2024-05-06T07:08:09.1234567Z and the same second without a fraction.
	jsonTime      = codec.DateTimeOf(time.Date(2024, 5, 6, 7, 8, 9, 123456700, time.UTC))
	jsonTimeWhole = codec.DateTimeOf(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC))
)

func mustGuid(s string) codec.Guid {
	g, err := codec.ParseGuid(s)
	if err != nil {
		panic(err)
	}
	return g
}

func jsonV(x any) codec.Variant { return codec.MustVariant(x) }

// jsonVariantCase is one row of the Variant table: the value, its text in the compact
// and verbose forms (verbose "" means the same as compact), and what decoding either text
// gives when that differs from the value.
type jsonVariantCase struct {
	name             string
	val              codec.Variant
	compact, verbose string
	decoded          *codec.Variant
}

func jsonDecoded(v codec.Variant) *codec.Variant { return &v }

// jsonVariantCases cover every built-in type as a Variant scalar and as an array
// (Part 6 §5.4.2.17 and the type sections it refers to).
var jsonVariantCases = []jsonVariantCase{
	// A null Variant is null, in an array or alone.
	{name: "Null", val: codec.Variant{}, compact: `null`},

	// §5.4.2.2-5.4.2.4: Boolean literal, integers as numbers, 64-bit integers as strings.
	// Non-nullable values are written even at their default.
	{name: "Boolean", val: jsonV(true), compact: `{"UaType":1,"Value":true}`},
	{name: "Boolean false", val: jsonV(false), compact: `{"UaType":1,"Value":false}`},
	{name: "SByte", val: jsonV(int8(-128)), compact: `{"UaType":2,"Value":-128}`},
	{name: "Byte", val: jsonV(byte(255)), compact: `{"UaType":3,"Value":255}`},
	{name: "Int16", val: jsonV(int16(-32768)), compact: `{"UaType":4,"Value":-32768}`},
	{name: "UInt16", val: jsonV(uint16(65535)), compact: `{"UaType":5,"Value":65535}`},
	{name: "Int32", val: jsonV(int32(math.MinInt32)), compact: `{"UaType":6,"Value":-2147483648}`},
	{name: "Int32 zero", val: jsonV(int32(0)), compact: `{"UaType":6,"Value":0}`},
	{name: "UInt32", val: jsonV(uint32(math.MaxUint32)), compact: `{"UaType":7,"Value":4294967295}`},
	{name: "Int64", val: jsonV(int64(math.MinInt64)), compact: `{"UaType":8,"Value":"-9223372036854775808"}`},
	{name: "UInt64", val: jsonV(uint64(math.MaxUint64)), compact: `{"UaType":9,"Value":"18446744073709551615"}`},

	// §5.4.2.5: numbers, with the special values as strings.
	{name: "Float", val: jsonV(float32(1.5)), compact: `{"UaType":10,"Value":1.5}`},
	{name: "Float shortest", val: jsonV(float32(0.1)), compact: `{"UaType":10,"Value":0.1}`},
	{name: "Float -0", val: jsonV(float32(math.Copysign(0, -1))), compact: `{"UaType":10,"Value":-0}`},
	{name: "Float Infinity", val: jsonV(float32(math.Inf(1))), compact: `{"UaType":10,"Value":"Infinity"}`},
	{name: "Float NaN", val: jsonV(float32(math.NaN())), compact: `{"UaType":10,"Value":"NaN"}`},
	{name: "Double", val: jsonV(12345678.9), compact: `{"UaType":11,"Value":12345678.9}`},
	{name: "Double small", val: jsonV(1e-7), compact: `{"UaType":11,"Value":1e-7}`},
	{name: "Double large", val: jsonV(1e21), compact: `{"UaType":11,"Value":1e+21}`},
	{name: "Double -Infinity", val: jsonV(math.Inf(-1)), compact: `{"UaType":11,"Value":"-Infinity"}`},
	{name: "Double NaN", val: jsonV(math.NaN()), compact: `{"UaType":11,"Value":"NaN"}`},

	// §5.4.2.6-5.4.2.9; the NULL of a nullable type leaves out Value.
	{name: "String", val: jsonV("Hello"), compact: `{"UaType":12,"Value":"Hello"}`},
	{name: "String null", val: codec.StringVariant(""), compact: `{"UaType":12}`},
	{name: "String empty", val: codec.StringVariant(codec.EmptyString), compact: `{"UaType":12,"Value":""}`},
	{name: "DateTime", val: jsonV(jsonTime), compact: `{"UaType":13,"Value":"2024-05-06T07:08:09.1234567Z"}`},
	{name: "DateTime whole second", val: jsonV(jsonTimeWhole), compact: `{"UaType":13,"Value":"2024-05-06T07:08:09Z"}`},
	{name: "DateTime max", val: jsonV(codec.MaxDateTime), compact: `{"UaType":13,"Value":"9999-12-31T23:59:59Z"}`},
	{name: "DateTime min is null", val: jsonV(codec.DateTime(0)), compact: `{"UaType":13}`},
	{name: "Guid", val: jsonV(jsonGuid), compact: `{"UaType":14,"Value":"72962B91-FA75-4AE6-8D28-B404DC7DAF63"}`},
	{name: "Guid zero is null", val: jsonV(codec.Guid{}), compact: `{"UaType":14}`},
	{name: "ByteString", val: jsonV([]byte{1, 2, 3, 250}), compact: `{"UaType":15,"Value":"AQID+g=="}`},
	{name: "ByteString null", val: codec.ByteStringVariant(nil), compact: `{"UaType":15}`},
	{name: "ByteString empty", val: codec.ByteStringVariant([]byte{}), compact: `{"UaType":15,"Value":""}`},
	{name: "XmlElement", val: codec.XmlElementVariant("<a>x</a>"), compact: `{"UaType":16,"Value":"<a>x</a>"}`},

	// §5.4.2.10, §5.4.2.11, §5.1.12: NodeIds as strings; without a namespace table the
	// index form is written.
	{name: "NodeId numeric", val: jsonV(codec.NewNumericNodeId(0, 85)), compact: `{"UaType":17,"Value":"i=85"}`},
	{name: "NodeId string", val: jsonV(codec.NewStringNodeId(2, "Temp;1")), compact: `{"UaType":17,"Value":"ns=2;s=Temp;1"}`},
	{name: "NodeId guid", val: jsonV(codec.NewGuidNodeId(1, jsonGuid)), compact: `{"UaType":17,"Value":"ns=1;g=72962B91-FA75-4AE6-8D28-B404DC7DAF63"}`},
	{name: "NodeId opaque", val: jsonV(codec.NewOpaqueNodeId(3, []byte{0xDE, 0xAD})), compact: `{"UaType":17,"Value":"ns=3;b=3q0="}`},
	{name: "NodeId null", val: jsonV(codec.NodeId{}), compact: `{"UaType":17}`},
	{name: "ExpandedNodeId", val: jsonV(codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(2, 7)}), compact: `{"UaType":18,"Value":"ns=2;i=7"}`},
	{name: "ExpandedNodeId uri and server", val: jsonV(codec.ExpandedNodeId{
		NodeId: codec.NewNumericNodeId(0, 5), NamespaceURI: "http://x.org/a;b", ServerIndex: 2,
	}), compact: `{"UaType":18,"Value":"svr=2;nsu=http://x.org/a%3Bb;i=5"}`},

	// §5.4.2.12: an object; Symbol only in the verbose form, info bits ignored for it.
	{name: "StatusCode", val: jsonV(status.BadDecodingError),
		compact: `{"UaType":19,"Value":{"Code":2147942400}}`,
		verbose: `{"UaType":19,"Value":{"Code":2147942400,"Symbol":"BadDecodingError"}}`},
	{name: "StatusCode info bits", val: jsonV(status.BadDecodingError | 0x0400),
		compact: `{"UaType":19,"Value":{"Code":2147943424}}`,
		verbose: `{"UaType":19,"Value":{"Code":2147943424,"Symbol":"BadDecodingError"}}`},
	{name: "StatusCode unknown", val: jsonV(status.Code(0x80FF0000)), compact: `{"UaType":19,"Value":{"Code":2164195328}}`},
	{name: "StatusCode Good", val: jsonV(status.Good), compact: `{"UaType":19,"Value":{}}`},

	// §5.4.2.14: the name, "<index>:<name>", or "0:" before a name that would misread.
	{name: "QualifiedName ns0", val: jsonV(codec.QualifiedName{Name: "Name"}), compact: `{"UaType":20,"Value":"Name"}`},
	{name: "QualifiedName", val: jsonV(codec.QualifiedName{NamespaceIndex: 2, Name: "Name"}), compact: `{"UaType":20,"Value":"2:Name"}`},
	{name: "QualifiedName escaped", val: jsonV(codec.QualifiedName{Name: "1:x"}), compact: `{"UaType":20,"Value":"0:1:x"}`},

	// §5.4.2.15: null members are left out of the compact form.
	{name: "LocalizedText", val: jsonV(codec.LocalizedText{Locale: "en", Text: "Hi"}), compact: `{"UaType":21,"Value":{"Locale":"en","Text":"Hi"}}`},
	{name: "LocalizedText text only", val: jsonV(codec.LocalizedText{Text: "Hi"}),
		compact: `{"UaType":21,"Value":{"Text":"Hi"}}`,
		verbose: `{"UaType":21,"Value":{"Locale":null,"Text":"Hi"}}`},

	// §5.4.2.16: the structure's own object with UaTypeId first.
	{name: "ExtensionObject", val: jsonV(codec.NewExtensionObject(&jsonPoint{ID: 7, Name: "p", Mode: 1, Tags: []string{"a"}})),
		compact: `{"UaType":22,"Value":{"UaTypeId":"ns=202;i=1","ID":7,"Name":"p","Mode":1,"Tags":["a"]}}`,
		verbose: `{"UaType":22,"Value":{"UaTypeId":"ns=202;i=1","ID":7,"Name":"p","Mode":"On_1","Tags":["a"],"Value":null}}`},

	// §5.4.2.18: the Variant's members inline.
	{name: "DataValue", val: jsonV(&codec.DataValue{
		Value: jsonV(int32(5)), Status: status.BadDecodingError,
		SourceTimestamp: jsonTime, SourcePicoseconds: 7, ServerTimestamp: jsonTimeWhole,
	}),
		compact: `{"UaType":23,"Value":{"UaType":6,"Value":5,"Status":{"Code":2147942400},` +
			`"SourceTimestamp":"2024-05-06T07:08:09.1234567Z","SourcePicoseconds":7,"ServerTimestamp":"2024-05-06T07:08:09Z"}}`,
		verbose: `{"UaType":23,"Value":{"UaType":6,"Value":5,"Status":{"Code":2147942400,"Symbol":"BadDecodingError"},` +
			`"SourceTimestamp":"2024-05-06T07:08:09.1234567Z","SourcePicoseconds":7,"ServerTimestamp":"2024-05-06T07:08:09Z"}}`},

	// §5.4.2.13: only the fields present, at other than their default.
	{name: "DiagnosticInfo", val: jsonV(&codec.DiagnosticInfo{
		Mask: codec.HasSymbolicID | codec.HasAdditionalInfo, SymbolicID: 3, AdditionalInfo: "x",
		InnerDiagnosticInfo: &codec.DiagnosticInfo{Mask: codec.HasInnerStatusCode, InnerStatusCode: status.BadDecodingError},
	}),
		compact: `{"UaType":25,"Value":{"SymbolicId":3,"AdditionalInfo":"x","InnerDiagnosticInfo":{"InnerStatusCode":{"Code":2147942400}}}}`,
		verbose: `{"UaType":25,"Value":{"SymbolicId":3,"AdditionalInfo":"x","InnerDiagnosticInfo":{"InnerStatusCode":{"Code":2147942400,"Symbol":"BadDecodingError"}}}}`},

	// §5.4.5: arrays; NULL elements of nullable types are null.
	{name: "Boolean array", val: jsonV([]bool{true, false}), compact: `{"UaType":1,"Value":[true,false]}`},
	{name: "SByte array", val: jsonV([]int8{-1, 0}), compact: `{"UaType":2,"Value":[-1,0]}`},
	{name: "Byte array", val: jsonByteArray(1, 2), compact: `{"UaType":3,"Value":[1,2]}`},
	{name: "Int16 array", val: jsonV([]int16{-1}), compact: `{"UaType":4,"Value":[-1]}`},
	{name: "UInt16 array", val: jsonV([]uint16{1}), compact: `{"UaType":5,"Value":[1]}`},
	{name: "Int32 array", val: jsonV([]int32{1, 2, 3}), compact: `{"UaType":6,"Value":[1,2,3]}`},
	{name: "Int32 array empty", val: jsonV([]int32{}), compact: `{"UaType":6,"Value":[]}`},
	{name: "Int32 array null", val: jsonV([]int32(nil)), compact: `{"UaType":6,"Value":[]}`, decoded: jsonDecoded(jsonV([]int32{}))},
	{name: "UInt32 array", val: jsonV([]uint32{1}), compact: `{"UaType":7,"Value":[1]}`},
	{name: "Int64 array", val: jsonV([]int64{1, -1}), compact: `{"UaType":8,"Value":["1","-1"]}`},
	{name: "UInt64 array", val: jsonV([]uint64{1}), compact: `{"UaType":9,"Value":["1"]}`},
	{name: "Float array", val: jsonV([]float32{0.5, float32(math.Inf(-1))}), compact: `{"UaType":10,"Value":[0.5,"-Infinity"]}`},
	{name: "Double array", val: jsonV([]float64{1.5, math.NaN()}), compact: `{"UaType":11,"Value":[1.5,"NaN"]}`},
	{name: "String array", val: jsonV([]string{"a", "", codec.EmptyString}), compact: `{"UaType":12,"Value":["a",null,""]}`},
	{name: "DateTime array", val: jsonV([]codec.DateTime{jsonTimeWhole, 0}), compact: `{"UaType":13,"Value":["2024-05-06T07:08:09Z",null]}`},
	{name: "Guid array", val: jsonV([]codec.Guid{jsonGuid, {}}), compact: `{"UaType":14,"Value":["72962B91-FA75-4AE6-8D28-B404DC7DAF63",null]}`},
	{name: "ByteString array", val: jsonV([][]byte{{1}, nil, {}}), compact: `{"UaType":15,"Value":["AQ==",null,""]}`},
	{name: "XmlElement array", val: codec.XmlElementArray([]string{"<a/>"}), compact: `{"UaType":16,"Value":["<a/>"]}`},
	{name: "NodeId array", val: jsonV([]codec.NodeId{codec.NewNumericNodeId(1, 1), {}}), compact: `{"UaType":17,"Value":["ns=1;i=1",null]}`},
	{name: "ExpandedNodeId array", val: jsonV([]codec.ExpandedNodeId{{NodeId: codec.NewNumericNodeId(0, 1), ServerIndex: 1}}), compact: `{"UaType":18,"Value":["svr=1;i=1"]}`},
	{name: "StatusCode array", val: jsonV([]status.Code{status.Good, status.BadDecodingError}),
		compact: `{"UaType":19,"Value":[{},{"Code":2147942400}]}`,
		verbose: `{"UaType":19,"Value":[{},{"Code":2147942400,"Symbol":"BadDecodingError"}]}`},
	{name: "QualifiedName array", val: jsonV([]codec.QualifiedName{{NamespaceIndex: 1, Name: "a"}, {}}), compact: `{"UaType":20,"Value":["1:a",null]}`},
	{name: "LocalizedText array", val: jsonV([]codec.LocalizedText{{}, {Locale: "de"}}),
		compact: `{"UaType":21,"Value":[null,{"Locale":"de"}]}`,
		verbose: `{"UaType":21,"Value":[null,{"Locale":"de","Text":null}]}`},
	{name: "ExtensionObject array", val: jsonV([]codec.ExtensionObject{{}, codec.NewExtensionObject(&jsonPoint{ID: 1})}),
		compact: `{"UaType":22,"Value":[null,{"UaTypeId":"ns=202;i=1","ID":1}]}`,
		verbose: `{"UaType":22,"Value":[null,{"UaTypeId":"ns=202;i=1","ID":1,"Name":null,"Mode":"Off_0","Tags":null,"Value":null}]}`},
	{name: "DataValue array", val: jsonV([]codec.DataValue{{}, {Value: jsonV(int32(1))}}), compact: `{"UaType":23,"Value":[null,{"UaType":6,"Value":1}]}`},
	{name: "Variant array", val: jsonV([]codec.Variant{jsonV(int32(1)), {}, jsonV("x")}),
		compact: `{"UaType":24,"Value":[{"UaType":6,"Value":1},null,{"UaType":12,"Value":"x"}]}`},
	{name: "DiagnosticInfo array", val: jsonV([]codec.DiagnosticInfo{{}, {Mask: codec.HasLocale, Locale: 2}}), compact: `{"UaType":25,"Value":[null,{"Locale":2}]}`},

	// A multi-dimensional array: the flat elements and the Dimensions.
	{name: "Matrix", val: jsonM([]int32{1, 2, 3, 4, 5, 6}, 2, 3), compact: `{"UaType":6,"Value":[1,2,3,4,5,6],"Dimensions":[2,3]}`},
	{name: "Matrix of strings", val: jsonM([]string{"a", "b"}, 1, 2, 1), compact: `{"UaType":12,"Value":["a","b"],"Dimensions":[1,2,1]}`},
}

// jsonByteArray returns an array Variant of Bytes, which VariantOf cannot make ([]byte is a
// ByteString); the binary decoder can.
func jsonByteArray(b ...byte) codec.Variant {
	wire := append([]byte{0x83, byte(len(b)), 0, 0, 0}, b...)
	var v codec.Variant
	d := codec.NewDecoder(wire)
	d.Variant(&v)
	if d.Err() != nil {
		panic(d.Err())
	}
	return v
}

func jsonM(flat any, dims ...int32) codec.Variant {
	v, err := codec.NewMatrix(flat, dims)
	if err != nil {
		panic(err)
	}
	return v
}

func TestJSONVariant(t *testing.T) {
	t.Parallel()
	for _, c := range jsonVariantCases {
		t.Run(c.name, func(t *testing.T) {
			want := c.val
			if c.decoded != nil {
				want = *c.decoded
			}
			for _, verbose := range []bool{false, true} {
				text := c.compact
				if verbose && c.verbose != "" {
					text = c.verbose
				}
				got := jsonEncode(t, verbose, func(e *codec.JSONEncoder) { e.Variant(&c.val) })
				require.Equal(t, text, got, "verbose=%v", verbose)
				require.True(t, json.Valid([]byte(got)), "not JSON: %s", got)

				var back codec.Variant
				d := codec.NewJSONDecoder([]byte(text))
				d.Variant(&back)
				require.NoError(t, d.Finish())
				require.Equal(t, jsonVariantBinary(t, want), jsonVariantBinary(t, back), "decoded %v", back)
			}
		})
	}
}

// jsonAllSet has every member of jsonAll away from its default.
func jsonAllSet() jsonAll {
	return jsonAll{
		Boolean: true, SByte: -1, Byte: 1, Int16: -2, UInt16: 2, Int32: -3, UInt32: 3, Int64: -4, UInt64: 4,
		Float: 0.5, Double: -0.25, String: "s", DateTime: jsonTimeWhole, Guid: jsonGuid, ByteString: []byte{0},
		XmlElement: "<x/>", NodeId: codec.NewNumericNodeId(1, 2),
		ExpandedNodeId: codec.ExpandedNodeId{NodeId: codec.NewStringNodeId(0, "e"), NamespaceURI: "urn:a"},
		StatusCode:     status.BadDecodingError, QualifiedName: codec.QualifiedName{NamespaceIndex: 1, Name: "q"},
		LocalizedText:   codec.LocalizedText{Locale: "de", Text: "t"},
		ExtensionObject: codec.NewExtensionObject(&jsonPoint{ID: 1}),
		DataValue:       codec.DataValue{Value: jsonV(true)}, Variant: jsonV(int32(0)),
		DiagnosticInfo: codec.DiagnosticInfo{Mask: codec.HasSymbolicID}, Enum: 1,
		Struct: &jsonOptional{X: 1}, Array: []int32{},
	}
}

// TestJSONFields checks the member rules of Part 6 §5.4.2.1 and §5.4.6: the compact form
// leaves out NULL and default values, the verbose form writes them (null for NULL).
func TestJSONFields(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name             string
		val              jsonAll
		compact, verbose string
	}{
		{
			name:    "defaults",
			val:     jsonAll{Struct: &jsonOptional{}},
			compact: `{"Struct":{}}`,
			verbose: `{"Boolean":false,"SByte":0,"Byte":0,"Int16":0,"UInt16":0,"Int32":0,"UInt32":0,` +
				`"Int64":"0","UInt64":"0","Float":0,"Double":0,"String":null,"DateTime":null,"Guid":null,` +
				`"ByteString":null,"XmlElement":null,"NodeId":null,"ExpandedNodeId":null,"StatusCode":{},` +
				`"QualifiedName":null,"LocalizedText":null,"ExtensionObject":{},"DataValue":null,"Variant":null,` +
				`"DiagnosticInfo":null,"Enum":"Off_0","Struct":{"X":0,"Y":0},"Array":null}`,
		},
		{
			name: "set",
			val:  jsonAllSet(),
			compact: `{"Boolean":true,"SByte":-1,"Byte":1,"Int16":-2,"UInt16":2,"Int32":-3,"UInt32":3,` +
				`"Int64":"-4","UInt64":"4","Float":0.5,"Double":-0.25,"String":"s","DateTime":"2024-05-06T07:08:09Z",` +
				`"Guid":"72962B91-FA75-4AE6-8D28-B404DC7DAF63","ByteString":"AA==","XmlElement":"<x/>",` +
				`"NodeId":"ns=1;i=2","ExpandedNodeId":"nsu=urn:a;s=e","StatusCode":{"Code":2147942400},` +
				`"QualifiedName":"1:q","LocalizedText":{"Locale":"de","Text":"t"},` +
				`"ExtensionObject":{"UaTypeId":"ns=202;i=1","ID":1},"DataValue":{"UaType":1,"Value":true},` +
				`"Variant":{"UaType":6,"Value":0},"DiagnosticInfo":{"SymbolicId":0},"Enum":1,"Struct":{"X":1},"Array":[]}`,
			verbose: `{"Boolean":true,"SByte":-1,"Byte":1,"Int16":-2,"UInt16":2,"Int32":-3,"UInt32":3,` +
				`"Int64":"-4","UInt64":"4","Float":0.5,"Double":-0.25,"String":"s","DateTime":"2024-05-06T07:08:09Z",` +
				`"Guid":"72962B91-FA75-4AE6-8D28-B404DC7DAF63","ByteString":"AA==","XmlElement":"<x/>",` +
				`"NodeId":"ns=1;i=2","ExpandedNodeId":"nsu=urn:a;s=e",` +
				`"StatusCode":{"Code":2147942400,"Symbol":"BadDecodingError"},` +
				`"QualifiedName":"1:q","LocalizedText":{"Locale":"de","Text":"t"},` +
				`"ExtensionObject":{"UaTypeId":"ns=202;i=1","ID":1,"Name":null,"Mode":"Off_0","Tags":null,"Value":null},` +
				`"DataValue":{"UaType":1,"Value":true},"Variant":{"UaType":6,"Value":0},"DiagnosticInfo":{"SymbolicId":0},` +
				`"Enum":"On_1","Struct":{"X":1,"Y":0},"Array":[]}`,
		},
		{
			name:    "empty strings are not null",
			val:     jsonAll{String: codec.EmptyString, ByteString: []byte{}, Struct: &jsonOptional{}},
			compact: `{"String":"","ByteString":"","Struct":{}}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, verbose := range []bool{false, true} {
				want := c.compact
				if verbose {
					want = c.verbose
				}
				if want == "" {
					continue
				}
				got := jsonEncode(t, verbose, func(e *codec.JSONEncoder) { e.Struct(&c.val) })
				require.Equal(t, want, got, "verbose=%v", verbose)

				// Decoding and encoding again gives the same text.
				var back jsonAll
				d := codec.NewJSONDecoder([]byte(got))
				d.Struct(&back)
				require.NoError(t, d.Finish())
				require.Equal(t, want, jsonEncode(t, verbose, func(e *codec.JSONEncoder) { e.Struct(&back) }))
			}
		})
	}
}

// TestJSONOptionalAndUnion uses the examples of Part 6 §5.4.7 and §5.4.8.
func TestJSONOptionalAndUnion(t *testing.T) {
	t.Parallel()
	zero := int32(0)
	opt := &jsonOptional{X: 1, Y: 2, O2: &zero}
	require.Equal(t, `{"EncodingMask":2,"X":1,"Y":2}`, jsonEncode(t, false, func(e *codec.JSONEncoder) { e.Struct(opt) }))
	require.Equal(t, `{"X":1,"Y":2,"O2":0}`, jsonEncode(t, true, func(e *codec.JSONEncoder) { e.Struct(opt) }))
	for _, text := range []string{`{"EncodingMask":2,"X":1,"Y":2}`, `{"X":1,"Y":2,"O2":0}`, `{"Y":2,"O2":0,"X":1,"EncodingMask":2}`} {
		var back jsonOptional
		d := codec.NewJSONDecoder([]byte(text))
		d.Struct(&back)
		require.NoError(t, d.Finish())
		require.Equal(t, *opt, back, text)
	}

	u := &jsonUnion{Switch: 2, B: 3.1415}
	require.Equal(t, `{"SwitchField":2,"B":3.1415}`, jsonEncode(t, false, func(e *codec.JSONEncoder) { e.Struct(u) }))
	require.Equal(t, `{"B":3.1415}`, jsonEncode(t, true, func(e *codec.JSONEncoder) { e.Struct(u) }))
	// The active field is written even at its default.
	u0 := &jsonUnion{Switch: 1}
	require.Equal(t, `{"SwitchField":1,"A":0}`, jsonEncode(t, false, func(e *codec.JSONEncoder) { e.Struct(u0) }))
	// No field: an empty object in both forms.
	require.Equal(t, `{}`, jsonEncode(t, false, func(e *codec.JSONEncoder) { e.Struct(&jsonUnion{}) }))
	require.Equal(t, `{}`, jsonEncode(t, true, func(e *codec.JSONEncoder) { e.Struct(&jsonUnion{}) }))
	for _, text := range []string{`{"SwitchField":2,"B":3.1415}`, `{"B":3.1415}`} {
		var back jsonUnion
		d := codec.NewJSONDecoder([]byte(text))
		d.Struct(&back)
		require.NoError(t, d.Finish())
		require.Equal(t, *u, back)
	}
}

func TestJSONEnum(t *testing.T) {
	t.Parallel()
	// The verbose form is "<name>_<value>", or the value alone when the name is unknown.
	require.Equal(t, `"On_1"`, jsonEncode(t, true, func(e *codec.JSONEncoder) { e.Enum(1, jsonModeName) }))
	require.Equal(t, `"7"`, jsonEncode(t, true, func(e *codec.JSONEncoder) { e.Enum(7, jsonModeName) }))
	require.Equal(t, `"-2"`, jsonEncode(t, true, func(e *codec.JSONEncoder) { e.Enum(-2, nil) }))
	require.Equal(t, `1`, jsonEncode(t, false, func(e *codec.JSONEncoder) { e.Enum(1, jsonModeName) }))
	for text, want := range map[string]int64{`1`: 1, `"On_1"`: 1, `"7"`: 7, `"Some_Name_3"`: 3, `-2`: -2} {
		d := codec.NewJSONDecoder([]byte(text))
		require.Equal(t, want, d.Enum(), text)
		require.NoError(t, d.Finish())
	}
}

func TestJSONExtensionObject(t *testing.T) {
	t.Parallel()
	point := &jsonPoint{ID: 7, Name: "p", Mode: 1, Tags: []string{"a"}, Value: jsonV(int32(3))}
	pointText := `{"UaTypeId":"ns=202;i=1","ID":7,"Name":"p","Mode":1,"Tags":["a"],"Value":{"UaType":6,"Value":3}}`
	pointBinary := jsonBinary(t, point.EncodeBinary)

	decode := func(t *testing.T, text string) codec.ExtensionObject {
		t.Helper()
		var x codec.ExtensionObject
		d := codec.NewJSONDecoder([]byte(text))
		d.ExtensionObject(&x)
		require.NoError(t, d.Finish(), text)
		return x
	}
	encode := func(x codec.ExtensionObject, verbose bool) string {
		return jsonEncode(t, verbose, func(e *codec.JSONEncoder) { e.ExtensionObject(&x) })
	}

	t.Run("known type", func(t *testing.T) {
		require.Equal(t, pointText, encode(codec.NewExtensionObject(point), false))
		for _, text := range []string{
			pointText,
			// UaTypeId in any position, and by its JSON or binary encoding id.
			`{"ID":7,"Name":"p","Mode":"On_1","Tags":["a"],"Value":{"Value":3,"UaType":6},"UaTypeId":"ns=202;i=1"}`,
			`{"ID":7, "UaTypeId" : "ns=202;i=3", "Name":"p","Mode":1,"Tags":["a"],"Value":{"UaType":6,"Value":3}}`,
			`{"UaTypeId":"ns=202;i=2","ID":7,"Name":"p","Mode":1,"Tags":["a"],"Value":{"UaType":6,"Value":3}}`,
			// A binary body of a registered type is decoded.
			`{"UaTypeId":"ns=202;i=1","UaEncoding":1,"UaBody":"` + b64(pointBinary) + `"}`,
		} {
			x := decode(t, text)
			require.Equal(t, point, x.Value, text)
			require.Equal(t, pointText, encode(x, false))
		}
	})

	t.Run("unknown JSON body is kept", func(t *testing.T) {
		x := decode(t, `{"Foo":1,"UaTypeId":"ns=9;i=9","Bar":[1, 2],"Baz":{"A":null}}`)
		require.Equal(t, codec.NewNumericNodeId(9, 9), x.TypeID)
		require.Equal(t, byte(codec.ExtensionObjectJSON), x.Encoding)
		require.Equal(t, `{"Foo":1,"Bar":[1, 2],"Baz":{"A":null}}`, string(x.Body))
		require.Nil(t, x.Value)
		require.Equal(t, `{"UaTypeId":"ns=9;i=9","Foo":1,"Bar":[1, 2],"Baz":{"A":null}}`, encode(x, false))
		require.Equal(t, `{"UaTypeId":"ns=9;i=9"}`, encode(decode(t, `{"UaTypeId":"ns=9;i=9"}`), true))
	})

	t.Run("binary and XML bodies", func(t *testing.T) {
		bin := codec.ExtensionObject{TypeID: codec.NewNumericNodeId(9, 10), Encoding: codec.ExtensionObjectBinary, Body: []byte{0xDE, 0xAD, 0xBE, 0xEF}}
		binText := `{"UaTypeId":"ns=9;i=10","UaEncoding":1,"UaBody":"3q2+7w=="}`
		require.Equal(t, binText, encode(bin, false))
		require.Equal(t, bin, decode(t, binText))
		xml := codec.ExtensionObject{TypeID: codec.NewNumericNodeId(9, 11), Encoding: codec.ExtensionObjectXML, Body: []byte("<a/>")}
		xmlText := `{"UaTypeId":"ns=9;i=11","UaEncoding":2,"UaBody":"PGEvPg=="}`
		require.Equal(t, xmlText, encode(xml, true))
		require.Equal(t, xml, decode(t, xmlText))
		// A registered type's binary encoding id becomes its DataType id.
		raw := codec.ExtensionObject{TypeID: jsonPointInfo.BinaryEncoding, Encoding: codec.ExtensionObjectBinary, Body: pointBinary}
		require.Equal(t, `{"UaTypeId":"ns=202;i=1","UaEncoding":1,"UaBody":"`+b64(pointBinary)+`"}`, encode(raw, false))
	})

	t.Run("null", func(t *testing.T) {
		for _, text := range []string{`null`, `{}`} {
			x := decode(t, text)
			require.True(t, x.IsNull(), text)
		}
		require.Equal(t, `null`, encode(codec.ExtensionObject{}, false))
		// As a member: left out of the compact form, {} in the verbose form.
		write := func(e *codec.JSONEncoder) {
			e.BeginObject()
			e.FieldExtensionObject("X", &codec.ExtensionObject{})
			e.EndObject()
		}
		require.Equal(t, `{}`, jsonEncode(t, false, write))
		require.Equal(t, `{"X":{}}`, jsonEncode(t, true, write))
	})

	t.Run("nested", func(t *testing.T) {
		inner := &jsonPoint{ID: 2, Value: jsonV(codec.NewExtensionObject(&jsonPoint{ID: 3}))}
		outer := codec.NewExtensionObject(&jsonPoint{ID: 1, Value: jsonV(codec.NewExtensionObject(inner))})
		text := `{"UaTypeId":"ns=202;i=1","ID":1,"Value":{"UaType":22,"Value":{"UaTypeId":"ns=202;i=1","ID":2,` +
			`"Value":{"UaType":22,"Value":{"UaTypeId":"ns=202;i=1","ID":3}}}}}`
		require.Equal(t, text, encode(outer, false))
		back := decode(t, text)
		require.Equal(t, jsonBinary(t, func(e *codec.Encoder) { e.ExtensionObject(&outer) }),
			jsonBinary(t, func(e *codec.Encoder) { e.ExtensionObject(&back) }))
	})
}

func b64(b []byte) string {
	e := codec.NewJSONEncoder(nil, false)
	var buf bytes.Buffer
	e.Reset(&buf)
	e.ByteString(b)
	if err := e.Flush(); err != nil {
		panic(err)
	}
	return strings.Trim(buf.String(), `"`)
}

// TestJSONDecodeDeprecated reads the 1.04 reversible forms that Part 6 Annex H describes
// and 1.05 decoders may still meet.
func TestJSONDecodeDeprecated(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, text string
		want       codec.Variant
	}{
		{"Variant Type/Body", `{"Type":6,"Body":5}`, jsonV(int32(5))},
		{"Variant Body first", `{"Body":[1,2],"Type":6}`, jsonV([]int32{1, 2})},
		{"NodeId object numeric", `{"UaType":17,"Value":{"Id":85}}`, jsonV(codec.NewNumericNodeId(0, 85))},
		{"NodeId object string", `{"UaType":17,"Value":{"IdType":1,"Id":"Temp","Namespace":2}}`, jsonV(codec.NewStringNodeId(2, "Temp"))},
		{"NodeId object guid", `{"UaType":17,"Value":{"Namespace":1,"Id":"72962b91-fa75-4ae6-8d28-b404dc7daf63","IdType":2}}`, jsonV(codec.NewGuidNodeId(1, jsonGuid))},
		{"NodeId object opaque", `{"UaType":17,"Value":{"IdType":3,"Id":"3q0=","Namespace":3}}`, jsonV(codec.NewOpaqueNodeId(3, []byte{0xDE, 0xAD}))},
		{"NodeId object UA namespace uri", `{"UaType":17,"Value":{"Id":85,"Namespace":"http://opcfoundation.org/UA/"}}`, jsonV(codec.NewNumericNodeId(0, 85))},
		{"ExpandedNodeId object", `{"UaType":18,"Value":{"Id":5,"Namespace":"urn:x","ServerUri":2}}`,
			jsonV(codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, 5), NamespaceURI: "urn:x", ServerIndex: 2})},
		{"QualifiedName object", `{"UaType":20,"Value":{"Name":"q","Uri":2}}`, jsonV(codec.QualifiedName{NamespaceIndex: 2, Name: "q"})},
		{"StatusCode number", `{"UaType":19,"Value":2147942400}`, jsonV(status.BadDecodingError)},
		{"LocalizedText string", `{"UaType":21,"Value":"Hi"}`, jsonV(codec.LocalizedText{Text: "Hi"})},
		{"Int64 number", `{"UaType":8,"Value":-5}`, jsonV(int64(-5))},
		{"UInt64 number", `{"UaType":9,"Value":18446744073709551615}`, jsonV(uint64(math.MaxUint64))},
		{"Byte array as ByteString", `{"UaType":3,"Value":"AQI="}`, jsonByteArray(1, 2)},
		{"DateTime offset", `{"UaType":13,"Value":"2024-05-06T09:08:09+02:00"}`, jsonV(jsonTimeWhole)},
		{"DateTime before 1601", `{"UaType":13,"Value":"0001-01-01T00:00:00Z"}`, jsonV(codec.DateTime(0))},
		{"DateTime long fraction", `{"UaType":13,"Value":"2024-05-06T07:08:09.123456789Z"}`, jsonV(jsonTime)},
		{"ExtensionObject TypeId/Body", `{"UaType":22,"Value":{"TypeId":"ns=202;i=3","Body":{"ID":4}}}`,
			jsonV(codec.NewExtensionObject(&jsonPoint{ID: 4}))},
		{"ExtensionObject TypeId object, binary Body", `{"UaType":22,"Value":{"TypeId":{"Id":10,"Namespace":9},"Encoding":1,"Body":"AQI="}}`,
			jsonV(codec.ExtensionObject{TypeID: codec.NewNumericNodeId(9, 10), Encoding: codec.ExtensionObjectBinary, Body: []byte{1, 2}})},
		{"ExtensionObject XML Body", `{"UaType":22,"Value":{"TypeId":"ns=9;i=11","Encoding":2,"Body":"<a/>"}}`,
			jsonV(codec.ExtensionObject{TypeID: codec.NewNumericNodeId(9, 11), Encoding: codec.ExtensionObjectXML, Body: []byte("<a/>")})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v codec.Variant
			d := codec.NewJSONDecoder([]byte(c.text))
			d.Variant(&v)
			require.NoError(t, d.Finish())
			require.Equal(t, jsonVariantBinary(t, c.want), jsonVariantBinary(t, v), "got %v", v)
		})
	}

	t.Run("DataValue with Variant object", func(t *testing.T) {
		var dv codec.DataValue
		d := codec.NewJSONDecoder([]byte(`{"Value":{"Type":6,"Body":5},"Status":2147942400,"SourceTimestamp":"2024-05-06T07:08:09Z"}`))
		d.DataValue(&dv)
		require.NoError(t, d.Finish())
		require.Equal(t, codec.DataValue{Value: jsonV(int32(5)), Status: status.BadDecodingError, SourceTimestamp: jsonTimeWhole}, dv)
	})
}

// TestJSONNamespaceTable checks the "nsu=" forms written with a namespace table and the
// abnormal states of Part 6 §5.4.2.10, §5.4.2.11 and §5.4.2.14 when a URI is unknown.
func TestJSONNamespaceTable(t *testing.T) {
	t.Parallel()
	uris := []string{"http://opcfoundation.org/UA/", "urn:local", "http://x.org/a;b"}
	type value struct {
		N codec.NodeId
		X codec.ExpandedNodeId
		Q codec.QualifiedName
	}
	v := value{codec.NewStringNodeId(2, "t"), codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(1, 5)}, codec.QualifiedName{NamespaceIndex: 1, Name: "q"}}
	var b bytes.Buffer
	e := codec.NewJSONEncoder(&b, false)
	e.SetNamespaceURIs(uris)
	e.BeginObject()
	e.FieldNodeId("N", v.N)
	e.FieldExpandedNodeId("X", v.X)
	e.FieldQualifiedName("Q", v.Q)
	e.FieldNodeId("Unmapped", codec.NewNumericNodeId(7, 1))
	e.EndObject()
	require.NoError(t, e.Flush())
	require.Equal(t, `{"N":"nsu=http://x.org/a%3Bb;s=t","X":"nsu=urn:local;i=5","Q":"nsu=urn:local;q","Unmapped":"ns=7;i=1"}`, b.String())

	read := func(text string, table []string) (codec.NodeId, codec.ExpandedNodeId, codec.QualifiedName) {
		d := codec.NewJSONDecoder([]byte(text))
		d.SetNamespaceURIs(table)
		var got value
		d.BeginObject()
		for {
			k, ok := d.NextField()
			if !ok {
				break
			}
			switch string(k) {
			case "N":
				got.N = d.NodeId()
			case "X":
				got.X = d.ExpandedNodeId()
			case "Q":
				got.Q = d.QualifiedName()
			default:
				d.Skip()
			}
		}
		require.NoError(t, d.Finish())
		return got.N, got.X, got.Q
	}
	n, x, q := read(b.String(), uris)
	require.Equal(t, v.N, n)
	require.Equal(t, v.X, x)
	require.Equal(t, v.Q, q)

	// Without the table: a NodeId becomes a String NodeId of the whole text, an
	// ExpandedNodeId keeps the URI, a QualifiedName becomes the whole text in namespace 0.
	n, x, q = read(b.String(), nil)
	require.Equal(t, codec.NewStringNodeId(0, "nsu=http://x.org/a%3Bb;s=t"), n)
	require.Equal(t, codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, 5), NamespaceURI: "urn:local"}, x)
	require.Equal(t, codec.QualifiedName{Name: "nsu=urn:local;q"}, q)

	// The OPC UA namespace needs no table.
	n, _, _ = read(`{"N":"nsu=http://opcfoundation.org/UA/;i=85"}`, nil)
	require.Equal(t, codec.NewNumericNodeId(0, 85), n)
	// A server URI cannot be mapped without a server table.
	_, x, _ = read(`{"X":"svu=urn:srv;i=5"}`, nil)
	require.Equal(t, codec.ExpandedNodeId{NodeId: codec.NewStringNodeId(0, "svu=urn:srv;i=5")}, x)
}

func TestJSONStrings(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, text string }{
		{"plain", `"plain"`},
		{"quote\" backslash\\ slash/", `"quote\" backslash\\ slash/"`},
		{"\b\f\n\r\t\x00\x1f\x7f", `"\b\f\n\r\t\u0000\u001f` + "\x7f" + `"`},
		{"é水😀", `"é水😀"`},
		{"<&>\u2028", "\"<&>\u2028\""},
		{"bad\xffutf8\xc3", "\"bad\uFFFDutf8\uFFFD\""},
	}
	for _, c := range cases {
		got := jsonEncode(t, false, func(e *codec.JSONEncoder) { e.String(c.in) })
		require.Equal(t, c.text, got)
		require.True(t, json.Valid([]byte(got)))
		d := codec.NewJSONDecoder([]byte(got))
		back := d.String()
		require.NoError(t, d.Finish())
		require.Equal(t, strings.ToValidUTF8(c.in, "\uFFFD"), back)
	}
	// Escapes on input: every short form, \u with surrogate pairs, lone surrogates.
	for text, want := range map[string]string{
		`"\"\\\/\b\f\n\r\t"`:       "\"\\/\b\f\n\r\t",
		`"\u0041\u00e9\u6C34"`:     "Aé水",
		`"\ud83d\ude00"`:           "😀",
		`"\ud83d"`:                 "\uFFFD",
		`"\ude00x"`:                "\uFFFDx",
		`"\ud83d\u0041"`:           "\uFFFDA",
		"\"raw\xffbyte\"":          "raw\uFFFDbyte",
		"\"A\\u0042\xe6\xb0\xb4\"": "AB水",
	} {
		d := codec.NewJSONDecoder([]byte(text))
		require.Equal(t, want, d.String(), text)
		require.NoError(t, d.Finish())
	}
}

func TestJSONDateTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		val  codec.DateTime
		text string
	}{
		{jsonTime, `"2024-05-06T07:08:09.1234567Z"`},
		{jsonTime - 7, `"2024-05-06T07:08:09.123456Z"`},
		{codec.DateTimeOf(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)), `"1601-01-01T00:00:00.0000001Z"`},
		{codec.DateTimeOf(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)), `"1970-01-01T00:00:00Z"`},
		{codec.DateTimeOf(time.Date(2000, 2, 29, 23, 59, 59, 0, time.UTC)), `"2000-02-29T23:59:59Z"`},
		{codec.DateTimeOf(time.Date(9999, 12, 31, 23, 59, 58, 0, time.UTC)), `"9999-12-31T23:59:58Z"`},
		{codec.MaxDateTime, `"9999-12-31T23:59:59Z"`},
		{codec.MaxDateTime - 5, `"9999-12-31T23:59:59Z"`},
		{0, `null`},
	}
	for _, c := range cases {
		require.Equal(t, c.text, jsonEncode(t, false, func(e *codec.JSONEncoder) { e.DateTime(c.val) }))
		d := codec.NewJSONDecoder([]byte(c.text))
		got := d.DateTime()
		require.NoError(t, d.Finish())
		if c.val >= codec.MaxDateTime-5 {
			require.Equal(t, codec.MaxDateTime, got)
		} else {
			require.Equal(t, c.val, got, c.text)
		}
	}
	for text, want := range map[string]codec.DateTime{
		`"0001-01-01T00:00:00Z"`:              0,
		`"1600-12-31T23:59:59Z"`:              0,
		`"9999-12-31T23:59:59Z"`:              codec.MaxDateTime,
		`"9999-12-31T23:00:00-01:00"`:         codec.MaxDateTime,
		`"2024-05-06t07:08:09.1234567z"`:      jsonTime,
		`"2024-05-06T08:38:09.1234567+01:30"`: jsonTime,
	} {
		d := codec.NewJSONDecoder([]byte(text))
		require.Equal(t, want, d.DateTime(), text)
		require.NoError(t, d.Finish())
	}
}

// jsonNest returns n Variants, each the only element of the array of the one outside it.
func jsonNest(n int) string {
	return strings.Repeat(`{"UaType":24,"Value":[`, n-1) + `{"UaType":6,"Value":1}` + strings.Repeat(`]}`, n-1)
}

func TestJSONDecodeErrors(t *testing.T) {
	t.Parallel()
	variant := func(d *codec.JSONDecoder) { var v codec.Variant; d.Variant(&v) }
	dataValue := func(d *codec.JSONDecoder) { var v codec.DataValue; d.DataValue(&v) }
	extObj := func(d *codec.JSONDecoder) { var v codec.ExtensionObject; d.ExtensionObject(&v) }
	diag := func(d *codec.JSONDecoder) { var v codec.DiagnosticInfo; d.DiagnosticInfo(&v) }
	str := func(d *codec.JSONDecoder) { _ = d.String() }
	bad, limit := status.BadDecodingError, status.BadEncodingLimitsExceeded

	cases := []struct {
		name   string
		text   string
		limits codec.Limits
		read   func(*codec.JSONDecoder)
		want   status.Code
	}{
		// Truncated input.
		{name: "empty", text: ``, read: variant, want: bad},
		{name: "truncated object", text: `{"UaType":6,"Value":`, read: variant, want: bad},
		{name: "truncated member name", text: `{"UaTy`, read: variant, want: bad},
		{name: "truncated array", text: `{"UaType":6,"Value":[1,2`, read: variant, want: bad},
		{name: "truncated string", text: `"abc`, read: str, want: bad},
		{name: "truncated literal", text: `{"UaType":1,"Value":tru}`, read: variant, want: bad},
		{name: "truncated escape", text: `"ab\u00`, read: str, want: bad},

		// Wrong JSON types and values out of range.
		{name: "Int32 as string", text: `{"UaType":6,"Value":"5"}`, read: variant, want: bad},
		{name: "Int32 fraction", text: `{"UaType":6,"Value":1.5}`, read: variant, want: bad},
		{name: "Byte out of range", text: `{"UaType":3,"Value":256}`, read: variant, want: bad},
		{name: "Int32 overflow", text: `{"UaType":6,"Value":2147483648}`, read: variant, want: bad},
		{name: "Int64 overflow", text: `{"UaType":8,"Value":"9223372036854775808"}`, read: variant, want: bad},
		{name: "UInt64 negative", text: `{"UaType":9,"Value":"-1"}`, read: variant, want: bad},
		{name: "Boolean as number", text: `{"UaType":1,"Value":1}`, read: variant, want: bad},
		{name: "String as number", text: `{"UaType":12,"Value":1}`, read: variant, want: bad},
		{name: "Float overflow", text: `{"UaType":10,"Value":1e39}`, read: variant, want: bad},
		{name: "Double unknown special", text: `{"UaType":11,"Value":"Inf"}`, read: variant, want: bad},
		{name: "Guid malformed", text: `{"UaType":14,"Value":"72962B91-FA75-4AE6-8D28-B404DC7DAF6"}`, read: variant, want: bad},
		{name: "DateTime malformed", text: `{"UaType":13,"Value":"2024-02-30T00:00:00Z"}`, read: variant, want: bad},
		{name: "ByteString not base64", text: `{"UaType":15,"Value":"@@@@"}`, read: variant, want: bad},
		{name: "NodeId malformed", text: `{"UaType":17,"Value":"x=1"}`, read: variant, want: bad},
		{name: "NodeId numeric too big", text: `{"UaType":17,"Value":"i=4294967296"}`, read: variant, want: bad},
		{name: "UaType unknown", text: `{"UaType":26,"Value":1}`, read: variant, want: bad},
		{name: "scalar Variant in Variant", text: `{"UaType":24,"Value":{"UaType":6,"Value":1}}`, read: variant, want: bad},
		{name: "Value without UaType", text: `{"Value":1}`, read: variant, want: bad},
		{name: "repeated UaType", text: `{"UaType":6,"UaType":6,"Value":1}`, read: variant, want: bad},
		{name: "Dimensions mismatch", text: `{"UaType":6,"Value":[1,2,3],"Dimensions":[2,2]}`, read: variant, want: bad},
		{name: "Dimensions negative", text: `{"UaType":6,"Value":[],"Dimensions":[-1]}`, read: variant, want: bad},
		{name: "Dimensions on scalar", text: `{"UaType":6,"Value":1,"Dimensions":[1]}`, read: variant, want: bad},
		{name: "DataValue Status string", text: `{"Status":"Good"}`, read: dataValue, want: bad},
		{name: "not an object", text: `[1]`, read: dataValue, want: bad},

		// JSON syntax.
		{name: "leading zero", text: `{"UaType":6,"Value":01}`, read: variant, want: bad},
		{name: "bare minus", text: `{"UaType":11,"Value":-}`, read: variant, want: bad},
		{name: "dot without digits", text: `{"UaType":11,"Value":1.}`, read: variant, want: bad},
		{name: "exponent without digits", text: `{"UaType":11,"Value":1e}`, read: variant, want: bad},
		{name: "trailing comma in array", text: `{"UaType":6,"Value":[1,2,]}`, read: variant, want: bad},
		{name: "trailing comma in object", text: `{"UaType":6,"Value":1,}`, read: variant, want: bad},
		{name: "missing colon", text: `{"UaType" 6}`, read: variant, want: bad},
		{name: "single quotes", text: `{'UaType':6}`, read: variant, want: bad},
		{name: "invalid escape", text: `"a\x"`, read: str, want: bad},
		{name: "short unicode escape", text: `"\u12"`, read: str, want: bad},
		{name: "non-hex unicode escape", text: `"\u12G4"`, read: str, want: bad},
		{name: "raw control character", text: "\"a\nb\"", read: str, want: bad},
		{name: "skipped member malformed", text: `{"UaType":6,"Value":1,"X":[1,}`, read: variant, want: bad},
		{name: "trailing garbage", text: `{"UaType":6,"Value":1} x`, read: variant, want: bad},

		// ExtensionObjects: members must be unique (Part 6 §5.4.2.16), a type id is needed.
		{name: "repeated UaTypeId", text: `{"UaTypeId":"ns=9;i=9","UaTypeId":"ns=9;i=9"}`, read: extObj, want: bad},
		{name: "repeated member of unknown type", text: `{"UaTypeId":"ns=9;i=9","A":1,"A":2}`, read: extObj, want: bad},
		{name: "repeated member, escaped", text: `{"UaTypeId":"ns=9;i=9","A":1,"\u0041":2}`, read: extObj, want: bad},
		{name: "repeated member of known type", text: `{"UaTypeId":"ns=202;i=1","ID":1,"ID":2}`, read: extObj, want: bad},
		{name: "members without UaTypeId", text: `{"ID":1}`, read: extObj, want: bad},
		{name: "null UaTypeId", text: `{"UaTypeId":null,"ID":1}`, read: extObj, want: bad},
		{name: "UaEncoding out of range", text: `{"UaTypeId":"ns=9;i=9","UaEncoding":3,"UaBody":""}`, read: extObj, want: bad},
		{name: "binary body too short", text: `{"UaTypeId":"ns=202;i=1","UaEncoding":1,"UaBody":"AQID"}`, read: extObj, want: bad},
		{name: "known type, wrong member type", text: `{"UaTypeId":"ns=202;i=1","ID":"x"}`, read: extObj, want: bad},

		// Limits, checked before allocating.
		{name: "depth 101 Variants", text: jsonNest(101), read: variant, want: limit},
		{name: "depth 101 DiagnosticInfos",
			text: strings.Repeat(`{"InnerDiagnosticInfo":`, 100) + `{"SymbolicId":1}` + strings.Repeat(`}`, 100), read: diag, want: limit},
		{name: "deep skipped member", text: `{"UaType":6,"Value":1,"X":` + strings.Repeat(`[`, 300) + strings.Repeat(`]`, 300) + `}`, read: variant, want: limit},
		{name: "depth limit lowered", text: jsonNest(5), limits: codec.Limits{MaxDepth: 4}, read: variant, want: limit},
		{name: "array over limit", text: `{"UaType":6,"Value":[1,2,3,4]}`, limits: codec.Limits{MaxArrayLength: 3}, read: variant, want: limit},
		{name: "Dimensions over limit", text: `{"UaType":6,"Value":[],"Dimensions":[4,0]}`, limits: codec.Limits{MaxArrayLength: 3}, read: variant, want: limit},
		{name: "string over limit", text: `"abcde"`, limits: codec.Limits{MaxStringLength: 4}, read: str, want: limit},
		{name: "escaped string over limit", text: `"abc\u00e9"`, limits: codec.Limits{MaxStringLength: 4}, read: str, want: limit},
		{name: "ByteString over limit", text: `{"UaType":15,"Value":"AAAA"}`, limits: codec.Limits{MaxByteStringLength: 2}, read: variant, want: limit},
		{name: "message over limit", text: `{"UaType":6,"Value":1}`, limits: codec.Limits{MaxMessageSize: 10}, read: variant, want: limit},
		{name: "ExtensionObject body depth", text: `{"UaTypeId":"ns=202;i=1","Value":` + jsonNest(100) + `}`, read: extObj, want: limit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := codec.NewJSONDecoderLimits([]byte(c.text), c.limits)
			c.read(d)
			err := d.Finish()
			require.Error(t, err)
			require.Equal(t, c.want, err)
		})
	}
}

func TestJSONDecodeAtLimits(t *testing.T) {
	t.Parallel()
	ok := []struct {
		name   string
		text   string
		limits codec.Limits
	}{
		{"depth 100 Variants", jsonNest(100), codec.Limits{}},
		{"deep skipped member", `{"UaType":6,"Value":1,"X":` + strings.Repeat(`[`, 150) + strings.Repeat(`]`, 150) + `}`, codec.Limits{}},
		{"array at limit", `{"UaType":6,"Value":[1,2,3]}`, codec.Limits{MaxArrayLength: 3}},
		{"escaped string at limit", `{"UaType":12,"Value":"\u0061bcd"}`, codec.Limits{MaxStringLength: 4}},
		{"ByteString at limit", `{"UaType":15,"Value":"AAA="}`, codec.Limits{MaxByteStringLength: 2}},
	}
	for _, c := range ok {
		var v codec.Variant
		d := codec.NewJSONDecoderLimits([]byte(c.text), c.limits)
		d.Variant(&v)
		require.NoError(t, d.Finish(), c.name)
	}
	// Nesting the decoder accepts, the encoder writes.
	var v codec.Variant
	d := codec.NewJSONDecoder([]byte(jsonNest(100)))
	d.Variant(&v)
	require.NoError(t, d.Finish())
	require.Equal(t, jsonNest(100), jsonEncode(t, false, func(e *codec.JSONEncoder) { e.Variant(&v) }))
	// One more level is refused by the encoder too.
	deeper := jsonV([]codec.Variant{v})
	var b bytes.Buffer
	e := codec.NewJSONEncoder(&b, false)
	e.Variant(&deeper)
	require.Equal(t, status.BadEncodingLimitsExceeded, e.Flush())
}

func TestJSONEncodeErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		write func(*codec.JSONEncoder)
	}{
		{"value without member name", func(e *codec.JSONEncoder) { e.BeginObject(); e.Int32(1); e.EndObject() }},
		{"member outside an object", func(e *codec.JSONEncoder) { e.Field("x") }},
		{"member without value", func(e *codec.JSONEncoder) { e.BeginObject(); e.Field("x"); e.EndObject() }},
		{"EndObject for an array", func(e *codec.JSONEncoder) {
			e.BeginObject()
			e.FieldArray("a", 0, false)
			e.EndObject()
		}},
		{"fewer elements than announced", func(e *codec.JSONEncoder) {
			e.BeginObject()
			if e.FieldArray("a", 2, false) {
				e.Int32(1)
				e.EndArray()
			}
			e.EndObject()
		}},
		{"JSON body with UaTypeId", func(e *codec.JSONEncoder) {
			e.ExtensionObject(&codec.ExtensionObject{TypeID: codec.NewNumericNodeId(9, 9), Encoding: codec.ExtensionObjectJSON, Body: []byte(`{"UaTypeId":1}`)})
		}},
		{"JSON body not an object", func(e *codec.JSONEncoder) {
			e.ExtensionObject(&codec.ExtensionObject{TypeID: codec.NewNumericNodeId(9, 9), Encoding: codec.ExtensionObjectJSON, Body: []byte(`[1]`)})
		}},
		{"body without type", func(e *codec.JSONEncoder) {
			e.ExtensionObject(&codec.ExtensionObject{Encoding: codec.ExtensionObjectBinary, Body: []byte{1}})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			e := codec.NewJSONEncoder(&b, false)
			c.write(e)
			require.Equal(t, status.BadEncodingError, e.Flush())
		})
	}
}

// jsonWrites records the size of every Write.
type jsonWrites struct {
	all   bytes.Buffer
	sizes []int
}

func (w *jsonWrites) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.all.Write(p)
}

// TestJSONStreaming checks that output reaches the writer only at member boundaries and
// only once the threshold is passed, with the rest written by Flush.
func TestJSONStreaming(t *testing.T) {
	t.Parallel()
	tags := make([]string, 200)
	for i := range tags {
		tags[i] = strings.Repeat("x", i%17)
	}
	values := make([]codec.Variant, 50)
	for i := range values {
		values[i] = jsonV(float64(i) / 3)
	}
	p := &jsonPoint{ID: 1, Name: "stream", Tags: tags, Value: jsonV(values)}

	want := jsonEncode(t, false, func(e *codec.JSONEncoder) { e.Struct(p) })
	const threshold = 256
	var w jsonWrites
	e := codec.NewJSONEncoder(&w, false)
	e.SetFlushThreshold(threshold)
	e.Struct(p)
	require.Greater(t, len(w.sizes), 5, "nothing streamed before Flush")
	streamed := len(w.sizes)
	require.NoError(t, e.Flush())
	require.Equal(t, streamed+1, len(w.sizes), "Flush writes the rest at once")
	require.Equal(t, want, w.all.String())

	out := w.all.Bytes()
	at := 0
	for i, n := range w.sizes {
		at += n
		if i == len(w.sizes)-1 {
			require.Equal(t, len(out), at)
			break
		}
		require.GreaterOrEqual(t, n, threshold, "write %d came before the threshold", i)
		// The write ends a member or element: a separator or a closer follows.
		require.Contains(t, ",]}", string(out[at]), "write %d ends inside a token: %q|%q", i, out[at-10:at], out[at:at+10])
	}
}

// TestJSONEncodeAllocs checks that a warm encoder allocates nothing per value.
func TestJSONEncodeAllocs(t *testing.T) {
	values := []codec.Variant{
		jsonV(int32(5)), jsonV("text\n"), jsonV([]float64{1, 2.5, math.NaN()}), jsonV(jsonGuid),
		jsonV(codec.NewStringNodeId(2, "node")), jsonV(&codec.DataValue{Value: jsonV(1.5), SourceTimestamp: jsonTime, Status: status.BadDecodingError}),
		jsonV([]byte{1, 2, 3}), jsonV(codec.QualifiedName{NamespaceIndex: 1, Name: "q"}), jsonV(codec.LocalizedText{Text: "t"}),
	}
	for _, verbose := range []bool{false, true} {
		e := codec.NewJSONEncoder(nopWriter{}, verbose)
		allocs := testing.AllocsPerRun(100, func() {
			for i := range values {
				e.Variant(&values[i])
			}
			if err := e.Flush(); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, "verbose=%v", verbose)
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestJSONDecodeDataValueAllocs(t *testing.T) {
	text := []byte(`{"UaType":11,"Value":1.5,"Status":{"Code":2147942400},"SourceTimestamp":"2024-05-06T07:08:09.1234567Z","SourcePicoseconds":7}`)
	d := codec.NewJSONDecoder(text)
	var dv codec.DataValue
	allocs := testing.AllocsPerRun(100, func() {
		d.Reset(text)
		d.DataValue(&dv)
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, 1.5, dv.Value.Value())
}

func BenchmarkJSONEncodeVariant(b *testing.B) {
	v := jsonV([]float64{0, 1.5, -2.25, 3e10, 4e-3, 5, 6, 7, 8, 9.125})
	s := jsonV("a moderately long string value with \"quotes\" and unicode é水")
	e := codec.NewJSONEncoder(nopWriter{}, false)
	size := len(jsonEncode(b, false, func(e *codec.JSONEncoder) { e.Variant(&v); e.Variant(&s) }))
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.Variant(&v)
		e.Variant(&s)
		if err := e.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONDecodeDataValue(b *testing.B) {
	text := []byte(`{"UaType":11,"Value":1.5,"Status":{"Code":2147942400},` +
		`"SourceTimestamp":"2024-05-06T07:08:09.1234567Z","SourcePicoseconds":7,"ServerTimestamp":"2024-05-06T07:08:09Z"}`)
	d := codec.NewJSONDecoder(text)
	var dv codec.DataValue
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d.Reset(text)
		d.DataValue(&dv)
		if err := d.Err(); err != nil {
			b.Fatal(err)
		}
	}
}
