package wasmhost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Metering: a guest's module is rewritten before it is compiled so that its code
// leaves native code on its own every fuelPerTick steps, a step being a function entry
// or a loop's turn. At each step the code counts down a global, the fuel; when it is
// spent, the code calls tick, a function added to the module, which grows the memory by
// zero pages (wazero runs memory.grow in Go, so the goroutine passes a point where the
// scheduler and the collector can stop it), traps when the host has raised the stop
// global, and refills the fuel. RATIONALE.md "Stopping a runaway guest" has the figures
// that chose this over wazero's termination checks.

// fuelPerTick is the steps between two ticks: large enough that a tick's way through
// Go is lost in the work (about a tenth of a microsecond against tens of microseconds),
// small enough that a collection waits a few tens of microseconds at most for a guest.
const fuelPerTick = 10000

// stopExport is the name under which a metered module exports its stop global.
const stopExport = "uastack_stop"

// errUnmeterable is wrapped by meter's errors: the module uses something the rewriter
// does not know, and runs with wazero's termination checks instead.
var errUnmeterable = errors.New("cannot meter the module")

// Section ids (WebAssembly core specification §5.5.2).
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secMemory   = 5
	secGlobal   = 6
	secExport   = 7
	secCode     = 10
)

// section is one section of a module: its id and its contents.
type section struct {
	id   byte
	body []byte
}

// meter returns the module code rewritten as the comment above says. An error wraps
// errUnmeterable; code itself is not modified.
func meter(code []byte) ([]byte, error) {
	if len(code) < 8 || string(code[:4]) != "\x00asm" || binary.LittleEndian.Uint32(code[4:8]) != 1 {
		return nil, fmt.Errorf("%w: not a WebAssembly 1.0 binary", errUnmeterable)
	}
	var secs []section
	r := reader{b: code, at: 8}
	for !r.done() {
		id := r.byte()
		n := r.u32()
		body := r.bytes(int(n))
		if r.err != nil {
			return nil, r.fail("section")
		}
		if id == secCustom && strings.HasPrefix(customName(body), ".debug_") {
			continue // DWARF names code offsets that the rewrite moves
		}
		secs = append(secs, section{id, body})
	}

	// Count what the additions get their indexes after.
	var types, importedFuncs, funcs, importedGlobals, globals, memories uint32
	for _, s := range secs {
		r := reader{b: s.body}
		switch s.id {
		case secType:
			types = r.u32()
		case secFunction:
			funcs = r.u32()
		case secGlobal:
			globals = r.u32()
		case secMemory:
			memories += r.u32()
		case secImport:
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.name()
				r.name()
				switch kind := r.byte(); kind {
				case 0x00: // function
					r.u32()
					importedFuncs++
				case 0x01: // table
					r.valType()
					r.limits()
				case 0x02: // memory
					r.limits()
					memories++
				case 0x03: // global
					r.valType()
					r.byte()
					importedGlobals++
				case 0x04: // tag
					r.byte()
					r.u32()
				default:
					r.err = fmt.Errorf("import kind %#x", kind)
				}
			}
		}
		if r.err != nil {
			return nil, r.fail(fmt.Sprintf("section %d", s.id))
		}
	}
	if memories == 0 {
		return nil, fmt.Errorf("%w: no memory to grow", errUnmeterable)
	}
	fuel, stop := importedGlobals+globals, importedGlobals+globals+1
	tick := importedFuncs + funcs

	// The check at every step: fuel -= 1; if fuel == 0 { tick() }.
	check := appendU32(append([]byte(nil), 0x23), fuel) // global.get fuel
	check = append(check, 0x41, 0x01, 0x6B)             // i32.const 1; i32.sub
	check = appendU32(append(check, 0x24), fuel)        // global.set fuel
	check = appendU32(append(check, 0x23), fuel)        // global.get fuel
	check = append(check, 0x45, 0x04, 0x40)             // i32.eqz; if
	check = appendU32(append(check, 0x10), tick)        // call tick
	check = append(check, 0x0B)                         // end

	// tick: memory.grow 0; drop; if stop { unreachable }; fuel = fuelPerTick.
	tickBody := []byte{0x00, 0x41, 0x00, 0x40, 0x00, 0x1A}
	tickBody = appendU32(append(tickBody, 0x23), stop)
	tickBody = append(tickBody, 0x04, 0x40, 0x00, 0x0B)
	tickBody = appendS32(append(tickBody, 0x41), fuelPerTick)
	tickBody = appendU32(append(tickBody, 0x24), fuel)
	tickBody = append(tickBody, 0x0B)

	newGlobals := appendS32([]byte{0x7F, 0x01, 0x41}, fuelPerTick)      // mut i32 = fuelPerTick
	newGlobals = append(newGlobals, 0x0B, 0x7F, 0x01, 0x41, 0x00, 0x0B) // mut i32 = 0
	export := append(appendU32(nil, uint32(len(stopExport))), stopExport...)
	export = appendU32(append(export, 0x03), stop) // a global: stop
	tickEntry := append(appendU32(nil, uint32(len(tickBody))), tickBody...)

	var out []byte
	out = append(out, code[:8]...)
	sawGlobal := false
	for _, s := range secs {
		body := s.body
		var err error
		switch s.id {
		case secType:
			body = appendVec(body, []byte{0x60, 0x00, 0x00}) // () -> ()
		case secFunction:
			body = appendVec(body, appendU32(nil, types))
		case secGlobal:
			body, sawGlobal = appendVecN(body, newGlobals, 2), true
		case secExport:
			if !sawGlobal { // the global section comes before the export section
				out = appendSection(out, secGlobal, appendVecN(nil, newGlobals, 2))
				sawGlobal = true
			}
			body = appendVec(body, export)
		case secCode:
			body, err = meterCode(body, check)
			if err != nil {
				return nil, err
			}
			body = appendVec(body, tickEntry)
		}
		out = appendSection(out, s.id, body)
	}
	if !sawGlobal || !hasSection(secs, secExport) || !hasSection(secs, secType) || !hasSection(secs, secFunction) || !hasSection(secs, secCode) {
		return nil, fmt.Errorf("%w: no type, function, code or export section", errUnmeterable)
	}
	return out, nil
}

