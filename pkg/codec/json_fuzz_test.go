package codec_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

// jsonFuzzKind is one top-level value FuzzJSONDecode reads.
type jsonFuzzKind struct {
	name   string
	decode func(*codec.JSONDecoder) any
	encode func(*codec.JSONEncoder, any)
	binary func(*codec.Encoder, any)
}

var jsonFuzzKinds = []jsonFuzzKind{
	{
		name:   "Variant",
		decode: func(d *codec.JSONDecoder) any { v := new(codec.Variant); d.Variant(v); return v },
		encode: func(e *codec.JSONEncoder, v any) { e.Variant(v.(*codec.Variant)) },
		binary: func(e *codec.Encoder, v any) { e.Variant(v.(*codec.Variant)) },
	},
	{
		name:   "DataValue",
		decode: func(d *codec.JSONDecoder) any { v := new(codec.DataValue); d.DataValue(v); return v },
		encode: func(e *codec.JSONEncoder, v any) { e.DataValue(v.(*codec.DataValue)) },
		binary: func(e *codec.Encoder, v any) { e.DataValue(v.(*codec.DataValue)) },
	},
	{
		name:   "ExtensionObject",
		decode: func(d *codec.JSONDecoder) any { v := new(codec.ExtensionObject); d.ExtensionObject(v); return v },
		encode: func(e *codec.JSONEncoder, v any) { e.ExtensionObject(v.(*codec.ExtensionObject)) },
		binary: func(e *codec.Encoder, v any) { e.ExtensionObject(v.(*codec.ExtensionObject)) },
	},
}

// jsonFuzzSeeds are valid documents of every form the decoder reads, and a few broken ones.
func jsonFuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, c := range jsonVariantCases {
		seeds = append(seeds, []byte(c.compact))
		if c.verbose != "" {
			seeds = append(seeds, []byte(c.verbose))
		}
	}
	for _, verbose := range []bool{false, true} {
		all := jsonAllSet()
		v := jsonV(codec.NewExtensionObject(&jsonPoint{ID: 9, Name: "n", Tags: []string{"t", ""},
			Value: jsonV(codec.NewExtensionObject(&jsonPoint{Value: jsonV([]codec.Variant{jsonV(1.5), {}})}))}))
		dv := codec.DataValue{Value: jsonV([]string{"a"}), Status: 0x80070000, SourceTimestamp: jsonTime, ServerTimestamp: jsonTime, ServerPicoseconds: 3}
		seeds = append(seeds,
			[]byte(jsonEncode(t, verbose, func(e *codec.JSONEncoder) { e.Struct(&all) })),
			[]byte(jsonEncode(t, verbose, func(e *codec.JSONEncoder) { e.Variant(&v) })),
			[]byte(jsonEncode(t, verbose, func(e *codec.JSONEncoder) { e.DataValue(&dv) })),
		)
	}
	pointBinary := jsonBinary(t, (&jsonPoint{ID: 3, Tags: []string{"b"}, Value: jsonV(codec.LocalizedText{Text: "x"})}).EncodeBinary)
	seeds = append(seeds, []byte(`{"UaTypeId":"ns=202;i=1","UaEncoding":1,"UaBody":"`+b64(pointBinary)+`"}`))
	for _, s := range []string{
		`{"UaTypeId":"ns=202;i=1","ID":7,"Name":"p","Mode":1,"Tags":["a"],"Value":{"UaType":6,"Value":3}}`,
		`{"ID":7,"Value":{"Value":3,"UaType":6},"UaTypeId":"ns=202;i=3"}`,
		`{"Foo":1,"UaTypeId":"ns=9;i=9","Bar":[1, 2],"Baz":{"A":null}}`,
		`{"UaTypeId":"ns=9;i=10","UaEncoding":1,"UaBody":"3q2+7w=="}`,
		`{"UaTypeId":"ns=9;i=11","UaEncoding":2,"UaBody":"PGEvPg=="}`,
		`{"TypeId":{"Id":10,"Namespace":9},"Encoding":1,"Body":"AQI="}`,
		`{"TypeId":"ns=202;i=3","Body":{"ID":4}}`,
		`{"Value":{"Type":6,"Body":5},"Status":2147942400,"SourceTimestamp":"2024-05-06T07:08:09Z"}`,
		`{"Type":17,"Body":{"IdType":1,"Id":"Temp","Namespace":2}}`,
		`{"UaType":18,"Value":"svr=1;nsu=urn:a%3Bb;g=72962B91-FA75-4AE6-8D28-B404DC7DAF63"}`,
		`{"UaType":13,"Value":"2024-05-06T08:38:09.1234567+01:30"}`,
		`{"UaType":12,"Value":"\ud83d\ude00\u0000\"\\"}`,
		`{"UaType":6,"Value":[1,2,3,4],"Dimensions":[2,2]}`,
		`{"UaType":25,"Value":{"SymbolicId":1,"InnerDiagnosticInfo":{"Locale":2,"InnerDiagnosticInfo":{"AdditionalInfo":"x"}}}}`,
		jsonNest(20),
		`{"UaType":6,"Value":[1,2,]}`,
		`{"UaTypeId":"ns=9;i=9","A":1,"A":2}`,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// FuzzJSONDecode decodes a Variant, a DataValue and an ExtensionObject from the input.
// Whatever decodes must encode without error in both forms, decode again, and give the
// same value (compared by its binary encoding) and the same text.
func FuzzJSONDecode(f *testing.F) {
	for _, s := range jsonFuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer func() {
			// binary_test.go registers binStruct (ns=201) with JSON methods that panic.
			if r := recover(); r != nil && fmt.Sprint(r) != "BinStruct is for binary tests only" {
				panic(r)
			}
		}()
		for _, k := range jsonFuzzKinds {
			jsonFuzzOne(t, k, data)
		}
	})
}

