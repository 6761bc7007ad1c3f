package codec

import (
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	gua "github.com/gopcua/opcua/ua"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// normalize turns a value of uastack's or gopcua's type system into a tree of maps,
// slices and strings that is equal for both when they carry the same OPC UA value.
// Field names are compared case-blind (gopcua writes ID and URI where the schema writes
// Id and Uri); mask fields, which each side derives from the values, are left out.
func normalize(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if v.CanInterface() {
		if n, ok := normalizeKnown(v.Interface()); ok {
			return n
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return normalize(v.Elem())
	case reflect.Struct:
		m := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			name := strings.ToLower(f.Name)
			if !f.IsExported() || name == "encodingmask" || name == "mask" {
				continue
			}
			m[name] = normalize(v.Field(i))
		}
		return m
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			return "bytes:" + hex.EncodeToString(b)
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = normalize(v.Index(i))
		}
		return out
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32:
		return "f:" + strconv.FormatFloat(v.Float(), 'g', -1, 32)
	case reflect.Float64:
		return "f:" + strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.String:
		return "s:" + v.String()
	}
	panic(fmt.Sprintf("normalize: unhandled %s", v.Type()))
}

func normalizeKnown(x any) (any, bool) {
	switch x := x.(type) {
	case codec.NodeId:
		return "node:" + strings.ToUpper(x.String()), true
	case *gua.NodeID:
		if x == nil {
			return "node:I=0", true
		}
		return "node:" + strings.ToUpper(x.String()), true
	case codec.ExpandedNodeId:
		return map[string]any{"node": "node:" + strings.ToUpper(x.NodeId.String()),
			"uri": x.NamespaceURI, "server": strconv.FormatUint(uint64(x.ServerIndex), 10)}, true
	case *gua.ExpandedNodeID:
		if x == nil {
			return normalizeKnown(codec.ExpandedNodeId{})
		}
		n, _ := normalizeKnown(x.NodeID)
		return map[string]any{"node": n, "uri": x.NamespaceURI,
			"server": strconv.FormatUint(uint64(x.ServerIndex), 10)}, true
	case codec.DateTime:
		return "t:" + strconv.FormatInt(int64(x), 10), true
	case time.Time:
		return "t:" + strconv.FormatInt(int64(codec.DateTimeOf(x)), 10), true
	case codec.Guid:
		return "guid:" + x.String(), true
	case *gua.GUID:
		if x == nil {
			return "guid:" + codec.Guid{}.String(), true
		}
		return "guid:" + strings.ToUpper(x.String()), true
	case status.Code:
		return "sc:" + strconv.FormatUint(uint64(x), 10), true
	case gua.StatusCode:
		return "sc:" + strconv.FormatUint(uint64(x), 10), true
	case codec.QualifiedName:
		return map[string]any{"ns": strconv.Itoa(int(x.NamespaceIndex)), "name": "s:" + x.Name}, true
	case *gua.QualifiedName:
		if x == nil {
			return normalizeKnown(codec.QualifiedName{})
		}
		return map[string]any{"ns": strconv.Itoa(int(x.NamespaceIndex)), "name": "s:" + x.Name}, true
	case codec.LocalizedText:
		return map[string]any{"locale": "s:" + x.Locale, "text": "s:" + x.Text}, true
	case *gua.LocalizedText:
		if x == nil {
			return normalizeKnown(codec.LocalizedText{})
		}
		return map[string]any{"locale": "s:" + x.Locale, "text": "s:" + x.Text}, true
	case codec.Variant:
		return normalizeVariantValue(reflect.ValueOf(x.Value())), true
	case *gua.Variant:
		if x == nil {
			return nil, true
		}
		return normalizeVariantValue(reflect.ValueOf(x.Value())), true
	case codec.ExtensionObject:
		if x.Value != nil {
			return normalize(reflect.ValueOf(x.Value)), true
		}
		if x.Encoding == codec.ExtensionObjectNoBody {
			return nil, true
		}
		return map[string]any{"type": "node:" + x.TypeID.String(), "body": "bytes:" + hex.EncodeToString(x.Body)}, true
	case *gua.ExtensionObject:
		if x == nil || x.Value == nil {
			return nil, true
		}
		return normalize(reflect.ValueOf(x.Value)), true
	case codec.DataValue:
		return map[string]any{
			"value":  normalizeKnownOrNil(x.Value),
			"status": "sc:" + strconv.FormatUint(uint64(x.Status), 10),
			"srcts":  "t:" + strconv.FormatInt(int64(x.SourceTimestamp), 10),
			"srcps":  strconv.Itoa(int(x.SourcePicoseconds)),
			"srvts":  "t:" + strconv.FormatInt(int64(x.ServerTimestamp), 10),
			"srvps":  strconv.Itoa(int(x.ServerPicoseconds)),
		}, true
	case *gua.DataValue:
		if x == nil {
			return normalizeKnown(codec.DataValue{})
		}
		var val any
		if x.Value != nil {
			val, _ = normalizeKnown(x.Value)
		}
		return map[string]any{
			"value":  val,
			"status": "sc:" + strconv.FormatUint(uint64(x.Status), 10),
			"srcts":  "t:" + strconv.FormatInt(int64(codec.DateTimeOf(x.SourceTimestamp)), 10),
			"srcps":  strconv.Itoa(int(x.SourcePicoseconds)),
			"srvts":  "t:" + strconv.FormatInt(int64(codec.DateTimeOf(x.ServerTimestamp)), 10),
			"srvps":  strconv.Itoa(int(x.ServerPicoseconds)),
		}, true
	}
	return nil, false
}

func normalizeKnownOrNil(v codec.Variant) any {
	if v.IsNull() {
		return nil
	}
	n, _ := normalizeKnown(v)
	return n
}

// normalizeVariantValue normalizes what a Variant holds. gopcua gives multi-dimensional
// arrays as nested slices and we give them flat, so nested slices are flattened.
func normalizeVariantValue(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Slice &&
		v.Type().Elem().Elem().Kind() != reflect.Uint8 {
		var flat []any
		for i := 0; i < v.Len(); i++ {
			switch inner := normalizeVariantValue(v.Index(i)).(type) {
			case []any:
				flat = append(flat, inner...)
			default:
				flat = append(flat, inner)
			}
		}
		return flat
	}
	if v.Kind() == reflect.Float32 && math.IsNaN(v.Float()) {
		return "f:NaN"
	}
	return normalize(v)
}
