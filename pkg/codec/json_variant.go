package codec

// JSON encoding of the container built-in types: Variant (Part 6 §5.4.2.17), DataValue
// (§5.4.2.18), ExtensionObject (§5.4.2.16) and DiagnosticInfo (§5.4.2.13).

import (
	"math"
	"unicode/utf8"

	"uastack.dev/pkg/status"
)

// ExtensionObjectJSON marks an ExtensionObject whose Body is the JSON object of a
// structure the decoder did not know, kept (without its "UaTypeId") so that encoding it
// again as JSON reproduces it. TypeID is then the DataType NodeId from "UaTypeId". It is
// not an encoding of the binary wire (Part 6 §5.2.2.15 allows only binary and XML bodies).
const ExtensionObjectJSON = 0x03

// ---- Variant ----

// variantIsNull reports whether a scalar's Value member is left out: the NULL of a
// nullable built-in type (Part 6 Table 1, §5.4.2.17).
func variantIsNull(v *Variant) bool {
	switch v.typ {
	case TypeString, TypeXmlElement, TypeByteString:
		return IsNull(v.str)
	case TypeDateTime:
		return DateTime(v.num).clamp() == 0
	case TypeGuid:
		return v.str == "" || v.str == zeroGuid
	case TypeNodeId:
		n := v.NodeId()
		return n.IsNull()
	case TypeQualifiedName:
		return v.num == 0 && IsNull(v.str)
	case TypeExpandedNodeId:
		x, _ := v.obj.(ExpandedNodeId)
		return x.IsNull()
	case TypeLocalizedText:
		x, _ := v.obj.(LocalizedText)
		return IsNull(x.Locale) && IsNull(x.Text)
	case TypeExtensionObject:
		x, _ := v.obj.(ExtensionObject)
		return x.IsNull()
	case TypeDataValue:
		x, _ := v.obj.(*DataValue)
		return dataValueIsNull(x)
	case TypeDiagnosticInfo:
		x, _ := v.obj.(*DiagnosticInfo)
		return diagnosticInfoIsNull(x)
	}
	return false
}

// FieldVariant writes a Variant member; a null Variant is left out of the compact form
// and written as null in the verbose form.
func (e *JSONEncoder) FieldVariant(name string, v *Variant) {
	if v == nil || v.typ == TypeNull {
		if e.verbose {
			e.key(name)
			e.null()
		}
		return
	}
	e.key(name)
	e.Variant(v)
}

// Variant writes v as {"UaType":<type>,"Value":...,"Dimensions":[...]} (Part 6
// §5.4.2.17): Value is left out for the NULL of a nullable type, Dimensions is written
// for multi-dimensional arrays only, whose Value is the flat element list. A null Variant
// is null. A null array is written as [] (JSON cannot keep it apart from empty).
func (e *JSONEncoder) Variant(v *Variant) {
	if v == nil || v.typ == TypeNull {
		e.null()
		return
	}
	if !e.enter() {
		e.null()
		return
	}
	e.BeginObject()
	e.variantMembers(v)
	e.EndObject()
	e.leave()
}

func (e *JSONEncoder) variantMembers(v *Variant) {
	if v.typ >= typeCount || v.typ == TypeVariant && !v.array {
		e.Fail(status.BadEncodingError)
		return
	}
	e.key("UaType")
	e.Byte(byte(v.typ))
	if v.array {
		flat, dims := v.obj, []int32(nil)
		if m, ok := v.obj.(*matrix); ok {
			flat, dims = m.flat, m.dims
		}
		e.key("Value")
		e.array(flat)
		if dims != nil {
			e.key("Dimensions")
			e.beginArray(len(dims))
			for _, n := range dims {
				e.Int32(n)
			}
			e.EndArray()
		}
		return
	}
	if variantIsNull(v) {
		return
	}
	e.key("Value")
	e.scalarJSON(v)
}

// scalarJSON writes the value of the scalar v.
func (e *JSONEncoder) scalarJSON(v *Variant) {
	switch v.typ {
	case TypeBoolean:
		e.Boolean(v.num != 0)
	case TypeSByte:
		e.SByte(int8(v.num))
	case TypeByte:
		e.Byte(byte(v.num))
	case TypeInt16:
		e.Int16(int16(v.num))
	case TypeUInt16:
		e.UInt16(uint16(v.num))
	case TypeInt32:
		e.Int32(int32(v.num))
	case TypeUInt32:
		e.UInt32(uint32(v.num))
	case TypeInt64:
		e.Int64(int64(v.num))
	case TypeUInt64:
		e.UInt64(v.num)
	case TypeFloat:
		e.Float(math.Float32frombits(uint32(v.num)))
	case TypeDouble:
		e.Double(math.Float64frombits(v.num))
	case TypeString, TypeXmlElement:
		e.String(v.str)
	case TypeDateTime:
		e.DateTime(DateTime(v.num))
	case TypeGuid:
		e.Guid(v.Guid())
	case TypeByteString:
		e.beforeValue()
		e.base64(stringBytes(v.str))
		e.afterValue()
	case TypeNodeId:
		e.NodeId(v.NodeId())
	case TypeExpandedNodeId:
		x, _ := v.obj.(ExpandedNodeId)
		e.ExpandedNodeId(x)
	case TypeStatusCode:
		e.StatusCode(status.Code(v.num))
	case TypeQualifiedName:
		e.QualifiedName(QualifiedName{NamespaceIndex: uint16(v.num), Name: v.str})
	case TypeLocalizedText:
		x, _ := v.obj.(LocalizedText)
		e.LocalizedText(x)
	case TypeExtensionObject:
		x, _ := v.obj.(ExtensionObject)
		e.ExtensionObject(&x)
	case TypeDataValue:
		x, _ := v.obj.(*DataValue)
		e.DataValue(x)
	case TypeDiagnosticInfo:
		x, _ := v.obj.(*DiagnosticInfo)
		e.DiagnosticInfo(x)
	}
}

