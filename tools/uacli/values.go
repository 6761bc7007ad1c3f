package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// wellKnown are names accepted in place of NodeIds of the standard folders.
var wellKnown = map[string]uint32{
	"root":    id.RootFolder,
	"objects": id.ObjectsFolder,
	"types":   id.TypesFolder,
	"views":   id.ViewsFolder,
	"server":  id.Server,
}

// parseNode parses a NodeId in the string form ("ns=1;s=Demo.Scalar_Int32", "i=85"),
// with a namespace URI ("nsu=urn:uastack:demo;s=Demo.Scalar_Int32", resolved through
// the server's NamespaceArray) or a well-known name ("Objects").
func (e *env) parseNode(ctx context.Context, s string) (codec.NodeId, error) {
	if n, ok := wellKnown[strings.ToLower(s)]; ok {
		return codec.NewNumericNodeId(0, n), nil
	}
	if uri, ok := strings.CutPrefix(s, "nsu="); ok {
		// The URI ends at the last ';' before the identifier.
		i := strings.LastIndex(uri, ";")
		if i < 0 {
			return codec.NodeId{}, usagef("node id %q: want nsu=<uri>;<i|s|g|b>=<id>", s)
		}
		uri, rest := uri[:i], uri[i+1:]
		ns, err := e.namespaceIndex(ctx, uri)
		if err != nil {
			return codec.NodeId{}, err
		}
		if ns != 0 {
			rest = "ns=" + strconv.Itoa(ns) + ";" + rest
		}
		s = rest
	}
	n, err := codec.ParseNodeId(s)
	if err != nil {
		return codec.NodeId{}, usagef("node id %q: %v (forms: i=85, ns=1;s=Name, nsu=<uri>;s=Name, Objects)", s, err)
	}
	return n, nil
}

// namespaceIndex looks uri up in the server's NamespaceArray.
func (e *env) namespaceIndex(ctx context.Context, uri string) (int, error) {
	uris, err := e.namespaces(ctx)
	if err != nil {
		return 0, err
	}
	for i, u := range uris {
		if u == uri {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%q: %w (the server has %s)", uri, errNoNamespace, strings.Join(uris, ", "))
}

// namespaces reads Server_NamespaceArray once per run.
func (e *env) namespaces(ctx context.Context) ([]string, error) {
	if e.nsURI != nil {
		return e.nsURI, nil
	}
	c, err := e.dial(ctx)
	if err != nil {
		return nil, err
	}
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	dv, err := c.ReadValue(rctx, codec.NewNumericNodeId(0, id.Server_NamespaceArray))
	if err != nil {
		return nil, err
	}
	if dv.Status.IsBad() {
		return nil, fmt.Errorf("reading the NamespaceArray: %w", dv.Status)
	}
	uris, ok := dv.Value.Value().([]string)
	if !ok {
		return nil, fmt.Errorf("the server's NamespaceArray is a %s, not a String array", dv.Value.Type())
	}
	e.nsURI = uris
	return uris, nil
}

// parseAttribute accepts an attribute name ("Value", "datatype") or number.
func parseAttribute(s string) (attr.ID, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil && attr.Valid(attr.ID(n)) {
		return attr.ID(n), nil
	}
	for i := attr.ID(1); i < 64; i++ {
		if attr.Valid(i) && strings.EqualFold(i.String(), s) {
			return i, nil
		}
	}
	return 0, usagef("unknown attribute %q (Value, DataType, DisplayName, BrowseName, NodeClass, ... or a number)", s)
}

// parseTypeName accepts a built-in type name ("Int32", "double").
func parseTypeName(s string) (codec.TypeID, error) {
	for t := codec.TypeBoolean; t <= codec.TypeDiagnosticInfo; t++ {
		if strings.EqualFold(t.String(), s) {
			return t, nil
		}
	}
	return 0, usagef("unknown type %q (Boolean, SByte, Byte, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float, Double, String, DateTime, Guid, ByteString, NodeId, LocalizedText, QualifiedName, StatusCode)", s)
}

// builtinType returns the built-in type that carries values of the DataType dt:
// dt itself for ns=0 ids 1 to 25, Int32 for enumerations, else the nearest
// built-in supertype (following HasSubtype backwards). TypeVariant means any.
func (e *env) builtinType(ctx context.Context, dt codec.NodeId) (codec.TypeID, error) {
	for range 16 {
		if dt.Namespace() == 0 && dt.Type() == codec.IDNumeric {
			switch n := dt.IntID(); {
			case n >= 1 && n <= 25:
				return codec.TypeID(n), nil
			case n == id.Enumeration:
				return codec.TypeInt32, nil
			}
		}
		parent, err := e.supertype(ctx, dt)
		if err != nil {
			return 0, err
		}
		if parent.IsNull() {
			break
		}
		dt = parent
	}
	return 0, fmt.Errorf("DataType %s has no built-in supertype: give the type with --type", dt)
}

// supertype returns the source of the inverse HasSubtype reference of dt.
func (e *env) supertype(ctx context.Context, dt codec.NodeId) (codec.NodeId, error) {
	c, err := e.dial(ctx)
	if err != nil {
		return codec.NodeId{}, err
	}
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	bd := ua.BrowseDescription{NodeId: dt, BrowseDirection: ua.BrowseDirectionInverse,
		ReferenceTypeId: codec.NewNumericNodeId(0, id.HasSubtype), ResultMask: uint32(ua.BrowseResultMaskNone)}
	for ref, err := range c.References(rctx, bd, 1) {
		if err != nil {
			return codec.NodeId{}, err
		}
		return ref.NodeId.NodeId, nil
	}
	return codec.NodeId{}, nil
}

// guessType picks a type for a value of BaseDataType: Boolean, Int32, Int64, Double or
// String, by what the text parses as.
func guessType(s string) codec.TypeID {
	if _, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
		return codec.TypeBoolean
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			return codec.TypeInt32
		}
		return codec.TypeInt64
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return codec.TypeDouble
	}
	return codec.TypeString
}

