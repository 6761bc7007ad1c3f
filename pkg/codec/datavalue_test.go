package codec_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// DataValue mask bits (Part 6 §5.2.2.17, Table 21).
const (
	binDVValue       = 0x01
	binDVStatus      = 0x02
	binDVSourceTS    = 0x04
	binDVServerTS    = 0x08
	binDVSourcePicos = 0x10
	binDVServerPicos = 0x20
)

// binServerTimeTick is one tick after binDateTimeExample.
const binServerTimeTick = codec.DateTime(133617188967891235)

// binDataValueCases are annotated DataValue rows.
var binDataValueCases = []binCase[codec.DataValue]{
	{name: "empty", val: codec.DataValue{}, wire: []byte{
		0x00, // EncodingMask: nothing present
	}},
	{name: "value", val: codec.DataValue{Value: binV(int32(42))}, wire: []byte{
		0x01,                         // EncodingMask: Value
		0x06, 0x2A, 0x00, 0x00, 0x00, // Variant Int32 42
	}},
	{name: "status", val: codec.DataValue{Status: status.BadDecodingError}, wire: []byte{
		0x02,                   // EncodingMask: StatusCode
		0x00, 0x00, 0x07, 0x80, // StatusCode
	}},
	{name: "all fields", val: codec.DataValue{
		Value:             binV("水Boy"),
		Status:            status.Code(0x40000000), // Uncertain
		SourceTimestamp:   binDateTimeExample,
		SourcePicoseconds: 1234,
		ServerTimestamp:   binServerTimeTick,
		ServerPicoseconds: 9999,
	}, wire: binCat(
		[]byte{0x3F},                         // EncodingMask: all six fields
		[]byte{0x0C}, binStringCases[0].wire, // Value: Variant String
		[]byte{0x00, 0x00, 0x00, 0x40},                         // StatusCode
		binDateTimeExampleWire,                                 // SourceTimestamp
		[]byte{0xD2, 0x04},                                     // SourcePicoseconds 1234
		[]byte{0x23, 0x41, 0x51, 0x1C, 0x20, 0xB4, 0xDA, 0x01}, // ServerTimestamp
		[]byte{0x0F, 0x27},                                     // ServerPicoseconds 9999
	)},
	{name: "timestamps and picoseconds", val: codec.DataValue{
		SourceTimestamp: binDateTimeExample, SourcePicoseconds: 1, ServerTimestamp: binServerTimeTick,
	}, wire: binCat(
		[]byte{0x1C},           // EncodingMask: SourceTimestamp | ServerTimestamp | SourcePicoseconds
		binDateTimeExampleWire, // SourceTimestamp
		[]byte{0x01, 0x00},     // SourcePicoseconds: written right after its timestamp
		[]byte{0x23, 0x41, 0x51, 0x1C, 0x20, 0xB4, 0xDA, 0x01}, // ServerTimestamp
	)},
	{name: "nested Variant in DataValue in Variant", val: codec.DataValue{
		Value: binV(&codec.DataValue{Value: binV([]codec.Variant{binV(true)})}),
	}, wire: []byte{
		0x01,                         // EncodingMask: Value
		0x17,                         // Variant: DataValue
		0x01,                         // inner EncodingMask: Value
		0x98, 0x01, 0x00, 0x00, 0x00, // Variant: array of 1 Variant
		0x01, 0x01, // Variant Boolean true
	}},
	// "The decoder shall treat values greater than or equal to 10 000 as the value '9999'."
	{name: "picoseconds 10000 read as 9999", val: codec.DataValue{SourceTimestamp: binDateTimeExample, SourcePicoseconds: 9999},
		wire:  binCat([]byte{0x14}, binDateTimeExampleWire, []byte{0x10, 0x27}),
		canon: binCat([]byte{0x14}, binDateTimeExampleWire, []byte{0x0F, 0x27})},
	{name: "picoseconds 65535 read as 9999", val: codec.DataValue{ServerTimestamp: binDateTimeExample, ServerPicoseconds: 9999},
		wire:  binCat([]byte{0x28}, binDateTimeExampleWire, []byte{0xFF, 0xFF}),
		canon: binCat([]byte{0x28}, binDateTimeExampleWire, []byte{0x0F, 0x27})},
	// "If the source timestamp is missing the Picoseconds are ignored."
	{name: "picoseconds without timestamp ignored", val: codec.DataValue{},
		wire: []byte{0x30, 0x01, 0x00, 0x02, 0x00}, canon: []byte{0x00}},
	// Part 6 §5.1.4: "The Picoseconds shall be set to 0 when the DateTime value is
	// DateTime.MinValue or DateTime.MaxValue."
	{name: "picoseconds beside MaxValue dropped", val: codec.DataValue{SourceTimestamp: codec.MaxDateTime},
		wire:  binCat([]byte{0x14}, binDateTimeMaxWire, []byte{0x05, 0x00}),
		canon: binCat([]byte{0x04}, binDateTimeMaxWire)},
	{name: "timestamp 0 with its bit set", val: codec.DataValue{},
		wire: binCat([]byte{0x04}, make([]byte, 8)), canon: []byte{0x00}},
	{name: "Value bit with a null Variant", val: codec.DataValue{}, wire: []byte{0x01, 0x00}, canon: []byte{0x00}},
	{name: "StatusCode bit with Good", val: codec.DataValue{}, wire: []byte{0x02, 0x00, 0x00, 0x00, 0x00}, canon: []byte{0x00}},
	{name: "unassigned mask bits ignored", val: codec.DataValue{Status: 1}, wire: []byte{0xC2, 0x01, 0x00, 0x00, 0x00}, canon: []byte{0x02, 0x01, 0x00, 0x00, 0x00}},
}

