package main

// Emits json_gen.go: EncodeJSON and DecodeJSON for every structure (Part 6 §5.4.6 to
// §5.4.8), written against the API in pkg/codec/json_contract.go.

import (
	"bytes"
	"fmt"
)

// jsonWriteValue returns the statement writing one value without a member name.
func jsonWriteValue(t fieldType, a access) string {
	switch {
	case t.builtin != nil && t.builtin.byRef:
		return fmt.Sprintf("e.%s(%s)", t.builtin.name, a.ptr)
	case t.builtin != nil:
		return fmt.Sprintf("e.%s(%s)", t.builtin.name, a.val)
	case t.enum != nil && t.enum.optionSet:
		c := t.enum.codecName()
		return fmt.Sprintf("e.%s(%s(%s))", c, wireGoType[c], a.val)
	case t.enum != nil:
		return fmt.Sprintf("e.Enum(int64(%s), %s)", a.val, enumNamesFunc(t.enum))
	}
	return fmt.Sprintf("e.Struct(%s)", a.ptr)
}

// jsonWriteField returns the statement writing a scalar member.
func jsonWriteField(f *field) string {
	t, a := f.typ, fieldAccess(f)
	switch {
	case t.builtin != nil && t.builtin.byRef:
		return fmt.Sprintf("e.Field%s(%q, %s)", t.builtin.name, f.name, a.ptr)
	case t.builtin != nil:
		return fmt.Sprintf("e.Field%s(%q, %s)", t.builtin.name, f.name, a.val)
	case t.enum != nil && t.enum.optionSet:
		c := t.enum.codecName()
		return fmt.Sprintf("e.Field%s(%q, %s(%s))", c, f.name, wireGoType[c], a.val)
	case t.enum != nil:
		return fmt.Sprintf("e.FieldEnum(%q, int64(%s), %s)", f.name, a.val, enumNamesFunc(t.enum))
	}
	return fmt.Sprintf("e.FieldStruct(%q, %s)", f.name, a.ptr)
}

// jsonReadExpr returns the expression reading one value of a type that is not read
// through a pointer.
func jsonReadExpr(t fieldType) string {
	switch {
	case t.builtin != nil:
		return fmt.Sprintf("d.%s()", t.builtin.name)
	case t.enum.optionSet:
		return fmt.Sprintf("%s(d.%s())", t.enum.name, t.enum.codecName())
	}
	return fmt.Sprintf("%s(d.Enum())", t.enum.name)
}

// readByRef reports whether values of t are read through a pointer.
func readByRef(t fieldType) bool { return t.st != nil || (t.builtin != nil && t.builtin.byRef) }

// jsonReadValue returns the statement reading one value into a.
func jsonReadValue(t fieldType, a access) string {
	switch {
	case t.st != nil:
		return fmt.Sprintf("d.Struct(%s)", a.ptr)
	case readByRef(t):
		return fmt.Sprintf("d.%s(%s)", t.builtin.name, a.ptr)
	}
	return a.val + " = " + jsonReadExpr(t)
}

// jsonWriteArray writes an array member; null says when it is written as null.
func jsonWriteArray(b *bytes.Buffer, f *field, null string) {
	fmt.Fprintf(b, "if e.FieldArray(%q, len(v.%s), %s) {\n", f.name, f.name, null)
	fmt.Fprintf(b, "for i := range v.%s {\n%s\n}\ne.EndArray()\n}\n", f.name, jsonWriteValue(f.typ, elemAccess(f)))
}

// jsonReadArray reads an array member; JSON null is the null array (or an absent
// optional one) and [] an empty, non-nil slice.
func jsonReadArray(b *bytes.Buffer, f *field) {
	fmt.Fprintf(b, "if d.BeginArray() {\nv.%s = make(%s, 0)\nfor d.NextElement() {\n", f.name, f.goType())
	t := f.typ
	if readByRef(t) {
		last := access{fmt.Sprintf("v.%s[len(v.%s)-1]", f.name, f.name), fmt.Sprintf("&v.%s[len(v.%s)-1]", f.name, f.name)}
		fmt.Fprintf(b, "v.%s = append(v.%s, %s{})\n%s\n", f.name, f.name, t.goType(), jsonReadValue(t, last))
	} else {
		fmt.Fprintf(b, "v.%s = append(v.%s, %s)\n", f.name, f.name, jsonReadExpr(t))
	}
	fmt.Fprintf(b, "}\n} else {\nv.%s = nil\n}\n", f.name)
}