// parseVariant parses s as a value of type t: a scalar, or with array a JSON array
// ("[1, 2]", `["a", "b"]`). TypeVariant guesses per element.
func parseVariant(t codec.TypeID, s string, array bool) (codec.Variant, error) {
	if !array {
		if t == codec.TypeVariant {
			t = guessType(s)
		}
		x, err := parseScalar(t, s)
		if err != nil {
			return codec.Variant{}, err
		}
		if str, ok := x.(string); ok && t == codec.TypeString {
			return codec.StringVariant(str), nil
		}
		return codec.VariantOf(x)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return codec.Variant{}, usagef("array value %q: want a JSON array such as [1, 2] or [\"a\", \"b\"]", s)
	}
	items := make([]string, len(raw))
	for i, r := range raw {
		items[i] = string(r)
		var str string
		if json.Unmarshal(r, &str) == nil {
			items[i] = str
		}
	}
	if t == codec.TypeVariant {
		vs := make([]codec.Variant, len(items))
		for i, it := range items {
			v, err := parseVariant(codec.TypeVariant, it, false)
			if err != nil {
				return codec.Variant{}, err
			}
			vs[i] = v
		}
		return codec.VariantOf(vs)
	}
	vals := make([]any, len(items))
	for i, it := range items {
		x, err := parseScalar(t, it)
		if err != nil {
			return codec.Variant{}, fmt.Errorf("element %d: %w", i, err)
		}
		vals[i] = x
	}
	var slice any
	switch t {
	case codec.TypeBoolean:
		slice = typed[bool](vals)
	case codec.TypeSByte:
		slice = typed[int8](vals)
	case codec.TypeByte:
		slice = typed[byte](vals)
	case codec.TypeInt16:
		slice = typed[int16](vals)
	case codec.TypeUInt16:
		slice = typed[uint16](vals)
	case codec.TypeInt32:
		slice = typed[int32](vals)
	case codec.TypeUInt32:
		slice = typed[uint32](vals)
	case codec.TypeInt64:
		slice = typed[int64](vals)
	case codec.TypeUInt64:
		slice = typed[uint64](vals)
	case codec.TypeFloat:
		slice = typed[float32](vals)
	case codec.TypeDouble:
		slice = typed[float64](vals)
	case codec.TypeString:
		slice = typed[string](vals)
	case codec.TypeDateTime:
		slice = typed[codec.DateTime](vals)
	case codec.TypeGuid:
		slice = typed[codec.Guid](vals)
	case codec.TypeByteString:
		slice = typed[[]byte](vals)
	case codec.TypeNodeId:
		slice = typed[codec.NodeId](vals)
	case codec.TypeStatusCode:
		slice = typed[status.Code](vals)
	case codec.TypeQualifiedName:
		slice = typed[codec.QualifiedName](vals)
	case codec.TypeLocalizedText:
		slice = typed[codec.LocalizedText](vals)
	default:
		return codec.Variant{}, usagef("arrays of %s are not supported from the command line", t)
	}
	return codec.VariantOf(slice)
}

