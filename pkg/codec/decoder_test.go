package codec_test

// Hostile input: limits checked before allocation, nesting bounded on every recursive
// path, invalid type ids and masks rejected, and the sticky error.

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

var (
	errDecoding = error(status.BadDecodingError)
	errLimits   = error(status.BadEncodingLimitsExceeded)
)

// binDecodeVariant decodes one Variant from wire with limits l (zero for the defaults).
func binDecodeVariant(wire []byte, l codec.Limits) (codec.Variant, error) {
	d := codec.NewDecoderLimits(wire, l)
	var v codec.Variant
	d.Variant(&v)
	return v, d.Err()
}

func TestDecodeLimits(t *testing.T) {
	t.Parallel()
	small := codec.Limits{MaxStringLength: 4, MaxByteStringLength: 3, MaxArrayLength: 2}
	for _, tc := range []struct {
		name   string
		wire   []byte
		decode func(*codec.Decoder)
		want   error
	}{
		{"String at MaxStringLength", binStr("abcd"), func(d *codec.Decoder) { _ = d.String() }, nil},
		{"String over MaxStringLength", binStr("abcde"), func(d *codec.Decoder) { _ = d.String() }, errLimits},
		{"XmlElement over MaxStringLength", binStr("<a/>x"), func(d *codec.Decoder) { _ = d.XmlElement() }, errLimits},
		{"ByteString at MaxByteStringLength", binStr("abc"), func(d *codec.Decoder) { d.ByteString() }, nil},
		{"ByteString over MaxByteStringLength", binStr("abcd"), func(d *codec.Decoder) { d.ByteString() }, errLimits},
		{"QualifiedName over MaxStringLength", binCat([]byte{0, 0}, binStr("abcde")), func(d *codec.Decoder) { d.QualifiedName() }, errLimits},
		{"LocalizedText over MaxStringLength", binCat([]byte{2}, binStr("abcde")), func(d *codec.Decoder) { d.LocalizedText() }, errLimits},
		{"string NodeId over MaxStringLength", binCat([]byte{3, 0, 0}, binStr("abcde")), func(d *codec.Decoder) { d.NodeId() }, errLimits},
		{"opaque NodeId over MaxByteStringLength", binCat([]byte{5, 0, 0}, binStr("abcd")), func(d *codec.Decoder) { d.NodeId() }, errLimits},
		{"NamespaceUri over MaxStringLength", binCat([]byte{0x80, 1}, binStr("abcde")), func(d *codec.Decoder) { d.ExpandedNodeId() }, errLimits},
		{"AdditionalInfo over MaxStringLength", binCat([]byte{0x10}, binStr("abcde")), func(d *codec.Decoder) { d.DiagnosticInfo(new(codec.DiagnosticInfo)) }, errLimits},
		{"ExtensionObject body over MaxByteStringLength", binCat([]byte{0, 1, 1}, binStr("abcd")),
			func(d *codec.Decoder) { d.ExtensionObject(new(codec.ExtensionObject)) }, errLimits},
		{"Variant array at MaxArrayLength", binCat([]byte{0x83}, binStr("ab")), func(d *codec.Decoder) { d.Variant(new(codec.Variant)) }, nil},
		{"Variant array over MaxArrayLength", binCat([]byte{0x83}, binStr("abc")), func(d *codec.Decoder) { d.Variant(new(codec.Variant)) }, errLimits},
		{"ArrayDimensions over MaxArrayLength", []byte{0xC3, 0x02, 0, 0, 0, 1, 2, 0x03, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0},
			func(d *codec.Decoder) { d.Variant(new(codec.Variant)) }, errLimits},
		{"ArrayLength over MaxArrayLength", binI32(3), func(d *codec.Decoder) { d.ArrayLength(0) }, errLimits},
	} {
		d := codec.NewDecoderLimits(tc.wire, small)
		tc.decode(d)
		require.Equal(t, tc.want, d.Err(), tc.name)
	}

	// The defaults apply to a Decoder made by NewDecoder.
	_, err := binDecodeVariant(binCat([]byte{0x86}, binI32(int32(codec.DefaultLimits.MaxArrayLength+1))), codec.Limits{})
	require.Equal(t, errLimits, err)
	_, err = binDecodeVariant(binCat([]byte{0x0C}, binI32(int32(codec.DefaultLimits.MaxStringLength+1))), codec.Limits{})
	require.Equal(t, errLimits, err)

	// A product of dimensions that would overflow is over the limit, not wrapped around.
	_, err = binDecodeVariant([]byte{0xC6, 0x00, 0x00, 0x00, 0x00, // array | dims | Int32, no elements
		0x03, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0x7F}, // dims [MaxInt32, MaxInt32, MaxInt32]
		codec.Limits{MaxArrayLength: math.MaxInt})
	require.Equal(t, errLimits, err)

	// A message over MaxMessageSize fails before anything is read.
	d := codec.NewDecoderLimits(make([]byte, 11), codec.Limits{MaxMessageSize: 10})
	require.Equal(t, errLimits, d.Err())
	require.Zero(t, d.Byte())
	d.Reset(make([]byte, 10))
	require.NoError(t, d.Err())
	require.Equal(t, 10, d.Remaining())

	// Zero fields take the defaults.
	d.SetLimits(codec.Limits{MaxDepth: 3})
	require.Equal(t, 3, d.Limits().MaxDepth)
	require.Equal(t, codec.DefaultLimits.MaxStringLength, d.Limits().MaxStringLength)
	require.Equal(t, codec.DefaultLimits, codec.NewDecoder(nil).Limits())
}

