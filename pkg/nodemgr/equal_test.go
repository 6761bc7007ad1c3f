package nodemgr

import (
	"math"
	"reflect"
	"unsafe"

	"uastack.dev/pkg/codec"
)

// equalBits reports whether a and b are deeply equal as reflect.DeepEqual says, except
// that floats compare by their bits (so a NaN equals itself, as it does on the wire)
// and strings also compare by null-ness (codec.IsNull), which the encoding keeps. A
// NodeId compares as == does: the codec writes an empty string identifier as null.
func equalBits(a, b any) bool {
	return equalValue(reflect.ValueOf(a), reflect.ValueOf(b), true)
}

var nodeIdType = reflect.TypeFor[codec.NodeId]()

func equalValue(a, b reflect.Value, nulls bool) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.String:
		x, y := a.String(), b.String()
		return x == y && (!nulls || nullString(x) == nullString(y))
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalValue(a.Elem(), b.Elem(), nulls)
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if !equalValue(a.Index(i), b.Index(i), nulls) {
				return false
			}
		}
		return true
	case reflect.Struct:
		nulls = nulls && a.Type() != nodeIdType
		for i := range a.NumField() {
			if !equalValue(a.Field(i), b.Field(i), nulls) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if !equalValue(a.MapIndex(k), b.MapIndex(k), nulls) {
				return false
			}
		}
		return true
	}
	panic("equalBits: unexpected kind " + a.Kind().String())
}

// nullString is codec.IsNull for a string read through reflect.
func nullString(s string) bool { return len(s) == 0 && unsafe.StringData(s) == nil }
