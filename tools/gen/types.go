package main

// The type generator: Go types with reflection-free binary and JSON codecs for every
// namespace-0 DataType of Opc.Ua.Types.bsd, written into package ua.
//
// Representation choices (documented again in pkg/ua/doc.go):
//   - StructuredType: a value-typed struct, fields in .bsd order; an array field X (with
//     its NoOfX length field folded in) is a []T where nil is the null array.
//   - Optional fields (a SwitchField naming a Bit): *T, nil when absent; optional arrays
//     stay []T, nil when absent. The EncodingMask is computed when encoding.
//   - Unions (a SwitchField naming a UInt32, with SwitchValue): the SwitchField as a
//     uint32 plus every option as an ordinary field; only the selected one is encoded.
//   - EnumeratedType: a defined int32; option sets a defined unsigned integer of their
//     width, encoded as that integer (binary and JSON).
//   - OpaqueType: an alias of the Go type of its built-in supertype (from the NodeSet),
//     so `ua.Duration` and `float64` mix freely; fields use the built-in directly, as the
//     .bsd does.

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

func init() { steps = append(steps, genTypes) }

// genTypes writes the ua package's generated files.
func genTypes(schemaDir, outDir string) error {
	m, err := loadModel(schemaDir)
	if err != nil {
		return err
	}
	files := []struct {
		path string
		emit func(*model) []byte
	}{
		{"ua/enums_gen.go", emitEnums},
		{"ua/types_gen.go", emitTypes},
		{"ua/binary_gen.go", emitBinary},
		{"ua/json_gen.go", emitJSON},
		{"ua/registry_gen.go", emitRegistry},
		{"ua/random_gen_test.go", emitRandom},
	}
	for _, f := range files {
		if err := writeGoFile(outDir, f.path, bsdFile, f.emit(m)); err != nil {
			return err
		}
	}
	return nil
}

// goSource returns the package clause, those of imports that body uses, and body.
func goSource(pkg string, body *bytes.Buffer, imports ...string) []byte {
	var out bytes.Buffer
	fmt.Fprintf(&out, "package %s\n\n", pkg)
	var used []string
	for _, imp := range imports {
		name := imp[strings.LastIndex(imp, "/")+1:]
		if name == "v2" {
			name = "rand"
		}
		if regexp.MustCompile(`\b` + name + `\.[A-Za-z]`).Match(body.Bytes()) {
			used = append(used, imp)
		}
	}
	if len(used) > 0 {
		// The standard library first, then a blank line and the module's packages.
		out.WriteString("import (\n")
		std := true
		for _, imp := range used {
			first, _, _ := strings.Cut(imp, "/")
			if std && strings.Contains(first, ".") {
				if imp != used[0] {
					out.WriteString("\n")
				}
				std = false
			}
			fmt.Fprintf(&out, "%q\n", imp)
		}
		out.WriteString(")\n\n")
	}
	out.Write(body.Bytes())
	return out.Bytes()
}

const (
	codecImport  = "uastack.dev/pkg/codec"
	statusImport = "uastack.dev/pkg/status"
	idImport     = "uastack.dev/pkg/ua/id"
)

var specLink = regexp.MustCompile(`^https://reference\.opcfoundation\.org/v10\d/Core/docs/Part(\d+)/([0-9A-Z.]+)/?(?:#([0-9A-Z.]+))?$`)

// specRef turns a reference.opcfoundation.org link into "Part 4 §7.29", or "".
func specRef(link string) string {
	m := specLink.FindStringSubmatch(link)
	if m == nil {
		return ""
	}
	section := m[2]
	if m[3] != "" {
		section = m[3]
	}
	return "Part " + m[1] + " §" + section
}

// writeDoc writes the doc comment of a generated type.
func writeDoc(b *bytes.Buffer, name, what, doc, link string, extra ...string) {
	ref := ""
	if r := specRef(link); r != "" {
		ref = " (" + r + ")"
	}
	fmt.Fprintf(b, "// %s is the OPC UA %s %s%s.\n", name, name, what, ref)
	if doc != "" {
		fmt.Fprintf(b, "// %s\n", strings.TrimSuffix(doc, ".")+".")
	}
	for _, e := range extra {
		fmt.Fprintf(b, "// %s\n", e)
	}
	if link != "" {
		fmt.Fprintf(b, "//\n// Specification: %s\n", link)
	}
}