// TestDecodeHugeLengthAllocatesNothing claims lengths far larger than the message with
// limits that allow them: the decoder must fail with BadDecodingError before it allocates.
func TestDecodeHugeLengthAllocatesNothing(t *testing.T) {
	huge := binI32(math.MaxInt32)
	big := codec.Limits{
		MaxStringLength: math.MaxInt32, MaxByteStringLength: math.MaxInt32, MaxArrayLength: math.MaxInt32,
	}
	for _, tc := range []struct {
		name   string
		wire   []byte
		decode func(*codec.Decoder)
	}{
		{"String", huge, func(d *codec.Decoder) { _ = d.String() }},
		{"ByteString", huge, func(d *codec.Decoder) { d.ByteString() }},
		{"opaque NodeId", binCat([]byte{5, 0, 0}, huge), func(d *codec.Decoder) { d.NodeId() }},
		{"ArrayLength", huge, func(d *codec.Decoder) { d.ArrayLength(1) }},
		{"ExtensionObject body", binCat([]byte{0x01, 0x01, 0x2C, 0x01, 0x01}, huge), func(d *codec.Decoder) { d.ExtensionObject(new(codec.ExtensionObject)) }},
		{"ExtensionObject registered body", binCat([]byte{0x01, binNS, 0x02, 0x00, 0x01}, huge), func(d *codec.Decoder) { d.ExtensionObject(new(codec.ExtensionObject)) }},
	} {
		d := codec.NewDecoderLimits(nil, big)
		allocs := testing.AllocsPerRun(50, func() {
			d.Reset(tc.wire)
			tc.decode(d)
		})
		require.Equal(t, errDecoding, d.Err(), tc.name)
		require.Zero(t, allocs, tc.name)
	}

	// Every array type: elements of at least one byte each cannot fit in 4 bytes.
	var v codec.Variant
	for ty := codec.TypeBoolean; ty <= codec.TypeDiagnosticInfo; ty++ {
		for _, wire := range [][]byte{
			binCat([]byte{0x80 | byte(ty)}, huge, []byte{0, 0, 0, 0}),
			binCat([]byte{0xC0 | byte(ty)}, binI32(5), []byte{0, 0, 0, 0}), // dims cannot be reached
		} {
			d := codec.NewDecoderLimits(nil, big)
			allocs := testing.AllocsPerRun(50, func() {
				d.Reset(wire)
				d.Variant(&v)
			})
			require.Equal(t, errDecoding, d.Err(), "%v array % x", ty, wire)
			require.Zero(t, allocs, "%v array % x", ty, wire)
		}
	}
	// A huge ArrayDimensionsLength after a null array.
	wire := binCat([]byte{0xC6}, binI32(-1), huge)
	d := codec.NewDecoderLimits(nil, big)
	allocs := testing.AllocsPerRun(50, func() {
		d.Reset(wire)
		d.Variant(&v)
	})
	require.Equal(t, errDecoding, d.Err())
	require.Zero(t, allocs)
}

