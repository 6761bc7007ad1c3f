package codec_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// Dynamic test types live in namespace 77, which nothing generated uses.
func dynID(n uint32) codec.NodeId { return codec.NewNumericNodeId(77, n) }

// dynTypes makes and registers the test types: Inner {X Double, Name String}; Outer
// with optional fields {Id UInt32, In Inner, Tags []String, Opt Int32?, Any Variant,
// Ins []Inner, Next Outer?}; Choice, a union of Int32 and String.
func dynTypes(t testing.TB) (inner, outer, choice *codec.DynamicType) {
	t.Helper()
	var err error
	inner, err = codec.NewDynamicType("Inner", dynID(1), dynID(2), codec.NodeId{}, codec.NodeId{}, codec.StructurePlain, []codec.DynamicField{
		{Name: "X", Type: codec.TypeDouble}, {Name: "Name", Type: codec.TypeString},
	})
	require.NoError(t, err)
	require.NoError(t, codec.RegisterDynamic(inner))
	// Outer refers to itself through Next; its TypeInfo exists only once the type is
	// made, so the field is filled in by a second type of the same layout.
	fields := []codec.DynamicField{
		{Name: "Id", Type: codec.TypeUInt32},
		{Name: "In", Type: codec.TypeExtensionObject, Struct: inner.Info()},
		{Name: "Tags", Type: codec.TypeString, Array: true},
		{Name: "Opt", Type: codec.TypeInt32, Optional: true},
		{Name: "Any", Type: codec.TypeVariant},
		{Name: "Ins", Type: codec.TypeExtensionObject, Struct: inner.Info(), Array: true},
		{Name: "Next", Type: codec.TypeExtensionObject, Optional: true},
	}
	outer, err = codec.NewDynamicType("Outer", dynID(3), dynID(4), codec.NodeId{}, codec.NodeId{}, codec.StructureOptional, fields)
	require.NoError(t, err)
	outer.Fields[6].Struct = outer.Info()
	require.NoError(t, codec.RegisterDynamic(outer))
	choice, err = codec.NewDynamicType("Choice", dynID(5), dynID(6), codec.NodeId{}, codec.NodeId{}, codec.StructureUnion, []codec.DynamicField{
		{Name: "A", Type: codec.TypeInt32}, {Name: "B", Type: codec.TypeString},
	})
	require.NoError(t, err)
	require.NoError(t, codec.RegisterDynamic(choice))
	return inner, outer, choice
}

func dynInner(in *codec.DynamicType, x float64, name string) codec.ExtensionObject {
	v := in.New()
	v.Fields[0], v.Fields[1] = codec.DoubleVariant(x), codec.StringVariant(name)
	return codec.NewExtensionObject(v)
}

// encodeExt writes x as an ExtensionObject Variant and returns the bytes.
func encodeExt(t testing.TB, x codec.ExtensionObject) []byte {
	t.Helper()
	e := codec.NewEncoder(nil)
	v := codec.MustVariant(x)
	e.Variant(&v)
	require.NoError(t, e.Err())
	return slices.Clone(e.Bytes())
}

