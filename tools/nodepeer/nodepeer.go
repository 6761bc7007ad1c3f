// Package nodepeer runs JavaScript against node-opcua's client and server, so that tests
// and benchmarks meet an independent OPC UA implementation (STYLE.md, "Real peers as
// oracles"): its client drives our server, its server answers our client and registers
// with our discovery service.
//
// The npm packages are installed once per machine into a cache outside the repository and
// reused by every later test run. A missing node or npm, or a failed install, fails the
// test with the reason: the oracle is never skipped silently.
package nodepeer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Packages are the npm packages installed: node-opcua's client and server halves, so
// that tests drive our server with its client and our client against its server.
var Packages = []string{"node-opcua-client", "node-opcua-server"}

const (
	// Version is pinned: 2.182.x is the newest node-opcua line that runs on Node.js 20.
	Version = "2.182.2"
	// CacheEnv, if set, names the folder under which the package is installed.
	CacheEnv = "UASTACK_NPM_CACHE"

	// installTimeout bounds one npm install, including waiting for another test
	// process that holds the install lock.
	installTimeout = 5 * time.Minute
	// runTimeout bounds one script run.
	runTimeout = 60 * time.Second
	// marker is written into the install folder after a successful install.
	marker = ".uastack-installed"
	// resultPrefix starts every line written by the script's result function.
	resultPrefix = "@@nodepeer-result "
)

// prelude is prepended to every script, on the script's first line so that line numbers
// in node's stack traces stay those of the script.
const prelude = `globalThis.result = (o) => process.stdout.write(` + "`" + resultPrefix + "`" + ` + JSON.stringify(o) + "\n");`

var (
	installOnce sync.Once
	installDir  string // set once by installOnce
	installErr  error  // set once by installOnce
)

// Dir returns the install folder: $UASTACK_NPM_CACHE/node-opcua-<Version> if that
// variable is set, else <os.UserCacheDir()>/uastack/npm/node-opcua-<Version>.
// It refuses a folder inside the Go workspace or module the tests run in.
func Dir() (string, error) {
	root := os.Getenv(CacheEnv)
	if root == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("nodepeer: no user cache folder (set %s): %w", CacheEnv, err)
		}
		root = filepath.Join(base, "uastack", "npm")
	}
	dir, err := filepath.Abs(filepath.Join(root, "node-opcua-"+Version))
	if err != nil {
		return "", fmt.Errorf("nodepeer: %w", err)
	}
	if repo := repoRoot(); repo != "" {
		if rel, err := filepath.Rel(repo, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("nodepeer: install folder %s is inside the repository %s; set %s to a folder outside it", dir, repo, CacheEnv)
		}
	}
	return dir, nil
}

// repoRoot returns the nearest ancestor of the working directory holding go.work or
// .git, or "" if there is none.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		for _, name := range []string{"go.work", ".git"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Ensure installs Packages at Version into Dir if it is not there yet and returns the
// node_modules folder. The install runs at most once per process; across processes it is
// serialized by a file lock beside the install folder. Safe for concurrent use.
func Ensure(t testing.TB) string {
	t.Helper()
	modules, err := EnsureInstalled()
	if err != nil {
		t.Fatalf("nodepeer: %v", err)
	}
	return modules
}

// EnsureInstalled is Ensure for programs outside tests (the bench suites): it returns the
// node_modules folder or the reason node-opcua is not available.
func EnsureInstalled() (string, error) {
	installOnce.Do(func() { installDir, installErr = install() })
	if installErr != nil {
		return "", fmt.Errorf("node-opcua %s not available: %w", Version, installErr)
	}
	return filepath.Join(installDir, "node_modules"), nil
}