// array writes a typed slice as a JSON array.
func (e *JSONEncoder) array(x any) {
	switch x := x.(type) {
	case []bool:
		e.beginArray(len(x))
		for _, v := range x {
			e.Boolean(v)
		}
	case []int8:
		e.beginArray(len(x))
		for _, v := range x {
			e.SByte(v)
		}
	case []byte:
		e.beginArray(len(x))
		for _, v := range x {
			e.Byte(v)
		}
	case []int16:
		e.beginArray(len(x))
		for _, v := range x {
			e.Int16(v)
		}
	case []uint16:
		e.beginArray(len(x))
		for _, v := range x {
			e.UInt16(v)
		}
	case []int32:
		e.beginArray(len(x))
		for _, v := range x {
			e.Int32(v)
		}
	case []uint32:
		e.beginArray(len(x))
		for _, v := range x {
			e.UInt32(v)
		}
	case []int64:
		e.beginArray(len(x))
		for _, v := range x {
			e.Int64(v)
		}
	case []uint64:
		e.beginArray(len(x))
		for _, v := range x {
			e.UInt64(v)
		}
	case []float32:
		e.beginArray(len(x))
		for _, v := range x {
			e.Float(v)
		}
	case []float64:
		e.beginArray(len(x))
		for _, v := range x {
			e.Double(v)
		}
	case []string:
		e.beginArray(len(x))
		for _, v := range x {
			e.String(v)
		}
	case []DateTime:
		e.beginArray(len(x))
		for _, v := range x {
			e.DateTime(v)
		}
	case []Guid:
		e.beginArray(len(x))
		for _, v := range x {
			e.Guid(v)
		}
	case [][]byte:
		e.beginArray(len(x))
		for _, v := range x {
			e.ByteString(v)
		}
	case []NodeId:
		e.beginArray(len(x))
		for _, v := range x {
			e.NodeId(v)
		}
	case []ExpandedNodeId:
		e.beginArray(len(x))
		for _, v := range x {
			e.ExpandedNodeId(v)
		}
	case []status.Code:
		e.beginArray(len(x))
		for _, v := range x {
			e.StatusCode(v)
		}
	case []QualifiedName:
		e.beginArray(len(x))
		for _, v := range x {
			e.QualifiedName(v)
		}
	case []LocalizedText:
		e.beginArray(len(x))
		for _, v := range x {
			e.LocalizedText(v)
		}
	case []ExtensionObject:
		e.beginArray(len(x))
		for i := range x {
			e.ExtensionObject(&x[i])
		}
	case []DataValue:
		e.beginArray(len(x))
		for i := range x {
			e.DataValue(&x[i])
		}
	case []Variant:
		e.beginArray(len(x))
		for i := range x {
			e.Variant(&x[i])
		}
	case []DiagnosticInfo:
		e.beginArray(len(x))
		for i := range x {
			e.DiagnosticInfo(&x[i])
		}
	default:
		e.Fail(status.BadEncodingError)
		e.beginArray(0)
	}
	e.EndArray()
}

// variantParts holds what has been read of a Variant or DataValue object. The Value is
// decoded as it is met once UaType is known (the order encoders write); a Value that
// comes first is skipped and decoded at the end.
type variantParts struct {
	typ      TypeID
	hasType  bool
	hasValue bool // decoded into the Variant
	valuePos int  // offset of a Value met before UaType, or -1
	dims     []int32
	seen     uint16
}

const (
	seenType = 1 << iota
	seenValue
	seenDims
	seenStatus
	seenSourceTS
	seenSourcePS
	seenServerTS
	seenServerPS
)

// once records a member and fails on a repeated one.
func (d *JSONDecoder) once(seen *uint16, bit uint16) bool {
	if *seen&bit != 0 {
		d.malformed()
		return false
	}
	*seen |= bit
	return true
}

// variantMember reads the Variant member k ("Type" and "Body" are the 1.04 names) into
// v and p; it reports false for other members.
func (d *JSONDecoder) variantMember(v *Variant, p *variantParts, k []byte) bool {
	switch string(k) {
	case "UaType", "Type":
		if d.once(&p.seen, seenType) {
			t := TypeID(d.integer(0, math.MaxUint8))
			if t >= typeCount {
				d.malformed()
			}
			p.typ, p.hasType = t, true
		}
	case "Value", "Body":
		if !d.once(&p.seen, seenValue) {
			break
		}
		if p.hasType {
			d.variantValue(v, p.typ)
			p.hasValue = true
		} else {
			d.ws()
			p.valuePos = d.pos
			d.Skip()
		}
	case "Dimensions":
		if d.once(&p.seen, seenDims) {
			p.dims = d.dimensions()
		}
	default:
		return false
	}
	return true
}

