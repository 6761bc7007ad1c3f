package codec_test

// Structures for the JSON tests, written the way tools/gen writes pkg/ua: Field* per
// member, Struct for nested structures, NextField/Skip to read.

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// jsonNS is the namespace of the JSON test types (the binary tests use 201).
const jsonNS = 202

// jsonPoint is registered, so ExtensionObjects can carry it. Value lets tests nest
// Variants and ExtensionObjects inside it.
type jsonPoint struct {
	ID    int32
	Name  string
	Mode  int32 // an enumeration: 0 Off, 1 On
	Tags  []string
	Value codec.Variant
}

var jsonPointInfo = &codec.TypeInfo{
	Name:           "JSONPoint",
	DataType:       codec.NewNumericNodeId(jsonNS, 1),
	BinaryEncoding: codec.NewNumericNodeId(jsonNS, 2),
	JSONEncoding:   codec.NewNumericNodeId(jsonNS, 3),
	New:            func() codec.Structure { return new(jsonPoint) },
	Size:           int(unsafe.Sizeof(jsonPoint{})),
}

func init() {
	if !codec.Register(jsonPointInfo) {
		panic("JSON codec tests: ids of JSONPoint already registered")
	}
}

func jsonModeName(v int64) string {
	switch v {
	case 0:
		return "Off"
	case 1:
		return "On"
	}
	return ""
}

func (p *jsonPoint) TypeInfo() *codec.TypeInfo { return jsonPointInfo }

func (p *jsonPoint) EncodeBinary(e *codec.Encoder) {
	e.Int32(p.ID)
	e.String(p.Name)
	e.Int32(p.Mode)
	e.ArrayLength(len(p.Tags), p.Tags == nil)
	for _, t := range p.Tags {
		e.String(t)
	}
	e.Variant(&p.Value)
}

func (p *jsonPoint) DecodeBinary(d *codec.Decoder) {
	*p = jsonPoint{}
	p.ID = d.Int32()
	p.Name = d.String()
	p.Mode = d.Int32()
	if n := d.SizedArrayLength(4, int(unsafe.Sizeof(""))); n >= 0 {
		p.Tags = make([]string, n)
		for i := range p.Tags {
			p.Tags[i] = d.String()
		}
	}
	d.Variant(&p.Value)
}

func (p *jsonPoint) EncodeJSON(e *codec.JSONEncoder) {
	e.BeginObject()
	e.FieldInt32("ID", p.ID)
	e.FieldString("Name", p.Name)
	e.FieldEnum("Mode", int64(p.Mode), jsonModeName)
	if e.FieldArray("Tags", len(p.Tags), p.Tags == nil) {
		for _, t := range p.Tags {
			e.String(t)
		}
		e.EndArray()
	}
	e.FieldVariant("Value", &p.Value)
	e.EndObject()
}

func (p *jsonPoint) DecodeJSON(d *codec.JSONDecoder) {
	*p = jsonPoint{}
	if !d.BeginObject() {
		return
	}
	for {
		key, ok := d.NextField()
		if !ok {
			break
		}
		switch string(key) {
		case "ID":
			p.ID = d.Int32()
		case "Name":
			p.Name = d.String()
		case "Mode":
			p.Mode = int32(d.Enum())
		case "Tags":
			if d.BeginArray() {
				p.Tags = make([]string, 0)
				for d.NextElement() {
					p.Tags = append(p.Tags, d.String())
				}
			}
		case "Value":
			d.Variant(&p.Value)
		default:
			d.Skip()
		}
	}
}

// jsonOptional is the structure with optional fields of Part 6 §5.4.7:
// struct TypeA { Int32 X; Int32* O1; SByte Y; Int32* O2; }.
type jsonOptional struct {
	X  int32
	O1 *int32
	Y  int8
	O2 *int32
}

func (v *jsonOptional) TypeInfo() *codec.TypeInfo   { return nil }
func (v *jsonOptional) EncodeBinary(*codec.Encoder) { panic("not used") }
func (v *jsonOptional) DecodeBinary(*codec.Decoder) { panic("not used") }
func (v *jsonOptional) mask() (m uint32) {
	if v.O1 != nil {
		m |= 1
	}
	if v.O2 != nil {
		m |= 2
	}
	return m
}

func (v *jsonOptional) EncodeJSON(e *codec.JSONEncoder) {
	e.BeginObject()
	e.FieldEncodingMask(v.mask())
	e.FieldInt32("X", v.X)
	if v.O1 != nil {
		e.FieldInt32("O1", *v.O1)
	}
	e.FieldSByte("Y", v.Y)
	if v.O2 != nil {
		e.FieldInt32("O2", *v.O2)
	}
	e.EndObject()
}