// hasSection reports whether secs hold a section id.
func hasSection(secs []section, id byte) bool {
	for _, s := range secs {
		if s.id == id {
			return true
		}
	}
	return false
}

// customName returns the name of a custom section's body.
func customName(body []byte) string {
	r := reader{b: body}
	n := r.name()
	if r.err != nil {
		return ""
	}
	return n
}

// meterCode rewrites the code section's body: check goes first in every function and
// first in every loop.
func meterCode(body, check []byte) ([]byte, error) {
	r := reader{b: body}
	count := r.u32()
	out := appendU32(nil, count)
	var fn []byte
	for i := uint32(0); i < count && r.err == nil; i++ {
		size := r.u32()
		end := r.at + int(size)
		if r.err != nil || end > len(r.b) {
			return nil, r.fail(fmt.Sprintf("function body %d", i))
		}
		fr := reader{b: r.b[:end], at: r.at}
		fn = fn[:0]
		// Locals: a vector of (count, type).
		start := fr.at
		for n := fr.u32(); n > 0 && fr.err == nil; n-- {
			fr.u32()
			fr.valType()
		}
		if fr.err != nil {
			return nil, fr.fail(fmt.Sprintf("locals of function body %d", i))
		}
		fn = append(fn, fr.b[start:fr.at]...)
		fn = append(fn, check...)
		if err := meterExpr(&fr, &fn, check); err != nil {
			return nil, fmt.Errorf("function body %d: %w", i, err)
		}
		out = appendU32(out, uint32(len(fn)))
		out = append(out, fn...)
		r.at = end
	}
	if r.err != nil || !r.done() {
		return nil, r.fail("code section")
	}
	return out, nil
}

// meterExpr copies the instructions from r to out, with check after each loop's
// block type, until r's end.
func meterExpr(r *reader, out *[]byte, check []byte) error {
	for !r.done() {
		start := r.at
		op := r.byte()
		loop := false
		switch {
		case op == 0x03: // loop
			r.blockType()
			loop = true
		case op == 0x02 || op == 0x04 || op == 0x06: // block, if, try
			r.blockType()
		case op <= 0x01 || op == 0x05 || op == 0x0A || op == 0x0B || op == 0x0F || op == 0x19 ||
			op == 0x1A || op == 0x1B || op == 0xD1 || op >= 0x45 && op <= 0xC4:
			// no immediates
		case op == 0x07 || op == 0x08 || op == 0x09 || op == 0x0C || op == 0x0D || op == 0x10 ||
			op == 0x12 || op == 0x14 || op == 0x15 || op == 0x18 || op >= 0x20 && op <= 0x26 ||
			op == 0x3F || op == 0x40 || op == 0xD2:
			r.u32() // one index
		case op == 0x0E: // br_table
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.u32()
			}
			r.u32()
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.u32()
			r.u32()
		case op == 0x1C: // select t*
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.valType()
			}
		case op == 0x1F: // try_table
			r.blockType()
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				switch kind := r.byte(); kind {
				case 0x00, 0x01:
					r.u32()
					r.u32()
				case 0x02, 0x03:
					r.u32()
				default:
					r.err = fmt.Errorf("catch kind %#x", kind)
				}
			}
		case op >= 0x28 && op <= 0x3E:
			r.memArg()
		case op == 0x41:
			r.leb(5)
		case op == 0x42:
			r.leb(10)
		case op == 0x43:
			r.bytes(4)
		case op == 0x44:
			r.bytes(8)
		case op == 0xD0: // ref.null
			r.heapType()
		case op == 0xFC:
			r.miscOp()
		case op == 0xFD:
			r.simdOp()
		case op == 0xFE:
			r.atomicOp()
		default:
			r.err = fmt.Errorf("opcode %#x", op)
		}
		if r.err != nil {
			return r.fail(fmt.Sprintf("instruction at %d", start))
		}
		*out = append(*out, r.b[start:r.at]...)
		if loop {
			*out = append(*out, check...)
		}
	}
	return nil
}

