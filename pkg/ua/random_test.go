package ua

// Random values of the built-in types for the generated randomize functions in
// random_gen_test.go. Each rand<Builtin>(r, depth) returns a value that survives an
// encode/decode round trip unchanged and compares equal with require.Equal: strings and
// byte strings are never null, floats are never NaN, DateTimes lie within the range
// the codec keeps, DiagnosticInfo masks match their fields. depth bounds the nesting of
// arrays, ExtensionObjects and DiagnosticInfos; at 0 they are empty or flat.

import (
	"math/rand/v2"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// randLen returns the length of a random array: 0 to 3, and 0 once depth runs out.
func randLen(r *rand.Rand, depth int) int {
	if depth <= 0 {
		return 0
	}
	return r.IntN(4)
}

func randBoolean(r *rand.Rand, _ int) bool  { return r.IntN(2) == 1 }
func randSByte(r *rand.Rand, _ int) int8    { return int8(r.Uint32()) }
func randByte(r *rand.Rand, _ int) byte     { return byte(r.Uint32()) }
func randInt16(r *rand.Rand, _ int) int16   { return int16(r.Uint32()) }
func randUInt16(r *rand.Rand, _ int) uint16 { return uint16(r.Uint32()) }
func randInt32(r *rand.Rand, _ int) int32   { return int32(r.Uint32()) }
func randUInt32(r *rand.Rand, _ int) uint32 { return r.Uint32() }
func randInt64(r *rand.Rand, _ int) int64   { return int64(r.Uint64()) }

func randFloat(r *rand.Rand, _ int) float32 { return float32(r.NormFloat64() * 100) }

func randDouble(r *rand.Rand, _ int) float64 { return r.NormFloat64() * 1e6 }

// randString returns a non-null string of 0 to 8 characters, some of them multi-byte.
func randString(r *rand.Rand, _ int) string {
	const alphabet = "abcXYZ019 _-.äµ水"
	runes := []rune(alphabet)
	n := r.IntN(9)
	if n == 0 {
		return codec.EmptyString
	}
	s := make([]rune, n)
	for i := range s {
		s[i] = runes[r.IntN(len(runes))]
	}
	return string(s)
}

func randXmlElement(r *rand.Rand, depth int) string {
	return "<v>" + randString(r, depth) + "</v>"
}

// randByteString returns a non-nil byte string of 0 to 8 bytes.
func randByteString(r *rand.Rand, _ int) []byte {
	b := make([]byte, r.IntN(9))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// randDateTime returns a DateTime after 1601 and before 9999-12-31, which the codec
// neither clamps nor treats as unset.
func randDateTime(r *rand.Rand, _ int) codec.DateTime {
	const end = 2650467743990000000 // 9999-12-31 23:59:59 UTC in ticks
	return codec.DateTime(1 + r.Int64N(end-1))
}

func randGuid(r *rand.Rand, _ int) codec.Guid {
	g := codec.Guid{Data1: r.Uint32(), Data2: uint16(r.Uint32()), Data3: uint16(r.Uint32())}
	for i := range g.Data4 {
		g.Data4[i] = byte(r.Uint32())
	}
	return g
}

// randNodeId returns a NodeId of any of the four identifier types and of any of the
// three numeric encodings.
func randNodeId(r *rand.Rand, depth int) codec.NodeId {
	ns := uint16(r.IntN(4))
	if r.IntN(6) == 0 {
		ns += 300 // too large for the FourByte encoding
	}
	return randNodeIdIn(r, depth, ns)
}

// randNodeIdIn returns a random NodeId in namespace ns.
func randNodeIdIn(r *rand.Rand, depth int, ns uint16) codec.NodeId {
	switch r.IntN(5) {
	case 0:
		return codec.NewNumericNodeId(ns, r.Uint32N(256))
	case 1:
		return codec.NewNumericNodeId(ns, r.Uint32())
	case 2:
		return codec.NewStringNodeId(ns, "n"+randString(r, depth))
	case 3:
		return codec.NewGuidNodeId(ns, randGuid(r, depth))
	}
	return codec.NewOpaqueNodeId(ns, append([]byte{1}, randByteString(r, depth)...))
}

// randExpandedNodeId returns an ExpandedNodeId with or without a NamespaceURI and a
// ServerIndex. Beside a NamespaceURI the NamespaceIndex is 0, as Part 6 §5.2.2.10 has it.
func randExpandedNodeId(r *rand.Rand, depth int) codec.ExpandedNodeId {
	if r.IntN(2) == 0 {
		return codec.ExpandedNodeId{NodeId: randNodeId(r, depth), ServerIndex: r.Uint32N(3)}
	}
	return codec.ExpandedNodeId{
		NodeId:       randNodeIdIn(r, depth, 0),
		NamespaceURI: "urn:" + randString(r, depth),
		ServerIndex:  r.Uint32N(3),
	}
}

func randStatusCode(r *rand.Rand, _ int) status.Code { return status.Code(r.Uint32()) }

func randQualifiedName(r *rand.Rand, depth int) codec.QualifiedName {
	return codec.QualifiedName{NamespaceIndex: uint16(r.IntN(4)), Name: randString(r, depth)}
}

// randLocalizedText returns a text with both a locale and a text.
func randLocalizedText(r *rand.Rand, depth int) codec.LocalizedText {
	return codec.LocalizedText{Locale: [...]string{"en", "de-DE", "zh"}[r.IntN(3)], Text: randString(r, depth)}
}

// randExtensionObject returns a null ExtensionObject, a body of an unknown type kept as
// bytes, or (while depth lasts) a random generated structure that has a binary encoding.
func randExtensionObject(r *rand.Rand, depth int) codec.ExtensionObject {
	if depth > 0 && r.IntN(2) == 0 {
		for {
			tc := allTypes[r.IntN(len(allTypes))]
			if !tc.info.BinaryEncoding.IsNull() {
				return codec.NewExtensionObject(tc.random(r, depth-1))
			}
		}
	}
	switch r.IntN(3) {
	case 0:
		return codec.ExtensionObject{}
	case 1:
		return codec.ExtensionObject{
			TypeID:   codec.NewNumericNodeId(2, 1+r.Uint32N(1000)),
			Encoding: codec.ExtensionObjectBinary,
			Body:     randByteString(r, depth),
		}
	}
	return codec.ExtensionObject{
		TypeID:   codec.NewStringNodeId(3, "xml"),
		Encoding: codec.ExtensionObjectXML,
		Body:     []byte(randXmlElement(r, depth)),
	}
}

// randVariant returns a null Variant, a scalar of one of a dozen built-in types, or a
// one-dimensional Int32 array.
func randVariant(r *rand.Rand, depth int) codec.Variant {
	switch r.IntN(14) {
	case 0:
		return codec.Variant{}
	case 1:
		return codec.BooleanVariant(randBoolean(r, depth))
	case 2:
		return codec.Int32Variant(randInt32(r, depth))
	case 3:
		return codec.UInt32Variant(randUInt32(r, depth))
	case 4:
		return codec.Int64Variant(randInt64(r, depth))
	case 5:
		return codec.FloatVariant(randFloat(r, depth))
	case 6:
		return codec.DoubleVariant(randDouble(r, depth))
	case 7:
		return codec.StringVariant(randString(r, depth))
	case 8:
		return codec.DateTimeVariant(randDateTime(r, depth))
	case 9:
		return codec.GuidVariant(randGuid(r, depth))
	case 10:
		return codec.StatusCodeVariant(randStatusCode(r, depth))
	case 11:
		return codec.NodeIdVariant(randNodeId(r, depth))
	case 12:
		return codec.QualifiedNameVariant(randQualifiedName(r, depth))
	}
	a := make([]int32, r.IntN(4))
	for i := range a {
		a[i] = randInt32(r, depth)
	}
	return codec.MustVariant(a)
}

// randDataValue returns a DataValue whose parts are each present or not.
func randDataValue(r *rand.Rand, depth int) codec.DataValue {
	var v codec.DataValue
	if r.IntN(2) == 0 {
		v.Value = randVariant(r, depth)
	}
	if r.IntN(2) == 0 {
		v.Status = randStatusCode(r, depth)
	}
	if r.IntN(2) == 0 {
		v.SourceTimestamp = randDateTime(r, depth)
		v.SourcePicoseconds = uint16(r.IntN(10000))
	}
	if r.IntN(2) == 0 {
		v.ServerTimestamp = randDateTime(r, depth)
		v.ServerPicoseconds = uint16(r.IntN(10000))
	}
	return v
}

// randDiagnosticInfo returns a DiagnosticInfo with a random set of fields, nesting an
// inner one while depth lasts.
func randDiagnosticInfo(r *rand.Rand, depth int) codec.DiagnosticInfo {
	var v codec.DiagnosticInfo
	v.Mask = uint8(r.IntN(codec.HasInnerDiagnosticInfo))
	if v.Mask&codec.HasSymbolicID != 0 {
		v.SymbolicID = randInt32(r, depth)
	}
	if v.Mask&codec.HasNamespaceURI != 0 {
		v.NamespaceURI = randInt32(r, depth)
	}
	if v.Mask&codec.HasLocale != 0 {
		v.Locale = randInt32(r, depth)
	}
	if v.Mask&codec.HasLocalizedText != 0 {
		v.LocalizedText = randInt32(r, depth)
	}
	if v.Mask&codec.HasAdditionalInfo != 0 {
		v.AdditionalInfo = randString(r, depth)
	}
	if v.Mask&codec.HasInnerStatusCode != 0 {
		v.InnerStatusCode = randStatusCode(r, depth)
	}
	if depth > 0 && r.IntN(2) == 0 {
		inner := randDiagnosticInfo(r, depth-1)
		if inner.Mask == 0 {
			// JSON cannot tell an empty inner DiagnosticInfo from none.
			inner.Mask, inner.SymbolicID = codec.HasSymbolicID, randInt32(r, depth)
		}
		v.InnerDiagnosticInfo = &inner
		v.Mask |= codec.HasInnerDiagnosticInfo
	}
	return v
}
