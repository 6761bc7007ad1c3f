package codec

// JSON API used by generated code (Part 6 §5.4, 1.05). The bodies here are placeholders
// that the JSON implementation replaces; the signatures are the contract.

import (
	"io"

	"uastack.dev/pkg/ua/status"
)

const jsonTODO = "codec: JSON not implemented yet"

// JSONEncoder writes the OPC UA JSON encoding of values to an io.Writer, in the compact or
// the verbose form (Part 6 §5.4.1).
type JSONEncoder struct {
	w       io.Writer
	verbose bool
}

// NewJSONEncoder returns an encoder streaming to w.
func NewJSONEncoder(w io.Writer, verbose bool) *JSONEncoder {
	return &JSONEncoder{w: w, verbose: verbose}
}

// Verbose reports whether the verbose form is written.
func (e *JSONEncoder) Verbose() bool { return e.verbose }

// BeginObject starts a JSON object.
func (e *JSONEncoder) BeginObject() { panic(jsonTODO) }

// EndObject ends a JSON object.
func (e *JSONEncoder) EndObject() { panic(jsonTODO) }

// Field writes the key of the next member; the next value writer writes its value.
func (e *JSONEncoder) Field(name string) { panic(jsonTODO) }

// FieldArray starts an array member. It reports whether the caller should write the n
// elements and then call EndArray; false means the member was omitted or written as null.
func (e *JSONEncoder) FieldArray(name string, n int, null bool) bool { panic(jsonTODO) }

// EndArray ends an array started by FieldArray.
func (e *JSONEncoder) EndArray() { panic(jsonTODO) }

// FieldEncodingMask writes the EncodingMask of a structure with optional fields where the
// form requires it.
func (e *JSONEncoder) FieldEncodingMask(mask uint32) { panic(jsonTODO) }

// FieldSwitch writes the SwitchField of a union where the form requires it.
func (e *JSONEncoder) FieldSwitch(sw uint32) { panic(jsonTODO) }

// FieldStruct writes a structure member.
func (e *JSONEncoder) FieldStruct(name string, v Structure) { panic(jsonTODO) }

// Struct writes a structure value.
func (e *JSONEncoder) Struct(v Structure) { panic(jsonTODO) }

// FieldEnum writes an enumeration member; names gives the symbolic name of a value.
func (e *JSONEncoder) FieldEnum(name string, v int64, names func(int64) string) { panic(jsonTODO) }

// Enum writes an enumeration value.
func (e *JSONEncoder) Enum(v int64, names func(int64) string) { panic(jsonTODO) }

// FieldBoolean writes a Boolean member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldBoolean(name string, v bool) { panic(jsonTODO) }

// Boolean writes a Boolean value.
func (e *JSONEncoder) Boolean(v bool) { panic(jsonTODO) }

// FieldSByte writes a SByte member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldSByte(name string, v int8) { panic(jsonTODO) }

// SByte writes a SByte value.
func (e *JSONEncoder) SByte(v int8) { panic(jsonTODO) }

// FieldByte writes a Byte member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldByte(name string, v byte) { panic(jsonTODO) }

// Byte writes a Byte value.
func (e *JSONEncoder) Byte(v byte) { panic(jsonTODO) }

// FieldInt16 writes a Int16 member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldInt16(name string, v int16) { panic(jsonTODO) }

// Int16 writes a Int16 value.
func (e *JSONEncoder) Int16(v int16) { panic(jsonTODO) }

// FieldUInt16 writes a UInt16 member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldUInt16(name string, v uint16) { panic(jsonTODO) }

// UInt16 writes a UInt16 value.
func (e *JSONEncoder) UInt16(v uint16) { panic(jsonTODO) }

// FieldInt32 writes a Int32 member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldInt32(name string, v int32) { panic(jsonTODO) }

// Int32 writes a Int32 value.
func (e *JSONEncoder) Int32(v int32) { panic(jsonTODO) }

// FieldUInt32 writes a UInt32 member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldUInt32(name string, v uint32) { panic(jsonTODO) }

// UInt32 writes a UInt32 value.
func (e *JSONEncoder) UInt32(v uint32) { panic(jsonTODO) }

// FieldInt64 writes a Int64 member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldInt64(name string, v int64) { panic(jsonTODO) }

// Int64 writes a Int64 value.
func (e *JSONEncoder) Int64(v int64) { panic(jsonTODO) }

// FieldUInt64 writes a UInt64 member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldUInt64(name string, v uint64) { panic(jsonTODO) }