func emitJSON(m *model) []byte {
	var b bytes.Buffer
	for _, t := range m.structs {
		emitEncodeJSON(&b, t)
		emitDecodeJSON(&b, t)
	}
	return goSource("ua", &b, codecImport, statusImport)
}

func emitEncodeJSON(b *bytes.Buffer, t *structType) {
	b.WriteString("// EncodeJSON writes v as a JSON object in e's form, compact or verbose (Part 6 §5.4).\n")
	fmt.Fprintf(b, "func (v *%s) EncodeJSON(e *codec.JSONEncoder) {\ne.BeginObject()\n", t.name)
	switch t.kind {
	case plainStruct:
		for _, f := range t.fields {
			if f.array {
				jsonWriteArray(b, f, "v."+f.name+" == nil")
			} else {
				b.WriteString(jsonWriteField(f) + "\n")
			}
		}
	case optionalStruct:
		// Part 6 §5.4.7: the EncodingMask, the mandatory fields and the present optional
		// ones; a present optional field is written even when it holds its default.
		computeMask(b, t)
		b.WriteString("e.FieldEncodingMask(mask)\n")
		for _, f := range t.fields {
			switch {
			case !f.optional && f.array:
				jsonWriteArray(b, f, "v."+f.name+" == nil")
			case !f.optional:
				b.WriteString(jsonWriteField(f) + "\n")
			case f.array:
				fmt.Fprintf(b, "if v.%s != nil {\n", f.name)
				jsonWriteArray(b, f, "false")
				b.WriteString("}\n")
			default:
				fmt.Fprintf(b, "if v.%s != nil {\ne.Field(%q)\n%s\n}\n", f.name, f.name, jsonWriteValue(f.typ, derefAccess(f)))
			}
		}
	case unionStruct:
		// Part 6 §5.4.8: the SwitchField and the selected field under its own name.
		fmt.Fprintf(b, "e.FieldSwitch(v.%s)\nswitch v.%s {\n", t.switchName, t.switchName)
		for _, f := range t.fields[1:] {
			fmt.Fprintf(b, "case %d:\n", f.switchValue)
			if f.array {
				jsonWriteArray(b, f, "v."+f.name+" == nil")
			} else {
				fmt.Fprintf(b, "e.Field(%q)\n%s\n", f.name, jsonWriteValue(f.typ, fieldAccess(f)))
			}
		}
		b.WriteString("}\n")
	}
	b.WriteString("e.EndObject()\n}\n\n")
}

func emitDecodeJSON(b *bytes.Buffer, t *structType) {
	b.WriteString("// DecodeJSON reads v from a JSON object in either form; errors stick in d. A member\n")
	b.WriteString("// that is missing leaves its field at the zero value, and unknown members are skipped.\n")
	fmt.Fprintf(b, "func (v *%s) DecodeJSON(d *codec.JSONDecoder) {\n*v = %s{}\nif !d.BeginObject() {\nreturn\n}\n", t.name, t.name)
	if len(t.fields) == 0 {
		b.WriteString("for {\nif _, ok := d.NextField(); !ok {\nbreak\n}\nd.Skip()\n}\n}\n\n")
		return
	}
	// switch on string(key) does not allocate.
	b.WriteString("for {\nkey, ok := d.NextField()\nif !ok {\nbreak\n}\nswitch string(key) {\n")
	switch t.kind {
	case optionalStruct:
		// Presence is by key; the mask adds nothing.
		b.WriteString("case \"EncodingMask\":\nd.Skip()\n")
	case unionStruct:
		fmt.Fprintf(b, "case \"SwitchField\":\nv.%s = d.UInt32()\n", t.switchName)
	}
	for i, f := range t.fields {
		if t.kind == unionStruct && i == 0 {
			continue
		}
		fmt.Fprintf(b, "case %q:\n", f.name)
		if t.kind == unionStruct {
			fmt.Fprintf(b, "v.%s = %d\n", t.switchName, f.switchValue)
		}
		switch {
		case f.array:
			jsonReadArray(b, f)
		case f.optional:
			fmt.Fprintf(b, "v.%s = new(%s)\n%s\n", f.name, f.typ.goType(), jsonReadValue(f.typ, derefAccess(f)))
		default:
			b.WriteString(jsonReadValue(f.typ, fieldAccess(f)) + "\n")
		}
	}
	b.WriteString("default:\nd.Skip()\n}\n}\n}\n\n")
}
