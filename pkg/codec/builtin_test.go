package codec_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// Annotated wire tables for the fixed-size built-ins and the simple composites
// (Part 6 §5.2.2.1–§5.2.2.14). Each row is checked in both directions by binRunTable.

func TestBinaryBoolean(t *testing.T) {
	t.Parallel()
	binRunTable(t, binScalar((*codec.Encoder).Boolean, (*codec.Decoder).Boolean), []binCase[bool]{
		{name: "false", val: false, wire: []byte{0x00}},
		{name: "true", val: true, wire: []byte{0x01}},
		// §5.2.2.1: "decoders shall treat any non-zero value as true"; encoders write 1.
		{name: "0x02 is true", val: true, wire: []byte{0x02}, canon: []byte{0x01}},
		{name: "0xFF is true", val: true, wire: []byte{0xFF}, canon: []byte{0x01}},
	})
}

func TestBinaryIntegers(t *testing.T) {
	t.Parallel()
	t.Run("SByte", func(t *testing.T) {
		binRunTable(t, binScalar((*codec.Encoder).SByte, (*codec.Decoder).SByte), []binCase[int8]{
			{name: "0", val: 0, wire: []byte{0x00}},
			{name: "127", val: 127, wire: []byte{0x7F}},
			{name: "-1", val: -1, wire: []byte{0xFF}},
			{name: "-128", val: -128, wire: []byte{0x80}},
		})
	})
	t.Run("Byte", func(t *testing.T) {
		binRunTable(t, binScalar((*codec.Encoder).Byte, (*codec.Decoder).Byte), []binCase[byte]{
			{name: "0", val: 0, wire: []byte{0x00}},
			{name: "255", val: 255, wire: []byte{0xFF}},
		})
	})
	t.Run("Int16", func(t *testing.T) {
		binRunTable(t, binScalar((*codec.Encoder).Int16, (*codec.Decoder).Int16), []binCase[int16]{
			{name: "1", val: 1, wire: []byte{0x01, 0x00}}, // little-endian: low byte first
			{name: "-2", val: -2, wire: []byte{0xFE, 0xFF}},
			{name: "max", val: math.MaxInt16, wire: []byte{0xFF, 0x7F}},
			{name: "min", val: math.MinInt16, wire: []byte{0x00, 0x80}},
		})
	})
	t.Run("UInt16", func(t *testing.T) {
		binRunTable(t, binScalar((*codec.Encoder).UInt16, (*codec.Decoder).UInt16), []binCase[uint16]{
			{name: "0x1234", val: 0x1234, wire: []byte{0x34, 0x12}},
			{name: "max", val: math.MaxUint16, wire: []byte{0xFF, 0xFF}},
		})
	})
	t.Run("Int32", func(t *testing.T) {
		binRunTable(t, binScalar((*codec.Encoder).Int32, (*codec.Decoder).Int32), []binCase[int32]{
			{name: "1e9", val: 1_000_000_000, wire: []byte{0x00, 0xCA, 0x9A, 0x3B}},
			{name: "-1", val: -1, wire: []byte{0xFF, 0xFF, 0xFF, 0xFF}},
			{name: "-2", val: -2, wire: []byte{0xFE, 0xFF, 0xFF, 0xFF}},
			{name: "min", val: math.MinInt32, wire: []byte{0x00, 0x00, 0x00, 0x80}},
			{name: "max", val: math.MaxInt32, wire: []byte{0xFF, 0xFF, 0xFF, 0x7F}},
		})
	})
	t.Run("UInt32", func(t *testing.T) {
		binRunTable(t, binScalar((*codec.Encoder).UInt32, (*codec.Decoder).UInt32), []binCase[uint32]{
			{name: "0xDEADBEEF", val: 0xDEADBEEF, wire: []byte{0xEF, 0xBE, 0xAD, 0xDE}},
			{name: "max", val: math.MaxUint32, wire: []byte{0xFF, 0xFF, 0xFF, 0xFF}},
		})
	})
	t.Run("Int64", func(t *testing.T) {
		binRunTable(t, binScalar((*codec.Encoder).Int64, (*codec.Decoder).Int64), []binCase[int64]{
			{name: "0x0102030405060708", val: 0x0102030405060708, wire: []byte{0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}},
			{name: "-2", val: -2, wire: []byte{0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
			{name: "min", val: math.MinInt64, wire: []byte{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80}},
		})
	})
	t.Run("UInt64", func(t *testing.T) {
		binRunTable(t, binScalar((*codec.Encoder).UInt64, (*codec.Decoder).UInt64), []binCase[uint64]{
			{name: "1", val: 1, wire: []byte{0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
			{name: "max", val: math.MaxUint64, wire: []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
		})
	})
}

func TestBinaryFloat(t *testing.T) {
	t.Parallel()
	c := binScalar((*codec.Encoder).Float, (*codec.Decoder).Float)
	c.eq = func(a, b *float32) bool { return math.Float32bits(*a) == math.Float32bits(*b) }
	binRunTable(t, c, []binCase[float32]{
		// §5.2.2.3 example: -6.5 is C0D00000, written little-endian.
		{name: "-6.5", val: -6.5, wire: []byte{0x00, 0x00, 0xD0, 0xC0}},
		{name: "0", val: 0, wire: []byte{0x00, 0x00, 0x00, 0x00}},
		{name: "-0", val: float32(math.Copysign(0, -1)), wire: []byte{0x00, 0x00, 0x00, 0x80}},
		{name: "+Inf", val: float32(math.Inf(1)), wire: []byte{0x00, 0x00, 0x80, 0x7F}},
		{name: "NaN", val: math.Float32frombits(0x7FC00001), wire: []byte{0x01, 0x00, 0xC0, 0x7F}}, // payload kept
	})
}

func TestBinaryDouble(t *testing.T) {
	t.Parallel()
	c := binScalar((*codec.Encoder).Double, (*codec.Decoder).Double)
	c.eq = func(a, b *float64) bool { return math.Float64bits(*a) == math.Float64bits(*b) }
	binRunTable(t, c, []binCase[float64]{
		{name: "-6.5", val: -6.5, wire: []byte{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1A, 0xC0}},
		{name: "pi", val: math.Pi, wire: []byte{0x18, 0x2D, 0x44, 0x54, 0xFB, 0x21, 0x09, 0x40}},
		{name: "-Inf", val: math.Inf(-1), wire: []byte{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0xFF}},
		{name: "NaN", val: math.Float64frombits(0x7FF8000000000001), wire: []byte{0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x7F}},
	})
}

// binStringCases are String rows (§5.2.2.4), shared with XmlElement and the Variant tests.
var binStringCases = []binCase[string]{
	{name: "水Boy", val: "水Boy", wire: []byte{
		0x06, 0x00, 0x00, 0x00, // length in bytes, not characters
		0xE6, 0xB0, 0xB4, // 水
		0x42, 0x6F, 0x79, // Boy
	}},
	{name: "null", val: "", wire: []byte{0xFF, 0xFF, 0xFF, 0xFF}}, // length -1
	{name: "empty", val: codec.EmptyString, wire: []byte{0x00, 0x00, 0x00, 0x00}},
	// Any negative length is null.
	{name: "length -2 is null", val: "", wire: []byte{0xFE, 0xFF, 0xFF, 0xFF}, canon: []byte{0xFF, 0xFF, 0xFF, 0xFF}},
}

func TestBinaryString(t *testing.T) {
	t.Parallel()
	c := binScalar((*codec.Encoder).String, (*codec.Decoder).String)
	c.eq = func(a, b *string) bool { return binEqString(*a, *b) }
	binRunTable(t, c, binStringCases)

	require.True(t, codec.IsNull(""), `"" in Go source is the null String`)
	require.False(t, codec.IsNull(codec.EmptyString))
	require.False(t, codec.IsNull("x"[:0]), "a slice of another string is empty, not null")
}

func TestBinaryXmlElement(t *testing.T) {
	t.Parallel()
	c := binScalar((*codec.Encoder).XmlElement, (*codec.Decoder).XmlElement)
	c.eq = func(a, b *string) bool { return binEqString(*a, *b) }
	binRunTable(t, c, []binCase[string]{
		{name: "<a>b</a>", val: "<a>b</a>", wire: binCat(
			[]byte{0x08, 0x00, 0x00, 0x00}, // length
			[]byte("<a>b</a>"),             // UTF-8 text
		)},
		{name: "null", val: "", wire: []byte{0xFF, 0xFF, 0xFF, 0xFF}},
	})
}

func TestBinaryByteString(t *testing.T) {
	t.Parallel()
	binRunTable(t, binCodec[[]byte]{
		enc: func(e *codec.Encoder, v *[]byte) { e.ByteString(*v) },
		dec: func(d *codec.Decoder, v *[]byte) { *v = d.ByteString() },
		eq:  func(a, b *[]byte) bool { return binEqBytes(*a, *b) },
	}, []binCase[[]byte]{
		{name: "null", val: nil, wire: []byte{0xFF, 0xFF, 0xFF, 0xFF}},
		{name: "empty", val: []byte{}, wire: []byte{0x00, 0x00, 0x00, 0x00}},
		{name: "data", val: []byte{1, 2, 3}, wire: []byte{
			0x03, 0x00, 0x00, 0x00, // length
			0x01, 0x02, 0x03, // bytes
		}},
	})

	// A decoded ByteString is a copy: changing the input afterwards does not change it.
	in := []byte{0x01, 0x00, 0x00, 0x00, 0xAA}
	d := codec.NewDecoder(in)
	got := d.ByteString()
	in[4] = 0xBB
	require.Equal(t, []byte{0xAA}, got)
}

func TestBinaryStatusCode(t *testing.T) {
	t.Parallel()
	binRunTable(t, binScalar((*codec.Encoder).StatusCode, (*codec.Decoder).StatusCode), []binCase[status.Code]{
		{name: "Good", val: status.Good, wire: []byte{0x00, 0x00, 0x00, 0x00}},
		{name: "BadDecodingError", val: status.BadDecodingError, wire: []byte{0x00, 0x00, 0x07, 0x80}}, // 0x80070000
	})
}

// binGuidExample is the Guid of Part 6 §5.2.2.6.
var binGuidExample = codec.Guid{
	Data1: 0x72962B91, Data2: 0xFA75, Data3: 0x4AE6,
	Data4: [8]byte{0x8D, 0x28, 0xB4, 0x04, 0xDC, 0x7D, 0xAF, 0x63},
}

// binGuidExampleWire is binGuidExample on the wire.
var binGuidExampleWire = []byte{
	0x91, 0x2B, 0x96, 0x72, // Data1, little-endian
	0x75, 0xFA, // Data2, little-endian
	0xE6, 0x4A, // Data3, little-endian
	0x8D, 0x28, 0xB4, 0x04, 0xDC, 0x7D, 0xAF, 0x63, // Data4, as is
}

func TestBinaryGuid(t *testing.T) {
	t.Parallel()
	binRunTable(t, binScalar((*codec.Encoder).Guid, (*codec.Decoder).Guid), []binCase[codec.Guid]{
		{name: "spec example", val: binGuidExample, wire: binGuidExampleWire},
		{name: "zero", val: codec.Guid{}, wire: make([]byte, 16)},
	})

	require.Equal(t, "72962B91-FA75-4AE6-8D28-B404DC7DAF63", binGuidExample.String())
	for _, s := range []string{"72962B91-FA75-4AE6-8D28-B404DC7DAF63", "72962b91-fa75-4ae6-8d28-b404dc7daf63"} {
		g, err := codec.ParseGuid(s)
		require.NoError(t, err, s)
		require.Equal(t, binGuidExample, g, s)
	}
	for _, s := range []string{"", "72962B91FA754AE68D28B404DC7DAF63", "72962B91-FA75-4AE6-8D28-B404DC7DAF6G", "{72962B91-FA75-4AE6-8D28-B404DC7DAF6}"} {
		_, err := codec.ParseGuid(s)
		require.Error(t, err, s)
	}
}

// binDateTimeExample is 2024-06-01T12:34:56.7891234Z.
var (
	binDateTimeExample     = codec.DateTime(133617188967891234)
	binDateTimeExampleWire = []byte{0x22, 0x41, 0x51, 0x1C, 0x20, 0xB4, 0xDA, 0x01} // Int64 ticks since 1601
	binDateTimeMaxWire     = []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F} // MaxInt64
)

func TestBinaryDateTime(t *testing.T) {
	t.Parallel()
	binRunTable(t, binScalar((*codec.Encoder).DateTime, (*codec.Decoder).DateTime), []binCase[codec.DateTime]{
		{name: "2024-06-01T12:34:56.7891234Z", val: binDateTimeExample, wire: binDateTimeExampleWire},
		{name: "1970-01-01", val: 116444736000000000, wire: []byte{0x00, 0x80, 0x3E, 0xD5, 0xDE, 0xB1, 0x9D, 0x01}},
		{name: "MinValue", val: 0, wire: make([]byte, 8)},
		{name: "MaxValue", val: codec.MaxDateTime, wire: binDateTimeMaxWire},
		{name: "last tick before 9999-12-31T23:59:59Z", val: 2650467743989999999, wire: []byte{0x7F, 0xA9, 0x27, 0xD1, 0x5E, 0x5A, 0xC8, 0x24}},
		// §5.2.2.5: a decoder maps values before 1601 to the earliest time, and values
		// from 9999-12-31T23:59:59Z on to the latest.
		{name: "negative decodes as 0", val: 0, wire: []byte{0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, canon: make([]byte, 8)},
		{name: "9999-12-31T23:59:59Z decodes as MaxValue", val: codec.MaxDateTime,
			wire: []byte{0x80, 0xA9, 0x27, 0xD1, 0x5E, 0x5A, 0xC8, 0x24}, canon: binDateTimeMaxWire},
	})

	// An encoder writes 0 for anything up to 1601 and MaxInt64 from 9999-12-31T23:59:59Z on.
	for _, tc := range []struct {
		in   codec.DateTime
		wire []byte
	}{
		{-1, make([]byte, 8)},
		{math.MinInt64, make([]byte, 8)},
		{2650467743990000000, binDateTimeMaxWire},
		{math.MaxInt64 - 1, binDateTimeMaxWire},
	} {
		e := codec.NewEncoder(nil)
		e.DateTime(tc.in)
		require.Equal(t, tc.wire, e.Bytes(), "encode %d", int64(tc.in))
	}
}

func TestDateTimeTimeConversions(t *testing.T) {
	t.Parallel()
	ex := time.Date(2024, 6, 1, 12, 34, 56, 789123400, time.UTC)
	require.Equal(t, binDateTimeExample, codec.DateTimeOf(ex))
	require.Equal(t, ex, binDateTimeExample.Time())
	require.Equal(t, "2024-06-01T12:34:56.7891234Z", binDateTimeExample.String())

	// Time zones are converted to UTC.
	cet := time.FixedZone("CEST", 2*3600)
	require.Equal(t, binDateTimeExample, codec.DateTimeOf(ex.In(cet)))

	// Below 100 ns resolution the value is truncated (§5.1.4).
	require.Equal(t, binDateTimeExample, codec.DateTimeOf(ex.Add(99*time.Nanosecond)))

	for _, tc := range []struct {
		name string
		in   time.Time
		want codec.DateTime
	}{
		{"zero time.Time", time.Time{}, 0},
		{"before 1601", time.Date(1600, 12, 31, 23, 59, 59, 999999999, time.UTC), 0},
		{"year 1", time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), 0},
		{"1601-01-01 exactly", time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC), 0},
		{"1601-01-01 plus 100ns", time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC), 1},
		{"1969-12-31T23:59:59.9999999Z", time.Date(1969, 12, 31, 23, 59, 59, 999999900, time.UTC), 116444735999999999},
		{"Unix epoch", time.Unix(0, 0), 116444736000000000},
		{"9999-12-31T23:59:58.9999999Z", time.Date(9999, 12, 31, 23, 59, 58, 999999900, time.UTC), 2650467743989999999},
		{"9999-12-31T23:59:59Z", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), codec.MaxDateTime},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), codec.MaxDateTime},
		{"far future", time.Date(292277026596, 1, 1, 0, 0, 0, 0, time.UTC), codec.MaxDateTime},
	} {
		require.Equal(t, tc.want, codec.DateTimeOf(tc.in), tc.name)
	}

	require.True(t, codec.DateTime(0).Time().IsZero(), "MinValue is the zero time.Time")
	require.True(t, codec.DateTime(-5).Time().IsZero())
	maxTime := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	require.Equal(t, maxTime, codec.MaxDateTime.Time())
	require.Equal(t, maxTime, codec.DateTime(2650467743990000001).Time())
	require.Equal(t, time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC), codec.DateTime(1).Time())
	require.Equal(t, time.Date(1969, 12, 31, 23, 59, 59, 999999900, time.UTC), codec.DateTime(116444735999999999).Time())

	now := codec.Now()
	require.WithinDuration(t, time.Now(), now.Time(), time.Second)
}

