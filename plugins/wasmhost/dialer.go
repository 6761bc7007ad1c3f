package wasmhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"uastack.dev/pkg/status"
	"uastack.dev/plugins/internal/remote"
	"uastack.dev/plugins/sdk/wasm"
	"uastack.dev/plugins/wire"
)

// dialer instantiates the compiled module: each Dial is a fresh instance
// (remote.Dialer).
type dialer struct {
	cfg      Config
	modCfg   wazero.ModuleConfig
	r        wazero.Runtime
	cache    wazero.CompilationCache // nil without a disk cache
	compiled wazero.CompiledModule   // guarded by mu once Open returns: Refresh replaces it
	// metered: the runtime runs metered modules without wazero's termination checks
	// (meter.go); otherwise it runs the module as it is, with the checks.
	metered bool

	mu    sync.RWMutex // guards conns, compiled
	conns map[api.Module]*conn
}

// compile makes the runtime, with the host's imports, and compiles code into it:
// metered, without the termination checks, or, when the module cannot be metered, as it
// is with the checks.
func (d *dialer) compile(ctx context.Context, code []byte) error {
	rc, cache, err := runtimeConfig(&d.cfg)
	if err != nil {
		return err
	}
	d.cache = cache
	metered, err := meter(code)
	if err == nil {
		if err = d.compileWith(ctx, rc.WithCloseOnContextDone(false), metered); err == nil {
			d.metered = true
			return nil
		}
		// The rewrite broke a module: a bug of meter's, which must not cost the module.
		d.cfg.Logger.Error("wasmhost: the metered module does not compile; running it with termination checks", "err", err)
		if d.r != nil {
			_ = d.r.Close(ctx)
		}
	} else {
		d.cfg.Logger.Warn("wasmhost: running the module with termination checks, which slow it", "reason", err)
	}
	return d.compileWith(ctx, rc.WithCloseOnContextDone(true), code)
}

// compileWith is compile with the runtime configuration rc.
func (d *dialer) compileWith(ctx context.Context, rc wazero.RuntimeConfig, code []byte) error {
	d.r = wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, d.r); err != nil {
		return fmt.Errorf("WASI: %w", err)
	}
	_, err := d.r.NewHostModuleBuilder("uastack").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(d.log), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, nil).Export("log").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(d.push), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, nil).Export("push").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(d.now), nil, []api.ValueType{api.ValueTypeI64}).Export("now").
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("host module: %w", err)
	}
	d.compiled, err = d.r.CompileModule(ctx, code)
	if err != nil {
		return fmt.Errorf("not a WebAssembly module the host can run: %w", err)
	}
	return checkExports(d.compiled)
}

// release closes the runtime (and so every instance) and the cache: remote.Config's
// Release.
func (d *dialer) release(ctx context.Context) error {
	var errs []error
	if d.r != nil {
		errs = append(errs, d.r.Close(ctx))
	}
	if d.cache != nil {
		errs = append(errs, d.cache.Close(ctx))
	}
	return errors.Join(errs...)
}

// Dial instantiates the module afresh, runs its _initialize, and checks the ABI
// version it speaks.
func (d *dialer) Dial(ctx context.Context, push func(frame []byte)) (remote.Conn, error) {
	c := &conn{
		d:      d,
		push:   push,
		stdout: &lineLog{logger: d.cfg.Logger, stream: "stdout"},
		stderr: &lineLog{logger: d.cfg.Logger, stream: "stderr"},
	}
	d.mu.RLock()
	compiled := d.compiled
	d.mu.RUnlock()
	mod, err := d.r.InstantiateModule(ctx, compiled, d.modCfg.WithStdout(c.stdout).WithStderr(c.stderr))
	if err != nil {
		c.stderr.flush(ctx)
		return nil, fmt.Errorf("instantiate (_initialize): %w", err)
	}
	c.mod, c.mem = mod, mod.Memory()
	if d.metered {
		c.stop, _ = mod.ExportedGlobal(stopExport).(api.MutableGlobal)
		if c.stop == nil {
			mod.Close(ctx)
			return nil, fmt.Errorf("the metered module does not export %s", stopExport)
		}
		c.halt = c.haltCall
	}
	c.alloc, c.call = mod.ExportedFunction("uastack_alloc"), mod.ExportedFunction("uastack_call")
	if err := mod.ExportedFunction("uastack_abi_version").CallWithStack(ctx, c.stack[:]); err != nil {
		mod.Close(ctx)
		return nil, fmt.Errorf("uastack_abi_version: %w", err)
	}
	if v := uint32(c.stack[0]); v != wasm.ABIVersion {
		mod.Close(ctx)
		return nil, fmt.Errorf("the module speaks ABI version %d, the host %d", v, wasm.ABIVersion)
	}
	d.mu.Lock()
	d.conns[mod] = c
	d.mu.Unlock()
	return c, nil
}