func TestDynamicStructureRoundTrip(t *testing.T) {
	in, out, choice := dynTypes(t)
	o := out.New()
	o.Fields[0] = codec.UInt32Variant(7)
	o.Fields[1] = codec.MustVariant(dynInner(in, 1.5, "one"))
	o.Fields[2] = codec.MustVariant([]string{"a", "b"})
	o.Fields[4] = codec.MustVariant(int64(-3))
	o.Fields[5] = codec.MustVariant([]codec.ExtensionObject{dynInner(in, 2, "two"), dynInner(in, 3, "three")})
	next := out.New()
	next.Fields[0] = codec.UInt32Variant(8)
	next.Fields[3] = codec.Int32Variant(-1)
	o.Fields[6] = codec.MustVariant(codec.NewExtensionObject(next))

	u := choice.New()
	u.Switch, u.Fields[1] = 2, codec.StringVariant("bee")

	for name, x := range map[string]*codec.DynamicStructure{"optional fields": o, "union": u, "empty union": choice.New()} {
		t.Run(name, func(t *testing.T) {
			b := encodeExt(t, codec.NewExtensionObject(x))
			d := codec.NewDecoder(b)
			var v codec.Variant
			d.Variant(&v)
			require.NoError(t, d.Err())
			require.Zero(t, d.Remaining())
			got, ok := v.Value().(codec.ExtensionObject)
			require.True(t, ok)
			s, ok := got.Value.(*codec.DynamicStructure)
			require.True(t, ok, "the body is decoded by its registered type")
			require.Same(t, x.Type, s.Type)
			require.Equal(t, b, encodeExt(t, got), "decoded and written again, the same bytes")

			var js bytes.Buffer
			je := codec.NewJSONEncoder(&js, false)
			je.Struct(x)
			require.NoError(t, je.Flush())
			jd := codec.NewJSONDecoder(js.Bytes())
			back := x.Type.New()
			jd.Struct(back)
			require.NoError(t, jd.Finish(), js.String())
			require.Equal(t, b, encodeExt(t, codec.NewExtensionObject(back)), "through JSON %s", js.String())
		})
	}

	// The fields as read back.
	d := codec.NewDecoder(encodeExt(t, codec.NewExtensionObject(o)))
	var v codec.Variant
	d.Variant(&v)
	s := v.Value().(codec.ExtensionObject).Value.(*codec.DynamicStructure)
	id, _ := s.Field("Id")
	require.Equal(t, uint32(7), id.Value())
	opt, _ := s.Field("Opt")
	require.True(t, opt.IsNull(), "an absent optional field is null")
	nx, _ := s.Field("Next")
	nopt, _ := nx.Value().(codec.ExtensionObject).Value.(*codec.DynamicStructure).Field("Opt")
	require.Equal(t, int32(-1), nopt.Value())
	tags, _ := s.Field("Tags")
	require.Equal(t, []string{"a", "b"}, tags.Value())
}

// TestDynamicStructureHostile: bodies that lie about themselves fail with the decoder's
// codes, and a self-nesting type is bounded by MaxDepth, not by the stack.
func TestDynamicStructureHostile(t *testing.T) {
	_, out, choice := dynTypes(t)
	decode := func(t *testing.T, enc codec.NodeId, b []byte) error {
		e := codec.NewEncoder(nil)
		v := codec.MustVariant(codec.ExtensionObject{TypeID: enc, Encoding: codec.ExtensionObjectBinary, Body: b})
		e.Variant(&v)
		d := codec.NewDecoder(e.Bytes())
		d.Variant(&v)
		return d.Err()
	}
	t.Run("union switch beyond its fields", func(t *testing.T) {
		require.Equal(t, status.BadDecodingError, decode(t, choice.Info().BinaryEncoding, []byte{3, 0, 0, 0}))
	})
	t.Run("body shorter than its fields", func(t *testing.T) {
		require.Equal(t, status.BadDecodingError, decode(t, out.Info().BinaryEncoding, []byte{0, 0, 0, 0, 1}))
	})
	t.Run("array length beyond the body", func(t *testing.T) {
		// mask 0, Id, In {X, Name null}, Tags with 2^30 elements
		b := []byte{0, 0, 0, 0, 1, 0, 0, 0}
		b = append(b, make([]byte, 8)...)
		b = append(b, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x40)
		err := decode(t, out.Info().BinaryEncoding, b)
		require.Contains(t, []error{status.BadDecodingError, status.BadEncodingLimitsExceeded}, err)
	})
	t.Run("nesting past MaxDepth", func(t *testing.T) {
		// Each level: mask with Next present (bit 1), Id, In, Tags null, Any null, Ins null.
		level := []byte{2, 0, 0, 0, 0, 0, 0, 0}
		level = append(level, make([]byte, 8)...)     // In.X
		level = append(level, 0xff, 0xff, 0xff, 0xff) // In.Name null
		level = append(level, 0xff, 0xff, 0xff, 0xff) // Tags null
		level = append(level, 0)                      // Any null
		level = append(level, 0xff, 0xff, 0xff, 0xff) // Ins null
		b := bytes.Repeat(level, 5000)
		require.Equal(t, status.BadEncodingLimitsExceeded, decode(t, out.Info().BinaryEncoding, b))
	})
	t.Run("encode a field of the wrong type", func(t *testing.T) {
		o := out.New()
		o.Fields[0] = codec.StringVariant("not a UInt32")
		e := codec.NewEncoder(nil)
		v := codec.MustVariant(codec.NewExtensionObject(o))
		e.Variant(&v)
		require.Equal(t, status.BadEncodingError, e.Err())
	})
}

