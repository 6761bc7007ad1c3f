package codec

import (
	"math/rand/v2"
	"reflect"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// filler fills uastack values with random contents for the oracle tests. It uses
// reflection, which only the tests may do.
type filler struct {
	r *rand.Rand
	// minimal leaves optional pointers nil and arrays short, to bound nesting.
	depth int
}

var (
	tVariant   = reflect.TypeFor[codec.Variant]()
	tDataValue = reflect.TypeFor[codec.DataValue]()
	tExtObj    = reflect.TypeFor[codec.ExtensionObject]()
	tDiag      = reflect.TypeFor[codec.DiagnosticInfo]()
	tNodeId    = reflect.TypeFor[codec.NodeId]()
	tExpNodeId = reflect.TypeFor[codec.ExpandedNodeId]()
	tDateTime  = reflect.TypeFor[codec.DateTime]()
	tGuid      = reflect.TypeFor[codec.Guid]()
	tQName     = reflect.TypeFor[codec.QualifiedName]()
	tLText     = reflect.TypeFor[codec.LocalizedText]()
	tStatus    = reflect.TypeFor[status.Code]()
)

func (f *filler) str() string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 水"
	rs := []rune(letters)
	n := f.r.IntN(12)
	if n == 0 {
		return ""
	}
	out := make([]rune, n)
	for i := range out {
		out[i] = rs[f.r.IntN(len(rs))]
	}
	return string(out)
}

func (f *filler) bytes() []byte {
	if f.r.IntN(4) == 0 {
		return nil
	}
	b := make([]byte, 1+f.r.IntN(16))
	for i := range b {
		b[i] = byte(f.r.Uint32())
	}
	return b
}

func (f *filler) dateTime() codec.DateTime {
	if f.r.IntN(5) == 0 {
		return 0
	}
	// 1990..2100 keeps every peer's time conversion exact.
	const lo, hi = 123500000000000000, 158000000000000000
	return codec.DateTime(lo + f.r.Int64N(hi-lo))
}

func (f *filler) guid() codec.Guid {
	g := codec.Guid{Data1: f.r.Uint32(), Data2: uint16(f.r.Uint32()), Data3: uint16(f.r.Uint32())}
	for i := range g.Data4 {
		g.Data4[i] = byte(f.r.Uint32())
	}
	return g
}

func (f *filler) nodeID() codec.NodeId {
	ns := uint16(f.r.IntN(4))
	switch f.r.IntN(6) {
	case 0:
		return codec.NewNumericNodeId(0, uint32(f.r.IntN(256)))
	case 1:
		return codec.NewNumericNodeId(ns, uint32(f.r.IntN(70000)))
	case 2:
		return codec.NewNumericNodeId(ns+300, f.r.Uint32())
	case 3:
		s := f.str()
		if s == "" {
			s = "x"
		}
		return codec.NewStringNodeId(ns+1, s)
	case 4:
		return codec.NewGuidNodeId(ns+1, f.guid())
	default:
		return codec.NewOpaqueNodeId(ns+1, append([]byte{1}, f.bytes()...))
	}
}

func (f *filler) variant() codec.Variant {
	switch f.r.IntN(14) {
	case 0:
		return codec.Variant{}
	case 1:
		return codec.BooleanVariant(f.r.IntN(2) == 1)
	case 2:
		return codec.SByteVariant(int8(f.r.Uint32()))
	case 3:
		return codec.Int16Variant(int16(f.r.Uint32()))
	case 4:
		return codec.Int32Variant(int32(f.r.Uint32()))
	case 5:
		return codec.UInt32Variant(f.r.Uint32())
	case 6:
		return codec.Int64Variant(int64(f.r.Uint64()))
	case 7:
		return codec.FloatVariant(float32(f.r.NormFloat64()))
	case 8:
		return codec.DoubleVariant(f.r.NormFloat64())
	case 9:
		return codec.StringVariant(f.str() + "v")
	case 10:
		// A non-zero date: gopcua turns ticks into UnixNano, which covers 1678..2262.
		return codec.DateTimeVariant(max(f.dateTime(), 123500000000000000))
	case 11:
		return codec.MustVariant([]int32{int32(f.r.Uint32()), int32(f.r.Uint32()), 3})
	case 12:
		return codec.MustVariant([]string{f.str() + "a", "b"})
	default:
		return codec.NodeIdVariant(f.nodeID())
	}
}

