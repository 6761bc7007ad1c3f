package codec_test

// Benchmarks of the binary Variant and DataValue paths. The ceiling for a fixed-size
// scalar Variant encode is BenchmarkRawPutUint32: one binary.LittleEndian.PutUint32 into
// the same kind of reused 64-byte buffer, in the same kind of b.Loop. Compare with
//
//	go test -run='^$' -bench='VariantEncodeScalar|RawPutUint32' -count=10 ./pkg/codec

import (
	"encoding/binary"
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// binSink keeps benchmark results alive so that the compiler cannot drop the work.
var binSink []byte

// binBenchScalars are the fixed-size scalar types plus String.
var binBenchScalars = []struct {
	name string
	v    codec.Variant
}{
	{"Boolean", codec.BooleanVariant(true)},
	{"SByte", codec.SByteVariant(-2)},
	{"Byte", codec.ByteVariant(200)},
	{"Int16", codec.Int16Variant(-2)},
	{"UInt16", codec.UInt16Variant(0x1234)},
	{"Int32", codec.Int32Variant(-6)},
	{"UInt32", codec.UInt32Variant(0xDEADBEEF)},
	{"Int64", codec.Int64Variant(-2)},
	{"UInt64", codec.UInt64Variant(1 << 60)},
	{"Float", codec.FloatVariant(-6.5)},
	{"Double", codec.DoubleVariant(-6.5)},
	{"DateTime", codec.DateTimeVariant(binDateTimeExample)},
	{"StatusCode", codec.StatusCodeVariant(status.BadDecodingError)},
	{"String", codec.StringVariant("Line1.Station01.Temperature")},
}

func BenchmarkVariantEncodeScalar(b *testing.B) {
	for _, bc := range binBenchScalars {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 64)
			e := codec.NewEncoder(buf)
			v := bc.v
			e.Variant(&v)
			b.SetBytes(int64(e.Len()))
			b.ReportAllocs()
			for b.Loop() {
				e.Reset(buf[:0])
				e.Variant(&v)
			}
			binSink = e.Bytes()
		})
	}
}

// BenchmarkRawPutUint32 is the ceiling for BenchmarkVariantEncodeScalar: the payload store
// alone, into a reused buffer like the Encoder's, with a value that changes every
// iteration and a buffer that outlives the loop so that neither can be optimised away.
func BenchmarkRawPutUint32(b *testing.B) {
	buf := make([]byte, 0, 64)
	var x uint32
	b.SetBytes(4)
	b.ReportAllocs()
	for b.Loop() {
		binary.LittleEndian.PutUint32(buf[:4], x)
		x++
	}
	binSink = buf[:4]
}

// BenchmarkEncoderTypeByteInt32 writes the bytes of an Int32 Variant with the Encoder's
// inlinable primitives: the cost of the Encoder bookkeeping without the Variant dispatch.
func BenchmarkEncoderTypeByteInt32(b *testing.B) {
	buf := make([]byte, 0, 64)
	e := codec.NewEncoder(buf)
	var x int32
	b.SetBytes(5)
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(buf[:0])
		e.Byte(byte(codec.TypeInt32))
		e.Int32(x)
		x++
	}
	binSink = e.Bytes()
}

func BenchmarkVariantDecodeScalar(b *testing.B) {
	for _, bc := range binBenchScalars {
		b.Run(bc.name, func(b *testing.B) {
			e := codec.NewEncoder(nil)
			v := bc.v
			e.Variant(&v)
			wire := e.Bytes()
			d := codec.NewDecoder(nil)
			var got codec.Variant
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				d.Reset(wire)
				d.Variant(&got)
			}
			if d.Err() != nil || !binEqVariant(&v, &got) {
				b.Fatalf("decoded %v, %v; want %v", got, d.Err(), v)
			}
		})
	}
}

// binBenchDataValue is a typical Read result: a Double with status and both timestamps.
var binBenchDataValue = codec.DataValue{
	Value:             codec.DoubleVariant(21.5),
	Status:            status.Code(0x40000000),
	SourceTimestamp:   binDateTimeExample,
	SourcePicoseconds: 12,
	ServerTimestamp:   binDateTimeExample + 1000,
}

func BenchmarkDataValueEncode(b *testing.B) {
	buf := make([]byte, 0, 64)
	e := codec.NewEncoder(buf)
	v := binBenchDataValue
	e.DataValue(&v)
	b.SetBytes(int64(e.Len()))
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(buf[:0])
		e.DataValue(&v)
	}
	binSink = e.Bytes()
}

func BenchmarkDataValueDecode(b *testing.B) {
	e := codec.NewEncoder(nil)
	v := binBenchDataValue
	e.DataValue(&v)
	wire := e.Bytes()
	d := codec.NewDecoder(nil)
	var got codec.DataValue
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(wire)
		d.DataValue(&got)
	}
	if d.Err() != nil || !binEqDataValue(&v, &got) {
		b.Fatalf("decoded %v, %v", got, d.Err())
	}
}