// reader reads a module's binary encoding; the first error sticks and every read after
// it returns zero.
type reader struct {
	b   []byte
	at  int
	err error
}

func (r *reader) done() bool { return r.err != nil || r.at >= len(r.b) }

// fail wraps r's error with errUnmeterable and what was read.
func (r *reader) fail(what string) error {
	err := r.err
	if err == nil {
		err = errors.New("malformed")
	}
	return fmt.Errorf("%w: %s: %w", errUnmeterable, what, err)
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.at >= len(r.b) {
		r.err = errors.New("unexpected end")
		return 0
	}
	b := r.b[r.at]
	r.at++
	return b
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.at {
		r.err = errors.New("unexpected end")
		return nil
	}
	b := r.b[r.at : r.at+n]
	r.at += n
	return b
}

// leb reads a LEB128 number of at most max bytes and returns its low 64 bits.
func (r *reader) leb(max int) uint64 {
	var v uint64
	for i := 0; i < max; i++ {
		b := r.byte()
		if r.err != nil {
			return 0
		}
		if i < 10 {
			v |= uint64(b&0x7F) << (7 * i)
		}
		if b&0x80 == 0 {
			return v
		}
	}
	r.err = errors.New("LEB128 number too long")
	return 0
}

func (r *reader) u32() uint32 { return uint32(r.leb(5)) }

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

// valType reads a value type: a number, vector or reference type's byte, or a typed
// reference (0x63, 0x64) with its heap type.
func (r *reader) valType() {
	switch b := r.byte(); b {
	case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
	case 0x63, 0x64:
		r.heapType()
	default:
		if r.err == nil {
			r.err = fmt.Errorf("value type %#x", b)
		}
	}
}

// heapType reads a heap type: a signed 33-bit type index or an abstract type's byte.
func (r *reader) heapType() { r.leb(5) }

// blockType reads a block type: empty (0x40), a value type or a type index (s33).
func (r *reader) blockType() {
	if r.at < len(r.b) {
		switch r.b[r.at] {
		case 0x40, 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
			r.at++
			return
		case 0x63, 0x64:
			r.valType()
			return
		}
	}
	r.leb(5)
}

// limits reads a table's or memory's limits: flags, minimum and, when flagged, maximum.
func (r *reader) limits() {
	flags := r.byte()
	r.leb(10)
	if flags&1 != 0 {
		r.leb(10)
	}
}

// memArg reads a load's or store's alignment (with a memory index when its bit 6 is
// set) and offset.
func (r *reader) memArg() {
	if align := r.u32(); align&0x40 != 0 {
		r.u32()
	}
	r.leb(10)
}

// miscOp reads an 0xFC instruction: saturating truncations, bulk memory and tables.
func (r *reader) miscOp() {
	switch op := r.u32(); {
	case op <= 7:
	case op == 8, op == 10, op == 12, op == 14: // memory.init, memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	case op == 9, op == 11, op == 13, op >= 15 && op <= 17:
		r.u32()
	default:
		if r.err == nil {
			r.err = fmt.Errorf("opcode 0xfc %d", op)
		}
	}
}

// simdOp reads an 0xFD instruction (fixed-width and relaxed SIMD).
func (r *reader) simdOp() {
	switch op := r.u32(); {
	case op <= 11 || op == 92 || op == 93: // loads and stores
		r.memArg()
	case op == 12 || op == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case op >= 21 && op <= 34: // lane extracts and replaces
		r.byte()
	case op >= 84 && op <= 91: // lane loads and stores
		r.memArg()
		r.byte()
	case op <= 0x113:
	default:
		if r.err == nil {
			r.err = fmt.Errorf("opcode 0xfd %d", op)
		}
	}
}

// atomicOp reads an 0xFE instruction (threads).
func (r *reader) atomicOp() {
	switch op := r.u32(); {
	case op == 3: // atomic.fence
		r.byte()
	case op <= 2 || op >= 0x10 && op <= 0x4E:
		r.memArg()
	default:
		if r.err == nil {
			r.err = fmt.Errorf("opcode 0xfe %d", op)
		}
	}
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSection(out []byte, id byte, body []byte) []byte {
	out = appendU32(append(out, id), uint32(len(body)))
	return append(out, body...)
}

// appendVec appends one element to a vector (its count and elements) and returns it.
func appendVec(vec, elem []byte) []byte { return appendVecN(vec, elem, 1) }

// appendVecN appends n elements, encoded together in elems, to a vector. A nil vec is
// an empty vector.
func appendVecN(vec, elems []byte, n uint32) []byte {
	r := reader{b: vec}
	var count uint32
	if len(vec) > 0 {
		count = r.u32()
	}
	out := appendU32(nil, count+n)
	out = append(out, vec[r.at:]...)
	return append(out, elems...)
}
