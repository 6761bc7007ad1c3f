package processhost

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/internal/remote"
)

// pluginPath is the test plugin, built once by TestMain.
var pluginPath string

// The environment of the test binary re-run as a host (TestKilledHostLeavesNoPlugin).
const (
	envHost        = "PROCESSHOST_TEST_HOST"
	envNoDeathsig  = "PROCESSHOST_TEST_NO_PDEATHSIG"
	hostPidPrefix  = "plugin pid "
	testNamespace  = "urn:uastack:test:process"
	buildTimeLimit = 5 * time.Minute
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envHost); path != "" {
		runHost(path)
		return
	}
	dir, err := os.MkdirTemp("", "processhost")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginPath = filepath.Join(dir, "testplugin")
	if runtime.GOOS == "windows" {
		pluginPath += ".exe"
	}
	// go test puts its own toolchain first in PATH.
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeLimit)
	build := exec.CommandContext(ctx, "go", "build", "-o", pluginPath, "uastack.dev/plugins/plugintest/testplugin")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	err = build.Run()
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "build the test plugin:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runHost is the test binary as a host: it opens the plugin, prints its pid and waits
// to be killed.
func runHost(path string) {
	if os.Getenv(envNoDeathsig) != "" {
		dieWithHost = func(*exec.Cmd) {}
	}
	m, err := Open(context.Background(), Config{Name: "host", Path: path, Setup: nodemgr.Setup{NamespaceURI: testNamespace}})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	if err := m.Start(context.Background(), newHost(nil)); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	op := readOp("pid")
	done := make(chan struct{})
	m.Served().(nodemgr.Reader).Read(context.Background(), op, func() { close(done) })
	<-done
	if op.Results[0].Status != status.Good {
		fmt.Println("read:", op.Results[0].Status)
		os.Exit(1)
	}
	fmt.Printf("%s%d\n", hostPidPrefix, i64(op.Results[0]))
	select {}
}

// testHost is the server's side for the manager: it counts the pushes per node.
type testHost struct {
	logger *slog.Logger

	mu     sync.Mutex // guards pushes
	pushes map[string]int
}

func newHost(logger *slog.Logger) *testHost {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &testHost{logger: logger, pushes: map[string]int{}}
}

func (h *testHost) NamespaceIndexes() []uint16 { return []uint16{2} }
func (h *testHost) Logger() *slog.Logger       { return h.logger }
func (h *testHost) Now() time.Time             { return time.Now() }
func (h *testHost) Notifier() nodemgr.Notifier { return h }

func (h *testHost) Changed(changes []nodemgr.DataChange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range changes {
		h.pushes[c.NodeId.StringID()]++
	}
}

func (h *testHost) Emit([]nodemgr.Event) {}

func (h *testHost) pushed(node string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pushes[node]
}

// open opens the test plugin with cfg's Path, Name and Setup filled in where empty,
// starts it on host and closes it at the end of the test.
func open(t testing.TB, cfg Config, host *testHost) *remote.Manager {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	if cfg.Path == "" {
		cfg.Path = pluginPath
	}
	if cfg.Setup.NamespaceURI == "" {
		cfg.Setup.NamespaceURI = testNamespace
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 10 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = host.logger
	}
	m, err := Open(context.Background(), cfg)
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, m.Close(context.Background())) })
	return m
}

func readOp(nodes ...string) *nodemgr.ReadOp {
	op := &nodemgr.ReadOp{Items: make([]ua.ReadValueId, len(nodes)), Results: make([]codec.DataValue, len(nodes))}
	for i, n := range nodes {
		op.Items[i] = ua.ReadValueId{NodeId: codec.NewStringNodeId(2, n), AttributeId: 13}
	}
	return op
}

// read reads nodes and waits for the answer.
func read(t *testing.T, ctx context.Context, m *remote.Manager, nodes ...string) []codec.DataValue {
	t.Helper()
	op := readOp(nodes...)
	done := make(chan struct{})
	m.Served().(nodemgr.Reader).Read(ctx, op, func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the read was not answered")
	}
	return op.Results
}

