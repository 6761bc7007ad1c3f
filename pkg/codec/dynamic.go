package codec

import (
	"fmt"
	"unsafe"

	"uastack.dev/pkg/status"
)

// StructureKind is how the fields of a structure are laid out (Part 3 §8.49
// StructureType, Part 6 §5.2.6 and §5.2.7).
type StructureKind byte

// The layouts a DynamicType can have.
const (
	// StructurePlain writes every field in order.
	StructurePlain StructureKind = iota
	// StructureOptional writes a UInt32 mask of the optional fields present, then the
	// fields, leaving out the absent optional ones.
	StructureOptional
	// StructureUnion writes a UInt32 switch (0 for none, i+1 for field i) and then that
	// one field.
	StructureUnion
)

// DynamicField is one field of a DynamicType: a value of a built-in type, or a
// structure written inline (not as an ExtensionObject), Part 6 §5.2.6.
type DynamicField struct {
	Name string
	// Type is the built-in type of the field's value: the DataType's built-in ancestor
	// (an Enumeration is Int32), TypeExtensionObject for an abstract Structure field,
	// TypeVariant for BaseDataType.
	Type TypeID
	// Struct, when set, is the structure type of the field, written inline; Type must
	// then be TypeExtensionObject.
	Struct *TypeInfo
	// Array says the field is a one-dimensional array (ValueRank 1).
	Array bool
	// Optional says the field may be absent (StructureOptional only).
	Optional bool
}

// maxDynamicFields bounds the fields of one DynamicType; the optional-field mask has 32
// bits, and no real structure comes close to this.
const maxDynamicFields = 1024

// DynamicType is a structured DataType known at run time from its DataTypeDefinition
// (Part 3 §8.48 StructureDefinition) rather than from generated code. Values of it are
// DynamicStructures. A DynamicType is read-only once made and safe for concurrent use.
type DynamicType struct {
	Kind   StructureKind
	Fields []DynamicField
	info   TypeInfo
}

// NewDynamicType makes a DynamicType for the DataType dataType whose binary encoding is
// binaryEncoding (both required; xmlEncoding and jsonEncoding may be null). It checks
// what the encoder and decoder rely on: field types are built-in, a Struct field is an
// ExtensionObject, optional fields only in StructureOptional (at most 32) and a union
// has fields.
func NewDynamicType(name string, dataType, binaryEncoding, xmlEncoding, jsonEncoding NodeId, kind StructureKind, fields []DynamicField) (*DynamicType, error) {
	if dataType.IsNull() || binaryEncoding.IsNull() {
		return nil, fmt.Errorf("codec: dynamic type %q: null DataType or binary encoding id", name)
	}
	if len(fields) > maxDynamicFields {
		return nil, fmt.Errorf("codec: dynamic type %q: %d fields, at most %d", name, len(fields), maxDynamicFields)
	}
	optional := 0
	for _, f := range fields {
		switch {
		case f.Type == TypeNull || f.Type >= typeCount:
			return nil, fmt.Errorf("codec: dynamic type %q: field %q has no built-in type", name, f.Name)
		case f.Struct != nil && f.Type != TypeExtensionObject:
			return nil, fmt.Errorf("codec: dynamic type %q: structure field %q must be an ExtensionObject", name, f.Name)
		case f.Optional && kind != StructureOptional:
			return nil, fmt.Errorf("codec: dynamic type %q: optional field %q outside a structure with optional fields", name, f.Name)
		case f.Type == TypeVariant && f.Array && f.Struct != nil:
			return nil, fmt.Errorf("codec: dynamic type %q: field %q", name, f.Name)
		}
		if f.Optional {
			optional++
		}
	}
	switch {
	case kind > StructureUnion:
		return nil, fmt.Errorf("codec: dynamic type %q: unknown structure kind %d", name, kind)
	case optional > 32:
		return nil, fmt.Errorf("codec: dynamic type %q: %d optional fields, at most 32", name, optional)
	case kind == StructureUnion && len(fields) == 0:
		return nil, fmt.Errorf("codec: dynamic type %q: a union without fields", name)
	}
	t := &DynamicType{Kind: kind, Fields: append([]DynamicField(nil), fields...)}
	t.info = TypeInfo{
		Name: name, DataType: dataType, BinaryEncoding: binaryEncoding,
		XMLEncoding: xmlEncoding, JSONEncoding: jsonEncoding,
		New:  func() Structure { return &DynamicStructure{Type: t} },
		Size: int(unsafe.Sizeof(DynamicStructure{})),
	}
	return t, nil
}

// Info returns the TypeInfo of t, which Register takes.
func (t *DynamicType) Info() *TypeInfo { return &t.info }

