package nodeset

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// builtinByName maps the XML element names of the built-in types (Part 6 §5.3.1) to
// their ids.
var builtinByName = func() map[string]codec.TypeID {
	m := make(map[string]codec.TypeID)
	for t := codec.TypeBoolean; t <= codec.TypeDiagnosticInfo; t++ {
		m[t.String()] = t
	}
	return m
}()

// value reads the Value element of a Variable or VariableType (Part 6 §5.3.1.17).
func (f *fileState) value(v *element) (codec.Variant, error) {
	if len(v.Children) == 0 {
		return codec.Variant{}, nil
	}
	if len(v.Children) > 1 {
		return codec.Variant{}, f.errorf(v.Line, "Value holds %d elements, not one", len(v.Children))
	}
	return f.variant(v.Children[0])
}

// variant reads a value element named by its type: <Int32>, <ListOfInt32>, ...
func (f *fileState) variant(e *element) (codec.Variant, error) {
	if name, ok := strings.CutPrefix(e.Name, "ListOf"); ok {
		t, ok := builtinByName[name]
		if !ok {
			return codec.Variant{}, f.errorf(e.Line, "unknown value type %s", e.Name)
		}
		vals := make([]codec.Variant, 0, len(e.Children))
		for _, c := range e.Children {
			var v codec.Variant
			var err error
			if t == codec.TypeVariant {
				v, err = f.variantElement(c)
			} else {
				v, err = f.scalar(t, c)
			}
			if err != nil {
				return v, err
			}
			vals = append(vals, v)
		}
		return f.array(t, vals, e.Line)
	}
	if e.Name == "Matrix" {
		return codec.Variant{}, f.errorf(e.Line, "Matrix values are not supported")
	}
	t, ok := builtinByName[e.Name]
	if !ok {
		return codec.Variant{}, f.errorf(e.Line, "unknown value type %s", e.Name)
	}
	if t == codec.TypeVariant {
		return f.variantElement(e)
	}
	return f.scalar(t, e)
}

// variantElement reads a <Variant> (or a Variant field): its <Value> holds the value.
func (f *fileState) variantElement(e *element) (codec.Variant, error) {
	v := e.child("Value")
	if v == nil || len(v.Children) == 0 {
		return codec.Variant{}, nil
	}
	return f.variant(v.Children[0])
}

// array makes an array Variant of type t from scalars of that type.
func (f *fileState) array(t codec.TypeID, vals []codec.Variant, line int) (codec.Variant, error) {
	var x any
	switch t {
	case codec.TypeBoolean:
		x = collect[bool](vals)
	case codec.TypeSByte:
		x = collect[int8](vals)
	case codec.TypeByte:
		return codec.ByteArray(collect[byte](vals)), nil
	case codec.TypeInt16:
		x = collect[int16](vals)
	case codec.TypeUInt16:
		x = collect[uint16](vals)
	case codec.TypeInt32:
		x = collect[int32](vals)
	case codec.TypeUInt32:
		x = collect[uint32](vals)
	case codec.TypeInt64:
		x = collect[int64](vals)
	case codec.TypeUInt64:
		x = collect[uint64](vals)
	case codec.TypeFloat:
		x = collect[float32](vals)
	case codec.TypeDouble:
		x = collect[float64](vals)
	case codec.TypeString:
		s := make([]string, len(vals))
		for i := range vals {
			s[i] = vals[i].Str()
		}
		x = s
	case codec.TypeXmlElement:
		s := make([]string, len(vals))
		for i := range vals {
			s[i] = vals[i].Str()
		}
		return codec.XmlElementArray(s), nil
	case codec.TypeDateTime:
		x = collect[codec.DateTime](vals)
	case codec.TypeGuid:
		x = collect[codec.Guid](vals)
	case codec.TypeByteString:
		x = collect[[]byte](vals)
	case codec.TypeNodeId:
		x = collect[codec.NodeId](vals)
	case codec.TypeExpandedNodeId:
		x = collect[codec.ExpandedNodeId](vals)
	case codec.TypeStatusCode:
		x = collect[status.Code](vals)
	case codec.TypeQualifiedName:
		x = collect[codec.QualifiedName](vals)
	case codec.TypeLocalizedText:
		x = collect[codec.LocalizedText](vals)
	case codec.TypeExtensionObject:
		x = collect[codec.ExtensionObject](vals)
	case codec.TypeVariant:
		x = vals
	default:
		return codec.Variant{}, f.errorf(line, "arrays of %v are not supported", t)
	}
	v, err := codec.VariantOf(x)
	if err != nil {
		return v, f.errorf(line, "%v", err)
	}
	return v, nil
}

// collect takes the Go values of scalars of one type.
func collect[T any](vals []codec.Variant) []T {
	out := make([]T, len(vals))
	for i := range vals {
		out[i], _ = vals[i].Value().(T)
	}
	return out
}