// dimensions reads the Dimensions array: at least one length, none negative, whose
// product is within MaxArrayLength.
func (d *JSONDecoder) dimensions() []int32 {
	if !d.BeginArray() {
		d.malformed()
		return nil
	}
	dims := []int32{}
	total := 1
	for d.NextElement() {
		n := d.Int32()
		if n < 0 {
			d.malformed()
			return nil
		}
		total *= int(n)
		if total > d.limits.MaxArrayLength {
			d.fail(status.BadEncodingLimitsExceeded)
			return nil
		}
		dims = append(dims, n)
	}
	if len(dims) == 0 {
		d.malformed()
	}
	return dims
}

// Variant reads a Variant into v: the 1.05 {"UaType","Value","Dimensions"} object with its
// members in any order, the 1.04 {"Type","Body","Dimensions"} object, or null. Arrays
// become the typed slices the binary Decoder builds.
func (d *JSONDecoder) Variant(v *Variant) {
	*v = Variant{}
	if d.err != nil || d.null() {
		return
	}
	if d.ws() != '{' {
		d.malformed()
		return
	}
	if !d.enter() {
		return
	}
	p := variantParts{valuePos: -1}
	d.BeginObject()
	for {
		k, ok := d.NextField()
		if !ok {
			break
		}
		if !d.variantMember(v, &p, k) {
			d.Skip()
		}
	}
	d.variantFinish(v, &p)
	d.leave()
}

// variantFinish decodes a Value met before UaType and applies Dimensions; d is left after
// the object.
func (d *JSONDecoder) variantFinish(v *Variant, p *variantParts) {
	if d.err == nil {
		switch {
		case !p.hasType:
			if p.valuePos >= 0 || p.dims != nil {
				d.malformed()
			}
		case p.valuePos >= 0:
			end := d.pos
			d.pos = p.valuePos
			d.variantValue(v, p.typ)
			if d.err == nil {
				d.pos = end
			}
		case !p.hasValue:
			if p.typ == TypeVariant {
				d.malformed()
			}
			variantZero(v, p.typ)
		}
	}
	if d.err == nil && p.dims != nil {
		if !v.array || sliceLen(v.obj) != product(p.dims) {
			d.malformed()
		} else {
			v.obj = &matrix{flat: v.obj, dims: p.dims}
		}
	}
	if d.err != nil {
		*v = Variant{}
	}
}

func product(dims []int32) int {
	n := 1
	for _, x := range dims {
		n *= int(x)
	}
	return n
}

// variantValue reads the Value of a Variant of type t at d.pos: a JSON array for an
// array, null for the NULL of t, else a scalar.
func (d *JSONDecoder) variantValue(v *Variant, t TypeID) {
	switch c := d.ws(); {
	case t == TypeNull:
		d.Skip()
	case c == '[':
		flat := d.variantArray(t)
		*v = Variant{typ: t, array: true, obj: flat}
	case c == '"' && t == TypeByte:
		// Some encoders write a Byte array as a ByteString.
		*v = Variant{typ: t, array: true, obj: d.byteString()}
	case c == 'n':
		d.literal("null")
		if t == TypeVariant {
			d.malformed()
		}
		variantZero(v, t)
	default:
		*v = Variant{}
		d.variantScalar(v, t)
	}
}

// variantZero makes v the NULL or default scalar of type t.
func variantZero(v *Variant, t TypeID) {
	*v = Variant{typ: t}
	switch t {
	case TypeGuid:
		v.str = zeroGuid
	case TypeExpandedNodeId:
		v.obj = ExpandedNodeId{}
	case TypeLocalizedText:
		v.obj = LocalizedText{}
	case TypeExtensionObject:
		v.obj = ExtensionObject{}
	case TypeDataValue:
		v.obj = &DataValue{}
	case TypeDiagnosticInfo:
		v.obj = &DiagnosticInfo{}
	}
}

func (d *JSONDecoder) variantScalar(v *Variant, t TypeID) {
	v.typ = t
	switch t {
	case TypeBoolean:
		if d.Boolean() {
			v.num = 1
		}
	case TypeSByte:
		v.num = uint64(uint8(d.SByte()))
	case TypeByte:
		v.num = uint64(d.Byte())
	case TypeInt16:
		v.num = uint64(uint16(d.Int16()))
	case TypeUInt16:
		v.num = uint64(d.UInt16())
	case TypeInt32:
		v.num = uint64(uint32(d.Int32()))
	case TypeUInt32:
		v.num = uint64(d.UInt32())
	case TypeInt64:
		v.num = uint64(d.Int64())
	case TypeUInt64:
		v.num = d.UInt64()
	case TypeFloat:
		v.num = uint64(math.Float32bits(d.Float()))
	case TypeDouble:
		v.num = math.Float64bits(d.Double())
	case TypeString, TypeXmlElement:
		v.str = d.String()
	case TypeDateTime:
		v.num = uint64(d.DateTime())
	case TypeGuid:
		*v = GuidVariant(d.Guid())
	case TypeByteString:
		b := d.byteString()
		if b != nil {
			v.str = textString(b)
		}
	case TypeNodeId:
		*v = NodeIdVariant(d.NodeId())
	case TypeExpandedNodeId:
		v.obj = d.ExpandedNodeId()
	case TypeStatusCode:
		v.num = uint64(d.StatusCode())
	case TypeQualifiedName:
		*v = QualifiedNameVariant(d.QualifiedName())
	case TypeLocalizedText:
		v.obj = d.LocalizedText()
	case TypeExtensionObject:
		var x ExtensionObject
		d.ExtensionObject(&x)
		v.obj = x
	case TypeDataValue:
		x := new(DataValue)
		d.DataValue(x)
		v.obj = x
	case TypeDiagnosticInfo:
		x := new(DiagnosticInfo)
		d.DiagnosticInfo(x)
		v.obj = x
	default:
		// A Variant cannot hold a scalar Variant.
		d.malformed()
	}
}

