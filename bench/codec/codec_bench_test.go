package codec

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	gua "github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

// TestMessagesAgree checks that the benchmark messages mean the same to both libraries,
// so that the benchmarks compare like with like.
func TestMessagesAgree(t *testing.T) {
	for _, m := range messages(t) {
		require.Equal(t, normalize(reflect.ValueOf(m.ours)), normalize(reflect.ValueOf(m.theirs)), m.name)
		back, err := gua.Encode(m.theirs)
		require.NoError(t, err)
		require.True(t, bytes.Equal(m.wire, back), "%s: gopcua re-encodes our bytes", m.name)
	}
}

// BenchmarkMessage encodes and decodes the four service messages with uastack and gopcua
// in one run: compare the pairs of lines.
func BenchmarkMessage(b *testing.B) {
	for _, m := range messages(b) {
		b.Run(m.name+"/encode/uastack", func(b *testing.B) {
			e := codec.NewEncoder(make([]byte, 0, 2*len(m.wire)))
			b.SetBytes(int64(len(m.wire)))
			b.ReportAllocs()
			for b.Loop() {
				e.Reset(e.Bytes())
				m.ours.EncodeBinary(e)
			}
			if e.Err() != nil || e.Len() != len(m.wire) {
				b.Fatal("encode failed")
			}
		})
		b.Run(m.name+"/encode/gopcua", func(b *testing.B) {
			b.SetBytes(int64(len(m.wire)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gua.Encode(m.theirs); err != nil {
					b.Fatal(err)
				}
			}
		})
		typ := reflect.TypeOf(m.ours).Elem()
		b.Run(m.name+"/decode/uastack", func(b *testing.B) {
			d := codec.NewDecoder(nil)
			b.SetBytes(int64(len(m.wire)))
			b.ReportAllocs()
			for b.Loop() {
				// A fresh value each time, as a server decoding a new request has.
				v := newStructure(typ)
				d.Reset(m.wire)
				v.DecodeBinary(d)
				if d.Err() != nil {
					b.Fatal(d.Err())
				}
			}
		})
		ttyp := reflect.TypeOf(m.theirs).Elem()
		b.Run(m.name+"/decode/gopcua", func(b *testing.B) {
			b.SetBytes(int64(len(m.wire)))
			b.ReportAllocs()
			for b.Loop() {
				v := reflect.New(ttyp).Interface()
				if _, err := gua.Decode(m.wire, v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// newStructure allocates a zero value of a generated type without reflection in the loop:
// TypeInfo().New is what the server's dispatcher uses too.
func newStructure(t reflect.Type) codec.Structure {
	return reflect.New(t).Interface().(codec.Structure).TypeInfo().New()
}

// BenchmarkJSON encodes the PublishResponse of 1,000 notifications as JSON (compact).
func BenchmarkJSON(b *testing.B) {
	m := messages(b)[2]
	var out bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		e := codec.NewJSONEncoder(&out, false)
		m.ours.EncodeJSON(e)
		if err := e.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(out.Len()))
}

// BenchmarkVariantScalar encodes one scalar Variant of each fixed-size type into a reused
// buffer, beside the raw cost of writing 4 bytes with binary.LittleEndian.PutUint32.
func BenchmarkVariantScalar(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.Run("raw-PutUint32", func(b *testing.B) {
		b.ReportAllocs()
		x := uint32(0x12345678)
		for b.Loop() {
			binary.LittleEndian.PutUint32(buf[:4], x)
			x++
		}
		sink = buf[:4]
	})
	for _, v := range []codec.Variant{
		codec.BooleanVariant(true), codec.ByteVariant(7), codec.Int16Variant(-7), codec.Int32Variant(-7),
		codec.UInt32Variant(7), codec.Int64Variant(-7), codec.FloatVariant(1.5), codec.DoubleVariant(1.5),
		codec.DateTimeVariant(baseTime), codec.StringVariant("temperature"),
	} {
		b.Run(v.Type().String()+"/uastack", func(b *testing.B) {
			e := codec.NewEncoder(buf)
			b.ReportAllocs()
			for b.Loop() {
				e.Reset(buf)
				e.Variant(&v)
			}
			sink = e.Bytes()
		})
		val := v.Value()
		if dt, ok := val.(codec.DateTime); ok {
			val = dt.Time()
		}
		theirs := gua.MustVariant(val)
		b.Run(v.Type().String()+"/gopcua", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := theirs.Encode()
				if err != nil {
					b.Fatal(err)
				}
				sink = out
			}
		})
	}
}

var sink []byte

// BenchmarkVariantStream writes scalar Variants back to back into one buffer, as a
// message encoder does, beside raw PutUint32 stores back to back into the same buffer;
// both start over when the buffer is full. Unlike BenchmarkVariantScalar, no Reset per
// write is counted against the Variant.
func BenchmarkVariantStream(b *testing.B) {
	buf := make([]byte, 0, 4096)
	b.Run("raw-PutUint32", func(b *testing.B) {
		b.ReportAllocs()
		x := uint32(0x12345678)
		off := 0
		full := buf[:cap(buf)]
		for b.Loop() {
			if off > len(full)-4 {
				off = 0
			}
			binary.LittleEndian.PutUint32(full[off:], x)
			off += 4
			x++
		}
		sink = full[:off]
	})
	for _, v := range []codec.Variant{
		codec.BooleanVariant(true), codec.Int32Variant(-7), codec.DoubleVariant(1.5),
		codec.DateTimeVariant(baseTime),
	} {
		b.Run(v.Type().String()+"/uastack", func(b *testing.B) {
			e := codec.NewEncoder(buf)
			b.ReportAllocs()
			for b.Loop() {
				if e.Len() > cap(buf)-9 {
					e.Reset(buf)
				}
				e.Variant(&v)
			}
			sink = e.Bytes()
		})
	}
}