// pid reads the plugin's process id, once the plugin serves.
func pid(t *testing.T, m *remote.Manager) int {
	t.Helper()
	var p int
	require.Eventually(t, func() bool {
		r := read(t, context.Background(), m, "pid")[0]
		p = int(i64(r))
		return r.Status == status.Good
	}, 5*time.Second, 5*time.Millisecond)
	return p
}

// alive reports whether process pid runs (a zombie does not).
func alive(pid int) bool {
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) state ...: comm may hold spaces, so look after the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
	}
	return syscall.Kill(pid, 0) == nil
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("not a program"), 0o644))
	script := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho hello\n"), 0o755))
	tests := []struct {
		name string
		cfg  Config
		want []string
		code status.Code
	}{
		{"missing", Config{Path: missing}, []string{missing, "no such file"}, 0},
		{"not executable", Config{Path: plain}, []string{plain, "not executable"}, 0},
		{"not a plugin", Config{Path: script}, []string{script, "hello"}, 0},
		{"protocol version", Config{Path: pluginPath, Args: []string{"-protocol=2"}}, []string{pluginPath, "Plugin version: 2"}, 0},
		{"setup failed", Config{Path: pluginPath, Setup: nodemgr.Setup{Options: []byte(`{"failSetup":"no device configured"}`)}},
			[]string{pluginPath, "no device configured"}, status.BadConfigurationError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Name = "dev"
			tt.cfg.Setup.NamespaceURI = testNamespace
			tt.cfg.CallTimeout = 5 * time.Second
			start := time.Now()
			m, err := Open(context.Background(), tt.cfg)
			require.Error(t, err)
			require.Nil(t, m)
			require.Less(t, time.Since(start), 5*time.Second)
			t.Log(err)
			require.Contains(t, err.Error(), `plugin "dev"`)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
			if tt.code != 0 {
				require.ErrorIs(t, err, tt.code)
			}
		})
	}
}

func TestReadCrosses(t *testing.T) {
	m := open(t, Config{}, newHost(nil))
	require.Equal(t, []string{testNamespace}, m.Namespaces())
	rs := read(t, context.Background(), m, "a", "b", "pid")
	for _, r := range rs {
		require.Equal(t, status.Good, r.Status)
	}
	require.Greater(t, i64(rs[1]), i64(rs[0]), "the counter counts")
	require.NotEqual(t, int64(os.Getpid()), i64(rs[2]), "another process answers")
	require.NotZero(t, i64(rs[2]))
}

func TestConcurrentReadsCoalesce(t *testing.T) {
	m := open(t, Config{}, newHost(nil))
	pid(t, m)
	calls0, ops0 := m.Stats()
	const n = 200 // under the bound on outstanding operations
	ops := make([]*nodemgr.ReadOp, n)
	var wg sync.WaitGroup
	for i := range ops {
		ops[i] = readOp("a")
		wg.Add(1)
		m.Served().(nodemgr.Reader).Read(context.Background(), ops[i], wg.Done)
	}
	wg.Wait()
	for _, op := range ops {
		require.Equal(t, status.Good, op.Results[0].Status)
	}
	calls, operations := m.Stats()
	calls, operations = calls-calls0, operations-ops0
	require.Equal(t, uint64(n), operations)
	require.Less(t, calls, operations, "reads are coalesced into fewer calls")
	t.Logf("%d reads in %d calls", operations, calls)
}

// TestDeadline checks that a read the plugin does not answer in time ends BadTimeout
// and the plugin serves on.
func TestDeadline(t *testing.T) {
	m := open(t, Config{}, newHost(nil))
	before := pid(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := read(t, ctx, m, "block")[0]
	require.Equal(t, status.BadTimeout, r.Status)
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, before, pid(t, m), "the same process serves on")
}