// Builders of nested values, depth levels deep. Each level is one Enter of the decoder.

// binNestVariantArrays returns a Variant that is an array holding one Variant, depth times,
// around an Int32.
func binNestVariantArrays(depth int) []byte {
	var b []byte
	for range depth {
		b = append(b, 0x98, 0x01, 0x00, 0x00, 0x00) // array of 1 Variant
	}
	return append(b, 0x06, 0x01, 0x00, 0x00, 0x00) // Int32 1
}

// binNestDataValues returns a Variant holding a DataValue whose Value holds a DataValue ...
func binNestDataValues(depth int) []byte {
	var b []byte
	for range depth {
		b = append(b, 0x17, 0x01) // Variant: DataValue; DataValue mask: Value
	}
	return append(b, 0x00) // null Variant
}

// binNestDiag returns a DiagnosticInfo with depth inner DiagnosticInfos.
func binNestDiag(depth int) []byte {
	return append(bytes.Repeat([]byte{0x40}, depth), 0x00)
}

// binNestExtObj returns an ExtensionObject whose BinStruct body holds a Variant holding an
// ExtensionObject ..., depth bodies in all.
func binNestExtObj(depth int) []byte {
	inner := []byte{0x00} // innermost Value: null Variant
	for i := range depth {
		body := binCat(binI32(int32(i)), []byte{0xFF, 0xFF, 0xFF, 0xFF}, inner) // ID, null Name, Value
		x := binCat([]byte{0x01, binNS, 0x02, 0x00, 0x01}, binI32(int32(len(body))), body)
		if i == depth-1 {
			return x
		}
		inner = binCat([]byte{0x16}, x) // Variant: ExtensionObject
	}
	return []byte{0x00, 0x00, 0x00}
}

// binNestMixed cycles through every recursive path: Variant array, Variant DataValue,
// ExtensionObject body and, innermost, DiagnosticInfo.
func binNestMixed(depth int) []byte {
	if depth == 0 {
		return []byte{0x00}
	}
	if depth <= 3 {
		// Variant DiagnosticInfo holding depth-1 inner levels: the Variant itself does
		// not count, each inner DiagnosticInfo does; one more level comes from an array.
		return binCat([]byte{0x98, 0x01, 0x00, 0x00, 0x00, 0x19}, binNestDiag(depth-1))
	}
	inner := binNestMixed(depth - 3)
	body := binCat(binI32(0), []byte{0xFF, 0xFF, 0xFF, 0xFF}, inner)
	return binCat(
		[]byte{0x98, 0x01, 0x00, 0x00, 0x00},                                        // level 1: array of 1 Variant
		[]byte{0x17, 0x01},                                                          // level 2: Variant DataValue with a Value
		[]byte{0x16, 0x01, binNS, 0x02, 0x00, 0x01}, binI32(int32(len(body))), body, // level 3: ExtensionObject body
	)
}