// variantArray reads a JSON array of t into a typed slice; each element is counted
// against MaxArrayLength as it arrives, so memory grows only with the input.
func (d *JSONDecoder) variantArray(t TypeID) any {
	if !d.BeginArray() {
		return nullSlice(t)
	}
	switch t {
	case TypeBoolean:
		x := []bool{}
		for d.NextElement() {
			x = append(x, d.Boolean())
		}
		return x
	case TypeSByte:
		x := []int8{}
		for d.NextElement() {
			x = append(x, d.SByte())
		}
		return x
	case TypeByte:
		x := []byte{}
		for d.NextElement() {
			x = append(x, d.Byte())
		}
		return x
	case TypeInt16:
		x := []int16{}
		for d.NextElement() {
			x = append(x, d.Int16())
		}
		return x
	case TypeUInt16:
		x := []uint16{}
		for d.NextElement() {
			x = append(x, d.UInt16())
		}
		return x
	case TypeInt32:
		x := []int32{}
		for d.NextElement() {
			x = append(x, d.Int32())
		}
		return x
	case TypeUInt32:
		x := []uint32{}
		for d.NextElement() {
			x = append(x, d.UInt32())
		}
		return x
	case TypeInt64:
		x := []int64{}
		for d.NextElement() {
			x = append(x, d.Int64())
		}
		return x
	case TypeUInt64:
		x := []uint64{}
		for d.NextElement() {
			x = append(x, d.UInt64())
		}
		return x
	case TypeFloat:
		x := []float32{}
		for d.NextElement() {
			x = append(x, d.Float())
		}
		return x
	case TypeDouble:
		x := []float64{}
		for d.NextElement() {
			x = append(x, d.Double())
		}
		return x
	case TypeString, TypeXmlElement:
		x := []string{}
		for d.NextElement() {
			x = append(x, d.String())
		}
		return x
	case TypeDateTime:
		x := []DateTime{}
		for d.NextElement() {
			x = append(x, d.DateTime())
		}
		return x
	case TypeGuid:
		x := []Guid{}
		for d.NextElement() {
			x = append(x, d.Guid())
		}
		return x
	case TypeByteString:
		x := [][]byte{}
		for d.NextElement() {
			x = append(x, d.byteString())
		}
		return x
	case TypeNodeId:
		x := []NodeId{}
		for d.NextElement() {
			x = append(x, d.NodeId())
		}
		return x
	case TypeExpandedNodeId:
		x := []ExpandedNodeId{}
		for d.NextElement() {
			x = append(x, d.ExpandedNodeId())
		}
		return x
	case TypeStatusCode:
		x := []status.Code{}
		for d.NextElement() {
			x = append(x, d.StatusCode())
		}
		return x
	case TypeQualifiedName:
		x := []QualifiedName{}
		for d.NextElement() {
			x = append(x, d.QualifiedName())
		}
		return x
	case TypeLocalizedText:
		x := []LocalizedText{}
		for d.NextElement() {
			x = append(x, d.LocalizedText())
		}
		return x
	case TypeExtensionObject:
		x := []ExtensionObject{}
		for d.NextElement() {
			x = append(x, ExtensionObject{})
			d.ExtensionObject(&x[len(x)-1])
		}
		return x
	case TypeDataValue:
		x := []DataValue{}
		for d.NextElement() {
			x = append(x, DataValue{})
			d.DataValue(&x[len(x)-1])
		}
		return x
	case TypeVariant:
		x := []Variant{}
		for d.NextElement() {
			x = append(x, Variant{})
			d.Variant(&x[len(x)-1])
		}
		return x
	case TypeDiagnosticInfo:
		x := []DiagnosticInfo{}
		for d.NextElement() {
			x = append(x, DiagnosticInfo{})
			d.DiagnosticInfo(&x[len(x)-1])
		}
		return x
	}
	d.malformed()
	return nil
}

// ---- DataValue ----

// dataValueIsNull reports whether v has no value, a Good status and no timestamps
// (Picoseconds without their timestamp are ignored, as in the binary encoding).
func dataValueIsNull(v *DataValue) bool {
	return v == nil || v.Value.typ == TypeNull && v.Status == status.Good &&
		v.SourceTimestamp.clamp() == 0 && v.ServerTimestamp.clamp() == 0
}

// FieldDataValue writes a DataValue member; an empty DataValue is left out of the compact
// form and written as null in the verbose form.
func (e *JSONEncoder) FieldDataValue(name string, v *DataValue) {
	if dataValueIsNull(v) {
		if e.verbose {
			e.key(name)
			e.null()
		}
		return
	}
	e.key(name)
	e.DataValue(v)
}