func jsonFuzzOne(t *testing.T, k jsonFuzzKind, data []byte) {
	d := codec.NewJSONDecoder(data)
	v1 := k.decode(d)
	if d.Finish() != nil {
		return
	}
	bin1, binErr1 := jsonFuzzBinary(k, v1)
	for _, verbose := range []bool{false, true} {
		var text bytes.Buffer
		e := codec.NewJSONEncoder(&text, verbose)
		k.encode(e, v1)
		require.NoError(t, e.Flush(), "%s: encoding %q (verbose=%v)", k.name, data, verbose)

		d2 := codec.NewJSONDecoder(text.Bytes())
		v2 := k.decode(d2)
		require.NoError(t, d2.Finish(), "%s: decoding the re-encoded %s\nfrom %q", k.name, text.Bytes(), data)

		bin2, binErr2 := jsonFuzzBinary(k, v2)
		require.Equal(t, binErr1, binErr2, "%s: binary encodability changed: %s", k.name, text.Bytes())
		require.Equal(t, bin1, bin2, "%s: value changed through %s\nfrom %q", k.name, text.Bytes(), data)

		var again bytes.Buffer
		e2 := codec.NewJSONEncoder(&again, verbose)
		k.encode(e2, v2)
		require.NoError(t, e2.Flush())
		require.Equal(t, text.String(), again.String(), "%s: text not stable", k.name)
	}
}

func jsonFuzzBinary(k jsonFuzzKind, v any) ([]byte, error) {
	e := codec.NewEncoder(nil)
	k.binary(e, v)
	return e.Bytes(), e.Err()
}

// TestJSONFuzzSeeds runs the fuzz body over the seeds in normal test runs (go test runs
// FuzzJSONDecode's seed corpus too; this also names the failing seed).
func TestJSONFuzzSeeds(t *testing.T) {
	t.Parallel()
	decoded := 0
	for _, s := range jsonFuzzSeeds(t) {
		for _, k := range jsonFuzzKinds {
			d := codec.NewJSONDecoder(s)
			k.decode(d)
			if d.Finish() == nil {
				decoded++
			}
			jsonFuzzOne(t, k, s)
		}
	}
	require.Greater(t, decoded, 100, "the seeds should mostly be valid")
}
