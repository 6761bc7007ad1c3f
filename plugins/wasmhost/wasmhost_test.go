package wasmhost

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/internal/remote"
)

// The misbehave guest (plugintest/testguest/misbehave), built once per test binary, and
// the compilation cache of the tests: in the user's cache directory, so that the guest
// is compiled once and not at every run (compiling it takes seconds, half a minute
// with the race detector).
var (
	guestPath string
	cacheDir  string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmhost-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	guestPath = filepath.Join(dir, "misbehave.wasm")
	cacheDir = filepath.Join(dir, "cache")
	if base, err := os.UserCacheDir(); err == nil {
		cacheDir = filepath.Join(base, "uastack", "wazero-test")
	}
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", guestPath, "../plugintest/testguest/misbehave")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test guest: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if err := warm(); err != nil {
		fmt.Fprintf(os.Stderr, "compiling the test guest: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// warmTook is how long warm took to compile the guest, 0 when it was in the cache.
var warmTook time.Duration

// warm compiles the test guest into the shared cache, so that the tests, which run in
// parallel, do not all compile it at once.
func warm() error {
	code, err := os.ReadFile(guestPath)
	if err != nil {
		return err
	}
	ctx := context.Background()
	rc, cache, err := runtimeConfig(&Config{CacheDir: cacheDir})
	if err != nil {
		return err
	}
	defer cache.Close(ctx)
	r := wazero.NewRuntimeWithConfig(ctx, rc.WithCloseOnContextDone(false)) // as the host runs it, metered
	defer r.Close(ctx)
	if code, err = meter(code); err != nil {
		return err
	}
	before := countFiles(cacheDir)
	start := time.Now()
	_, err = r.CompileModule(ctx, code)
	if countFiles(cacheDir) != before {
		warmTook = time.Since(start)
	}
	return err
}

// countFiles returns the number of files below dir.
func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// record is one log record, its attributes flattened.
type record struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

// logs records what is logged, at every level.
type logs struct {
	mu   sync.Mutex // guards recs
	recs []record
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logs) WithGroup(string) slog.Handler            { return l }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	rec := record{level: r.Level, msg: r.Message, attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool { rec.attrs[a.Key] = a.Value.Any(); return true })
	l.mu.Lock()
	l.recs = append(l.recs, rec)
	l.mu.Unlock()
	return nil
}

// find returns the records with message msg.
func (l *logs) find(msg string) []record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []record
	for _, r := range l.recs {
		if r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// notifier records what the guest pushes.
type notifier struct {
	mu      sync.Mutex // guards changes, events
	changes []nodemgr.DataChange
	events  []nodemgr.Event
}

func (n *notifier) Changed(c []nodemgr.DataChange) {
	n.mu.Lock()
	n.changes = append(n.changes, c...)
	n.mu.Unlock()
}

func (n *notifier) Emit(e []nodemgr.Event) {
	n.mu.Lock()
	n.events = append(n.events, e...)
	n.mu.Unlock()
}

type host struct {
	logger *slog.Logger
	n      *notifier
	now    func() time.Time
}

func (h host) NamespaceIndexes() []uint16 { return []uint16{2} }
func (h host) Logger() *slog.Logger       { return h.logger }
func (h host) Now() time.Time             { return h.now() }
func (h host) Notifier() nodemgr.Notifier { return h.n }

// fixed is the fake clock of the tests.
var fixed = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// guest is a started Manager of the misbehave guest, with what it logged and pushed.
type guest struct {
	m    *remote.Manager
	logs *logs
	n    *notifier
}

// start opens the misbehave guest with nodes as its options, mounts and starts it, and
// waits until all its instances serve.
func start(t *testing.T, nodes map[string]string, edit func(*Config)) *guest {
	t.Helper()
	opts, err := json.Marshal(map[string]any{"nodes": nodes})
	require.NoError(t, err)
	g := &guest{logs: &logs{}, n: &notifier{}}
	logger := slog.New(g.logs)
	cfg := Config{
		Name:        "misbehave",
		Path:        guestPath,
		Setup:       nodemgr.Setup{NamespaceURI: "urn:misbehave", Options: opts},
		CacheDir:    cacheDir,
		Logger:      logger,
		Now:         func() time.Time { return fixed },
		CallTimeout: 5 * time.Second,
	}
	if edit != nil {
		edit(&cfg)
	}
	ctx := context.Background()
	g.m, err = Open(ctx, cfg)
	require.NoError(t, err)
	require.Empty(t, g.logs.find("wasmhost: running the module with termination checks, which slow it"), "the guest is metered")
	require.Empty(t, g.logs.find("wasmhost: the metered module does not compile; running it with termination checks"))
	t.Cleanup(func() { require.NoError(t, g.m.Close(context.Background())) })
	require.Equal(t, []string{"urn:misbehave"}, g.m.Namespaces())
	g.m.Mount([]uint16{2})
	require.NoError(t, g.m.Start(ctx, host{logger: logger, n: g.n, now: cfg.Now}))
	g.connected(t, max(cfg.Instances, 1))
	return g
}

// connected waits until n instances have been connected by the supervisors (the first
// one, by Open, is not logged: it counts as one).
func (g *guest) connected(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return 1+len(g.logs.find("plugin: guest connected")) >= n &&
			g.m.Health(context.Background()).Status == status.Good
	}, 10*time.Second, time.Millisecond)
}