func (v *jsonOptional) DecodeJSON(d *codec.JSONDecoder) {
	*v = jsonOptional{}
	if !d.BeginObject() {
		return
	}
	var mask uint32
	for {
		key, ok := d.NextField()
		if !ok {
			break
		}
		switch string(key) {
		case "EncodingMask":
			mask = d.UInt32()
		case "X":
			v.X = d.Int32()
		case "O1":
			o := d.Int32()
			v.O1 = &o
		case "Y":
			v.Y = d.SByte()
		case "O2":
			o := d.Int32()
			v.O2 = &o
		default:
			d.Skip()
		}
	}
	// A bit set for an omitted member means the member has its default value.
	if mask&1 != 0 && v.O1 == nil {
		v.O1 = new(int32)
	}
	if mask&2 != 0 && v.O2 == nil {
		v.O2 = new(int32)
	}
}

// jsonUnion is the union of Part 6 §5.4.8: Union1 { Int32 A; Double B; Char* C; }.
type jsonUnion struct {
	Switch uint32
	A      int32
	B      float64
	C      string
}

func (v *jsonUnion) TypeInfo() *codec.TypeInfo   { return nil }
func (v *jsonUnion) EncodeBinary(*codec.Encoder) { panic("not used") }
func (v *jsonUnion) DecodeBinary(*codec.Decoder) { panic("not used") }

func (v *jsonUnion) EncodeJSON(e *codec.JSONEncoder) {
	e.BeginObject()
	e.FieldSwitch(v.Switch)
	switch v.Switch {
	case 1:
		e.Field("A")
		e.Int32(v.A)
	case 2:
		e.Field("B")
		e.Double(v.B)
	case 3:
		e.Field("C")
		e.String(v.C)
	}
	e.EndObject()
}

func (v *jsonUnion) DecodeJSON(d *codec.JSONDecoder) {
	*v = jsonUnion{}
	if !d.BeginObject() {
		return
	}
	for {
		key, ok := d.NextField()
		if !ok {
			break
		}
		switch string(key) {
		case "SwitchField":
			v.Switch = d.UInt32()
		case "A":
			v.Switch, v.A = 1, d.Int32()
		case "B":
			v.Switch, v.B = 2, d.Double()
		case "C":
			v.Switch, v.C = 3, d.String()
		default:
			d.Skip()
		}
	}
}

// jsonAll has one member of every kind the generated code writes.
type jsonAll struct {
	Boolean         bool
	SByte           int8
	Byte            byte
	Int16           int16
	UInt16          uint16
	Int32           int32
	UInt32          uint32
	Int64           int64
	UInt64          uint64
	Float           float32
	Double          float64
	String          string
	DateTime        codec.DateTime
	Guid            codec.Guid
	ByteString      []byte
	XmlElement      string
	NodeId          codec.NodeId
	ExpandedNodeId  codec.ExpandedNodeId
	StatusCode      status.Code
	QualifiedName   codec.QualifiedName
	LocalizedText   codec.LocalizedText
	ExtensionObject codec.ExtensionObject
	DataValue       codec.DataValue
	Variant         codec.Variant
	DiagnosticInfo  codec.DiagnosticInfo
	Enum            int32
	Struct          *jsonOptional
	Array           []int32
}

func (v *jsonAll) TypeInfo() *codec.TypeInfo   { return nil }
func (v *jsonAll) EncodeBinary(*codec.Encoder) { panic("not used") }
func (v *jsonAll) DecodeBinary(*codec.Decoder) { panic("not used") }