// typed converts values that parseScalar made for one type into a typed slice.
func typed[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = v.(T)
	}
	return out
}

// parseScalar parses s as one value of t, returning the Go type VariantOf takes.
func parseScalar(t codec.TypeID, s string) (any, error) {
	bad := func(err error) error { return usagef("%q is not a valid %s: %v", s, t, err) }
	intOf := func(bits int) (int64, error) { return strconv.ParseInt(s, 0, bits) }
	uintOf := func(bits int) (uint64, error) { return strconv.ParseUint(s, 0, bits) }
	switch t {
	case codec.TypeBoolean:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, bad(err)
		}
		return b, nil
	case codec.TypeSByte, codec.TypeInt16, codec.TypeInt32, codec.TypeInt64:
		bits := map[codec.TypeID]int{codec.TypeSByte: 8, codec.TypeInt16: 16, codec.TypeInt32: 32, codec.TypeInt64: 64}[t]
		n, err := intOf(bits)
		if err != nil {
			return nil, bad(err)
		}
		switch t {
		case codec.TypeSByte:
			return int8(n), nil
		case codec.TypeInt16:
			return int16(n), nil
		case codec.TypeInt32:
			return int32(n), nil
		}
		return n, nil
	case codec.TypeByte, codec.TypeUInt16, codec.TypeUInt32, codec.TypeUInt64:
		bits := map[codec.TypeID]int{codec.TypeByte: 8, codec.TypeUInt16: 16, codec.TypeUInt32: 32, codec.TypeUInt64: 64}[t]
		n, err := uintOf(bits)
		if err != nil {
			return nil, bad(err)
		}
		switch t {
		case codec.TypeByte:
			return byte(n), nil
		case codec.TypeUInt16:
			return uint16(n), nil
		case codec.TypeUInt32:
			return uint32(n), nil
		}
		return n, nil
	case codec.TypeFloat:
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return nil, bad(err)
		}
		return float32(f), nil
	case codec.TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, bad(err)
		}
		return f, nil
	case codec.TypeString:
		return s, nil
	case codec.TypeDateTime:
		if s == "now" {
			return codec.Now(), nil
		}
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, bad(err)
		}
		return codec.DateTimeOf(tm), nil
	case codec.TypeGuid:
		g, err := codec.ParseGuid(s)
		if err != nil {
			return nil, bad(err)
		}
		return g, nil
	case codec.TypeByteString:
		if h, ok := strings.CutPrefix(s, "0x"); ok {
			var b []byte
			for i := 0; i+1 < len(h); i += 2 {
				x, err := strconv.ParseUint(h[i:i+2], 16, 8)
				if err != nil {
					return nil, bad(err)
				}
				b = append(b, byte(x))
			}
			return b, nil
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, usagef("%q is not a valid ByteString: give base64 or 0x followed by hex", s)
		}
		return b, nil
	case codec.TypeNodeId:
		n, err := codec.ParseNodeId(s)
		if err != nil {
			return nil, bad(err)
		}
		return n, nil
	case codec.TypeStatusCode:
		if n, err := strconv.ParseUint(s, 0, 32); err == nil {
			return status.Code(n), nil
		}
		return nil, usagef("%q is not a valid StatusCode: give a number such as 0x80340000", s)
	case codec.TypeQualifiedName:
		// "1:Name" or "Name" (namespace 0), as Part 6 §5.3.1.14 writes it.
		if i := strings.IndexByte(s, ':'); i > 0 {
			if ns, err := strconv.ParseUint(s[:i], 10, 16); err == nil {
				return codec.QualifiedName{NamespaceIndex: uint16(ns), Name: s[i+1:]}, nil
			}
		}
		return codec.QualifiedName{Name: s}, nil
	case codec.TypeLocalizedText:
		return codec.LocalizedText{Text: s}, nil
	}
	return nil, usagef("values of type %s are not supported from the command line", t)
}