// read reads the nodes named by ids in one operation, bounded by timeout.
func (g *guest) read(t *testing.T, timeout time.Duration, ids ...string) []codec.DataValue {
	t.Helper()
	op := &nodemgr.ReadOp{Items: make([]ua.ReadValueId, len(ids)), Results: make([]codec.DataValue, len(ids))}
	for i, id := range ids {
		op.Items[i] = ua.ReadValueId{NodeId: codec.NewStringNodeId(2, id), AttributeId: 13}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan struct{})
	g.m.Served().(nodemgr.Reader).Read(ctx, op, func() { close(done) })
	select {
	case <-done:
	case <-time.After(timeout + 5*time.Second):
		t.Fatal("the Read did not end")
	}
	return op.Results
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	initTraps := append(abiFuncs(1), wasmFunc{name: "_initialize", body: []byte{0x00}}) // unreachable
	badCall := abiFuncs(1)
	badCall[2].results = []byte{i32}
	badCall[2].body = []byte{0x41, 0x00}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nothing.wasm"), "no such file"},
		{"not wasm", write("text.wasm", []byte("this is not a module")), "not a WebAssembly module"},
		{"no exports", write("bare.wasm", assemble(nil, true)), "does not export uastack_abi_version"},
		{"no memory", write("nomem.wasm", assemble(abiFuncs(1), false)), `does not export its memory as "memory"`},
		{"signature", write("sig.wasm", assemble(badCall, true)), "uastack_call has the signature [i32] -> [i32]"},
		{"ABI version", write("v2.wasm", assemble(abiFuncs(2), true)), "speaks ABI version 2, the host 1"},
		{"_initialize traps", write("init.wasm", assemble(initTraps, true)), "_initialize"},
		{"answers 0", write("zero.wasm", assemble(abiFuncs(1), true)), "uastack_call answered 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(context.Background(), Config{Name: "entry", Path: tc.path, NoCache: true})
			require.Error(t, err)
			require.Contains(t, err.Error(), `wasmhost "entry": `+tc.path+": ")
			require.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("grants", func(t *testing.T) {
		_, err := Open(context.Background(), Config{Name: "entry", Path: guestPath, NoCache: true,
			Grants: Grants{Dirs: []DirGrant{{Host: filepath.Join(dir, "none"), Guest: "/data"}}}})
		require.ErrorContains(t, err, guestPath)
		require.ErrorContains(t, err, "is not a directory")
	})
}

func TestReadCrossesAndAnswers(t *testing.T) {
	t.Parallel()
	g := start(t, map[string]string{"a": "value", "clock": "now"}, nil)
	res := g.read(t, 5*time.Second, "a", "clock", "unknown")
	require.Equal(t, status.Good, res[0].Status)
	require.Equal(t, "a", res[0].Value.Value())
	require.Equal(t, status.Good, res[1].Status)
	require.Equal(t, codec.DateTimeOf(fixed), res[1].Value.Value(), "the guest's clock is the server's")
	require.Equal(t, status.BadNodeIdUnknown, res[2].Status)
}

func TestTrapIsReplaced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ behaviour, logged string }{
		{"panic", "panic: misbehave: panic reading bad"},
		{"nil", "panic: runtime error: invalid memory address or nil pointer dereference"},
		{"oob", "out of bounds memory access"},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			t.Parallel()
			g := start(t, map[string]string{"a": "value", "bad": tc.behaviour}, nil)
			res := g.read(t, 5*time.Second, "a", "bad")
			require.Equal(t, status.BadInternalError, res[0].Status, "every item of the batch")
			require.Equal(t, status.BadInternalError, res[1].Status)
			traps := g.logs.find("wasmhost: the guest trapped; replacing it")
			require.Len(t, traps, 1)
			require.Equal(t, slog.LevelError, traps[0].level)
			require.True(t, g.logged(tc.logged), "the trap's cause is logged: %q", tc.logged)
			g.connected(t, 2)
			res = g.read(t, 5*time.Second, "a")
			require.Equal(t, status.Good, res[0].Status)
		})
	}
}