// UInt64 writes a UInt64 value.
func (e *JSONEncoder) UInt64(v uint64) { panic(jsonTODO) }

// FieldFloat writes a Float member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldFloat(name string, v float32) { panic(jsonTODO) }

// Float writes a Float value.
func (e *JSONEncoder) Float(v float32) { panic(jsonTODO) }

// FieldDouble writes a Double member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldDouble(name string, v float64) { panic(jsonTODO) }

// Double writes a Double value.
func (e *JSONEncoder) Double(v float64) { panic(jsonTODO) }

// FieldString writes a String member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldString(name string, v string) { panic(jsonTODO) }

// String writes a String value.
func (e *JSONEncoder) String(v string) { panic(jsonTODO) }

// FieldDateTime writes a DateTime member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldDateTime(name string, v DateTime) { panic(jsonTODO) }

// DateTime writes a DateTime value.
func (e *JSONEncoder) DateTime(v DateTime) { panic(jsonTODO) }

// FieldGuid writes a Guid member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldGuid(name string, v Guid) { panic(jsonTODO) }

// Guid writes a Guid value.
func (e *JSONEncoder) Guid(v Guid) { panic(jsonTODO) }

// FieldByteString writes a ByteString member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldByteString(name string, v []byte) { panic(jsonTODO) }

// ByteString writes a ByteString value.
func (e *JSONEncoder) ByteString(v []byte) { panic(jsonTODO) }

// FieldXmlElement writes a XmlElement member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldXmlElement(name string, v string) { panic(jsonTODO) }

// XmlElement writes a XmlElement value.
func (e *JSONEncoder) XmlElement(v string) { panic(jsonTODO) }

// FieldNodeId writes a NodeId member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldNodeId(name string, v NodeId) { panic(jsonTODO) }

// NodeId writes a NodeId value.
func (e *JSONEncoder) NodeId(v NodeId) { panic(jsonTODO) }

// FieldExpandedNodeId writes a ExpandedNodeId member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldExpandedNodeId(name string, v ExpandedNodeId) { panic(jsonTODO) }

// ExpandedNodeId writes a ExpandedNodeId value.
func (e *JSONEncoder) ExpandedNodeId(v ExpandedNodeId) { panic(jsonTODO) }

// FieldStatusCode writes a StatusCode member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldStatusCode(name string, v status.Code) { panic(jsonTODO) }

// StatusCode writes a StatusCode value.
func (e *JSONEncoder) StatusCode(v status.Code) { panic(jsonTODO) }

// FieldQualifiedName writes a QualifiedName member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldQualifiedName(name string, v QualifiedName) { panic(jsonTODO) }

// QualifiedName writes a QualifiedName value.
func (e *JSONEncoder) QualifiedName(v QualifiedName) { panic(jsonTODO) }

// FieldLocalizedText writes a LocalizedText member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldLocalizedText(name string, v LocalizedText) { panic(jsonTODO) }

// LocalizedText writes a LocalizedText value.
func (e *JSONEncoder) LocalizedText(v LocalizedText) { panic(jsonTODO) }

// FieldExtensionObject writes a ExtensionObject member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldExtensionObject(name string, v *ExtensionObject) { panic(jsonTODO) }

// ExtensionObject writes a ExtensionObject value.
func (e *JSONEncoder) ExtensionObject(v *ExtensionObject) { panic(jsonTODO) }

// FieldDataValue writes a DataValue member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldDataValue(name string, v *DataValue) { panic(jsonTODO) }

// DataValue writes a DataValue value.
func (e *JSONEncoder) DataValue(v *DataValue) { panic(jsonTODO) }

// FieldVariant writes a Variant member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldVariant(name string, v *Variant) { panic(jsonTODO) }

// Variant writes a Variant value.
func (e *JSONEncoder) Variant(v *Variant) { panic(jsonTODO) }

// FieldDiagnosticInfo writes a DiagnosticInfo member; the compact form leaves out a default value.
func (e *JSONEncoder) FieldDiagnosticInfo(name string, v *DiagnosticInfo) { panic(jsonTODO) }

// DiagnosticInfo writes a DiagnosticInfo value.
func (e *JSONEncoder) DiagnosticInfo(v *DiagnosticInfo) { panic(jsonTODO) }

// JSONDecoder reads the OPC UA JSON encoding (compact and verbose forms) from a byte
// slice. The first error sticks; Err reports it as a status.Code.
type JSONDecoder struct {
	data []byte
	err  error
}

