package codec_test

// Fuzz targets for the binary decoder. The property for every target: decoding never
// panics and fails only with BadDecodingError or BadEncodingLimitsExceeded; a value that
// decodes re-encodes without error, decodes again to an equal value, and re-encodes to
// the same bytes (the encoder's output is canonical). FuzzDecodeBudget checks the decode
// budget instead: nothing allocates beyond it. Crashers live in
// testdata/fuzz/<Name>/ and run as regression tests with plain `go test`.
//
// Run one at a time, e.g.
//
//	go test -run='^$' -fuzz='^FuzzDecodeVariant$' -fuzztime=2m ./pkg/codec

import (
	"bytes"
	"slices"
	"testing"

	"uastack.dev/pkg/codec"
)

// binFuzzRoundTrip checks the fuzz property for one type.
func binFuzzRoundTrip[T any](t *testing.T, data []byte, c binCodec[T]) {
	d := codec.NewDecoder(data)
	var v1 T
	c.dec(d, &v1)
	if err := d.Err(); err != nil {
		if err != errDecoding && err != errLimits {
			t.Fatalf("decode failed with %v; want BadDecodingError or BadEncodingLimitsExceeded", err)
		}
		return
	}

	e := codec.NewEncoder(nil)
	c.enc(e, &v1)
	if err := e.Err(); err != nil {
		t.Fatalf("encoding a decoded value failed: %v\nvalue: %v", err, v1)
	}
	b1 := slices.Clone(e.Bytes())
	binFuzzChunked(t, b1, func(e *codec.Encoder) { c.enc(e, &v1) })

	d.Reset(b1)
	var v2 T
	c.dec(d, &v2)
	if err := d.Err(); err != nil {
		t.Fatalf("decoding the re-encoded value failed: %v\nbytes: % x", err, b1)
	}
	if d.Remaining() != 0 {
		t.Fatalf("re-encoded value decoded with %d bytes left\nbytes: % x", d.Remaining(), b1)
	}
	if !c.eq(&v1, &v2) {
		t.Fatalf("value changed through encode and decode\nfirst:  %v\nsecond: %v\nbytes: % x", v1, v2, b1)
	}

	e.Reset(nil)
	c.enc(e, &v2)
	if !bytes.Equal(b1, e.Bytes()) {
		t.Fatalf("encoding is not canonical\nfirst:  % x\nsecond: % x", b1, e.Bytes())
	}
}

// binAddSeeds adds the wire and canonical bytes of table rows to the corpus.
func binAddSeeds[T any](f *testing.F, cases []binCase[T]) {
	for _, c := range cases {
		f.Add(c.wire)
		if c.canon != nil {
			f.Add(c.canon)
		}
	}
}

func FuzzDecodeVariant(f *testing.F) {
	binAddSeeds(f, binVariantScalarCases)
	binAddSeeds(f, binVariantArrayCases)
	for _, c := range binDataValueCases {
		f.Add(binCat([]byte{0x17}, c.wire))
	}
	for _, c := range binExtObjCases {
		f.Add(binCat([]byte{0x16}, c.wire))
	}
	for _, c := range binDiagCases {
		f.Add(binCat([]byte{0x19}, c.wire))
	}
	for _, c := range binExpandedNodeIdCases {
		f.Add(binCat([]byte{0x12}, c.wire))
	}
	f.Add(binNestVariantArrays(3))
	f.Add(binNestDataValues(3))
	f.Add(binNestMixed(7))
	f.Fuzz(func(t *testing.T, data []byte) { binFuzzRoundTrip(t, data, binVariantCodec) })
}

func FuzzDecodeDataValue(f *testing.F) {
	binAddSeeds(f, binDataValueCases)
	for mask := range byte(64) {
		wire, _ := binDataValueMaskRow(mask)
		f.Add(wire)
	}
	for _, c := range binVariantScalarCases {
		f.Add(binCat([]byte{0x01}, c.wire))
	}
	f.Fuzz(func(t *testing.T, data []byte) { binFuzzRoundTrip(t, data, binDataValueCodec) })
}

