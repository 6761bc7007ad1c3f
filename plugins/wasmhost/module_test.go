package wasmhost

// Tiny WebAssembly modules assembled by hand, for the ways a module can be refused
// without an 8-second Go build.

// wasmFunc is one function of a hand-made module: exported as name when it has one.
type wasmFunc struct {
	name            string
	params, results []byte // value types: 0x7f i32, 0x7e i64
	body            []byte // the instructions, without the locals and the final end
}

const (
	i32 = 0x7f
	i64 = 0x7e
)

// assemble returns a module of funcs (each with a type of its own), with one page of
// memory exported as "memory" when memory is set.
func assemble(funcs []wasmFunc, memory bool) []byte {
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	section := func(id byte, content []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(content)))
		out = append(out, content...)
	}
	name := func(b []byte, s string) []byte { return append(appendU32(b, uint32(len(s))), s...) }
	if len(funcs) > 0 {
		types := appendU32(nil, uint32(len(funcs)))
		for _, f := range funcs {
			types = append(types, 0x60)
			types = append(appendU32(types, uint32(len(f.params))), f.params...)
			types = append(appendU32(types, uint32(len(f.results))), f.results...)
		}
		section(1, types)
		fns := appendU32(nil, uint32(len(funcs)))
		for i := range funcs {
			fns = appendU32(fns, uint32(i))
		}
		section(3, fns)
	}
	if memory {
		section(5, []byte{0x01, 0x00, 0x01}) // one memory: min 1 page, no max
	}
	var exports []byte
	n := 0
	for i, f := range funcs {
		if f.name != "" {
			exports = append(name(exports, f.name), 0x00)
			exports = appendU32(exports, uint32(i))
			n++
		}
	}
	if memory {
		exports = append(name(exports, "memory"), 0x02, 0x00)
		n++
	}
	section(7, append(appendU32(nil, uint32(n)), exports...))
	if len(funcs) > 0 {
		code := appendU32(nil, uint32(len(funcs)))
		for _, f := range funcs {
			body := append(append([]byte{0x00}, f.body...), 0x0b) // no locals; end
			code = append(appendU32(code, uint32(len(body))), body...)
		}
		section(10, code)
	}
	return out
}

// abiFuncs returns the exports of ABI.md, answering version for uastack_abi_version
// and 0 (cannot answer) for every call.
func abiFuncs(version byte) []wasmFunc {
	return []wasmFunc{
		{name: "uastack_abi_version", results: []byte{i32}, body: []byte{0x41, version}}, // i32.const version
		{name: "uastack_alloc", params: []byte{i32}, results: []byte{i32}, body: []byte{0x41, 0x00}},
		{name: "uastack_call", params: []byte{i32}, results: []byte{i64}, body: []byte{0x42, 0x00}}, // i64.const 0
	}
}