// DataValue writes v as one object holding the Variant's members (UaType, Value,
// Dimensions) and Status, SourceTimestamp, SourcePicoseconds, ServerTimestamp and
// ServerPicoseconds, each left out at its default (Part 6 §5.4.2.18). Picoseconds are
// normalised as the binary Encoder does them. An empty DataValue is null.
func (e *JSONEncoder) DataValue(v *DataValue) {
	if dataValueIsNull(v) {
		e.null()
		return
	}
	if !e.enter() {
		e.null()
		return
	}
	e.BeginObject()
	if v.Value.typ != TypeNull {
		e.variantMembers(&v.Value)
	}
	if v.Status != status.Good {
		e.key("Status")
		e.StatusCode(v.Status)
	}
	srcTS, srvTS := v.SourceTimestamp.clamp(), v.ServerTimestamp.clamp()
	if srcTS != 0 {
		e.key("SourceTimestamp")
		e.DateTime(srcTS)
	}
	if ps := picoseconds(srcTS, v.SourcePicoseconds); ps != 0 {
		e.key("SourcePicoseconds")
		e.UInt16(ps)
	}
	if srvTS != 0 {
		e.key("ServerTimestamp")
		e.DateTime(srvTS)
	}
	if ps := picoseconds(srvTS, v.ServerPicoseconds); ps != 0 {
		e.key("ServerPicoseconds")
		e.UInt16(ps)
	}
	e.EndObject()
	e.leave()
}

// DataValue reads a DataValue into v: the 1.05 object with the Variant's members inline,
// the 1.04 object whose "Value" is a Variant object, or null.
func (d *JSONDecoder) DataValue(v *DataValue) {
	*v = DataValue{}
	if d.err != nil || d.null() {
		return
	}
	if d.ws() != '{' {
		d.malformed()
		return
	}
	if !d.enter() {
		return
	}
	p := variantParts{valuePos: -1}
	var legacy bool // 1.04: "Value" is a whole Variant object
	d.BeginObject()
	for {
		k, ok := d.NextField()
		if !ok {
			break
		}
		switch string(k) {
		case "UaType", "Dimensions":
			d.variantMember(&v.Value, &p, k)
		case "Value":
			if !p.hasType && d.ws() == '{' && p.seen&seenValue == 0 {
				// Without UaType so far this may be a 1.04 Variant object; decide at the end.
				p.seen |= seenValue
				p.valuePos = d.pos
				legacy = true
				d.Skip()
			} else {
				d.variantMember(&v.Value, &p, k)
			}
		case "Status":
			if d.once(&p.seen, seenStatus) {
				v.Status = d.StatusCode()
			}
		case "SourceTimestamp":
			if d.once(&p.seen, seenSourceTS) {
				v.SourceTimestamp = d.DateTime()
			}
		case "SourcePicoseconds":
			if d.once(&p.seen, seenSourcePS) {
				v.SourcePicoseconds = d.UInt16()
			}
		case "ServerTimestamp":
			if d.once(&p.seen, seenServerTS) {
				v.ServerTimestamp = d.DateTime()
			}
		case "ServerPicoseconds":
			if d.once(&p.seen, seenServerPS) {
				v.ServerPicoseconds = d.UInt16()
			}
		default:
			d.Skip()
		}
	}
	if d.err == nil && legacy && !p.hasType && p.dims == nil {
		end := d.pos
		d.pos = p.valuePos
		d.Variant(&v.Value)
		if d.err == nil {
			d.pos = end
		}
	} else {
		d.variantFinish(&v.Value, &p)
	}
	d.leave()
	v.SourcePicoseconds = picoseconds(v.SourceTimestamp, v.SourcePicoseconds)
	v.ServerPicoseconds = picoseconds(v.ServerTimestamp, v.ServerPicoseconds)
	if d.err != nil {
		*v = DataValue{}
	}
}

// ---- DiagnosticInfo ----

func diagnosticInfoIsNull(v *DiagnosticInfo) bool {
	if v == nil {
		return true
	}
	m := v.Mask
	return (m&HasSymbolicID == 0 || v.SymbolicID == -1) &&
		(m&HasNamespaceURI == 0 || v.NamespaceURI == -1) &&
		(m&HasLocale == 0 || v.Locale == -1) &&
		(m&HasLocalizedText == 0 || v.LocalizedText == -1) &&
		(m&HasAdditionalInfo == 0 || IsNull(v.AdditionalInfo)) &&
		(m&HasInnerStatusCode == 0 || v.InnerStatusCode == status.Good) &&
		diagnosticInfoIsNull(v.InnerDiagnosticInfo)
}

// FieldDiagnosticInfo writes a DiagnosticInfo member; an empty one is left out of the
// compact form and written as null in the verbose form.
func (e *JSONEncoder) FieldDiagnosticInfo(name string, v *DiagnosticInfo) {
	if diagnosticInfoIsNull(v) {
		if e.verbose {
			e.key(name)
			e.null()
		}
		return
	}
	e.key(name)
	e.DiagnosticInfo(v)
}

// DiagnosticInfo writes v as an object of the fields its Mask marks present, each left
// out at its default (-1 for the string table indexes, null, Good) (Part 6 §5.4.2.13). An
// empty DiagnosticInfo is null.
func (e *JSONEncoder) DiagnosticInfo(v *DiagnosticInfo) {
	if diagnosticInfoIsNull(v) {
		e.null()
		return
	}
	if !e.enter() {
		e.null()
		return
	}
	e.BeginObject()
	index := func(name string, bit uint8, x int32) {
		if v.Mask&bit != 0 && x != -1 {
			e.key(name)
			e.Int32(x)
		}
	}
	index("SymbolicId", HasSymbolicID, v.SymbolicID)
	index("NamespaceUri", HasNamespaceURI, v.NamespaceURI)
	index("Locale", HasLocale, v.Locale)
	index("LocalizedText", HasLocalizedText, v.LocalizedText)
	if v.Mask&HasAdditionalInfo != 0 && !IsNull(v.AdditionalInfo) {
		e.key("AdditionalInfo")
		e.String(v.AdditionalInfo)
	}
	if v.Mask&HasInnerStatusCode != 0 && v.InnerStatusCode != status.Good {
		e.key("InnerStatusCode")
		e.StatusCode(v.InnerStatusCode)
	}
	if !diagnosticInfoIsNull(v.InnerDiagnosticInfo) {
		e.key("InnerDiagnosticInfo")
		e.DiagnosticInfo(v.InnerDiagnosticInfo)
	}
	e.EndObject()
	e.leave()
}