// NewJSONDecoder returns a decoder over data with DefaultLimits.
func NewJSONDecoder(data []byte) *JSONDecoder { return &JSONDecoder{data: data} }

// Err returns the first error met.
func (d *JSONDecoder) Err() error { return d.err }

// BeginObject consumes the start of an object. It returns false for JSON null or on error.
func (d *JSONDecoder) BeginObject() bool { panic(jsonTODO) }

// NextField returns the key of the next member, valid until the next call, or false at the
// end of the object. The caller reads the member's value or calls Skip.
func (d *JSONDecoder) NextField() ([]byte, bool) { panic(jsonTODO) }

// Skip consumes one value of any kind.
func (d *JSONDecoder) Skip() { panic(jsonTODO) }

// BeginArray consumes the start of an array. It returns false for JSON null or on error.
func (d *JSONDecoder) BeginArray() bool { panic(jsonTODO) }

// NextElement reports whether another element follows, enforcing MaxArrayLength.
func (d *JSONDecoder) NextElement() bool { panic(jsonTODO) }

// Struct reads a structure value into v.
func (d *JSONDecoder) Struct(v Structure) { panic(jsonTODO) }

// Enum reads an enumeration value (a number, or a "Name_Value" string).
func (d *JSONDecoder) Enum() int64 { panic(jsonTODO) }

// Boolean reads a Boolean value.
func (d *JSONDecoder) Boolean() bool { panic(jsonTODO) }

// SByte reads a SByte value.
func (d *JSONDecoder) SByte() int8 { panic(jsonTODO) }

// Byte reads a Byte value.
func (d *JSONDecoder) Byte() byte { panic(jsonTODO) }

// Int16 reads a Int16 value.
func (d *JSONDecoder) Int16() int16 { panic(jsonTODO) }

// UInt16 reads a UInt16 value.
func (d *JSONDecoder) UInt16() uint16 { panic(jsonTODO) }

// Int32 reads a Int32 value.
func (d *JSONDecoder) Int32() int32 { panic(jsonTODO) }

// UInt32 reads a UInt32 value.
func (d *JSONDecoder) UInt32() uint32 { panic(jsonTODO) }

// Int64 reads a Int64 value.
func (d *JSONDecoder) Int64() int64 { panic(jsonTODO) }

// UInt64 reads a UInt64 value.
func (d *JSONDecoder) UInt64() uint64 { panic(jsonTODO) }

// Float reads a Float value.
func (d *JSONDecoder) Float() float32 { panic(jsonTODO) }

// Double reads a Double value.
func (d *JSONDecoder) Double() float64 { panic(jsonTODO) }

// String reads a String value.
func (d *JSONDecoder) String() string { panic(jsonTODO) }

// DateTime reads a DateTime value.
func (d *JSONDecoder) DateTime() DateTime { panic(jsonTODO) }

// Guid reads a Guid value.
func (d *JSONDecoder) Guid() Guid { panic(jsonTODO) }

// ByteString reads a ByteString value.
func (d *JSONDecoder) ByteString() []byte { panic(jsonTODO) }

// XmlElement reads a XmlElement value.
func (d *JSONDecoder) XmlElement() string { panic(jsonTODO) }

// NodeId reads a NodeId value.
func (d *JSONDecoder) NodeId() NodeId { panic(jsonTODO) }

// ExpandedNodeId reads a ExpandedNodeId value.
func (d *JSONDecoder) ExpandedNodeId() ExpandedNodeId { panic(jsonTODO) }

// StatusCode reads a StatusCode value.
func (d *JSONDecoder) StatusCode() status.Code { panic(jsonTODO) }

// QualifiedName reads a QualifiedName value.
func (d *JSONDecoder) QualifiedName() QualifiedName { panic(jsonTODO) }

// LocalizedText reads a LocalizedText value.
func (d *JSONDecoder) LocalizedText() LocalizedText { panic(jsonTODO) }

// ExtensionObject reads a ExtensionObject value into v.
func (d *JSONDecoder) ExtensionObject(v *ExtensionObject) { panic(jsonTODO) }

// DataValue reads a DataValue value into v.
func (d *JSONDecoder) DataValue(v *DataValue) { panic(jsonTODO) }

// Variant reads a Variant value into v.
func (d *JSONDecoder) Variant(v *Variant) { panic(jsonTODO) }

// DiagnosticInfo reads a DiagnosticInfo value into v.
func (d *JSONDecoder) DiagnosticInfo(v *DiagnosticInfo) { panic(jsonTODO) }
