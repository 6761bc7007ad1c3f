package main

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"uastack.dev/pkg/codec"
)

// This file converts the XML-encoded values of a UANodeSet (Part 6 §5.3, the
// Types.xsd elements such as <Int32>, <ListOfLocalizedText> and
// <ExtensionObject>) to codec.Variant values. Structures are filled by
// reflection from the generated types in uastack.dev/pkg/ua, found through
// the codec registry by their XML encoding id; reflection is fine here, in
// the generator, and never reaches pkg/codec.

// xmlScalar parses one built-in type's XML element into the Go value that
// codec.VariantOf takes for it; zero gives the element type of ListOf arrays.
type xmlScalar struct {
	zero  any
	parse func(e *xmlElem) (any, error)
}

var xmlScalars map[string]xmlScalar

func init() {
	intParser := func(bits int, conv func(int64) any) func(*xmlElem) (any, error) {
		return func(e *xmlElem) (any, error) {
			n, err := strconv.ParseInt(e.text, 10, bits)
			return conv(n), err
		}
	}
	uintParser := func(bits int, conv func(uint64) any) func(*xmlElem) (any, error) {
		return func(e *xmlElem) (any, error) {
			n, err := strconv.ParseUint(e.text, 10, bits)
			return conv(n), err
		}
	}
	xmlScalars = map[string]xmlScalar{
		"Boolean": {false, func(e *xmlElem) (any, error) { return strconv.ParseBool(e.text) }},
		"SByte":   {int8(0), intParser(8, func(n int64) any { return int8(n) })},
		"Int16":   {int16(0), intParser(16, func(n int64) any { return int16(n) })},
		"Int32":   {int32(0), intParser(32, func(n int64) any { return int32(n) })},
		"Int64":   {int64(0), intParser(64, func(n int64) any { return n })},
		"Byte":    {byte(0), uintParser(8, func(n uint64) any { return byte(n) })},
		"UInt16":  {uint16(0), uintParser(16, func(n uint64) any { return uint16(n) })},
		"UInt32":  {uint32(0), uintParser(32, func(n uint64) any { return uint32(n) })},
		"UInt64":  {uint64(0), uintParser(64, func(n uint64) any { return n })},
		"Float": {float32(0), func(e *xmlElem) (any, error) {
			f, err := strconv.ParseFloat(e.text, 32)
			return float32(f), err
		}},
		"Double": {float64(0), func(e *xmlElem) (any, error) { return strconv.ParseFloat(e.text, 64) }},
		"String": {"", func(e *xmlElem) (any, error) { return xmlString(e.text), nil }},
		"DateTime": {codec.DateTime(0), func(e *xmlElem) (any, error) {
			t, err := time.Parse(time.RFC3339Nano, e.text)
			return codec.DateTimeOf(t), err
		}},
		"Guid": {codec.Guid{}, func(e *xmlElem) (any, error) {
			return codec.ParseGuid(e.kid("String").textOrEmpty())
		}},
		"ByteString": {[]byte(nil), func(e *xmlElem) (any, error) {
			return base64.StdEncoding.DecodeString(strings.Join(strings.Fields(e.text), ""))
		}},
		"NodeId": {codec.NodeId{}, func(e *xmlElem) (any, error) {
			return xmlNodeId(e)
		}},
		"QualifiedName": {codec.QualifiedName{}, func(e *xmlElem) (any, error) {
			var q codec.QualifiedName
			if ns := e.kid("NamespaceIndex"); ns != nil {
				n, err := strconv.ParseUint(ns.text, 10, 16)
				if err != nil {
					return nil, err
				}
				q.NamespaceIndex = uint16(n)
			}
			q.Name = e.kid("Name").textOrEmpty()
			return q, nil
		}},
		"LocalizedText": {codec.LocalizedText{}, func(e *xmlElem) (any, error) {
			return xmlLocalizedText(e), nil
		}},
		"ExtensionObject": {codec.ExtensionObject{}, func(e *xmlElem) (any, error) {
			return xmlExtensionObject(e)
		}},
	}
}

// textOrEmpty returns e's text, or "" when e is nil.
func (e *xmlElem) textOrEmpty() string {
	if e == nil {
		return ""
	}
	return e.text
}

// xmlString keeps a present but empty String as the empty, non-null String.
func xmlString(s string) string {
	if s == "" {
		return codec.EmptyString
	}
	return s
}

func xmlLocalizedText(e *xmlElem) codec.LocalizedText {
	return codec.LocalizedText{Locale: e.kid("Locale").textOrEmpty(), Text: e.kid("Text").textOrEmpty()}
}

// xmlNodeId reads the <Identifier> child of a NodeId element; none is the null NodeId.
func xmlNodeId(e *xmlElem) (codec.NodeId, error) {
	s := e.kid("Identifier").textOrEmpty()
	if s == "" {
		return codec.NodeId{}, nil
	}
	return codec.ParseNodeId(s)
}