// DiagnosticInfo reads a DiagnosticInfo into v, setting the Mask bit of each field present
// with other than its default; nesting counts against MaxDepth.
func (d *JSONDecoder) DiagnosticInfo(v *DiagnosticInfo) {
	*v = DiagnosticInfo{}
	if d.err != nil || d.null() {
		return
	}
	if d.ws() != '{' {
		d.malformed()
		return
	}
	if !d.enter() {
		return
	}
	index := func(bit uint8, x *int32) {
		if n := d.Int32(); n != -1 {
			*x = n
			v.Mask |= bit
		}
	}
	d.BeginObject()
	for {
		k, ok := d.NextField()
		if !ok {
			break
		}
		switch string(k) {
		case "SymbolicId":
			index(HasSymbolicID, &v.SymbolicID)
		case "NamespaceUri":
			index(HasNamespaceURI, &v.NamespaceURI)
		case "Locale":
			index(HasLocale, &v.Locale)
		case "LocalizedText":
			index(HasLocalizedText, &v.LocalizedText)
		case "AdditionalInfo":
			if s := d.String(); !IsNull(s) {
				v.AdditionalInfo = s
				v.Mask |= HasAdditionalInfo
			}
		case "InnerStatusCode":
			if c := d.StatusCode(); c != status.Good {
				v.InnerStatusCode = c
				v.Mask |= HasInnerStatusCode
			}
		case "InnerDiagnosticInfo":
			inner := new(DiagnosticInfo)
			d.DiagnosticInfo(inner)
			if diagnosticInfoIsNull(inner) {
				v.InnerDiagnosticInfo = nil
				v.Mask &^= HasInnerDiagnosticInfo
			} else {
				v.InnerDiagnosticInfo = inner
				v.Mask |= HasInnerDiagnosticInfo
			}
		default:
			d.Skip()
		}
	}
	d.leave()
}

// ---- ExtensionObject ----

// FieldExtensionObject writes a ExtensionObject member; a null one is left out of the
// compact form and written as {} in the verbose form (Part 6 §5.4.2.16).
func (e *JSONEncoder) FieldExtensionObject(name string, v *ExtensionObject) {
	if v == nil || v.IsNull() {
		if e.verbose {
			e.key(name)
			e.BeginObject()
			e.EndObject()
		}
		return
	}
	e.key(name)
	e.ExtensionObject(v)
}

// ExtensionObject writes v (Part 6 §5.4.2.16): a decoded or wrapped structure as its own
// JSON object with "UaTypeId", its DataType NodeId, inserted first; a binary or XML body
// as {"UaTypeId","UaEncoding","UaBody"} with the body in base64; a JSON body kept from a
// decode as that object with "UaTypeId" put back. A null ExtensionObject is null.
func (e *JSONEncoder) ExtensionObject(v *ExtensionObject) {
	if v == nil || v.IsNull() {
		e.null()
		return
	}
	if !e.enter() {
		e.null()
		return
	}
	switch {
	case v.Value != nil:
		t := v.Value.TypeInfo()
		id := t.DataType
		if id.IsNull() {
			id = t.JSONEncoding
		}
		if id.IsNull() {
			id = t.BinaryEncoding
		}
		n := len(e.frames)
		e.typeID, e.typeIDPending = id, true
		v.Value.EncodeJSON(e)
		if e.typeIDPending || len(e.frames) != n {
			e.typeIDPending = false
			e.Fail(status.BadEncodingError)
		}
	case v.TypeID.IsNull():
		// A body without a type cannot be written.
		e.Fail(status.BadEncodingError)
		e.null()
	case v.Encoding == ExtensionObjectJSON:
		e.keptJSON(v.TypeID, v.Body)
	default:
		id := v.TypeID
		if t := LookupType(id); t != nil && !t.DataType.IsNull() {
			id = t.DataType
		}
		e.BeginObject()
		e.key("UaTypeId")
		e.NodeId(id)
		if v.Encoding == ExtensionObjectBinary || v.Encoding == ExtensionObjectXML {
			e.key("UaEncoding")
			e.Byte(v.Encoding)
			e.key("UaBody")
			body := v.Body
			if body == nil {
				body = []byte{}
			}
			e.ByteString(body)
		} else if v.Encoding != ExtensionObjectNoBody {
			e.Fail(status.BadEncodingError)
		}
		e.EndObject()
	}
	e.leave()
}

// keptJSON writes a JSON body kept by the decoder: "UaTypeId" and then the body's members.
// The body must be one JSON object without "UaTypeId".
func (e *JSONEncoder) keptJSON(id NodeId, body []byte) {
	d := NewJSONDecoder(body)
	if d.BeginObject() {
		for {
			k, ok := d.NextField()
			if !ok {
				break
			}
			if string(k) == "UaTypeId" {
				d.malformed()
			}
			d.Skip()
		}
	} else {
		d.malformed()
	}
	if d.Finish() != nil || !utf8.Valid(body) {
		e.Fail(status.BadEncodingError)
		e.null()
		return
	}
	e.BeginObject()
	e.key("UaTypeId")
	e.NodeId(id)
	// body is {<ws><members><ws>}; copy the members.
	i, j := 1, len(body)-1
	for body[j] != '}' {
		j--
	}
	for i < j && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	if i < j {
		e.rawByte(',')
		e.rawBytes(body[i:j])
	}
	e.EndObject()
}