func (v *jsonAll) EncodeJSON(e *codec.JSONEncoder) {
	e.BeginObject()
	e.FieldBoolean("Boolean", v.Boolean)
	e.FieldSByte("SByte", v.SByte)
	e.FieldByte("Byte", v.Byte)
	e.FieldInt16("Int16", v.Int16)
	e.FieldUInt16("UInt16", v.UInt16)
	e.FieldInt32("Int32", v.Int32)
	e.FieldUInt32("UInt32", v.UInt32)
	e.FieldInt64("Int64", v.Int64)
	e.FieldUInt64("UInt64", v.UInt64)
	e.FieldFloat("Float", v.Float)
	e.FieldDouble("Double", v.Double)
	e.FieldString("String", v.String)
	e.FieldDateTime("DateTime", v.DateTime)
	e.FieldGuid("Guid", v.Guid)
	e.FieldByteString("ByteString", v.ByteString)
	e.FieldXmlElement("XmlElement", v.XmlElement)
	e.FieldNodeId("NodeId", v.NodeId)
	e.FieldExpandedNodeId("ExpandedNodeId", v.ExpandedNodeId)
	e.FieldStatusCode("StatusCode", v.StatusCode)
	e.FieldQualifiedName("QualifiedName", v.QualifiedName)
	e.FieldLocalizedText("LocalizedText", v.LocalizedText)
	e.FieldExtensionObject("ExtensionObject", &v.ExtensionObject)
	e.FieldDataValue("DataValue", &v.DataValue)
	e.FieldVariant("Variant", &v.Variant)
	e.FieldDiagnosticInfo("DiagnosticInfo", &v.DiagnosticInfo)
	e.FieldEnum("Enum", int64(v.Enum), jsonModeName)
	if v.Struct != nil {
		e.FieldStruct("Struct", v.Struct)
	} else {
		e.FieldStruct("Struct", nil)
	}
	if e.FieldArray("Array", len(v.Array), v.Array == nil) {
		for _, x := range v.Array {
			e.Int32(x)
		}
		e.EndArray()
	}
	e.EndObject()
}

func (v *jsonAll) DecodeJSON(d *codec.JSONDecoder) {
	*v = jsonAll{}
	if !d.BeginObject() {
		return
	}
	for {
		key, ok := d.NextField()
		if !ok {
			break
		}
		switch string(key) {
		case "Boolean":
			v.Boolean = d.Boolean()
		case "SByte":
			v.SByte = d.SByte()
		case "Byte":
			v.Byte = d.Byte()
		case "Int16":
			v.Int16 = d.Int16()
		case "UInt16":
			v.UInt16 = d.UInt16()
		case "Int32":
			v.Int32 = d.Int32()
		case "UInt32":
			v.UInt32 = d.UInt32()
		case "Int64":
			v.Int64 = d.Int64()
		case "UInt64":
			v.UInt64 = d.UInt64()
		case "Float":
			v.Float = d.Float()
		case "Double":
			v.Double = d.Double()
		case "String":
			v.String = d.String()
		case "DateTime":
			v.DateTime = d.DateTime()
		case "Guid":
			v.Guid = d.Guid()
		case "ByteString":
			v.ByteString = d.ByteString()
		case "XmlElement":
			v.XmlElement = d.XmlElement()
		case "NodeId":
			v.NodeId = d.NodeId()
		case "ExpandedNodeId":
			v.ExpandedNodeId = d.ExpandedNodeId()
		case "StatusCode":
			v.StatusCode = d.StatusCode()
		case "QualifiedName":
			v.QualifiedName = d.QualifiedName()
		case "LocalizedText":
			v.LocalizedText = d.LocalizedText()
		case "ExtensionObject":
			d.ExtensionObject(&v.ExtensionObject)
		case "DataValue":
			d.DataValue(&v.DataValue)
		case "Variant":
			d.Variant(&v.Variant)
		case "DiagnosticInfo":
			d.DiagnosticInfo(&v.DiagnosticInfo)
		case "Enum":
			v.Enum = int32(d.Enum())
		case "Struct":
			s := new(jsonOptional)
			d.Struct(s)
			v.Struct = s
		case "Array":
			if d.BeginArray() {
				v.Array = []int32{}
				for d.NextElement() {
					v.Array = append(v.Array, d.Int32())
				}
			}
		default:
			d.Skip()
		}
	}
}

// ---- helpers ----

// jsonEncode runs write on a new encoder of the given form and returns the text.
func jsonEncode(t testing.TB, verbose bool, write func(*codec.JSONEncoder)) string {
	t.Helper()
	var b bytes.Buffer
	e := codec.NewJSONEncoder(&b, verbose)
	write(e)
	require.NoError(t, e.Flush())
	return b.String()
}

// jsonBinary returns the binary encoding written by write: a value's identity for
// comparisons that NaNs and typed nils would defeat.
func jsonBinary(t testing.TB, write func(*codec.Encoder)) []byte {
	t.Helper()
	e := codec.NewEncoder(nil)
	write(e)
	require.NoError(t, e.Err())
	return e.Bytes()
}

func jsonVariantBinary(t testing.TB, v codec.Variant) []byte {
	t.Helper()
	return jsonBinary(t, func(e *codec.Encoder) { e.Variant(&v) })
}
