package wasmhost

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// runaway returns a module whose exports never end on their own: "spin" loops without
// calls, "fan" recurses twice per level without loops (2^60 calls), the two shapes a
// step can be; "calls" counts into memory and returns, for the steps' cost.
func runaway() []byte {
	return assemble([]wasmFunc{
		// loop br 0 end
		{name: "spin", body: []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}},
		// if n != 0 { fan(n-1); fan(n-1) }
		{name: "fan", params: []byte{i32}, body: []byte{
			0x20, 0x00, 0x04, 0x40, // local.get 0; if
			0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x01, // fan(n-1)
			0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x01, // fan(n-1)
			0x0b, // end
		}},
	}, true)
}

// instantiate meters code, compiles it without termination checks and instantiates it.
func instantiate(t *testing.T, code []byte) (api.Module, api.MutableGlobal) {
	t.Helper()
	metered, err := meter(code)
	require.NoError(t, err)
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(false))
	t.Cleanup(func() { r.Close(ctx) })
	mod, err := r.Instantiate(ctx, metered)
	require.NoError(t, err)
	stop, ok := mod.ExportedGlobal(stopExport).(api.MutableGlobal)
	require.True(t, ok, "the metered module exports its stop global")
	return mod, stop
}

// A metered guest stops when the host raises its stop global, whichever way it runs
// away, and lets the collector run meanwhile.
func TestMeterStopsRunaways(t *testing.T) {
	for _, c := range []struct {
		export string
		args   []uint64
	}{{"spin", nil}, {"fan", []uint64{60}}} {
		t.Run(c.export, func(t *testing.T) {
			mod, stop := instantiate(t, runaway())
			ended := make(chan error, 1)
			go func() {
				_, err := mod.ExportedFunction(c.export).Call(context.Background(), c.args...)
				ended <- err
			}()
			time.Sleep(50 * time.Millisecond)
			collected := make(chan struct{})
			go func() { runtime.GC(); close(collected) }()
			select {
			case <-collected:
			case <-time.After(3 * time.Second):
				t.Fatal("the collector waited for the running guest")
			}
			require.Empty(t, ended, "the guest ran away")
			stop.Set(1)
			select {
			case err := <-ended:
				require.ErrorContains(t, err, "unreachable")
			case <-time.After(3 * time.Second):
				t.Fatal("the guest did not stop")
			}
		})
	}
}

// Metering leaves what a module computes as it was.
func TestMeterKeepsResults(t *testing.T) {
	// sum(n) = n + sum(n-1), by a loop and by recursion.
	code := assemble([]wasmFunc{
		{name: "loop", params: []byte{i32}, results: []byte{i32}, body: []byte{
			0x03, 0x7f, // loop (result i32)
			0x20, 0x00, 0x45, 0x04, 0x40, 0x20, 0x01, 0x0f, 0x0b, // if n == 0 { return acc }
			0x20, 0x01, 0x20, 0x00, 0x6a, 0x21, 0x01, // acc += n (local 1: an extra local below)
			0x20, 0x00, 0x41, 0x01, 0x6b, 0x21, 0x00, // n--
			0x0c, 0x00, // br 0
			0x0b, // end
		}},
		{name: "rec", params: []byte{i32}, results: []byte{i32}, body: []byte{
			0x20, 0x00, 0x45, 0x04, 0x7f, 0x41, 0x00, // if n == 0 { 0 }
			0x05, 0x20, 0x00, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x01, 0x6a, // else { n + rec(n-1) }
			0x0b,
		}},
	}, true)
	code = withLocal(code, 0, i32) // "loop" keeps its accumulator in an i32 local
	mod, _ := instantiate(t, code)
	for _, name := range []string{"loop", "rec"} {
		out, err := mod.ExportedFunction(name).Call(context.Background(), 30000)
		require.NoError(t, err, name)
		require.Equal(t, uint64(30000*30001/2), out[0], name)
	}
}

// withLocal returns code with one local of type typ declared in function fn of the code
// section, which assemble declares none in.
func withLocal(code []byte, fn int, typ byte) []byte {
	r := reader{b: code, at: 8}
	out := append([]byte(nil), code[:8]...)
	for !r.done() {
		id := r.byte()
		body := r.bytes(int(r.u32()))
		if id == secCode {
			br := reader{b: body}
			n := br.u32()
			nb := appendU32(nil, n)
			for i := range n {
				f := br.bytes(int(br.u32()))
				if int(i) == fn {
					f = append([]byte{0x01, 0x01, typ}, f[1:]...)
				}
				nb = append(appendU32(nb, uint32(len(f))), f...)
			}
			body = nb
		}
		out = appendSection(out, id, body)
	}
	return out
}

