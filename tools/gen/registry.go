package main

// Emits registry_gen.go: the TypeInfo of every structure, its TypeInfo method, the
// compile-time guards, and the init that registers the types with the codec.

import (
	"bytes"
	"fmt"
)

func emitRegistry(m *model) []byte {
	var b bytes.Buffer
	b.WriteString("// The TypeInfo of each structure: its DataType and encoding ids in namespace 0 (a null\n")
	b.WriteString("// NodeId where NodeIds.csv has none), its constructor and its size in memory. They are\n")
	b.WriteString("// shared and read-only.\n")
	b.WriteString("var (\n")
	for _, t := range m.structs {
		fmt.Fprintf(&b, "%s = &codec.TypeInfo{\nName: %q,\n", typeInfoVar(t), t.name)
		for _, id := range []struct {
			field, suffix string
			ok            bool
		}{
			{"DataType", "", t.hasID},
			{"BinaryEncoding", "_Encoding_DefaultBinary", t.hasBinary},
			{"XMLEncoding", "_Encoding_DefaultXml", t.hasXML},
			{"JSONEncoding", "_Encoding_DefaultJson", t.hasJSON},
		} {
			if id.ok {
				fmt.Fprintf(&b, "%s: codec.NewNumericNodeId(0, id.%s%s),\n", id.field, t.name, id.suffix)
			}
		}
		fmt.Fprintf(&b, "New: func() codec.Structure { return new(%s) },\n", t.name)
		fmt.Fprintf(&b, "Size: int(unsafe.Sizeof(%s{})),\n}\n", t.name)
	}
	b.WriteString(")\n\n")

	for _, t := range m.structs {
		fmt.Fprintf(&b, "// TypeInfo describes the %s DataType and its encodings.\n", t.name)
		fmt.Fprintf(&b, "func (*%s) TypeInfo() *codec.TypeInfo { return %s }\n\n", t.name, typeInfoVar(t))
	}

	for _, t := range m.structs {
		if h := headerField(t); h != "" {
			fmt.Fprintf(&b, "// Header returns the %s that the message starts with.\n", h)
			fmt.Fprintf(&b, "func (v *%s) Header() *%s { return &v.%s }\n\n", t.name, h, h)
		}
	}

	b.WriteString("// Every structure implements codec.Structure on its pointer.\nvar (\n")
	for _, t := range m.structs {
		fmt.Fprintf(&b, "_ codec.Structure = (*%s)(nil)\n", t.name)
	}
	b.WriteString(")\n\n")

	var registered []string
	for _, t := range m.structs {
		if t.registered() {
			registered = append(registered, typeInfoVar(t))
		}
	}
	if len(registered) > 0 {
		b.WriteString("// init makes the structures with an encoding id known to ExtensionObject decoding.\n")
		b.WriteString("// A duplicate id would be a generator bug, so it panics.\nfunc init() {\n")
		b.WriteString("for _, t := range [...]*codec.TypeInfo{\n")
		for _, name := range registered {
			fmt.Fprintf(&b, "%s,\n", name)
		}
		b.WriteString("} {\nif !codec.Register(t) {\npanic(\"ua: a NodeId of \" + t.Name + \" is registered twice\")\n}\n}\n}\n")
	}
	return goSource("ua", &b, "unsafe", codecImport, idImport)
}

// headerField returns "RequestHeader" or "ResponseHeader" when t is a service message that
// starts with one (Part 4 §7.32, §7.33), else "".
func headerField(t *structType) string {
	if t.kind != plainStruct || len(t.fields) == 0 {
		return ""
	}
	f := t.fields[0]
	if f.array || f.typ.st == nil {
		return ""
	}
	if n := f.typ.st.name; f.name == n && (n == "RequestHeader" || n == "ResponseHeader") {
		return n
	}
	return ""
}
