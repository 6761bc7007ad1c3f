package nodeset

import (
	"fmt"
	"strconv"
	"strings"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/pkg/ua/ns0"
)

var structureID = codec.NewNumericNodeId(0, id.Structure)

// definition reads the Definition of the DataType n (Part 6 Annex F.12) into its
// DataTypeDefinition: an EnumDefinition below Enumeration and for option sets, a
// StructureDefinition below Structure.
func (f *fileState) definition(n *Node, d *element) error {
	isStruct := f.isSubtype(n.NodeId, structureID)
	if !isStruct {
		var def ua.EnumDefinition
		for _, c := range d.Children {
			if c.Name != "Field" {
				continue
			}
			var ef ua.EnumField
			ef.Name, _ = c.attr("Name")
			v, _ := c.attr("Value")
			x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if v != "" && err != nil {
				return f.errorf(c.Line, "enumeration field %s: Value %q is not an integer", ef.Name, v)
			}
			ef.Value = x
			ef.DisplayName = codec.LocalizedText{Text: ef.Name}
			if dn := c.child("DisplayName"); dn != nil {
				ef.DisplayName = localized(dn)
			}
			if ds := c.child("Description"); ds != nil {
				ef.Description = localized(ds)
			}
			def.Fields = append(def.Fields, ef)
		}
		n.DataTypeDefinition = codec.MustVariant(codec.NewExtensionObject(&def))
		return nil
	}
	def := &ua.StructureDefinition{StructureType: ua.StructureTypeStructure}
	def.BaseDataType, _ = f.superType(n.NodeId)
	def.DefaultEncodingId = f.binary[n.NodeId]
	if u, _ := d.attr("IsUnion"); u == "true" {
		def.StructureType = ua.StructureTypeUnion
	}
	for _, c := range d.Children {
		if c.Name != "Field" {
			continue
		}
		a := attrs{f: f, e: c}
		var sf ua.StructureField
		sf.Name, _ = c.attr("Name")
		if sf.Name == "" {
			return f.errorf(c.Line, "structure field without a Name")
		}
		sf.DataType = a.nodeId(a.str("DataType", "i=24"))
		sf.ValueRank = int32(a.int("ValueRank", -1))
		sf.ArrayDimensions = a.dims("ArrayDimensions")
		sf.MaxStringLength = uint32(a.uint("MaxStringLength", 0, 32))
		sf.IsOptional = a.bool("IsOptional", false)
		if a.err != nil {
			return a.err
		}
		if sf.ValueRank > 1 || sf.ValueRank == 0 || sf.ValueRank < -1 {
			return f.errorf(c.Line, "structure field %s: ValueRank %d is not supported (scalars and one-dimensional arrays are)", sf.Name, sf.ValueRank)
		}
		if sf.IsOptional && def.StructureType == ua.StructureTypeStructure {
			def.StructureType = ua.StructureTypeStructureWithOptionalFields
		}
		if ds := c.child("Description"); ds != nil {
			sf.Description = localized(ds)
		}
		def.Fields = append(def.Fields, sf)
	}
	if def.StructureType == ua.StructureTypeUnion {
		for i := range def.Fields {
			def.Fields[i].IsOptional = false
		}
	}
	f.defs[n.NodeId] = def
	n.DataTypeDefinition = codec.MustVariant(codec.NewExtensionObject(def))
	return nil
}

// structDef returns the StructureDefinition of the DataType dt, from the files loaded
// or namespace 0's tables.
func (l *Loader) structDef(dt codec.NodeId) *ua.StructureDefinition {
	if d, ok := l.defs[dt]; ok {
		return d
	}
	if dt.Namespace() != 0 || dt.Type() != codec.IDNumeric {
		return nil
	}
	n, ok := ns0.Lookup(dt.IntID())
	if !ok {
		return nil
	}
	v, err := n.DataTypeDefinition()
	if err != nil {
		return nil
	}
	x, _ := v.Value().(codec.ExtensionObject)
	d, _ := x.Value.(*ua.StructureDefinition)
	return d
}

// typeName returns the BrowseName of the type t.
func (l *Loader) typeName(t codec.NodeId) string {
	if s, ok := l.names[t]; ok {
		return s
	}
	if t.Namespace() == 0 && t.Type() == codec.IDNumeric {
		if n, ok := ns0.Lookup(t.IntID()); ok {
			return n.BrowseName().Name
		}
	}
	return t.String()
}

// encodingOf returns the DataType whose encoding (or which itself) is enc.
func (l *Loader) encodingOf(enc codec.NodeId) codec.NodeId {
	if dt, ok := l.encodings[enc]; ok {
		return dt
	}
	if enc.Namespace() == 0 && enc.Type() == codec.IDNumeric {
		if n, ok := ns0.Lookup(enc.IntID()); ok {
			for _, r := range n.References() {
				if r.ReferenceTypeId == id.HasEncoding && !r.IsForward {
					return codec.NewNumericNodeId(0, r.TargetId)
				}
			}
		}
	}
	return enc
}

