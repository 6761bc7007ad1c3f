package main

// Emits random_gen_test.go: a randomize function per structure that fills every field,
// and the allTypes table the round-trip tests in package ua range over. The built-in
// values come from hand-written rand<Builtin>(r, depth) helpers in pkg/ua/random_test.go.

import (
	"bytes"
	"fmt"
)

// randomValue returns the statement giving a one random value; depth bounds nesting.
func randomValue(t fieldType, a access) string {
	switch {
	case t.builtin != nil:
		return fmt.Sprintf("%s = rand%s(r, depth)", a.val, t.builtin.name)
	case t.enum != nil:
		return fmt.Sprintf("%s = random%s(r)", a.val, t.enum.name)
	}
	return fmt.Sprintf("randomize%s(r, %s, depth-1)", t.st.name, a.ptr)
}

// randomArray gives an array field 0 to 3 random elements, none once depth runs out.
func randomArray(b *bytes.Buffer, f *field) {
	fmt.Fprintf(b, "v.%s = make(%s, randLen(r, depth))\nfor i := range v.%s {\n%s\n}\n",
		f.name, f.goType(), f.name, randomValue(f.typ, elemAccess(f)))
}

func randomField(b *bytes.Buffer, f *field) {
	switch {
	case f.optional:
		fmt.Fprintf(b, "if r.IntN(2) == 0 {\nv.%s = nil\n} else {\n", f.name)
		if f.array {
			randomArray(b, f)
		} else {
			fmt.Fprintf(b, "v.%s = new(%s)\n%s\n", f.name, f.typ.goType(), randomValue(f.typ, derefAccess(f)))
		}
		b.WriteString("}\n")
	case f.array:
		randomArray(b, f)
	default:
		b.WriteString(randomValue(f.typ, fieldAccess(f)) + "\n")
	}
}

func emitRandom(m *model) []byte {
	var b bytes.Buffer
	for _, t := range m.enums {
		fmt.Fprintf(&b, "// random%s returns a random %s.\n", t.name, t.name)
		fmt.Fprintf(&b, "func random%s(r *rand.Rand) %s {\n", t.name, t.name)
		if t.optionSet {
			// Any bits, defined or not: they are plain integers on the wire.
			fmt.Fprintf(&b, "return %s(r.Uint64())\n}\n\n", t.name)
			continue
		}
		fmt.Fprintf(&b, "values := [...]%s{", t.name)
		for _, v := range t.values {
			fmt.Fprintf(&b, "%s%s, ", t.name, v.name)
		}
		b.WriteString("}\nreturn values[r.IntN(len(values))]\n}\n\n")
	}
	for _, t := range m.structs {
		fmt.Fprintf(&b, "// randomize%s fills every field of v; depth bounds the nesting.\n", t.name)
		fmt.Fprintf(&b, "func randomize%s(r *rand.Rand, v *%s, depth int) {\n", t.name, t.name)
		switch t.kind {
		case unionStruct:
			fmt.Fprintf(&b, "*v = %s{}\n", t.name)
			fmt.Fprintf(&b, "v.%s = [...]uint32{0", t.switchName)
			for _, f := range t.fields[1:] {
				fmt.Fprintf(&b, ", %d", f.switchValue)
			}
			fmt.Fprintf(&b, "}[r.IntN(%d)]\nswitch v.%s {\n", len(t.fields), t.switchName)
			for _, f := range t.fields[1:] {
				fmt.Fprintf(&b, "case %d:\n", f.switchValue)
				randomField(&b, f)
			}
			b.WriteString("}\n")
		default:
			for _, f := range t.fields {
				randomField(&b, f)
			}
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("// typeCase is one generated structure for the table tests.\ntype typeCase struct {\n")
	b.WriteString("name string\ninfo *codec.TypeInfo\nrandom func(r *rand.Rand, depth int) codec.Structure\n}\n\n")
	b.WriteString("// allTypes lists every generated structure in schema order. It is filled in init, as\n")
	b.WriteString("// the random ExtensionObjects pick their bodies from it.\nvar allTypes []typeCase\n\n")
	b.WriteString("func init() {\nallTypes = []typeCase{\n")
	for _, t := range m.structs {
		fmt.Fprintf(&b, "{%q, %s, func(r *rand.Rand, depth int) codec.Structure {\nv := new(%s)\nrandomize%s(r, v, depth)\nreturn v\n}},\n",
			t.name, typeInfoVar(t), t.name, t.name)
	}
	b.WriteString("}\n}\n")
	return goSource("ua", &b, "math/rand/v2", codecImport, statusImport)
}