func TestBinaryDataValue(t *testing.T) {
	t.Parallel()
	binRunTable(t, binDataValueCodec, binDataValueCases)
}

// binDataValueMaskRow builds the wire form of a DataValue with the given mask, with every
// present field set to a distinct value, and the value a decoder must return.
func binDataValueMaskRow(mask byte) ([]byte, codec.DataValue) {
	var v codec.DataValue
	wire := []byte{mask}
	if mask&binDVValue != 0 {
		wire = append(wire, 0x06, 0x07, 0x00, 0x00, 0x00) // Variant Int32 7
		v.Value = binV(int32(7))
	}
	if mask&binDVStatus != 0 {
		wire = append(wire, 0x00, 0x00, 0x07, 0x80) // BadDecodingError
		v.Status = status.BadDecodingError
	}
	if mask&binDVSourceTS != 0 {
		wire = append(wire, binDateTimeExampleWire...)
		v.SourceTimestamp = binDateTimeExample
	}
	if mask&binDVSourcePicos != 0 {
		wire = append(wire, 0x01, 0x01) // 257
		if mask&binDVSourceTS != 0 {
			v.SourcePicoseconds = 257
		}
	}
	if mask&binDVServerTS != 0 {
		wire = append(wire, 0x23, 0x41, 0x51, 0x1C, 0x20, 0xB4, 0xDA, 0x01)
		v.ServerTimestamp = binServerTimeTick
	}
	if mask&binDVServerPicos != 0 {
		wire = append(wire, 0x02, 0x02) // 514
		if mask&binDVServerTS != 0 {
			v.ServerPicoseconds = 514
		}
	}
	return wire, v
}

// TestBinaryDataValueAllMasks decodes every one of the 64 masks. Masks with picoseconds
// but not their timestamp decode (the picoseconds are ignored) and re-encode without them.
func TestBinaryDataValueAllMasks(t *testing.T) {
	t.Parallel()
	var cases []binCase[codec.DataValue]
	canonical := 0
	for mask := range byte(64) {
		wire, v := binDataValueMaskRow(mask)
		c := binCase[codec.DataValue]{name: fmt.Sprintf("mask %#02x", mask), val: v, wire: wire}
		canon := mask
		if mask&binDVSourceTS == 0 {
			canon &^= binDVSourcePicos
		}
		if mask&binDVServerTS == 0 {
			canon &^= binDVServerPicos
		}
		if canon != mask {
			c.canon, _ = binDataValueMaskRow(canon)
		} else {
			canonical++
		}
		cases = append(cases, c)
	}
	require.Equal(t, 4*3*3, canonical, "Value × Status × (no ts, ts, ts+ps) × (no ts, ts, ts+ps)")
	binRunTable(t, binDataValueCodec, cases)
}

func TestEncodeDataValuePicoseconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   codec.DataValue
		wire []byte
	}{
		{"clamped to 9999", codec.DataValue{ServerTimestamp: binDateTimeExample, ServerPicoseconds: 12000},
			binCat([]byte{0x28}, binDateTimeExampleWire, []byte{0x0F, 0x27})},
		{"no timestamp", codec.DataValue{SourcePicoseconds: 5, ServerPicoseconds: 6}, []byte{0x00}},
		{"beside MaxValue", codec.DataValue{SourceTimestamp: codec.MaxDateTime, SourcePicoseconds: 5},
			binCat([]byte{0x04}, binDateTimeMaxWire)},
		{"beside a timestamp past 9999", codec.DataValue{SourceTimestamp: 2650467743990000000, SourcePicoseconds: 5},
			binCat([]byte{0x04}, binDateTimeMaxWire)},
		{"negative timestamp is MinValue", codec.DataValue{SourceTimestamp: -1, SourcePicoseconds: 5}, []byte{0x00}},
	} {
		e := codec.NewEncoder(nil)
		e.DataValue(&tc.in)
		require.NoError(t, e.Err(), tc.name)
		require.Equal(t, binHex(tc.wire), binHex(e.Bytes()), tc.name)
	}
}