// binaryEncoding returns the "Default Binary" encoding of the DataType dt.
func (l *Loader) binaryEncoding(dt codec.NodeId) codec.NodeId {
	if enc, ok := l.binary[dt]; ok {
		return enc
	}
	if d := l.structDef(dt); d != nil && !d.DefaultEncodingId.IsNull() {
		return d.DefaultEncodingId
	}
	if info := codec.LookupType(dt); info != nil {
		return info.BinaryEncoding
	}
	return codec.NodeId{}
}

// builtinOf returns the built-in type that values of the non-structure DataType dt have
// (Part 6 §5.1.2): an Enumeration is an Int32, the abstract Number types and
// BaseDataType any Variant.
func (l *Loader) builtinOf(dt codec.NodeId) (codec.TypeID, error) {
	t := dt
	for range maxTypeDepth {
		if t.Namespace() == 0 && t.Type() == codec.IDNumeric {
			switch n := t.IntID(); {
			case n == id.Enumeration:
				return codec.TypeInt32, nil
			case n == id.BaseDataType, n == id.Number, n == id.Integer, n == id.UInteger:
				return codec.TypeVariant, nil
			case n >= 1 && n <= 25:
				return codec.TypeID(n), nil
			}
		}
		var ok bool
		if t, ok = l.superType(t); !ok {
			return 0, fmt.Errorf("DataType %v has no built-in type above it", dt)
		}
	}
	return 0, errTypeLoop
}

// dynamicType returns the DynamicType of the structure dt, made from its
// StructureDefinition: a nodeset's own, or a template of a namespace 0 structure that
// XML values are read into. depth bounds the structures made for one field chain.
func (l *Loader) dynamicType(dt codec.NodeId, depth int) (*codec.DynamicType, error) {
	if t, ok := l.dynamic[dt]; ok {
		return t, nil
	}
	if depth > maxTypeDepth {
		return nil, errTypeLoop
	}
	def := l.structDef(dt)
	if def == nil {
		return nil, fmt.Errorf("structure %v (%s) has no StructureDefinition", dt, l.typeName(dt))
	}
	kind := codec.StructurePlain
	switch def.StructureType {
	case ua.StructureTypeStructureWithOptionalFields:
		kind = codec.StructureOptional
	case ua.StructureTypeUnion:
		kind = codec.StructureUnion
	case ua.StructureTypeStructure:
	default:
		return nil, fmt.Errorf("structure %s: StructureType %v is not supported", l.typeName(dt), def.StructureType)
	}
	enc := l.binaryEncoding(dt)
	if enc.IsNull() {
		return nil, fmt.Errorf("structure %s has no \"Default Binary\" encoding", l.typeName(dt))
	}
	fields := make([]codec.DynamicField, len(def.Fields))
	structs := make(map[int]codec.NodeId)
	for i, sf := range def.Fields {
		df := codec.DynamicField{Name: sf.Name, Array: sf.ValueRank >= 1, Optional: sf.IsOptional}
		switch {
		case sf.DataType == structureID:
			df.Type = codec.TypeExtensionObject
		case l.isSubtype(sf.DataType, structureID):
			df.Type = codec.TypeExtensionObject
			structs[i] = sf.DataType
		default:
			t, err := l.builtinOf(sf.DataType)
			if err != nil {
				return nil, fmt.Errorf("structure %s, field %s: %w", l.typeName(dt), sf.Name, err)
			}
			df.Type = t
		}
		fields[i] = df
	}
	var xmlEnc codec.NodeId
	for enc, t := range l.encodings {
		if t == dt && l.names[enc] == "Default XML" {
			xmlEnc = enc
		}
	}
	t, err := codec.NewDynamicType(l.typeName(dt), dt, enc, xmlEnc, codec.NodeId{}, kind, fields)
	if err != nil {
		return nil, err
	}
	l.dynamic[dt] = t
	for i, s := range structs {
		info, err := l.structInfo(s, depth+1)
		if err != nil {
			delete(l.dynamic, dt)
			return nil, fmt.Errorf("structure %s, field %s: %w", l.typeName(dt), def.Fields[i].Name, err)
		}
		t.Fields[i].Struct = info
	}
	return t, nil
}

// structInfo returns the TypeInfo a structure field of type dt is encoded with: the
// generated type of a namespace 0 structure, else the DynamicType of a nodeset's.
func (l *Loader) structInfo(dt codec.NodeId, depth int) (*codec.TypeInfo, error) {
	if _, own := l.defs[dt]; !own {
		if info := codec.LookupType(dt); info != nil {
			return info, nil
		}
	}
	t, err := l.dynamicType(dt, depth)
	if err != nil {
		return nil, err
	}
	return t.Info(), nil
}