// typeName names the type of v: "Int32", "Double[]", "Int32[2,3]".
func typeName(v *codec.Variant) string {
	if v.IsNull() {
		return "Null"
	}
	name := v.Type().String()
	if !v.IsArray() {
		// A decoded structure is named by its DataType: "ServerStatusDataType".
		switch x := v.Value().(type) {
		case codec.ExtensionObject:
			if x.Value != nil {
				return x.Value.TypeInfo().Name
			}
		case *codec.ExtensionObject:
			if x != nil && x.Value != nil {
				return x.Value.TypeInfo().Name
			}
		}
		return name
	}
	if dims := v.Dimensions(); len(dims) > 1 {
		parts := make([]string, len(dims))
		for i, d := range dims {
			parts[i] = strconv.Itoa(int(d))
		}
		return name + "[" + strings.Join(parts, ",") + "]"
	}
	return name + "[]"
}

// formatVariant formats v for people: numbers and strings as they are, NodeIds in
// their string form, DateTimes in RFC 3339, StatusCodes by name, arrays and
// structures in the OPC UA JSON encoding.
func formatVariant(v *codec.Variant) string {
	if v.IsNull() {
		return "null"
	}
	if !v.IsArray() {
		switch x := v.Value().(type) {
		case string:
			return x
		case codec.DateTime:
			return formatTime(x)
		case codec.NodeId:
			return x.String()
		case codec.ExpandedNodeId:
			return x.String()
		case status.Code:
			return x.Name()
		case codec.LocalizedText:
			return x.Text
		case codec.QualifiedName:
			return formatQualifiedName(x)
		case float32:
			return strconv.FormatFloat(float64(x), 'g', -1, 32)
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64)
		case bool, int8, byte, int16, uint16, int32, uint32, int64, uint64, codec.Guid:
			return fmt.Sprint(x)
		}
	}
	raw, err := variantJSON(v)
	if err != nil {
		return v.String()
	}
	var w struct{ Value json.RawMessage }
	if json.Unmarshal(raw, &w) == nil && w.Value != nil {
		return string(w.Value)
	}
	return string(raw)
}

func formatQualifiedName(q codec.QualifiedName) string {
	if q.NamespaceIndex == 0 {
		return q.Name
	}
	return strconv.Itoa(int(q.NamespaceIndex)) + ":" + q.Name
}

func formatTime(d codec.DateTime) string {
	if d == 0 {
		return "-"
	}
	return d.Time().UTC().Format(time.RFC3339Nano)
}

// uaJSON returns the OPC UA JSON encoding (compact form, Part 6 §5.4) that f writes.
func uaJSON(f func(*codec.JSONEncoder)) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := codec.NewJSONEncoder(&b, false)
	f(enc)
	if err := enc.Flush(); err != nil {
		return nil, err
	}
	if err := enc.Err(); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSpace(b.Bytes())), nil
}

func variantJSON(v *codec.Variant) (json.RawMessage, error) {
	return uaJSON(func(e *codec.JSONEncoder) { e.Variant(v) })
}

func dataValueJSON(dv *codec.DataValue) (json.RawMessage, error) {
	return uaJSON(func(e *codec.JSONEncoder) { e.DataValue(dv) })
}

// writeJSON writes v as the one JSON document of a --json run.
func (e *env) writeJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