// emitEnums writes the enumerations and option sets.
func emitEnums(m *model) []byte {
	var b bytes.Buffer
	for _, t := range m.enums {
		if t.optionSet {
			emitOptionSet(&b, t)
			continue
		}
		writeDoc(&b, t.name, "enumeration", t.doc, t.link,
			"It is encoded as an Int32; JSON writes the number, or \"Name_Value\" in the verbose form.")
		fmt.Fprintf(&b, "type %s int32\n\n", t.name)
		fmt.Fprintf(&b, "// The values of %s.\nconst (\n", t.name)
		for _, v := range t.values {
			fmt.Fprintf(&b, "%s%s %s = %d\n", t.name, v.name, t.name, v.value)
		}
		b.WriteString(")\n\n")
		fmt.Fprintf(&b, "// String returns the name of x, or %s(n) for a value the schema does not define.\n", t.name)
		fmt.Fprintf(&b, "func (x %s) String() string {\nswitch x {\n", t.name)
		for _, v := range t.values {
			fmt.Fprintf(&b, "case %s%s:\nreturn %q\n", t.name, v.name, v.name)
		}
		fmt.Fprintf(&b, "}\nreturn \"%s(\" + strconv.FormatInt(int64(x), 10) + \")\"\n}\n\n", t.name)
		v0 := t.values[0]
		fmt.Fprintf(&b, "// %s returns the symbolic name of a %s value, or \"\" for a value the\n", enumNamesFunc(t), t.name)
		b.WriteString("// schema does not define. The JSON encoder calls it for the verbose form, which writes\n")
		fmt.Fprintf(&b, "// %q for %s%s (Part 6 §5.4).\n", fmt.Sprintf("%s_%d", v0.name, v0.value), t.name, v0.name)
		fmt.Fprintf(&b, "func %s(v int64) string {\nswitch v {\n", enumNamesFunc(t))
		for _, v := range t.values {
			fmt.Fprintf(&b, "case %d:\nreturn %q\n", v.value, v.name)
		}
		b.WriteString("}\nreturn \"\"\n}\n\n")
	}
	return goSource("ua", &b, "strconv")
}

// emitOptionSet writes an option set: a bit mask of its width.
func emitOptionSet(b *bytes.Buffer, t *enumType) {
	goType := map[int]string{8: "uint8", 16: "uint16", 32: "uint32", 64: "uint64"}[t.bits]
	writeDoc(b, t.name, "option set", t.doc, t.link,
		fmt.Sprintf("Its bits combine with |; it is encoded as a %s, in JSON too.", t.codecName()))
	fmt.Fprintf(b, "type %s %s\n\n", t.name, goType)
	fmt.Fprintf(b, "// The bits of %s.\nconst (\n", t.name)
	for _, v := range t.values {
		fmt.Fprintf(b, "%s%s %s = %d\n", t.name, v.name, t.name, v.value)
	}
	b.WriteString(")\n\n")
	zero := "0"
	for _, v := range t.values {
		if v.value == 0 {
			zero = v.name
		}
	}
	fmt.Fprintf(b, "// String returns the names of the bits set in x joined by \"|\", %q for none,\n", zero)
	b.WriteString("// and the remaining undefined bits in hexadecimal.\n")
	fmt.Fprintf(b, "func (x %s) String() string {\nif x == 0 {\nreturn %q\n}\nvar s []byte\n", t.name, zero)
	for _, v := range t.values {
		if v.value == 0 {
			continue
		}
		fmt.Fprintf(b, "if x&%s%s != 0 {\ns = append(s, \"|%s\"...)\nx &^= %s%s\n}\n", t.name, v.name, v.name, t.name, v.name)
	}
	b.WriteString("if x != 0 {\ns = append(s, \"|0x\"...)\ns = strconv.AppendUint(s, uint64(x), 16)\n}\nreturn string(s[1:])\n}\n\n")
}

// emitTypes writes the opaque type aliases and the structure types.
func emitTypes(m *model) []byte {
	var b bytes.Buffer
	for _, t := range m.opaques {
		carried := fmt.Sprintf("It is a subtype of %s, so it is an alias of that built-in's Go type.", t.baseName)
		if t.baseName != t.base.name {
			carried = fmt.Sprintf("It is a subtype of %s, which is carried as a %s, so it is an alias of %s.", t.baseName, t.base.name, t.base.goType)
		}
		writeDoc(&b, t.name, "DataType", t.doc, t.link, carried)
		fmt.Fprintf(&b, "type %s = %s\n\n", t.name, t.base.goType)
	}
	for _, t := range m.structs {
		var extra []string
		switch t.kind {
		case optionalStruct:
			extra = append(extra, "", "Optional fields are pointers, nil when absent; an optional array is absent when nil.",
				"The EncodingMask is computed from them when encoding (Part 6 §5.2.7).")
		case unionStruct:
			options := []string{"0 none"}
			for _, f := range t.fields[1:] {
				options = append(options, fmt.Sprintf("%d %s", f.switchValue, f.name))
			}
			extra = append(extra, "", fmt.Sprintf("It is a union (Part 6 §5.2.8): %s selects the one field that is encoded", t.switchName),
				"("+strings.Join(options, ", ")+"); the others are ignored.")
		}
		writeDoc(&b, t.name, "structure", t.doc, t.link, extra...)
		fmt.Fprintf(&b, "type %s struct {\n", t.name)
		for _, f := range t.fields {
			fmt.Fprintf(&b, "%s %s\n", f.name, f.goType())
		}
		b.WriteString("}\n\n")
	}
	return goSource("ua", &b, codecImport, statusImport)
}