// xmlToVariant converts the element inside a node's <Value>.
func xmlToVariant(e *xmlElem) (codec.Variant, error) {
	if elemName, ok := strings.CutPrefix(e.name, "ListOf"); ok {
		sc, ok := xmlScalars[elemName]
		if !ok || elemName == "Byte" {
			return codec.Variant{}, fmt.Errorf("unsupported array type %s", e.name)
		}
		if elemName == "String" {
			// Built directly: boxing in any would turn an empty String into null.
			ss := make([]string, len(e.kids))
			for i, k := range e.kids {
				if k.name != elemName {
					return codec.Variant{}, fmt.Errorf("%s holds a <%s>", e.name, k.name)
				}
				ss[i] = xmlString(k.text)
			}
			return codec.MustVariant(ss), nil
		}
		s := reflect.MakeSlice(reflect.SliceOf(reflect.TypeOf(sc.zero)), 0, len(e.kids))
		for _, k := range e.kids {
			if k.name != elemName {
				return codec.Variant{}, fmt.Errorf("%s holds a <%s>", e.name, k.name)
			}
			x, err := sc.parse(k)
			if err != nil {
				return codec.Variant{}, fmt.Errorf("%s: %w", e.name, err)
			}
			s = reflect.Append(s, reflect.ValueOf(x))
		}
		return codec.VariantOf(s.Interface())
	}
	if e.name == "String" {
		// Not through any: boxing would turn an empty String into null.
		return codec.StringVariant(xmlString(e.text)), nil
	}
	sc, ok := xmlScalars[e.name]
	if !ok {
		return codec.Variant{}, fmt.Errorf("unsupported type %s", e.name)
	}
	x, err := sc.parse(e)
	if err != nil {
		return codec.Variant{}, fmt.Errorf("%s: %w", e.name, err)
	}
	return codec.VariantOf(x)
}

// xmlExtensionObject decodes an <ExtensionObject> whose TypeId is the XML
// encoding id of a generated structure.
func xmlExtensionObject(e *xmlElem) (codec.ExtensionObject, error) {
	tid, err := xmlNodeId(e.kid("TypeId"))
	if err != nil {
		return codec.ExtensionObject{}, err
	}
	body := e.kid("Body")
	if body == nil || len(body.kids) != 1 {
		return codec.ExtensionObject{}, fmt.Errorf("ExtensionObject %v: want one body element", tid)
	}
	ti := codec.LookupType(tid)
	if ti == nil {
		return codec.ExtensionObject{}, fmt.Errorf("ExtensionObject: no generated type for encoding %v", tid)
	}
	if ti.Name != body.kids[0].name {
		return codec.ExtensionObject{}, fmt.Errorf("ExtensionObject %v is %s, body is <%s>", tid, ti.Name, body.kids[0].name)
	}
	s := ti.New()
	if err := fillStruct(reflect.ValueOf(s).Elem(), body.kids[0]); err != nil {
		return codec.ExtensionObject{}, fmt.Errorf("%s: %w", ti.Name, err)
	}
	return codec.NewExtensionObject(s), nil
}

var (
	nodeIdType        = reflect.TypeFor[codec.NodeId]()
	localizedTextType = reflect.TypeFor[codec.LocalizedText]()
	qualifiedNameType = reflect.TypeFor[codec.QualifiedName]()
)

// fillStruct sets the fields of the struct v from the child elements of e,
// matched by name. A missing child leaves the field zero (the XML encoding's
// default); a child with no matching field is an error, so no data is lost
// silently.
func fillStruct(v reflect.Value, e *xmlElem) error {
	t := v.Type()
	for _, k := range e.kids {
		f, ok := t.FieldByName(k.name)
		if !ok || !f.IsExported() {
			return fmt.Errorf("no field %s", k.name)
		}
		if err := fillValue(v.FieldByIndex(f.Index), k); err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
	}
	return nil
}

// fillValue sets v from the XML element e.
func fillValue(v reflect.Value, e *xmlElem) error {
	switch v.Type() {
	case nodeIdType:
		id, err := xmlNodeId(e)
		v.Set(reflect.ValueOf(id))
		return err
	case localizedTextType:
		v.Set(reflect.ValueOf(xmlLocalizedText(e)))
		return nil
	case qualifiedNameType:
		q, err := xmlScalars["QualifiedName"].parse(e)
		if err == nil {
			v.Set(reflect.ValueOf(q))
		}
		return err
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(xmlString(e.text))
	case reflect.Bool:
		b, err := strconv.ParseBool(e.text)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(e.text, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetInt(n)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(e.text, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(e.text, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetFloat(f)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return fmt.Errorf("ByteString fields are not supported")
		}
		s := reflect.MakeSlice(v.Type(), len(e.kids), len(e.kids))
		for i, k := range e.kids {
			if err := fillValue(s.Index(i), k); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Struct:
		return fillStruct(v, e)
	default:
		return fmt.Errorf("unsupported field type %s", v.Type())
	}
	return nil
}

// encodeVariant returns the binary encoding of v (Part 6 §5.2.2.16).
func encodeVariant(v codec.Variant) (string, error) {
	e := codec.NewEncoder(nil)
	e.Variant(&v)
	if err := e.Err(); err != nil {
		return "", err
	}
	return string(e.Bytes()), nil
}