// New returns a value of t with every field null (and, for a union, none selected).
func (t *DynamicType) New() *DynamicStructure {
	return &DynamicStructure{Type: t, Fields: make([]Variant, len(t.Fields))}
}

// RegisterDynamic registers t for ExtensionObject decoding as Register does. It also
// succeeds when the ids are registered already to a DynamicType with the same name and
// fields, so that one model loaded twice in a process (two servers in a test, say)
// shares its types; another type under one of t's ids is an error.
func RegisterDynamic(t *DynamicType) error {
	registry.Lock()
	defer registry.Unlock()
	if registry.byID == nil {
		registry.byID = make(map[NodeId]*TypeInfo)
	}
	ids := []NodeId{t.info.DataType, t.info.BinaryEncoding, t.info.XMLEncoding, t.info.JSONEncoding}
	for _, id := range ids {
		have, ok := registry.byID[id]
		if id.IsNull() || !ok {
			continue
		}
		if !sameDynamic(have, t) {
			return fmt.Errorf("codec: %v is registered to %s already", id, have.Name)
		}
	}
	for _, id := range ids {
		if _, ok := registry.byID[id]; !id.IsNull() && !ok {
			registry.byID[id] = &t.info
		}
	}
	return nil
}

// sameDynamic reports whether the registered info is a DynamicType laid out as t.
func sameDynamic(info *TypeInfo, t *DynamicType) bool {
	if info == &t.info {
		return true
	}
	s, ok := info.New().(*DynamicStructure)
	if !ok || info.Name != t.info.Name || info.DataType != t.info.DataType || info.BinaryEncoding != t.info.BinaryEncoding {
		return false
	}
	o := s.Type
	if o.Kind != t.Kind || len(o.Fields) != len(t.Fields) {
		return false
	}
	for i, f := range o.Fields {
		g := t.Fields[i]
		if f.Name != g.Name || f.Type != g.Type || f.Array != g.Array || f.Optional != g.Optional ||
			(f.Struct == nil) != (g.Struct == nil) || (f.Struct != nil && f.Struct.DataType != g.Struct.DataType) {
			return false
		}
	}
	return true
}

// DynamicStructure is a value of a DynamicType. Fields[i] holds the value of field i: a
// Variant of the field's built-in type, scalar or array; for a Struct field an
// ExtensionObject Variant (an array of them when Array) whose Value is a Structure of
// that type; for a TypeVariant field the value itself. A null Variant is an absent
// optional field. For a union, Switch is 0 (no field) or i+1, and only Fields[i] counts.
type DynamicStructure struct {
	Type   *DynamicType
	Switch uint32
	Fields []Variant
}

// TypeInfo returns the TypeInfo of the value's DynamicType.
func (x *DynamicStructure) TypeInfo() *TypeInfo { return &x.Type.info }

// Field returns the value of the field named name, and false when there is none.
func (x *DynamicStructure) Field(name string) (Variant, bool) {
	for i, f := range x.Type.Fields {
		if f.Name == name && i < len(x.Fields) {
			return x.Fields[i], true
		}
	}
	return Variant{}, false
}

// field returns Fields[i], null when Fields is short.
func (x *DynamicStructure) field(i int) *Variant {
	if i < len(x.Fields) {
		return &x.Fields[i]
	}
	return &Variant{}
}

// EncodeBinary writes x (Part 6 §5.2.6, §5.2.7). A field whose value does not have its
// type fails with BadEncodingError.
func (x *DynamicStructure) EncodeBinary(e *Encoder) {
	t := x.Type
	switch t.Kind {
	case StructureUnion:
		if x.Switch > uint32(len(t.Fields)) {
			e.Fail(status.BadEncodingError)
			return
		}
		e.UInt32(x.Switch)
		if x.Switch > 0 {
			e.dynamicField(&t.Fields[x.Switch-1], x.field(int(x.Switch-1)))
		}
		return
	case StructureOptional:
		var mask uint32
		bit := uint32(1)
		for i := range t.Fields {
			if !t.Fields[i].Optional {
				continue
			}
			if !x.field(i).IsNull() {
				mask |= bit
			}
			bit <<= 1
		}
		e.UInt32(mask)
	}
	for i := range t.Fields {
		f := &t.Fields[i]
		v := x.field(i)
		if f.Optional && v.IsNull() {
			continue
		}
		e.dynamicField(f, v)
	}
}