// watch has the manager watch node and waits for its pushes.
func watch(t *testing.T, m *remote.Manager, host *testHost, node string) {
	t.Helper()
	w, ok := m.Served().(nodemgr.Watcher)
	require.True(t, ok, "the test plugin is a Watcher")
	w.Watch(context.Background(), &nodemgr.WatchSet{Add: []nodemgr.WatchItem{{NodeId: codec.NewStringNodeId(2, node), AttributeId: 13, SamplingInterval: 50}}})
	require.Eventually(t, func() bool { return host.pushed(node) >= 2 }, 5*time.Second, 5*time.Millisecond)
}

// requireBack checks that the plugin came back by itself: a new process reads Good and
// the watched node pushes again.
func requireBack(t *testing.T, m *remote.Manager, host *testHost, old int) {
	t.Helper()
	require.Eventually(t, func() bool {
		r := read(t, context.Background(), m, "pid")[0]
		return r.Status == status.Good && int(i64(r)) != old
	}, 5*time.Second, 10*time.Millisecond, "a new process serves")
	require.False(t, alive(old), "the old process is gone")
	n := host.pushed("w")
	require.Eventually(t, func() bool { return host.pushed("w") >= n+2 }, 5*time.Second, 5*time.Millisecond, "the watched node pushes again")
	require.Equal(t, status.Good, read(t, context.Background(), m, "a")[0].Status)
}

// requireLost checks that the items of a read lost with its process are answered
// BadCommunicationError or BadNotConnected, within a second of the loss.
func requireLost(t *testing.T, since time.Time, r codec.DataValue) {
	t.Helper()
	require.Less(t, time.Since(since), time.Second)
	require.Contains(t, []status.Code{status.BadCommunicationError, status.BadNotConnected}, r.Status, "got %v", r.Status)
}

func TestKilledPluginRestarts(t *testing.T) {
	host := newHost(nil)
	m := open(t, Config{}, host)
	watch(t, m, host, "w")
	old := pid(t, m)
	// A read in flight when the process dies.
	op := readOp("block")
	done := make(chan struct{})
	m.Served().(nodemgr.Reader).Read(context.Background(), op, func() { close(done) })
	time.Sleep(50 * time.Millisecond) // let it reach the plugin
	killedAt := time.Now()
	require.NoError(t, syscall.Kill(old, syscall.SIGKILL))
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("the read in flight was not answered")
	}
	requireLost(t, killedAt, op.Results[0])
	requireBack(t, m, host, old)
}

func TestPanicRestarts(t *testing.T) {
	rec := &recorder{}
	host := newHost(slog.New(rec))
	m := open(t, Config{}, host)
	watch(t, m, host, "w")
	old := pid(t, m)
	start := time.Now()
	requireLost(t, start, read(t, context.Background(), m, "panic")[0])
	requireBack(t, m, host, old)
	// The runtime's trace reaches the log, at Error.
	require.Eventually(t, func() bool {
		return rec.count(func(r record) bool {
			return r.level == slog.LevelError && strings.HasPrefix(r.msg, "panic: testmgr: a read of the panic node")
		}) == 1
	}, 5*time.Second, 5*time.Millisecond)
	require.Positive(t, rec.count(func(r record) bool {
		return r.level == slog.LevelError && strings.HasPrefix(r.msg, "goroutine ")
	}))
}

func TestExitRestarts(t *testing.T) {
	host := newHost(nil)
	m := open(t, Config{}, host)
	watch(t, m, host, "w")
	old := pid(t, m)
	op := &nodemgr.CallOp{Items: []ua.CallMethodRequest{{ObjectId: codec.NewStringNodeId(2, "o"), MethodId: codec.NewStringNodeId(2, "exit")}},
		Results: make([]ua.CallMethodResult, 1)}
	done := make(chan struct{})
	start := time.Now()
	m.Served().(nodemgr.Caller).Call(context.Background(), op, func() { close(done) })
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("the call was not answered")
	}
	requireLost(t, start, codec.DataValue{Status: op.Results[0].StatusCode})
	requireBack(t, m, host, old)
}