// ExtensionObject reads an ExtensionObject into x (Part 6 §5.4.2.16). The object is
// scanned first: repeated member names are an error and "UaTypeId" may be anywhere. A
// type registered under that id (codec.LookupType: its DataType or one of its encodings)
// is decoded from the same object, with "UaTypeId" hidden from its DecodeJSON. A
// "UaEncoding"/"UaBody" body is decoded with the binary Decoder when its type is
// registered and kept otherwise. The JSON object of an unknown type is kept in Body with
// Encoding ExtensionObjectJSON. null and {} are the null ExtensionObject; the 1.04
// {"TypeId","Encoding","Body"} form is accepted.
func (d *JSONDecoder) ExtensionObject(x *ExtensionObject) {
	*x = ExtensionObject{}
	if d.err != nil || d.null() {
		return
	}
	if d.ws() != '{' {
		d.malformed()
		return
	}
	if !d.enter() {
		return
	}
	savedHide, savedEnc, savedBody := d.hideLevel, d.eoEncoding, d.eoBody
	spanBase, arenaBase := len(d.spans), len(d.keyArena)
	d.hideLevel = 0
	if t, id := d.leadingType(); t != nil {
		d.decodeKnown(x, t, id, spanBase)
	} else if d.err == nil {
		d.extensionObject(x, spanBase)
	}
	d.spans, d.keyArena = d.spans[:spanBase], d.keyArena[:arenaBase]
	d.hideLevel, d.eoEncoding, d.eoBody = savedHide, savedEnc, savedBody
	d.hidePending = false
	d.leave()
	if d.err != nil {
		*x = ExtensionObject{}
	}
}

// leadingType returns the registered type named by a "UaTypeId" that is the first member
// of the object at d.pos (the order encoders write), and leaves d where it was.
func (d *JSONDecoder) leadingType() (*TypeInfo, NodeId) {
	start, frames := d.pos, len(d.frames)
	d.BeginObject()
	k, ok := d.NextField()
	var t *TypeInfo
	var id NodeId
	if ok && string(k) == "UaTypeId" {
		id = d.NodeId()
		if d.err == nil && !id.IsNull() {
			t = LookupType(id)
		}
	}
	if d.err != nil {
		return nil, NodeId{}
	}
	d.pos, d.frames = start, d.frames[:frames]
	return t, id
}

// decodeKnown decodes the object at d.pos as the registered type t in one pass: its
// DecodeJSON reads the members while NextField records their names for the duplicate
// check and holds back UaTypeId, UaEncoding and UaBody.
func (d *JSONDecoder) decodeKnown(x *ExtensionObject, t *TypeInfo, id NodeId, base int) {
	start, frames := d.pos, len(d.frames)
	d.eoEncoding, d.eoBody = -1, -1
	d.hidePending = true
	v := t.New()
	v.DecodeJSON(d)
	d.hidePending = false
	if d.err != nil {
		return
	}
	if len(d.frames) != frames || d.pos == start {
		// DecodeJSON did not read the whole object.
		d.malformed()
		return
	}
	if hasDuplicateName(d.spans[base:], d.keyArena) {
		d.malformed()
		return
	}
	if d.eoEncoding < 0 {
		x.Value = v
		return
	}
	end := d.pos
	d.pos = d.eoEncoding
	enc := byte(d.integer(ExtensionObjectBinary, ExtensionObjectXML))
	var body []byte
	if d.eoBody >= 0 {
		d.pos = d.eoBody
		body = d.byteString()
	}
	if body == nil {
		body = []byte{}
	}
	if d.err == nil {
		d.keepOrDecode(x, id, enc, body)
	}
	if d.err == nil {
		d.pos = end
	}
}