func install() (string, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s is required to run node-opcua: %w", tool, err)
		}
	}
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if installed(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	unlock, err := lock(ctx, dir+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if installed(dir) { // another process installed it while we waited
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	args := []string{"install", "--no-audit", "--no-fund", "--no-update-notifier", "--prefix", dir}
	for _, p := range Packages {
		args = append(args, p+"@"+Version)
	}
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return "", fmt.Errorf("npm install into %s did not finish within %v: %w\n%s", dir, installTimeout, ctx.Err(), out)
	}
	if err != nil {
		return "", fmt.Errorf("npm install into %s: %w\n%s", dir, err, out)
	}
	for _, p := range Packages {
		if v := installedVersion(dir, p); v != Version {
			return "", fmt.Errorf("npm install into %s left %s at version %q, want %s\n%s", dir, p, v, Version, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, marker), []byte(markerText()), 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// markerText is what the marker file holds after a complete install.
func markerText() string {
	var b strings.Builder
	for _, p := range Packages {
		b.WriteString(p + "@" + Version + "\n")
	}
	return b.String()
}

// installed reports whether a previous install into dir completed.
func installed(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, marker))
	if err != nil || string(b) != markerText() {
		return false
	}
	for _, p := range Packages {
		if installedVersion(dir, p) != Version {
			return false
		}
	}
	return true
}

// installedVersion returns the "version" of package pkg's package.json in dir, or "".
func installedVersion(dir, pkg string) string {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return ""
	}
	// A full JSON decode is not needed: the first "version" key is the package's own.
	_, rest, ok := bytes.Cut(b, []byte(`"version"`))
	if !ok {
		return ""
	}
	_, rest, ok = bytes.Cut(rest, []byte(`"`))
	if !ok {
		return ""
	}
	v, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(v)
}

// Run writes script to a temporary .js file and runs it with node and args under a 60 s
// timeout, with NODE_PATH set to the cached node_modules. It returns the standard output
// and fails the test, quoting standard error, if node exits non-zero or times out.
//
// The script is CommonJS and may call the global result(obj), which writes obj as one
// JSON line that Results picks out of the output; node-opcua writes its own warnings to
// standard output too.
func Run(t testing.TB, script string, args ...string) string {
	t.Helper()
	modules := Ensure(t)
	file := filepath.Join(t.TempDir(), "script.js")
	if err := os.WriteFile(file, []byte(prelude+script), 0o644); err != nil {
		t.Fatalf("nodepeer: %v", err)
	}
	timeout := runTimeout
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok && time.Until(dl) < timeout {
			timeout = time.Until(dl) - time.Second
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{file}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("nodepeer: node did not finish within %v\nstdout:\n%s\nstderr:\n%s", timeout, stdout.String(), stderr.String())
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("nodepeer: node exited with %d\nstdout:\n%s\nstderr:\n%s", exit.ExitCode(), stdout.String(), stderr.String())
		}
		t.Fatalf("nodepeer: running node: %v", err)
	}
	logOutput(t, stdout.String(), stderr.String())
	return stdout.String()
}

// Results returns the objects the script passed to result(), in order, decoded from
// stdout as returned by Run; it fails the test on a line that is not valid JSON.
func Results(t testing.TB, stdout string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(stdout) {
		body, ok := strings.CutPrefix(line, resultPrefix)
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("nodepeer: result line %q: %v", body, err)
		}
		out = append(out, m)
	}
	return out
}

// logOutput logs what node wrote besides results (node-opcua's warnings, which often name
// what the peer disliked), visible with -v or when the test fails.
func logOutput(t testing.TB, stdout, stderr string) {
	t.Helper()
	var b strings.Builder
	for line := range strings.Lines(stdout) {
		if !strings.HasPrefix(line, resultPrefix) {
			b.WriteString(line)
		}
	}
	b.WriteString(stderr)
	if b.Len() > 0 {
		t.Logf("nodepeer: node output besides results:\n%s", b.String())
	}
}

// FreePort returns a TCP port that was free on every interface a moment ago, for a
// node-opcua server, which takes a number and listens on all interfaces. It is drawn
// below the kernel's ephemeral range (Linux: 32768 up), from which outgoing connections
// take their local ports: a port from Listen(":0") is one of those, and while the
// node process starts another test's connection can take it (EADDRINUSE).
func FreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	t.Fatal("nodepeer: no free port below the ephemeral range")
	return 0
}