func TestRegisterDynamic(t *testing.T) {
	in, _, _ := dynTypes(t)
	// The same layout again (a model loaded by a second server) shares the ids.
	again, err := codec.NewDynamicType("Inner", dynID(1), dynID(2), codec.NodeId{}, codec.NodeId{}, codec.StructurePlain, in.Fields)
	require.NoError(t, err)
	require.NoError(t, codec.RegisterDynamic(again))
	// Another layout under the same ids is refused, and so is a generated type's id.
	other, err := codec.NewDynamicType("Inner", dynID(1), dynID(2), codec.NodeId{}, codec.NodeId{}, codec.StructurePlain, in.Fields[:1])
	require.NoError(t, err)
	require.Error(t, codec.RegisterDynamic(other))
	_, err = codec.NewDynamicType("binStruct", codec.NodeId{}, binStructInfo.BinaryEncoding, codec.NodeId{}, codec.NodeId{}, codec.StructurePlain, in.Fields)
	require.Error(t, err, "a null DataType")
	taken, err := codec.NewDynamicType("binStruct", dynID(97), binStructInfo.BinaryEncoding, codec.NodeId{}, codec.NodeId{}, codec.StructurePlain, in.Fields)
	require.NoError(t, err)
	require.Error(t, codec.RegisterDynamic(taken))

	_, err = codec.NewDynamicType("Bad", dynID(90), dynID(91), codec.NodeId{}, codec.NodeId{}, codec.StructurePlain, []codec.DynamicField{{Name: "O", Type: codec.TypeInt32, Optional: true}})
	require.Error(t, err, "an optional field outside a structure with optional fields")
	_, err = codec.NewDynamicType("Bad", dynID(90), dynID(91), codec.NodeId{}, codec.NodeId{}, codec.StructureUnion, nil)
	require.Error(t, err, "a union without fields")
}

// FuzzDecodeDynamicStructure: the dynamic test types decode any body without panic,
// within the budget's codes, and what decodes writes back to the same bytes.
func FuzzDecodeDynamicStructure(f *testing.F) {
	in, out, choice := dynTypes(f)
	o := out.New()
	o.Fields[0] = codec.UInt32Variant(7)
	o.Fields[1] = codec.MustVariant(dynInner(in, 1.5, "one"))
	o.Fields[2] = codec.MustVariant([]string{"a"})
	o.Fields[3] = codec.Int32Variant(4)
	o.Fields[5] = codec.MustVariant([]codec.ExtensionObject{dynInner(in, 2, "two")})
	u := choice.New()
	u.Switch, u.Fields[0] = 1, codec.Int32Variant(9)
	for _, x := range []*codec.DynamicStructure{o, u, in.New()} {
		f.Add(encodeExt(f, codec.NewExtensionObject(x)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := codec.NewDecoder(data)
		var v codec.Variant
		d.Variant(&v)
		if err := d.Err(); err != nil {
			if err != status.BadDecodingError && err != status.BadEncodingLimitsExceeded {
				t.Fatalf("decode failed with %v", err)
			}
			return
		}
		e := codec.NewEncoder(nil)
		e.Variant(&v)
		if err := e.Err(); err != nil {
			t.Fatalf("encoding a decoded value failed: %v", err)
		}
		b1 := slices.Clone(e.Bytes())
		d.Reset(b1)
		var w codec.Variant
		d.Variant(&w)
		if d.Err() != nil {
			t.Fatalf("decoding the re-encoded value failed: %v", d.Err())
		}
		e.Reset(nil)
		e.Variant(&w)
		if !bytes.Equal(b1, e.Bytes()) {
			t.Fatalf("encoding is not canonical\nfirst:  % x\nsecond: % x", b1, e.Bytes())
		}
	})
}
