package main

// Emits binary_gen.go: EncodeBinary and DecodeBinary for every structure (Part 6 §5.2.6
// to §5.2.8), as straight-line calls on the codec's Encoder and Decoder.

import (
	"bytes"
	"fmt"
	"strings"
)

// access names one value in generated code: val is the value, ptr a pointer to it.
type access struct{ val, ptr string }

func fieldAccess(f *field) access { return access{"v." + f.name, "&v." + f.name} }
func elemAccess(f *field) access  { return access{"v." + f.name + "[i]", "&v." + f.name + "[i]"} }
func derefAccess(f *field) access { return access{"*v." + f.name, "v." + f.name} }

// recv is the expression to call a method on: the value when it is addressable, or the
// pointer itself.
func (a access) recv() string {
	if p, ok := strings.CutPrefix(a.ptr, "&"); ok {
		return p
	}
	return a.ptr
}

// wireGoType is the Go type of an enum's wire integer.
var wireGoType = map[string]string{"Int32": "int32", "Byte": "byte", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64"}

// encodeValue returns the statement writing one value.
func encodeValue(t fieldType, a access) string {
	switch {
	case t.builtin != nil && t.builtin.byRef:
		return fmt.Sprintf("e.%s(%s)", t.builtin.name, a.ptr)
	case t.builtin != nil:
		return fmt.Sprintf("e.%s(%s)", t.builtin.name, a.val)
	case t.enum != nil:
		c := t.enum.codecName()
		return fmt.Sprintf("e.%s(%s(%s))", c, wireGoType[c], a.val)
	}
	return a.recv() + ".EncodeBinary(e)"
}

// decodeValue returns the statement reading one value.
func decodeValue(t fieldType, a access) string {
	switch {
	case t.builtin != nil && t.builtin.byRef:
		return fmt.Sprintf("d.%s(%s)", t.builtin.name, a.ptr)
	case t.builtin != nil:
		return fmt.Sprintf("%s = d.%s()", a.val, t.builtin.name)
	case t.enum != nil:
		return fmt.Sprintf("%s = %s(d.%s())", a.val, t.enum.name, t.enum.codecName())
	}
	return a.recv() + ".DecodeBinary(d)"
}

// encodeArray writes the length and elements of an array field; null says when the
// array is written as null.
func encodeArray(b *bytes.Buffer, f *field, null string) {
	fmt.Fprintf(b, "e.ArrayLength(len(v.%s), %s)\n", f.name, null)
	fmt.Fprintf(b, "for i := range v.%s {\n%s\n}\n", f.name, encodeValue(f.typ, elemAccess(f)))
}

// decodeArrayBody sizes v.X to n elements, reusing its array when it has room (the
// elements are all overwritten), and reads them. A non-nil slice marks a non-null array.
func decodeArrayBody(b *bytes.Buffer, f *field) {
	fmt.Fprintf(b, "if cap(v.%s) < n || v.%s == nil {\nv.%s = make(%s, n)\n} else {\nv.%s = v.%s[:n]\n}\n",
		f.name, f.name, f.name, f.goType(), f.name, f.name)
	fmt.Fprintf(b, "for i := range v.%s {\n%s\n}\n", f.name, decodeValue(f.typ, elemAccess(f)))
}

// encodeField writes a mandatory field.
func encodeField(b *bytes.Buffer, f *field) {
	if f.array {
		encodeArray(b, f, "v."+f.name+" == nil")
		return
	}
	b.WriteString(encodeValue(f.typ, fieldAccess(f)) + "\n")
}

// elemSize is the expression for the size in memory of one element of an array field,
// which SizedArrayLength charges against the decode budget. unsafe.Sizeof does not
// evaluate its operand, so indexing an empty slice there is safe.
func elemSize(f *field) string { return fmt.Sprintf("int(unsafe.Sizeof(v.%s[0]))", f.name) }

// decodeField reads a mandatory field.
func decodeField(b *bytes.Buffer, f *field) {
	if !f.array {
		b.WriteString(decodeValue(f.typ, fieldAccess(f)) + "\n")
		return
	}
	fmt.Fprintf(b, "if n := d.SizedArrayLength(%d, %s); n < 0 {\nv.%s = nil\n} else {\n", f.typ.minSize(), elemSize(f), f.name)
	decodeArrayBody(b, f)
	b.WriteString("}\n")
}

// optionalMask is the EncodingMask bits t assigns.
func optionalMask(t *structType) uint32 {
	var m uint32
	for _, f := range t.fields {
		if f.optional {
			m |= 1 << f.bit
		}
	}
	return m
}

// computeMask writes the statements that set mask from the present optional fields.
func computeMask(b *bytes.Buffer, t *structType) {
	b.WriteString("var mask uint32\n")
	for _, f := range t.fields {
		if f.optional {
			fmt.Fprintf(b, "if v.%s != nil {\nmask |= 1 << %d\n}\n", f.name, f.bit)
		}
	}
}

func emitBinary(m *model) []byte {
	var b bytes.Buffer
	for _, t := range m.structs {
		emitEncodeBinary(&b, t)
		emitDecodeBinary(&b, t)
	}
	return goSource("ua", &b, "unsafe", codecImport, statusImport)
}

func emitEncodeBinary(b *bytes.Buffer, t *structType) {
	fmt.Fprintf(b, "// EncodeBinary appends v in the OPC UA Binary encoding (Part 6 §5.2) to e's buffer.\n")
	fmt.Fprintf(b, "func (v *%s) EncodeBinary(e *codec.Encoder) {\n", t.name)
	switch t.kind {
	case plainStruct:
		for _, f := range t.fields {
			encodeField(b, f)
		}
	case optionalStruct:
		computeMask(b, t)
		b.WriteString("e.UInt32(mask)\n")
		for _, f := range t.fields {
			if !f.optional {
				encodeField(b, f)
				continue
			}
			fmt.Fprintf(b, "if v.%s != nil {\n", f.name)
			if f.array {
				encodeArray(b, f, "false")
			} else {
				b.WriteString(encodeValue(f.typ, derefAccess(f)) + "\n")
			}
			b.WriteString("}\n")
		}
	case unionStruct:
		fmt.Fprintf(b, "e.UInt32(v.%s)\nswitch v.%s {\ncase 0:\n", t.switchName, t.switchName)
		for _, f := range t.fields[1:] {
			fmt.Fprintf(b, "case %d:\n", f.switchValue)
			encodeField(b, f)
		}
		// Part 6 §5.2.8: a switch value no field has is an error.
		b.WriteString("default:\ne.Fail(status.BadEncodingError)\n}\n")
	}
	b.WriteString("}\n\n")
}

func emitDecodeBinary(b *bytes.Buffer, t *structType) {
	b.WriteString("// DecodeBinary reads v from the OPC UA Binary encoding (Part 6 §5.2); errors stick in d.\n")
	b.WriteString("// Every field is overwritten. The arrays and optional fields v already has are reused\n")
	b.WriteString("// when they have room, so values shared with an earlier result are overwritten too.\n")
	fmt.Fprintf(b, "func (v *%s) DecodeBinary(d *codec.Decoder) {\n", t.name)
	if t.recursive {
		// The type can contain itself: count the nesting against MaxDepth.
		b.WriteString("if !d.Enter() {\nreturn\n}\n")
	}
	switch t.kind {
	case plainStruct:
		for _, f := range t.fields {
			decodeField(b, f)
		}
	case optionalStruct:
		b.WriteString("mask := d.UInt32()\n")
		// Part 6 §5.2.7: decoders report an error if unassigned bits are set.
		fmt.Fprintf(b, "if mask&^0x%x != 0 {\nd.Fail(status.BadDecodingError)\n}\n", optionalMask(t))
		for _, f := range t.fields {
			if !f.optional {
				decodeField(b, f)
				continue
			}
			if f.array {
				fmt.Fprintf(b, "if mask&(1<<%d) == 0 {\nv.%s = nil\n} else ", f.bit, f.name)
				// nil means absent, so a present array that is null on the wire is empty.
				fmt.Fprintf(b, "{\nn := max(d.SizedArrayLength(%d, %s), 0)\n", f.typ.minSize(), elemSize(f))
				decodeArrayBody(b, f)
				b.WriteString("}\n")
				continue
			}
			// The value an optional field points to is memory the Decoder does not
			// charge for itself.
			fmt.Fprintf(b, "if mask&(1<<%d) == 0 || !d.Charge(int(unsafe.Sizeof(*v.%s))) {\nv.%s = nil\n} else ", f.bit, f.name, f.name)
			fmt.Fprintf(b, "{\nif v.%s == nil {\nv.%s = new(%s)\n}\n%s\n}\n",
				f.name, f.name, f.typ.goType(), decodeValue(f.typ, derefAccess(f)))
		}
	case unionStruct:
		fmt.Fprintf(b, "sw := d.UInt32()\n*v = %s{%s: sw}\nswitch sw {\ncase 0:\n", t.name, t.switchName)
		for _, f := range t.fields[1:] {
			fmt.Fprintf(b, "case %d:\n", f.switchValue)
			decodeField(b, f)
		}
		b.WriteString("default:\nd.Fail(status.BadDecodingError)\n}\n")
	}
	if t.recursive {
		b.WriteString("d.Leave()\n")
	}
	b.WriteString("}\n\n")
}