// extensionObject wraps a small registered structure, or nothing.
func (f *filler) extensionObject() codec.ExtensionObject {
	if f.depth > 2 || f.r.IntN(3) == 0 {
		return codec.ExtensionObject{}
	}
	v := &ua.ReadValueId{}
	f.fill(reflect.ValueOf(v).Elem())
	return codec.NewExtensionObject(v)
}

func (f *filler) fill(v reflect.Value) {
	switch v.Type() {
	case tVariant:
		v.Set(reflect.ValueOf(f.variant()))
		return
	case tDataValue:
		dv := codec.DataValue{Value: f.variant()}
		if f.r.IntN(2) == 0 {
			dv.Status = status.Code(f.r.Uint32() & 0xffff0000)
		}
		dv.SourceTimestamp = f.dateTime()
		dv.ServerTimestamp = f.dateTime()
		if dv.SourceTimestamp != 0 {
			dv.SourcePicoseconds = uint16(f.r.IntN(10000))
		}
		if dv.ServerTimestamp != 0 {
			dv.ServerPicoseconds = uint16(f.r.IntN(10000))
		}
		v.Set(reflect.ValueOf(dv))
		return
	case tExtObj:
		f.depth++
		v.Set(reflect.ValueOf(f.extensionObject()))
		f.depth--
		return
	case tDiag:
		d := codec.DiagnosticInfo{Mask: codec.HasSymbolicID | codec.HasAdditionalInfo, SymbolicID: int32(f.r.IntN(9)), AdditionalInfo: f.str() + "i"}
		v.Set(reflect.ValueOf(d))
		return
	case tNodeId:
		v.Set(reflect.ValueOf(f.nodeID()))
		return
	case tExpNodeId:
		x := codec.ExpandedNodeId{NodeId: f.nodeID()}
		if f.r.IntN(3) == 0 {
			x.ServerIndex = uint32(1 + f.r.IntN(5))
		}
		v.Set(reflect.ValueOf(x))
		return
	case tDateTime:
		v.Set(reflect.ValueOf(f.dateTime()))
		return
	case tGuid:
		v.Set(reflect.ValueOf(f.guid()))
		return
	case tQName:
		v.Set(reflect.ValueOf(codec.QualifiedName{NamespaceIndex: uint16(f.r.IntN(5)), Name: f.str()}))
		return
	case tLText:
		v.Set(reflect.ValueOf(codec.LocalizedText{Locale: f.str(), Text: f.str()}))
		return
	case tStatus:
		v.Set(reflect.ValueOf(status.Code(f.r.Uint32() & 0xffff0000)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		if f.depth > 2 || f.r.IntN(2) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		f.depth++
		f.fill(p.Elem())
		f.depth--
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(f.bytes())
			return
		}
		n := f.r.IntN(4)
		if f.depth > 2 {
			n = f.r.IntN(2)
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		f.depth++
		for i := 0; i < n; i++ {
			f.fill(s.Index(i))
		}
		f.depth--
		v.Set(s)
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 1)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type().PkgPath() != "" && v.Type().Name() != "" && v.Type().PkgPath() == "uastack.dev/pkg/ua" {
			// Enumerations: small values that every peer knows.
			v.SetInt(int64(f.r.IntN(3)))
			return
		}
		v.SetInt(int64(f.r.Uint64()) >> (64 - v.Type().Bits()))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(f.r.Uint64() >> (64 - v.Type().Bits()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(float32(f.r.NormFloat64() * 1000)))
	case reflect.String:
		v.SetString(f.str())
	}
}