func TestBinaryQualifiedName(t *testing.T) {
	t.Parallel()
	binRunTable(t, binCodec[codec.QualifiedName]{
		enc: func(e *codec.Encoder, v *codec.QualifiedName) { e.QualifiedName(*v) },
		dec: func(d *codec.Decoder, v *codec.QualifiedName) { *v = d.QualifiedName() },
		eq:  binEqQName,
	}, []binCase[codec.QualifiedName]{
		{name: "1:Temp", val: codec.QualifiedName{NamespaceIndex: 1, Name: "Temp"}, wire: []byte{
			0x01, 0x00, // NamespaceIndex
			0x04, 0x00, 0x00, 0x00, 'T', 'e', 'm', 'p', // Name
		}},
		{name: "null name", val: codec.QualifiedName{}, wire: []byte{
			0x00, 0x00, // NamespaceIndex
			0xFF, 0xFF, 0xFF, 0xFF, // Name: null
		}},
		{name: "empty name", val: codec.QualifiedName{NamespaceIndex: 0xFFFF, Name: codec.EmptyString}, wire: []byte{
			0xFF, 0xFF, // NamespaceIndex
			0x00, 0x00, 0x00, 0x00, // Name: empty
		}},
	})
}

func TestBinaryLocalizedText(t *testing.T) {
	t.Parallel()
	binRunTable(t, binScalar((*codec.Encoder).LocalizedText, (*codec.Decoder).LocalizedText), []binCase[codec.LocalizedText]{
		{name: "mask 0", val: codec.LocalizedText{}, wire: []byte{
			0x00, // EncodingMask: no Locale, no Text
		}},
		{name: "mask 1", val: codec.LocalizedText{Locale: "en"}, wire: []byte{
			0x01,                             // EncodingMask: Locale
			0x02, 0x00, 0x00, 0x00, 'e', 'n', // Locale
		}},
		{name: "mask 2", val: codec.LocalizedText{Text: "Hi"}, wire: []byte{
			0x02,                             // EncodingMask: Text
			0x02, 0x00, 0x00, 0x00, 'H', 'i', // Text
		}},
		{name: "mask 3", val: codec.LocalizedText{Locale: "de-DE", Text: "Hallo"}, wire: []byte{
			0x03,                                            // EncodingMask: Locale | Text
			0x05, 0x00, 0x00, 0x00, 'd', 'e', '-', 'D', 'E', // Locale
			0x05, 0x00, 0x00, 0x00, 'H', 'a', 'l', 'l', 'o', // Text
		}},
		// §5.2.2.14: Locale and Text are "Omitted if null or empty".
		{name: "empty fields are omitted", val: codec.LocalizedText{Locale: codec.EmptyString, Text: codec.EmptyString}, wire: []byte{
			0x03,                   // EncodingMask: Locale | Text
			0x00, 0x00, 0x00, 0x00, // Locale: empty
			0x00, 0x00, 0x00, 0x00, // Text: empty
		}, canon: []byte{0x00}},
		{name: "null field with its bit set", val: codec.LocalizedText{Text: "x"}, wire: []byte{
			0x03,                   // EncodingMask: Locale | Text
			0xFF, 0xFF, 0xFF, 0xFF, // Locale: null
			0x01, 0x00, 0x00, 0x00, 'x', // Text
		}, canon: []byte{0x02, 0x01, 0x00, 0x00, 0x00, 'x'}},
		{name: "unknown mask bits are ignored", val: codec.LocalizedText{Text: "x"}, wire: []byte{
			0xFE,                        // EncodingMask: Text and six unassigned bits
			0x01, 0x00, 0x00, 0x00, 'x', // Text
		}, canon: []byte{0x02, 0x01, 0x00, 0x00, 0x00, 'x'}},
	})
}