// The Go guests of the tests are metered, and compile.
func TestMeterGoGuest(t *testing.T) {
	code, err := os.ReadFile(guestPath)
	require.NoError(t, err)
	metered, err := meter(code)
	require.NoError(t, err)
	ctx := context.Background()
	rc, cache, err := runtimeConfig(&Config{CacheDir: cacheDir}) // warm compiled it there
	require.NoError(t, err)
	defer cache.Close(ctx)
	r := wazero.NewRuntimeWithConfig(ctx, rc.WithCloseOnContextDone(false))
	defer r.Close(ctx)
	compiled, err := r.CompileModule(ctx, metered)
	require.NoError(t, err)
	require.Contains(t, compiled.ExportedFunctions(), "uastack_call")
	t.Logf("%d bytes, metered %d (+%.1f%%)", len(code), len(metered), 100*float64(len(metered)-len(code))/float64(len(code)))
}

// What meter does not know it refuses, wrapping errUnmeterable, and the host then runs
// the module with termination checks.
func TestMeterRefuses(t *testing.T) {
	good := runaway()
	for name, code := range map[string][]byte{
		"not wasm":        []byte("\x7fELF\x02\x01\x01\x00"),
		"truncated":       good[:len(good)-3],
		"no memory":       assemble([]wasmFunc{{name: "f"}}, false),
		"unknown opcode":  assemble([]wasmFunc{{name: "f", body: []byte{0xff}}}, true),
		"no functions":    assemble(nil, true),
		"long LEB128":     append(append([]byte(nil), good[:8]...), 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"bad import kind": assembleImport(0x07),
		"bad local type":  withLocal(assemble([]wasmFunc{{name: "f"}}, true), 0, 0x01),
	} {
		_, err := meter(code)
		require.Truef(t, errors.Is(err, errUnmeterable), "%s: %v", name, err)
	}
}

// assembleImport returns a module with one import of the given kind byte.
func assembleImport(kind byte) []byte {
	imp := appendU32(nil, 1)
	imp = append(appendU32(imp, 1), 'm')
	imp = append(appendU32(imp, 1), 'f')
	imp = append(imp, kind, 0x00)
	return appendSection([]byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}, secImport, imp)
}

// FuzzMeter: meter never panics, and a module that wazero compiles still compiles
// metered.
func FuzzMeter(f *testing.F) {
	f.Add(runaway())
	f.Add(assemble(abiFuncs(1), true))
	f.Add(assemble([]wasmFunc{{name: "f", body: []byte{0x41, 0x00, 0x04, 0x40, 0x03, 0x40, 0x0b, 0x0b}}}, true))
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	f.Fuzz(func(t *testing.T, code []byte) {
		metered, err := meter(code)
		if err != nil {
			require.ErrorIs(t, err, errUnmeterable)
			return
		}
		if !plausible(code) {
			return
		}
		if m, err := r.CompileModule(ctx, code); err == nil {
			m.Close(ctx)
			m, err := r.CompileModule(ctx, metered)
			require.NoError(t, err, "the metered module does not compile")
			m.Close(ctx)
		}
	})
}

// plausible reports whether every count of code's vectors fits the bytes left: wazero's
// decoder allocates a vector (a section's entries, a type's parameters and results) by
// its count before it reads it, so a count of 2^32 costs it gigabytes and minutes, and
// the fuzzer its worker.
func plausible(code []byte) bool {
	r := reader{b: code, at: 8}
	for !r.done() {
		id := r.byte()
		body := r.bytes(int(r.u32()))
		if id == secCustom || id == 8 || id == 12 { // custom, start, data count: no vector
			continue
		}
		tr := reader{b: body}
		n := tr.u32()
		if tr.err != nil || int(n) > len(body) {
			return false
		}
		for ; id == secType && n > 0 && !tr.done(); n-- {
			tr.byte()
			for range 2 { // parameters, results
				k := tr.u32()
				if tr.err != nil || int(k) > len(body)-tr.at {
					return false
				}
				tr.bytes(int(k))
			}
		}
	}
	return true
}