// conn finds the instance that calls an import.
func (d *dialer) conn(mod api.Module) *conn {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.conns[mod]
}

// log is the import log(ptr, n): one JSON log line of the guest.
func (d *dialer) log(ctx context.Context, mod api.Module, stack []uint64) {
	line, ok := mod.Memory().Read(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	if !ok {
		return // a guest that points past its memory loses the line
	}
	level, msg, attrs := wire.ParseLog(line)
	d.cfg.Logger.LogAttrs(ctx, level, msg, attrs...)
}

// push is the import push(ptr, n): one DataChanges or Events frame.
func (d *dialer) push(_ context.Context, mod api.Module, stack []uint64) {
	frame, ok := mod.Memory().Read(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	if !ok {
		return
	}
	if c := d.conn(mod); c != nil {
		c.push(frame) // remote decodes it before it returns: no copy
	}
}

// now is the import now(): the server's clock in nanoseconds since 1970.
func (d *dialer) now(_ context.Context, _ api.Module, stack []uint64) {
	stack[0] = api.EncodeI64(d.cfg.Now().UnixNano())
}

// conn is one instance of the module (remote.Conn).
type conn struct {
	d              *dialer
	mod            api.Module
	mem            api.Memory
	alloc, call    api.Function
	push           func(frame []byte)
	stdout, stderr *lineLog
	closed         atomic.Bool
	// stop is a metered module's stop global: raised, the guest traps at its next tick.
	// It is nil for a module run with termination checks.
	stop api.MutableGlobal
	halt func() // haltCall, kept so that arming a call does not allocate it

	mu    sync.Mutex // guards stack: one call at a time runs in an instance
	stack [1]uint64

	stopMu sync.Mutex // guards armed, and the host's writes of stop
	armed  bool       // a call runs whose context ending stops the guest
}

// haltCall stops the call that runs, if one does: context.AfterFunc runs it when a
// call's context ends, possibly just after the call returned.
func (c *conn) haltCall() {
	c.stopMu.Lock()
	if c.armed {
		c.stop.Set(1)
	}
	c.stopMu.Unlock()
}

// arm has the end of ctx stop the guest while it runs a call, and returns what disarms
// it; the calls of a module with termination checks need nothing.
func (c *conn) arm(ctx context.Context) (disarm func()) {
	if c.stop == nil || ctx.Done() == nil {
		return nil
	}
	c.stopMu.Lock()
	c.armed = true
	c.stopMu.Unlock()
	cancel := context.AfterFunc(ctx, c.halt)
	return func() {
		cancel()
		c.stopMu.Lock()
		c.armed = false
		if !c.closed.Load() && c.stop.Get() != 0 {
			c.stop.Set(0) // the context ended as the call returned: the guest is fine
		}
		c.stopMu.Unlock()
	}
}

// Call writes batch into the guest's memory, has the guest answer it, and returns a
// copy of the reply, which the caller owns. A trap fails with BadInternalError, a
// call past ctx's deadline with BadTimeout, a reply out of the guest's memory with
// BadCommunicationError; all three also wrap remote.ErrBroken.
func (c *conn) Call(ctx context.Context, batch []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.unlock()
	if c.closed.Load() {
		return nil, fmt.Errorf("the instance is closed: %w", errors.Join(status.BadCommunicationError, remote.ErrBroken))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", status.BadTimeout, err) // the guest was not entered: it is fine
	}
	if disarm := c.arm(ctx); disarm != nil {
		defer disarm()
	}
	c.stack[0] = uint64(len(batch))
	if err := c.alloc.CallWithStack(ctx, c.stack[:]); err != nil {
		return nil, c.failed(ctx, "uastack_alloc", err)
	}
	if !c.mem.Write(uint32(c.stack[0]), batch) {
		return nil, c.bad(ctx, fmt.Sprintf("uastack_alloc(%d) returned %#x, out of the guest's memory", len(batch), uint32(c.stack[0])))
	}
	c.stack[0] = uint64(len(batch))
	if err := c.call.CallWithStack(ctx, c.stack[:]); err != nil {
		return nil, c.failed(ctx, "uastack_call", err)
	}
	packed := c.stack[0]
	if packed == 0 {
		return nil, c.bad(ctx, "uastack_call answered 0: the guest cannot answer")
	}
	out, ok := c.mem.Read(uint32(packed>>32), uint32(packed))
	if !ok {
		return nil, c.bad(ctx, fmt.Sprintf("uastack_call answered %d bytes at %#x, out of the guest's memory", uint32(packed), uint32(packed>>32)))
	}
	// A copy, not a buffer of the conn's: the Manager's supervisor may call (Health,
	// Watch) while a lane still decodes the reply of its own call. See RATIONALE.md.
	return append([]byte(nil), out...), nil
}

// unlock ends a call, and closes the instance when Close came while the call ran.
func (c *conn) unlock() {
	c.mu.Unlock()
	if c.stop != nil && c.closed.Load() && c.mu.TryLock() {
		c.mod.Close(context.Background())
		c.mu.Unlock()
	}
}

// failed turns the error of a call into the guest into Call's error, and logs it.
func (c *conn) failed(ctx context.Context, export string, err error) error {
	var exit *sys.ExitError
	if ctx.Err() != nil || errors.As(err, &exit) && (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) {
		c.d.cfg.Logger.Warn("wasmhost: the guest ran past its deadline; replacing it", "export", export)
		return fmt.Errorf("%s: %w", export, errors.Join(status.BadTimeout, remote.ErrBroken, err))
	}
	if c.closed.Load() {
		return fmt.Errorf("%s: the instance was closed: %w", export, errors.Join(status.BadCommunicationError, remote.ErrBroken, err))
	}
	c.stdout.flush(ctx)
	c.stderr.flush(ctx) // a Go guest's panic is on its stderr: log it before the trap
	c.d.cfg.Logger.Error("wasmhost: the guest trapped; replacing it", "export", export, "err", err)
	return fmt.Errorf("%s trapped: %w", export, errors.Join(status.BadInternalError, remote.ErrBroken, err))
}

// bad fails a call whose answer breaks the ABI.
func (c *conn) bad(ctx context.Context, what string) error {
	c.d.cfg.Logger.Error("wasmhost: the guest broke the ABI; replacing it", "err", what)
	return fmt.Errorf("%s: %w", what, errors.Join(status.BadCommunicationError, remote.ErrBroken))
}

// Broken returns nil: an instance does not break by itself, only in a call.
func (c *conn) Broken() <-chan struct{} { return nil }

// Close closes the instance. It is safe while a call runs: the call ends with an
// error. A metered guest is stopped at its next tick and its instance closed once the
// call has returned, as native code must not run in a closed module; with termination
// checks, closing the module stops the call.
func (c *conn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.d.mu.Lock()
	delete(c.d.conns, c.mod)
	c.d.mu.Unlock()
	ctx := context.Background()
	c.stdout.flush(ctx)
	c.stderr.flush(ctx)
	if c.stop == nil {
		return c.mod.Close(ctx)
	}
	c.stopMu.Lock()
	c.stop.Set(1)
	c.stopMu.Unlock()
	if !c.mu.TryLock() {
		return nil // the call's unlock closes the instance
	}
	defer c.mu.Unlock()
	return c.mod.Close(ctx)
}

// lineLog logs what a guest writes to stdout or stderr, a record per line: JSON lines
// as wire.ParseLog reads them, other lines as the message of an Info record.
type lineLog struct {
	logger *slog.Logger
	stream string

	mu   sync.Mutex // guards part
	part []byte     // a line not ended yet
}

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.part = append(l.part, b...)
			if len(l.part) >= wire.MaxLogLine {
				l.emit(context.Background())
			}
			break
		}
		l.part = append(l.part, b[:i]...)
		l.emit(context.Background())
		b = b[i+1:]
	}
	return n, nil
}