// logged says whether some record's message or error holds s.
func (g *guest) logged(s string) bool {
	g.logs.mu.Lock()
	defer g.logs.mu.Unlock()
	for _, r := range g.logs.recs {
		if contains(r.msg, s) {
			return true
		}
		if err, ok := r.attrs["err"].(error); ok && contains(err.Error(), s) {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestLoopTimesOut(t *testing.T) {
	t.Parallel()
	g := start(t, map[string]string{"a": "value", "loop": "loop"}, func(c *Config) { c.Instances = 2 })
	const deadline = 500 * time.Millisecond
	type outcome struct {
		res  []codec.DataValue
		took time.Duration
	}
	looped := make(chan outcome, 1)
	go func() {
		start := time.Now()
		res := g.read(t, deadline, "loop")
		looped <- outcome{res, time.Since(start)}
	}()
	// While one instance loops, the other keeps answering.
	time.Sleep(50 * time.Millisecond) // the loop's call starts at once: the lanes are idle
	for range 5 {
		res := g.read(t, time.Second, "a")
		require.Equal(t, status.Good, res[0].Status)
	}
	require.Empty(t, looped, "the reads were answered while the guest looped")
	o := <-looped
	require.Equal(t, status.BadTimeout, o.res[0].Status)
	t.Logf("the looping Read took %v", o.took)
	require.Less(t, o.took, deadline+200*time.Millisecond)
	// The looping instance is stopped and replaced.
	require.Eventually(t, func() bool { return len(g.logs.find("wasmhost: the guest ran past its deadline; replacing it")) == 1 }, 2*time.Second, time.Millisecond)
	g.connected(t, 3)
	for range 4 {
		res := g.read(t, time.Second, "a")
		require.Equal(t, status.Good, res[0].Status)
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	g := start(t, map[string]string{"a": "value", "hog": "alloc"}, func(c *Config) { c.MemoryLimit = 24 << 20 })
	res := g.read(t, 5*time.Second, "hog")
	require.Equal(t, status.BadInternalError, res[0].Status)
	require.Len(t, g.logs.find("wasmhost: the guest trapped; replacing it"), 1)
	g.connected(t, 2)
	res = g.read(t, 5*time.Second, "a")
	require.Equal(t, status.Good, res[0].Status)
}

func TestPushes(t *testing.T) {
	t.Parallel()
	g := start(t, map[string]string{"a": "value"}, nil)
	id := codec.NewStringNodeId(2, "a")
	op := &nodemgr.WriteOp{
		Items:   []ua.WriteValue{{NodeId: id, AttributeId: 13, Value: codec.DataValue{Value: codec.DoubleVariant(4.5)}}},
		Results: make([]status.Code, 1),
	}
	done := make(chan struct{})
	g.m.Served().(nodemgr.Writer).Write(context.Background(), op, func() { close(done) })
	<-done
	require.Equal(t, status.Good, op.Results[0])
	g.n.mu.Lock()
	defer g.n.mu.Unlock()
	require.Len(t, g.n.changes, 1)
	require.Equal(t, id, g.n.changes[0].NodeId)
	require.Equal(t, 4.5, g.n.changes[0].Value.Value.Value())
	require.Len(t, g.n.events, 1)
	require.Equal(t, id, g.n.events[0].SourceNode)
	require.Equal(t, "written", g.n.events[0].Fields[0].Value.Value())
}

func TestLogs(t *testing.T) {
	t.Parallel()
	g := start(t, map[string]string{"l": "log"}, nil)
	res := g.read(t, 5*time.Second, "l")
	require.Equal(t, status.Good, res[0].Status)
	for _, want := range []struct {
		msg   string
		level slog.Level
	}{
		{"misbehave: debug", slog.LevelDebug},
		{"misbehave: info", slog.LevelInfo},
		{"misbehave: warn", slog.LevelWarn},
		{"misbehave: error", slog.LevelError},
	} {
		recs := g.logs.find(want.msg)
		require.Len(t, recs, 1, want.msg)
		require.Equal(t, want.level, recs[0].level)
		require.Equal(t, "l", recs[0].attrs["node"])
	}
	require.Equal(t, float64(1), g.logs.find("misbehave: info")[0].attrs["n"], "JSON numbers")
}

func TestCompilationCache(t *testing.T) {
	t.Parallel()
	// A module compiles, is written to the cache, and the next Open of it reads it
	// from there. A hand-made module is enough (its Open fails after the compilation,
	// when it answers its setup with 0), and compiles in no time with the race detector.
	dir, cache := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "zero.wasm")
	require.NoError(t, os.WriteFile(path, assemble(abiFuncs(1), true), 0o600))
	open := func() {
		_, err := Open(context.Background(), Config{Name: "cache", Path: path, CacheDir: cache})
		require.ErrorContains(t, err, "uastack_call answered 0")
	}
	files := func() map[string]time.Time {
		out := map[string]time.Time{}
		require.NoError(t, filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err == nil {
				out[p] = info.ModTime()
			}
			return err
		}))
		return out
	}
	open()
	compiled := files()
	require.Len(t, compiled, 1, "the first Open writes the compiled module")
	open()
	require.Equal(t, compiled, files(), "the second Open compiles nothing")

	// The Go guest, compiled into the shared cache by TestMain: an Open takes a fraction
	// of its compilation.
	start := time.Now()
	m, err := Open(context.Background(), Config{Name: "cache", Path: guestPath, CacheDir: cacheDir, Setup: nodemgr.Setup{NamespaceURI: "urn:c"}})
	require.NoError(t, err)
	took := time.Since(start)
	require.NoError(t, m.Close(context.Background()))
	t.Logf("Open of the Go guest: %v compiling (TestMain), %v from the cache", warmTook, took)
	if warmTook > 0 { // 0: compiled by an earlier run
		require.Less(t, took, warmTook)
	}
}

func TestGrants(t *testing.T) {
	data := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(data, "x.txt"), []byte("granted"), 0o600))
	t.Setenv("WASMHOST_TEST_PASSED", "from the host")
	nodes := map[string]string{
		"set":    "env:WASMHOST_TEST_SET",
		"passed": "env:WASMHOST_TEST_PASSED",
		"home":   "env:HOME",
		"file":   "file:/data/x.txt",
		"abs":    "file:" + filepath.Join(data, "x.txt"),
	}
	ids := []string{"set", "passed", "home", "file", "abs"}
	none := start(t, nodes, nil).read(t, 5*time.Second, ids...)
	for i, r := range none {
		require.Equal(t, status.BadNotFound, r.Status, "%s: nothing is granted", ids[i])
	}
	granted := start(t, nodes, func(c *Config) {
		c.Grants = Grants{
			Env:  []string{"WASMHOST_TEST_SET=1", "WASMHOST_TEST_PASSED", "WASMHOST_TEST_UNSET"},
			Dirs: []DirGrant{{Host: data, Guest: "/data"}},
		}
	}).read(t, 5*time.Second, ids...)
	require.Equal(t, "1", granted[0].Value.Value())
	require.Equal(t, "from the host", granted[1].Value.Value())
	require.Equal(t, status.BadNotFound, granted[2].Status, "HOME is not granted")
	require.Equal(t, "granted", granted[3].Value.Value())
	require.Equal(t, status.BadNotFound, granted[4].Status, "only the mount point is visible")
}

// A guest's code is native code that Go cannot preempt: without wazero's termination
// checks, a guest that loops holds up the garbage collector's stop-the-world, and so
// every goroutine of the server (RATIONALE.md). With them, the collector runs.
func TestLoopDoesNotStallGC(t *testing.T) {
	// Not parallel: the bound below is for one looping guest, not for several at once.
	g := start(t, map[string]string{"loop": "loop"}, nil)
	// The Read ends with the Manager's Close, at cleanup.
	op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: codec.NewStringNodeId(2, "loop"), AttributeId: 13}}, Results: make([]codec.DataValue, 1)}
	g.m.Served().(nodemgr.Reader).Read(context.Background(), op, func() {})
	time.Sleep(100 * time.Millisecond) // the loop's call starts at once: the lane is idle
	collected := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		runtime.GC()
		collected <- time.Since(start)
	}()
	select {
	case took := <-collected:
		t.Logf("a collection while the guest loops: %v", took)
	case <-time.After(3 * time.Second):
		t.Fatal("the collector waited for the looping guest")
	}
}