// extensionObject reads an ExtensionObject whose UaTypeId is not first or not registered:
// the members are scanned first, then decoded or kept.
func (d *JSONDecoder) extensionObject(x *ExtensionObject, base int) {
	start := d.pos
	d.BeginObject()
	typeIdx, encIdx, bodyIdx := -1, -1, -1
	oldType, oldEnc, oldBody := -1, -1, -1
	for {
		k, ok := d.NextField()
		if !ok {
			break
		}
		i := len(d.spans) - base
		s := memberSpan{keyStart: d.keyPos, nameStart: len(d.keyArena)}
		d.keyArena = append(d.keyArena, k...)
		s.nameEnd = len(d.keyArena)
		d.ws()
		s.valueStart = d.pos
		switch string(k) {
		case "UaTypeId":
			typeIdx = i
		case "UaEncoding":
			encIdx = i
		case "UaBody":
			bodyIdx = i
		case "TypeId":
			oldType = i
		case "Encoding":
			oldEnc = i
		case "Body":
			oldBody = i
		}
		d.Skip()
		s.valueEnd = d.pos
		d.spans = append(d.spans, s)
	}
	if d.err != nil {
		return
	}
	spans, arena := d.spans[base:], d.keyArena
	end := d.pos
	if hasDuplicateName(spans, arena) {
		d.malformed()
		return
	}
	at := func(i int) bool {
		if i < 0 {
			return false
		}
		d.pos = spans[i].valueStart
		return true
	}
	if typeIdx < 0 {
		switch {
		case len(spans) == 0:
			// {}: the verbose form of the null ExtensionObject.
		case oldType >= 0 && (oldBody >= 0 || len(spans) == 1 || oldEnc >= 0):
			d.extensionObject104(x, spans, oldType, oldEnc, oldBody)
		default:
			d.malformed()
		}
		if d.err == nil {
			d.pos = end
		}
		return
	}
	at(typeIdx)
	id := d.NodeId()
	if d.err == nil && id.IsNull() {
		d.malformed()
	}
	if d.err != nil {
		return
	}
	if at(encIdx) {
		enc := byte(d.integer(ExtensionObjectBinary, ExtensionObjectXML))
		var body []byte
		if at(bodyIdx) {
			body = d.byteString()
		}
		if body == nil {
			body = []byte{}
		}
		if d.err == nil {
			d.keepOrDecode(x, id, enc, body)
		}
		if d.err == nil {
			d.pos = end
		}
		return
	}
	if t := LookupType(id); t != nil {
		d.pos = start
		d.hidePending = true
		v := t.New()
		v.DecodeJSON(d)
		d.hidePending = false
		if d.err == nil && d.pos != end {
			d.malformed()
		}
		x.Value = v
		return
	}
	// An unknown type: keep its members but UaTypeId. With none it has no body.
	if len(spans) == 1 {
		x.TypeID = id
		d.pos = end
		return
	}
	if !utf8.Valid(d.data[start:end]) {
		d.malformed()
		return
	}
	n := 2
	for i, s := range spans {
		if i != typeIdx {
			n += s.valueEnd - s.keyStart + 1
		}
	}
	body := make([]byte, 0, n)
	body = append(body, '{')
	for i, s := range spans {
		if i == typeIdx {
			continue
		}
		if len(body) > 1 {
			body = append(body, ',')
		}
		body = append(body, d.data[s.keyStart:s.valueEnd]...)
	}
	body = append(body, '}')
	x.TypeID, x.Encoding, x.Body = id, ExtensionObjectJSON, body
	d.pos = end
}

// hasDuplicateName reports whether two members have the same (unescaped) name.
func hasDuplicateName(spans []memberSpan, arena []byte) bool {
	name := func(s memberSpan) []byte { return arena[s.nameStart:s.nameEnd] }
	if len(spans) <= 32 {
		for i := 1; i < len(spans); i++ {
			for j := 0; j < i; j++ {
				if string(name(spans[i])) == string(name(spans[j])) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, len(spans))
	for _, s := range spans {
		k := string(name(s))
		if _, dup := seen[k]; dup {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}

// keepOrDecode stores a binary or XML body, decoding a binary one whose type is
// registered.
func (d *JSONDecoder) keepOrDecode(x *ExtensionObject, id NodeId, enc byte, body []byte) {
	if enc == ExtensionObjectBinary {
		if t := LookupType(id); t != nil {
			bd := NewDecoderLimits(body, d.limits)
			bd.depth = d.depth
			v := t.New()
			v.DecodeBinary(bd)
			if bd.Err() != nil {
				d.fail(bd.Err())
				return
			}
			if bd.Remaining() != 0 {
				d.malformed()
				return
			}
			x.Value = v
			return
		}
	}
	x.TypeID, x.Encoding, x.Body = id, enc, body
}

// extensionObject104 reads the deprecated {"TypeId","Encoding","Body"} form (Annex H.7).
func (d *JSONDecoder) extensionObject104(x *ExtensionObject, spans []memberSpan, typeIdx, encIdx, bodyIdx int) {
	d.pos = spans[typeIdx].valueStart
	id := d.NodeId()
	enc := int64(0)
	if encIdx >= 0 {
		d.pos = spans[encIdx].valueStart
		enc = d.integer(0, 2)
	}
	if d.err != nil {
		return
	}
	if bodyIdx < 0 || id.IsNull() {
		// No body: as {"UaTypeId":id}, a registered type's default value.
		if t := LookupType(id); t != nil {
			x.Value = t.New()
		} else {
			x.TypeID = id
		}
		return
	}
	d.pos = spans[bodyIdx].valueStart
	switch enc {
	case 0:
		if d.ws() != '{' {
			d.malformed()
			return
		}
		if t := LookupType(id); t != nil {
			v := t.New()
			v.DecodeJSON(d)
			x.Value = v
			return
		}
		bs, members := d.pos, 0
		d.BeginObject()
		for {
			k, ok := d.NextField()
			if !ok {
				break
			}
			if string(k) == "UaTypeId" {
				d.malformed()
			}
			d.Skip()
			members++
		}
		if d.err == nil && !utf8.Valid(d.data[bs:d.pos]) {
			d.malformed()
		}
		if d.err == nil {
			x.TypeID = id
			if members > 0 {
				x.Encoding = ExtensionObjectJSON
				x.Body = append([]byte(nil), d.data[bs:d.pos]...)
			}
		}
	case ExtensionObjectBinary:
		body := d.byteString()
		if body == nil {
			body = []byte{}
		}
		if d.err == nil {
			d.keepOrDecode(x, id, ExtensionObjectBinary, body)
		}
	case ExtensionObjectXML:
		s := d.String()
		if d.err == nil {
			x.TypeID, x.Encoding, x.Body = id, ExtensionObjectXML, []byte(s)
		}
	}
}