// scalar reads one value of the built-in type t from e (Part 6 §5.3.1).
func (f *fileState) scalar(t codec.TypeID, e *element) (codec.Variant, error) {
	bad := func(err error) (codec.Variant, error) {
		return codec.Variant{}, f.errorf(e.Line, "%s %q: %v", t, strings.TrimSpace(e.Text), err)
	}
	if e.isNil() {
		return codec.Variant{}, nil
	}
	text := strings.TrimSpace(e.Text)
	switch t {
	case codec.TypeBoolean:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return bad(err)
		}
		return codec.BooleanVariant(b), nil
	case codec.TypeSByte, codec.TypeInt16, codec.TypeInt32, codec.TypeInt64:
		bits := map[codec.TypeID]int{codec.TypeSByte: 8, codec.TypeInt16: 16, codec.TypeInt32: 32, codec.TypeInt64: 64}[t]
		if t == codec.TypeInt32 {
			// An enumeration's value may be written "Name_Value" (Part 6 §5.3.4).
			if i := strings.LastIndexByte(text, '_'); i >= 0 {
				text = text[i+1:]
			}
		}
		x, err := strconv.ParseInt(text, 10, bits)
		if err != nil {
			return bad(err)
		}
		switch t {
		case codec.TypeSByte:
			return codec.SByteVariant(int8(x)), nil
		case codec.TypeInt16:
			return codec.Int16Variant(int16(x)), nil
		case codec.TypeInt32:
			return codec.Int32Variant(int32(x)), nil
		}
		return codec.Int64Variant(x), nil
	case codec.TypeByte, codec.TypeUInt16, codec.TypeUInt32, codec.TypeUInt64:
		bits := map[codec.TypeID]int{codec.TypeByte: 8, codec.TypeUInt16: 16, codec.TypeUInt32: 32, codec.TypeUInt64: 64}[t]
		x, err := strconv.ParseUint(text, 10, bits)
		if err != nil {
			return bad(err)
		}
		switch t {
		case codec.TypeByte:
			return codec.ByteVariant(byte(x)), nil
		case codec.TypeUInt16:
			return codec.UInt16Variant(uint16(x)), nil
		case codec.TypeUInt32:
			return codec.UInt32Variant(uint32(x)), nil
		}
		return codec.UInt64Variant(x), nil
	case codec.TypeFloat, codec.TypeDouble:
		var x float64
		switch text {
		case "INF":
			x = math.Inf(1)
		case "-INF":
			x = math.Inf(-1)
		case "NaN":
			x = math.NaN()
		default:
			bits := 64
			if t == codec.TypeFloat {
				bits = 32
			}
			var err error
			if x, err = strconv.ParseFloat(text, bits); err != nil {
				return bad(err)
			}
		}
		if t == codec.TypeFloat {
			return codec.FloatVariant(float32(x)), nil
		}
		return codec.DoubleVariant(x), nil
	case codec.TypeString:
		return codec.StringVariant(e.Text), nil
	case codec.TypeXmlElement:
		return codec.XmlElementVariant(e.Text), nil
	case codec.TypeDateTime:
		tm, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			return bad(err)
		}
		return codec.DateTimeVariant(codec.DateTimeOf(tm)), nil
	case codec.TypeGuid:
		s := text
		if c := e.child("String"); c != nil {
			s = strings.TrimSpace(c.Text)
		}
		g, err := codec.ParseGuid(s)
		if err != nil {
			return bad(err)
		}
		return codec.GuidVariant(g), nil
	case codec.TypeByteString:
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(text), ""))
		if err != nil {
			return bad(err)
		}
		return codec.ByteStringVariant(b), nil
	case codec.TypeNodeId, codec.TypeExpandedNodeId:
		n, err := f.identifier(e)
		if err != nil {
			return codec.Variant{}, err
		}
		if t == codec.TypeExpandedNodeId {
			return codec.MustVariant(codec.ExpandedNodeId{NodeId: n}), nil
		}
		return codec.NodeIdVariant(n), nil
	case codec.TypeStatusCode:
		s := text
		if c := e.child("Code"); c != nil {
			s = strings.TrimSpace(c.Text)
		}
		x, err := strconv.ParseUint(s, 0, 32)
		if err != nil {
			return bad(err)
		}
		return codec.StatusCodeVariant(status.Code(x)), nil
	case codec.TypeQualifiedName:
		var q codec.QualifiedName
		if c := e.child("NamespaceIndex"); c != nil {
			ns, err := strconv.ParseUint(strings.TrimSpace(c.Text), 10, 16)
			if err != nil || int(ns) >= len(f.nsMap) {
				return codec.Variant{}, f.errorf(c.Line, "QualifiedName: namespace index %q is not in the file's NamespaceUris", c.Text)
			}
			q.NamespaceIndex = f.nsMap[ns]
		}
		if c := e.child("Name"); c != nil {
			q.Name = c.Text
		}
		return codec.QualifiedNameVariant(q), nil
	case codec.TypeLocalizedText:
		var lt codec.LocalizedText
		if c := e.child("Locale"); c != nil {
			lt.Locale = c.Text
		}
		if c := e.child("Text"); c != nil {
			lt.Text = c.Text
		}
		return codec.MustVariant(lt), nil
	case codec.TypeExtensionObject:
		x, err := f.extensionObject(e)
		if err != nil {
			return codec.Variant{}, err
		}
		return codec.MustVariant(x), nil
	}
	return codec.Variant{}, f.errorf(e.Line, "values of %v are not supported", t)
}