func FuzzDecodeExtensionObject(f *testing.F) {
	binAddSeeds(f, binExtObjCases)
	f.Add(binNestExtObj(3))
	for _, c := range binVariantScalarCases {
		// BinStruct bodies holding each kind of Variant.
		body := binCat([]byte{0x01, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF}, c.wire)
		f.Add(binCat([]byte{0x01, binNS, 0x02, 0x00, 0x01}, binI32(int32(len(body))), body))
	}
	f.Fuzz(func(t *testing.T, data []byte) { binFuzzRoundTrip(t, data, binExtObjCodec) })
}

func FuzzDecodeDiagnosticInfo(f *testing.F) {
	binAddSeeds(f, binDiagCases)
	f.Add(binNestDiag(5))
	f.Fuzz(func(t *testing.T, data []byte) { binFuzzRoundTrip(t, data, binDiagCodec) })
}

// FuzzDecodeNodeId decodes every input both as a NodeId and as an ExpandedNodeId.
func FuzzDecodeNodeId(f *testing.F) {
	binAddSeeds(f, binNodeIdCases)
	binAddSeeds(f, binExpandedNodeIdCases)
	f.Fuzz(func(t *testing.T, data []byte) {
		binFuzzRoundTrip(t, data, binNodeIdCodec)
		binFuzzRoundTrip(t, data, binExpandedNodeIdCodec)
		binFuzzCachedNodeIds(t, data)
	})
}

// FuzzDecodeBudget decodes any input as each amplifying type under a decode budget of a
// multiple (1 to 16, from the first byte) of its size, and checks what the allocator hands
// out: never more than the budget, but for the rounding of its size classes. A decode that
// fits may fail for any other reason; one that allocates beyond the budget is a value the
// Decoder does not charge for.
func FuzzDecodeBudget(f *testing.F) {
	for _, a := range binAmplifiers {
		for _, n := range []int{1, 7, 64} {
			f.Add(binCat([]byte{12}, binAmplifiedArray(a.typ, a.elem, n)))
		}
	}
	f.Add(binCat([]byte{3}, binNestVariantArrays(5)))
	f.Add(binCat([]byte{3}, binNestDataValues(5)))
	f.Add(binCat([]byte{3}, binNestExtObj(4)))
	f.Add(binCat([]byte{3}, binNestMixed(9)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		l := codec.Limits{MaxDecodeMultiple: 1 + int(data[0]%16), MinDecodeBudget: 1}
		wire := data[1:]
		budget := l.MaxDecodeMultiple * len(wire)
		d := codec.NewDecoderLimits(nil, l)
		var (
			v  codec.Variant
			dv codec.DataValue
			di codec.DiagnosticInfo
			x  codec.ExtensionObject
		)
		for _, c := range []struct {
			name   string
			decode func()
		}{
			{"Variant", func() { d.Variant(&v) }},
			{"DataValue", func() { d.DataValue(&dv) }},
			{"DiagnosticInfo", func() { d.DiagnosticInfo(&di) }},
			{"ExtensionObject", func() { d.ExtensionObject(&x) }},
		} {
			measure := func() int {
				d.Reset(wire)
				return binAllocated(c.decode)
			}
			spent := measure()
			if err := d.Err(); err != nil && err != errDecoding && err != errLimits {
				t.Fatalf("%s: decode failed with %v", c.name, err)
			}
			// The counters are the process's: another goroutine of the fuzzing engine may
			// allocate meanwhile. What the decoder allocates comes back every time.
			for i := 0; i < 3 && spent > budget+binBudgetSlack(budget); i++ {
				spent = min(spent, measure())
			}
			if spent > budget+binBudgetSlack(budget) {
				t.Fatalf("%s: %d bytes allocated for %d on the wire, over the budget of %d×: %d\nbytes: % x",
					c.name, spent, len(wire), l.MaxDecodeMultiple, budget, wire)
			}
		}
	})
}