func TestLogs(t *testing.T) {
	rec := &recorder{}
	m := open(t, Config{Name: "dev"}, newHost(slog.New(rec)))
	pid(t, m)
	want := []struct {
		level slog.Level
		msg   string
		attrs map[string]any
	}{
		{slog.LevelDebug, "testmgr: debug", map[string]any{"n": float64(1)}},
		{slog.LevelInfo, "testmgr: started", map[string]any{"n": float64(2), "namespace": testNamespace}},
		{slog.LevelWarn, "testmgr: warn", map[string]any{"n": float64(3)}},
		{slog.LevelError, "testmgr: error", map[string]any{"n": float64(4), "err": "boom"}},
		{slog.LevelInfo, "testmgr: a raw line on stderr", nil},
	}
	for _, w := range want {
		match := func(r record) bool { return r.msg == w.msg }
		require.Eventually(t, func() bool { return rec.count(match) > 0 }, 5*time.Second, 5*time.Millisecond, w.msg)
		time.Sleep(20 * time.Millisecond) // a second copy would come right after the first
		require.Equal(t, 1, rec.count(match), "%q lands once", w.msg)
		r := rec.find(match)
		require.Equal(t, w.level, r.level, w.msg)
		require.Equal(t, "dev", r.attrs["plugin"], w.msg)
		for k, v := range w.attrs {
			require.Equal(t, v, r.attrs[k], "%s: %s", w.msg, k)
		}
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	m, err := Open(context.Background(), Config{Name: "t", Path: pluginPath, Setup: nodemgr.Setup{NamespaceURI: testNamespace}})
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background(), newHost(nil)))
	p := pid(t, m)
	require.True(t, alive(p))
	require.NoError(t, m.Close(context.Background()))
	require.False(t, alive(p), "Close waits for the process to exit")
	r := read(t, context.Background(), m, "a")[0]
	require.Equal(t, status.BadShutdown, r.Status)
}

func TestKilledHostLeavesNoPlugin(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the host's death is detected by Pdeathsig and /proc here; Linux only")
	}
	for _, tt := range []struct {
		name string
		env  string
	}{
		{"pdeathsig", ""},
		{"parent poll", envNoDeathsig + "=1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envHost+"="+pluginPath)
			if tt.env != "" {
				cmd.Env = append(cmd.Env, tt.env)
			}
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err)
			s, ok := strings.CutPrefix(strings.TrimSpace(line), hostPidPrefix)
			require.True(t, ok, "the host said %q", line)
			p, err := strconv.Atoi(s)
			require.NoError(t, err)
			require.True(t, alive(p))
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			require.Eventually(t, func() bool { return !alive(p) }, 2*time.Second, 10*time.Millisecond, "the plugin outlived its host")
		})
	}
}

// recorder is a slog.Handler that keeps the records, with their attributes.
type recorder struct {
	attrs []slog.Attr
	root  *recorder // where records go; nil: this one

	mu      sync.Mutex // guards records
	records []record
}

type record struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

func (r *recorder) sink() *recorder {
	if r.root != nil {
		return r.root
	}
	return r
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]any{}
	for _, a := range r.attrs {
		attrs[a.Key] = a.Value.Any()
	}
	rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.Any(); return true })
	s := r.sink()
	s.mu.Lock()
	s.records = append(s.records, record{level: rec.Level, msg: rec.Message, attrs: attrs})
	s.mu.Unlock()
	return nil
}

func (r *recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recorder{attrs: append(append([]slog.Attr(nil), r.attrs...), attrs...), root: r.sink()}
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) count(match func(record) bool) int {
	s := r.sink()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, rec := range s.records {
		if match(rec) {
			n++
		}
	}
	return n
}

func (r *recorder) find(match func(record) bool) record {
	s := r.sink()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.records {
		if match(rec) {
			return rec
		}
	}
	return record{}
}

// i64 returns the Int64 that dv holds.
func i64(dv codec.DataValue) int64 { return int64(dv.Value.Bits()) }