func TestDecodeNestingDepth(t *testing.T) {
	t.Parallel()
	variant := func(d *codec.Decoder) { d.Variant(new(codec.Variant)) }
	for _, tc := range []struct {
		name   string
		build  func(int) []byte
		decode func(*codec.Decoder)
	}{
		{"Variant arrays", binNestVariantArrays, variant},
		{"DataValues in Variants", binNestDataValues, variant},
		{"DiagnosticInfos", binNestDiag, func(d *codec.Decoder) { d.DiagnosticInfo(new(codec.DiagnosticInfo)) }},
		{"ExtensionObject bodies", binNestExtObj, func(d *codec.Decoder) { d.ExtensionObject(new(codec.ExtensionObject)) }},
		{"mixed", binNestMixed, variant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Part 6 §5.1.5: "Decoders shall support at least 100 nesting levels."
			ok := tc.build(100)
			d := codec.NewDecoder(binCat(ok, ok))
			tc.decode(d)
			tc.decode(d) // a second value: every Enter was matched by a Leave
			require.NoError(t, d.Err())
			require.Zero(t, d.Remaining())

			for _, depth := range []int{101, 102, 1000} {
				d := codec.NewDecoder(tc.build(depth))
				tc.decode(d)
				require.Equal(t, errLimits, d.Err(), "depth %d", depth)
			}

			// A lower MaxDepth is honoured exactly.
			d = codec.NewDecoderLimits(tc.build(5), codec.Limits{MaxDepth: 5})
			tc.decode(d)
			require.NoError(t, d.Err())
			d = codec.NewDecoderLimits(tc.build(6), codec.Limits{MaxDepth: 5})
			tc.decode(d)
			require.Equal(t, errLimits, d.Err())
			// Reset forgets the depth of the failed decode.
			d.Reset(tc.build(5))
			tc.decode(d)
			require.NoError(t, d.Err())
		})
	}

	// A very deep input fails quickly instead of exhausting the stack.
	_, err := binDecodeVariant(binNestVariantArrays(1_000_000), codec.Limits{})
	require.Equal(t, errLimits, err)
}

func TestEncodeNestingDepth(t *testing.T) {
	t.Parallel()
	nest := func(depth int) codec.Variant {
		v := binV(int32(1))
		for range depth {
			v = binV([]codec.Variant{v})
		}
		return v
	}
	e := codec.NewEncoder(nil)
	v := nest(100)
	e.Variant(&v)
	require.NoError(t, e.Err())
	require.Equal(t, binNestVariantArrays(100), e.Bytes())

	e.Reset(nil)
	v = nest(101)
	e.Variant(&v)
	require.Equal(t, errLimits, e.Err())

	// Cycles in a value terminate with BadEncodingLimitsExceeded.
	cyc := &codec.DiagnosticInfo{}
	cyc.InnerDiagnosticInfo = cyc
	e.Reset(nil)
	e.DiagnosticInfo(cyc)
	require.Equal(t, errLimits, e.Err())

	dv := &codec.DataValue{}
	dv.Value = binV(dv)
	e.Reset(nil)
	e.DataValue(dv)
	require.Equal(t, errLimits, e.Err())

	arr := []codec.Variant{{}}
	arr[0] = binV(arr)
	e.Reset(nil)
	e.Variant(&arr[0])
	require.Equal(t, errLimits, e.Err())

	s := &binStruct{}
	s.Value = binV(codec.NewExtensionObject(s))
	e.Reset(nil)
	e.ExtensionObject(&codec.ExtensionObject{Value: s})
	require.Equal(t, errLimits, e.Err())

	// Reset forgets the depth: a fresh encode of 100 levels works again.
	e.Reset(nil)
	v = nest(100)
	e.Variant(&v)
	require.NoError(t, e.Err())
}

func TestDecodeVariantRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wire []byte
	}{
		{"scalar Variant in a Variant", []byte{0x18, 0x06, 0x01, 0x00, 0x00, 0x00}},
		{"array of Null", []byte{0x80, 0x00, 0x00, 0x00, 0x00}},
		{"ArrayDimensions on a scalar", []byte{0x46, 0x01, 0x00, 0x00, 0x00}},
		{"dimensions product too small", []byte{0xC6, 0x02, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0x02, 0, 0, 0, 0x01, 0, 0, 0, 0x01, 0, 0, 0}},
		{"dimensions product too large", []byte{0xC6, 0x02, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0x02, 0, 0, 0, 0x02, 0, 0, 0, 0x02, 0, 0, 0}},
		{"zero dimension with elements", []byte{0xC6, 0x01, 0, 0, 0, 1, 0, 0, 0, 0x02, 0, 0, 0, 0x00, 0, 0, 0, 0x01, 0, 0, 0}},
		{"no dimensions", []byte{0xC6, 0x01, 0, 0, 0, 1, 0, 0, 0, 0x00, 0, 0, 0}},
		{"null dimensions", []byte{0xC6, 0x01, 0, 0, 0, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF}},
		{"dimensions of a null array", []byte{0xC6, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0, 0, 0, 0x01, 0, 0, 0, 0x01, 0, 0, 0}},
	} {
		v, err := binDecodeVariant(tc.wire, codec.Limits{})
		require.Equal(t, errDecoding, err, tc.name)
		require.True(t, v.IsNull(), "%s: a failed decode leaves a null Variant", tc.name)
	}
}