// flush logs a line not ended yet.
func (l *lineLog) flush(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.part) > 0 {
		l.emit(ctx)
	}
}

func (l *lineLog) emit(ctx context.Context) {
	level, msg, attrs := wire.ParseLog(l.part)
	l.part = l.part[:0]
	l.logger.LogAttrs(ctx, level, msg, append(attrs, slog.String("stream", l.stream))...)
}

// Refresh compiles the module file as it is now, for the instances dialed from now on
// (remote.Refresher): a reload. The modules compiled before stay until Release, since
// instances of them may still serve.
func (d *dialer) Refresh(ctx context.Context) error {
	code, err := os.ReadFile(d.cfg.Path)
	if err != nil {
		return err
	}
	if d.metered {
		// The runtime runs without termination checks: only a metered module may run in it.
		if code, err = meter(code); err != nil {
			return fmt.Errorf("the module runs without termination checks, and its new version %w", err)
		}
	}
	compiled, err := d.r.CompileModule(ctx, code)
	if err != nil {
		return fmt.Errorf("not a WebAssembly module the host can run: %w", err)
	}
	if err := checkExports(compiled); err != nil {
		compiled.Close(ctx)
		return err
	}
	d.mu.Lock()
	d.compiled = compiled
	d.mu.Unlock()
	return nil
}