// dynamicField writes the value v of field f.
func (e *Encoder) dynamicField(f *DynamicField, v *Variant) {
	if f.Type == TypeVariant && !f.Array {
		e.Variant(v) // BaseDataType: the field is any Variant
		return
	}
	if v.IsNull() {
		// A null field of a plain structure: the type's null (a null array, a zero
		// scalar), which a decoder reads back as such.
		if f.Array {
			e.Int32(-1)
			return
		}
		if f.Struct != nil {
			s := f.Struct.New()
			if !e.enter() {
				return
			}
			s.EncodeBinary(e)
			e.leave()
			return
		}
		zero := Variant{typ: f.Type}
		if f.Type == TypeExtensionObject {
			zero.obj = ExtensionObject{}
		}
		e.scalarBody(&zero)
		return
	}
	if v.typ != f.Type || v.array != f.Array {
		e.Fail(status.BadEncodingError)
		return
	}
	if f.Array {
		flat := v.obj
		if m, ok := flat.(*matrix); ok {
			flat = m.flat
		}
		if !e.enter() {
			return
		}
		if f.Struct != nil {
			xs, _ := flat.([]ExtensionObject)
			e.ArrayLength(len(xs), xs == nil)
			for i := range xs {
				e.inlineStruct(f.Struct, &xs[i])
			}
		} else {
			e.array(f.Type, flat)
		}
		e.leave()
		return
	}
	if f.Struct != nil {
		x, _ := v.obj.(ExtensionObject)
		e.inlineStruct(f.Struct, &x)
		return
	}
	e.scalarBody(v)
}

// inlineStruct writes the body of x, which must hold a value of t, without the
// ExtensionObject around it.
func (e *Encoder) inlineStruct(t *TypeInfo, x *ExtensionObject) {
	if x.Value == nil || x.Value.TypeInfo().DataType != t.DataType {
		e.Fail(status.BadEncodingError)
		return
	}
	if !e.enter() {
		return
	}
	x.Value.EncodeBinary(e)
	e.leave()
}

// scalarBody writes the scalar v without the Variant's type byte.
func (e *Encoder) scalarBody(v *Variant) {
	if sz := int(fixedSize[v.typ&31]); sz != 0 {
		var b [8]byte
		for i := range sz {
			b[i] = byte(v.num >> (8 * i))
		}
		e.put(b[:sz])
		return
	}
	if v.typ >= typeCount || v.typ == TypeVariant {
		e.Fail(status.BadEncodingError)
		return
	}
	e.fit()
	e.scalarValue(v)
}

// DecodeBinary reads x, whose Type must be set (TypeInfo.New sets it). Its fields are
// charged against the decode budget and nesting against MaxDepth.
func (x *DynamicStructure) DecodeBinary(d *Decoder) {
	t := x.Type
	if !d.Charge(len(t.Fields) * int(unsafe.Sizeof(Variant{}))) {
		return
	}
	x.Fields = make([]Variant, len(t.Fields))
	x.Switch = 0
	switch t.Kind {
	case StructureUnion:
		s := d.UInt32()
		if d.err != nil {
			return
		}
		if s > uint32(len(t.Fields)) {
			d.Fail(status.BadDecodingError)
			return
		}
		x.Switch = s
		if s > 0 {
			d.dynamicField(&t.Fields[s-1], &x.Fields[s-1])
		}
		return
	case StructureOptional:
		mask := d.UInt32()
		bit := uint32(1)
		for i := range t.Fields {
			f := &t.Fields[i]
			if f.Optional {
				present := mask&bit != 0
				bit <<= 1
				if !present {
					continue
				}
			}
			d.dynamicField(f, &x.Fields[i])
		}
		return
	}
	for i := range t.Fields {
		d.dynamicField(&t.Fields[i], &x.Fields[i])
	}
}

// dynamicField reads the value of field f into v.
func (d *Decoder) dynamicField(f *DynamicField, v *Variant) {
	if d.err != nil {
		return
	}
	if f.Type == TypeVariant && !f.Array {
		if d.Enter() {
			d.Variant(v)
			d.Leave()
		}
		return
	}
	if !d.Enter() {
		return
	}
	defer d.Leave()
	if f.Array {
		if f.Struct != nil {
			n := d.SizedArrayLength(1, int(unsafe.Sizeof(ExtensionObject{})))
			if d.err != nil {
				return
			}
			if !d.Charge(boxedSliceSize) {
				return
			}
			var xs []ExtensionObject
			if n >= 0 {
				xs = make([]ExtensionObject, n)
			}
			for i := range xs {
				d.inlineStruct(f.Struct, &xs[i])
			}
			*v = Variant{typ: TypeExtensionObject, array: true, obj: xs}
			return
		}
		flat := d.array(f.Type)
		if d.err == nil {
			*v = Variant{typ: f.Type, array: true, obj: flat}
		}
		return
	}
	if f.Struct != nil {
		if !d.Charge(memSize[TypeExtensionObject]) {
			return
		}
		var x ExtensionObject
		d.inlineStruct(f.Struct, &x)
		*v = Variant{typ: TypeExtensionObject, obj: x}
		return
	}
	d.variantScalar(v, f.Type)
}