// identifier reads the <Identifier> of a NodeId value (Part 6 §5.3.1.10), in the file's
// namespace indexes.
func (f *fileState) identifier(e *element) (codec.NodeId, error) {
	c := e.child("Identifier")
	if c == nil {
		if strings.TrimSpace(e.Text) == "" {
			return codec.NodeId{}, nil
		}
		c = e
	}
	s := strings.TrimSpace(c.Text)
	if s == "" {
		return codec.NodeId{}, nil
	}
	n, err := codec.ParseNodeId(s)
	if err != nil {
		return n, f.errorf(c.Line, "bad NodeId %q: %v", s, err)
	}
	return f.mapNodeId(n, c.Line)
}

// extensionObject reads an <ExtensionObject>: its TypeId names the structure (by its XML
// encoding, as files write it, or its DataType) and its Body holds the fields.
func (f *fileState) extensionObject(e *element) (codec.ExtensionObject, error) {
	tid := e.child("TypeId")
	body := e.child("Body")
	if tid == nil {
		return codec.ExtensionObject{}, f.errorf(e.Line, "ExtensionObject without TypeId")
	}
	enc, err := f.identifier(tid)
	if err != nil {
		return codec.ExtensionObject{}, err
	}
	if body == nil || len(body.Children) == 0 {
		return codec.ExtensionObject{TypeID: enc}, nil
	}
	dt := f.encodingOf(enc)
	s, err := f.structure(dt, body.Children[0], 0)
	if err != nil {
		return codec.ExtensionObject{}, err
	}
	return codec.NewExtensionObject(s), nil
}

// structure reads the body of a structure of the DataType dt from its fields' elements.
// A namespace 0 structure is read into a template of its definition and then decoded
// into its generated type through its binary encoding.
func (f *fileState) structure(dt codec.NodeId, e *element, depth int) (codec.Structure, error) {
	if depth > maxDepth {
		return nil, f.errorf(e.Line, "structures nested deeper than %d", maxDepth)
	}
	t, err := f.dynamicType(dt, 0)
	if err != nil {
		return nil, f.errorf(e.Line, "%v", err)
	}
	x := t.New()
	if t.Kind == codec.StructureUnion {
		if c := e.child("SwitchField"); c != nil {
			s, err := strconv.ParseUint(strings.TrimSpace(c.Text), 10, 32)
			if err != nil || s > uint64(len(t.Fields)) {
				return nil, f.errorf(c.Line, "SwitchField %q of %s", c.Text, t.Info().Name)
			}
			x.Switch = uint32(s)
		}
	}
	for i := range t.Fields {
		fd := &t.Fields[i]
		if t.Kind == codec.StructureUnion && x.Switch != uint32(i+1) {
			continue
		}
		c := e.child(fd.Name)
		if c == nil && t.Kind == codec.StructureUnion {
			c = e.child("Value")
		}
		if c == nil || c.isNil() {
			continue
		}
		v, err := f.field(fd, c, depth)
		if err != nil {
			return nil, err
		}
		x.Fields[i] = v
	}
	if _, own := f.defs[dt]; own {
		return x, nil
	}
	info := codec.LookupType(dt)
	if info == nil {
		return x, nil
	}
	// A generated type: through its binary encoding.
	enc := codec.NewEncoder(nil)
	x.EncodeBinary(enc)
	if enc.Err() != nil {
		return nil, f.errorf(e.Line, "%s: %v", t.Info().Name, enc.Err())
	}
	s := info.New()
	d := codec.NewDecoder(enc.Bytes())
	s.DecodeBinary(d)
	if d.Err() != nil || d.Remaining() != 0 {
		return nil, f.errorf(e.Line, "%s: the generated type does not read its definition's encoding: %v", t.Info().Name, d.Err())
	}
	return s, nil
}

// field reads the value of the structure field fd from its element c.
func (f *fileState) field(fd *codec.DynamicField, c *element, depth int) (codec.Variant, error) {
	one := func(e *element) (codec.Variant, error) {
		switch {
		case fd.Struct != nil:
			s, err := f.structure(fd.Struct.DataType, e, depth+1)
			if err != nil {
				return codec.Variant{}, err
			}
			return codec.MustVariant(codec.NewExtensionObject(s)), nil
		case fd.Type == codec.TypeVariant:
			return f.variantElement(e)
		}
		return f.scalar(fd.Type, e)
	}
	if !fd.Array {
		if fd.Type == codec.TypeVariant {
			return f.variantElement(c)
		}
		return one(c)
	}
	vals := make([]codec.Variant, 0, len(c.Children))
	for _, item := range c.Children {
		v, err := one(item)
		if err != nil {
			return v, err
		}
		vals = append(vals, v)
	}
	if fd.Struct != nil {
		return codec.MustVariant(collect[codec.ExtensionObject](vals)), nil
	}
	v, err := f.array(fd.Type, vals, c.Line)
	if err != nil {
		return v, fmt.Errorf("field %s: %w", fd.Name, err)
	}
	return v, nil
}