// TestDecodeVariantUnassignedTypeIDs follows Part 6 v1.05 §5.2.2.16: "Built-in Type Ids 26
// through 31 are not currently assigned but may be used in the future. Decoders shall
// accept these IDs, assume the Value contains a ByteString or an array of ByteStrings and
// pass both onto the application." uastack hands them on as ByteStrings (and writes them
// back as such); ids 32..63 are not Variants and fail with BadDecodingError.
func TestDecodeVariantUnassignedTypeIDs(t *testing.T) {
	t.Parallel()
	for id := byte(26); id <= 31; id++ {
		v, err := binDecodeVariant(binCat([]byte{id}, binStr("abc")), codec.Limits{})
		require.NoError(t, err, "scalar id %d", id)
		require.Equal(t, codec.TypeByteString, v.Type())
		require.Equal(t, []byte("abc"), v.ByteString())

		v, err = binDecodeVariant(binCat([]byte{0x80 | id}, []byte{2, 0, 0, 0}, binStr("abc"), binStr("de")), codec.Limits{})
		require.NoError(t, err, "array id %d", id)
		require.Equal(t, codec.TypeByteString, v.Type())
		require.Equal(t, [][]byte{[]byte("abc"), []byte("de")}, v.Value())
	}
	for id := byte(32); id <= 63; id++ {
		for _, mask := range []byte{id, 0x80 | id, 0xC0 | id} {
			wire := binCat([]byte{mask}, binStr("abc"), binStr("abc"))
			v, err := binDecodeVariant(wire, codec.Limits{})
			require.Equal(t, errDecoding, err, "mask %#02x", mask)
			require.True(t, v.IsNull())
		}
	}
}

func TestDecodeExtensionObjectUnknownEncoding(t *testing.T) {
	t.Parallel()
	for enc := 3; enc <= 255; enc++ {
		d := codec.NewDecoder([]byte{0x00, 0x00, byte(enc), 0x01, 0x00, 0x00, 0x00, 0xAA})
		var x codec.ExtensionObject
		d.ExtensionObject(&x)
		require.Equal(t, errDecoding, d.Err(), "encoding %#02x", enc)
	}
}