// inlineStruct reads a body of t written without an ExtensionObject around it.
func (d *Decoder) inlineStruct(t *TypeInfo, x *ExtensionObject) {
	if !d.Charge(t.Size) || !d.Enter() {
		return
	}
	s := t.New()
	s.DecodeBinary(d)
	d.Leave()
	*x = ExtensionObject{Value: s}
}

// EncodeJSON writes x as a JSON object of its fields by name (Part 6 §5.4.6); the
// fields a structure with optional fields or a union leaves out are not written.
func (x *DynamicStructure) EncodeJSON(e *JSONEncoder) {
	e.dynamicStructure(x)
}

// DecodeJSON reads x from a JSON object of its fields by name; unknown names are
// skipped.
func (x *DynamicStructure) DecodeJSON(d *JSONDecoder) {
	d.dynamicStructure(x)
}

// dynamicStructure writes x's fields by name; a union as {"SwitchField": n, "Value": v}
// (Part 6 §5.4.2.15 and §5.4.6).
func (e *JSONEncoder) dynamicStructure(x *DynamicStructure) {
	t := x.Type
	e.BeginObject()
	if t.Kind == StructureUnion {
		if x.Switch > uint32(len(t.Fields)) {
			e.Fail(status.BadEncodingError)
		} else if x.Switch > 0 {
			e.key("SwitchField")
			e.UInt32(x.Switch)
			e.key("Value")
			e.dynamicField(&t.Fields[x.Switch-1], x.field(int(x.Switch-1)))
		}
		e.EndObject()
		return
	}
	for i := range t.Fields {
		f := &t.Fields[i]
		v := x.field(i)
		if v.IsNull() && (f.Optional || !e.verbose) {
			continue
		}
		e.key(f.Name)
		e.dynamicField(f, v)
	}
	e.EndObject()
}

// dynamicField writes the value v of field f.
func (e *JSONEncoder) dynamicField(f *DynamicField, v *Variant) {
	switch {
	case f.Type == TypeVariant && !f.Array:
		e.Variant(v)
	case v.IsNull():
		e.null()
	case v.typ != f.Type || v.array != f.Array:
		e.Fail(status.BadEncodingError)
		e.null()
	case f.Array:
		flat := v.obj
		if m, ok := flat.(*matrix); ok {
			flat = m.flat
		}
		e.array(flat)
	case f.Struct != nil:
		x, _ := v.obj.(ExtensionObject)
		e.Struct(x.Value)
	default:
		e.scalarJSON(v)
	}
}

// dynamicStructure reads x's fields by name; unknown names are skipped.
func (d *JSONDecoder) dynamicStructure(x *DynamicStructure) {
	t := x.Type
	x.Fields, x.Switch = make([]Variant, len(t.Fields)), 0
	if !d.BeginObject() {
		return
	}
	for {
		key, ok := d.NextField()
		if !ok {
			break
		}
		i := -1
		switch {
		case t.Kind == StructureUnion && string(key) == "SwitchField":
			s := d.UInt32()
			if s > uint32(len(t.Fields)) {
				d.malformed()
				return
			}
			x.Switch = s
			continue
		case t.Kind == StructureUnion && string(key) == "Value":
			if x.Switch == 0 {
				d.malformed() // the switch must come first to know the value's type
				return
			}
			i = int(x.Switch - 1)
		default:
			for j := range t.Fields {
				if t.Fields[j].Name == string(key) {
					i = j
					break
				}
			}
		}
		if i < 0 {
			d.Skip()
			continue
		}
		d.dynamicField(&t.Fields[i], &x.Fields[i])
	}
}

// dynamicField reads the value of field f into v.
func (d *JSONDecoder) dynamicField(f *DynamicField, v *Variant) {
	switch {
	case f.Type == TypeVariant && !f.Array:
		d.Variant(v)
	case f.Struct != nil && f.Array:
		var xs []ExtensionObject
		if d.BeginArray() {
			xs = make([]ExtensionObject, 0)
			for d.NextElement() {
				s := f.Struct.New()
				d.Struct(s)
				xs = append(xs, ExtensionObject{Value: s})
			}
		}
		*v = Variant{typ: TypeExtensionObject, array: true, obj: xs}
	case f.Struct != nil:
		if d.null() {
			return
		}
		s := f.Struct.New()
		d.Struct(s)
		*v = Variant{typ: TypeExtensionObject, obj: ExtensionObject{Value: s}}
	default:
		d.variantValue(v, f.Type)
		if v.array != f.Array {
			d.malformed()
		}
	}
}