// binDiagCases are DiagnosticInfo rows (Part 6 §5.2.2.12): each field alone, all of them,
// and nested inner infos.
var binDiagCases = []binCase[codec.DiagnosticInfo]{
	{name: "empty", val: codec.DiagnosticInfo{}, wire: []byte{0x00}},
	{name: "SymbolicId", val: codec.DiagnosticInfo{Mask: codec.HasSymbolicID, SymbolicID: 1}, wire: []byte{
		0x01,                   // EncodingMask: SymbolicId
		0x01, 0x00, 0x00, 0x00, // SymbolicId
	}},
	{name: "NamespaceUri", val: codec.DiagnosticInfo{Mask: codec.HasNamespaceURI, NamespaceURI: 2}, wire: []byte{0x02, 0x02, 0x00, 0x00, 0x00}},
	{name: "LocalizedText", val: codec.DiagnosticInfo{Mask: codec.HasLocalizedText, LocalizedText: 3}, wire: []byte{0x04, 0x03, 0x00, 0x00, 0x00}},
	{name: "Locale", val: codec.DiagnosticInfo{Mask: codec.HasLocale, Locale: -1}, wire: []byte{0x08, 0xFF, 0xFF, 0xFF, 0xFF}},
	{name: "AdditionalInfo", val: codec.DiagnosticInfo{Mask: codec.HasAdditionalInfo, AdditionalInfo: "why"}, wire: []byte{
		0x10,                                  // EncodingMask: AdditionalInfo
		0x03, 0x00, 0x00, 0x00, 'w', 'h', 'y', // AdditionalInfo
	}},
	{name: "AdditionalInfo null", val: codec.DiagnosticInfo{Mask: codec.HasAdditionalInfo}, wire: []byte{0x10, 0xFF, 0xFF, 0xFF, 0xFF}},
	{name: "AdditionalInfo empty", val: codec.DiagnosticInfo{Mask: codec.HasAdditionalInfo, AdditionalInfo: codec.EmptyString}, wire: []byte{0x10, 0x00, 0x00, 0x00, 0x00}},
	{name: "InnerStatusCode", val: codec.DiagnosticInfo{Mask: codec.HasInnerStatusCode, InnerStatusCode: status.BadDecodingError}, wire: []byte{0x20, 0x00, 0x00, 0x07, 0x80}},
	{name: "InnerDiagnosticInfo", val: codec.DiagnosticInfo{Mask: codec.HasInnerDiagnosticInfo, InnerDiagnosticInfo: &codec.DiagnosticInfo{}}, wire: []byte{
		0x40, // EncodingMask: InnerDiagnosticInfo
		0x00, // inner EncodingMask: nothing
	}},
	{name: "all fields, nested twice", val: codec.DiagnosticInfo{
		Mask: 0x7F, SymbolicID: 1, NamespaceURI: 2, LocalizedText: 3, Locale: 4, AdditionalInfo: "a",
		InnerStatusCode: status.BadDecodingError,
		InnerDiagnosticInfo: &codec.DiagnosticInfo{
			Mask: codec.HasSymbolicID | codec.HasInnerDiagnosticInfo, SymbolicID: 5,
			InnerDiagnosticInfo: &codec.DiagnosticInfo{Mask: codec.HasLocale, Locale: 6},
		},
	}, wire: []byte{
		0x7F,                   // EncodingMask: all seven fields
		0x01, 0x00, 0x00, 0x00, // SymbolicId
		0x02, 0x00, 0x00, 0x00, // NamespaceUri
		0x04, 0x00, 0x00, 0x00, // Locale: before LocalizedText although its bit is 0x08
		0x03, 0x00, 0x00, 0x00, // LocalizedText
		0x01, 0x00, 0x00, 0x00, 'a', // AdditionalInfo
		0x00, 0x00, 0x07, 0x80, // InnerStatusCode
		0x41,                   // inner EncodingMask: SymbolicId | InnerDiagnosticInfo
		0x05, 0x00, 0x00, 0x00, // inner SymbolicId
		0x08,                   // innermost EncodingMask: Locale
		0x06, 0x00, 0x00, 0x00, // innermost Locale
	}},
	// Bit 0x80 is unassigned: ignored, and not written back.
	{name: "bit 0x80 ignored", val: codec.DiagnosticInfo{Mask: codec.HasSymbolicID, SymbolicID: 1},
		wire: []byte{0x81, 0x01, 0x00, 0x00, 0x00}, canon: []byte{0x01, 0x01, 0x00, 0x00, 0x00}},
}

func TestBinaryDiagnosticInfo(t *testing.T) {
	t.Parallel()
	binRunTable(t, binDiagCodec, binDiagCases)

	// The InnerDiagnosticInfo bit follows the pointer, whatever Mask says.
	for _, tc := range []struct {
		name string
		in   codec.DiagnosticInfo
		wire []byte
	}{
		{"bit without pointer", codec.DiagnosticInfo{Mask: codec.HasInnerDiagnosticInfo}, []byte{0x00}},
		{"pointer without bit", codec.DiagnosticInfo{InnerDiagnosticInfo: &codec.DiagnosticInfo{}}, []byte{0x40, 0x00}},
		{"field without bit is left out", codec.DiagnosticInfo{SymbolicID: 9}, []byte{0x00}},
	} {
		e := codec.NewEncoder(nil)
		e.DiagnosticInfo(&tc.in)
		require.Equal(t, tc.wire, e.Bytes(), tc.name)
	}
}