// TestDecoderStickyError checks that after the first error every read returns the zero
// value and consumes nothing, and that Err keeps reporting the first error.
func TestDecoderStickyError(t *testing.T) {
	t.Parallel()
	// The first error is a limit; plenty of valid bytes follow it.
	wire := binCat(binStr("abcde"), bytes.Repeat([]byte{0x01}, 64))
	d := codec.NewDecoderLimits(wire, codec.Limits{MaxStringLength: 4})
	require.Equal(t, "", d.String())
	require.Equal(t, errLimits, d.Err())
	require.Zero(t, d.Remaining())

	reads := []struct {
		name string
		read func() any
		zero any
	}{
		{"Boolean", func() any { return d.Boolean() }, false},
		{"SByte", func() any { return d.SByte() }, int8(0)},
		{"Byte", func() any { return d.Byte() }, byte(0)},
		{"Int16", func() any { return d.Int16() }, int16(0)},
		{"UInt16", func() any { return d.UInt16() }, uint16(0)},
		{"Int32", func() any { return d.Int32() }, int32(0)},
		{"UInt32", func() any { return d.UInt32() }, uint32(0)},
		{"Int64", func() any { return d.Int64() }, int64(0)},
		{"UInt64", func() any { return d.UInt64() }, uint64(0)},
		{"Float", func() any { return d.Float() }, float32(0)},
		{"Double", func() any { return d.Double() }, float64(0)},
		{"StatusCode", func() any { return d.StatusCode() }, status.Good},
		{"DateTime", func() any { return d.DateTime() }, codec.DateTime(0)},
		{"Guid", func() any { return d.Guid() }, codec.Guid{}},
		{"String", func() any { return d.String() }, ""},
		{"XmlElement", func() any { return d.XmlElement() }, ""},
		{"ByteString", func() any { return d.ByteString() }, []byte(nil)},
		{"ArrayLength", func() any { return d.ArrayLength(1) }, -1},
		{"NodeId", func() any { return d.NodeId() }, codec.NodeId{}},
		{"ExpandedNodeId", func() any { return d.ExpandedNodeId() }, codec.ExpandedNodeId{}},
		{"QualifiedName", func() any { return d.QualifiedName() }, codec.QualifiedName{}},
		{"LocalizedText", func() any { return d.LocalizedText() }, codec.LocalizedText{}},
		{"Variant", func() any { v := binV(int32(5)); d.Variant(&v); return v.IsNull() }, true},
		{"DataValue", func() any { v := codec.DataValue{Status: 1}; d.DataValue(&v); return v }, codec.DataValue{}},
		{"DiagnosticInfo", func() any { v := codec.DiagnosticInfo{Mask: 1}; d.DiagnosticInfo(&v); return v }, codec.DiagnosticInfo{}},
		{"ExtensionObject", func() any { v := binUnknownExtObj; d.ExtensionObject(&v); return v.Body }, []byte(nil)},
		{"Enter", func() any { return d.Enter() }, true},
	}
	for _, r := range reads {
		require.Equal(t, r.zero, r.read(), r.name)
		require.Equal(t, errLimits, d.Err(), "after %s", r.name)
		require.Zero(t, d.Remaining(), "after %s", r.name)
	}
	d.Leave()

	d.Fail(status.BadDecodingError)
	require.Equal(t, errLimits, d.Err(), "Fail keeps the first error")

	// Reset forgets the error.
	d.Reset([]byte{0x07})
	require.NoError(t, d.Err())
	require.Equal(t, byte(7), d.Byte())
	require.Equal(t, 1, d.Pos())

	// The first error of a truncated read sticks the same way.
	d.Reset([]byte{0x01, 0x02, 0x03})
	require.Zero(t, d.UInt32())
	require.Equal(t, errDecoding, d.Err())
	require.Zero(t, d.Byte(), "the bytes that were there are not read after the error")
}

func TestEncoderStickyError(t *testing.T) {
	t.Parallel()
	e := codec.NewEncoder(make([]byte, 0, 8))
	e.Fail(status.BadEncodingError)
	e.Fail(status.BadEncodingLimitsExceeded)
	require.Equal(t, error(status.BadEncodingError), e.Err())
	// A Variant of a type an encoder cannot write.
	e.Reset(nil)
	bad := binV([]codec.Variant{{}})
	v := binV(bad.Value()) // still an array of Variants: fine
	e.Variant(&v)
	require.NoError(t, e.Err())
	e.Reset(nil)
	e.NodeId(codec.NodeId{})
	require.Equal(t, 2, e.Len())
	require.NoError(t, e.Err())
}

func TestEncoderBuffer(t *testing.T) {
	// The Encoder appends to the caller's buffer without allocating while it fits.
	buf := make([]byte, 0, 64)
	e := codec.NewEncoder(buf)
	vs := []codec.Variant{binV(int32(1)), binV(1.5), binV("abc"), binV(binGuidExample)}
	allocs := testing.AllocsPerRun(100, func() {
		e.Reset(buf)
		for i := range vs {
			e.Variant(&vs[i])
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, &buf[:1][0], &e.Bytes()[0], "Bytes aliases the caller's buffer")

	// Growth past the capacity keeps what was written.
	e.Reset(make([]byte, 0, 1))
	for i := range 100 {
		v := binV(int64(i))
		e.Variant(&v)
	}
	d := codec.NewDecoder(e.Bytes())
	for i := range 100 {
		var v codec.Variant
		d.Variant(&v)
		require.Equal(t, int64(i), v.Value(), fmt.Sprint(i))
	}
	require.NoError(t, d.Err())
	require.Zero(t, d.Remaining())
}
