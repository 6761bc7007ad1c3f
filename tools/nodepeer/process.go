package nodepeer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds the wait for a started script's ready result.
const startTimeout = 60 * time.Second

// Process is a script left running, such as a node-opcua server.
type Process struct {
	// Ready is what the script passed to its first result(): its ready signal, carrying
	// whatever the test needs (an endpoint URL, a certificate path).
	Ready map[string]any

	cmd    *exec.Cmd
	mu     sync.Mutex // guards stdout
	stdout bytes.Buffer
	stderr bytes.Buffer
	exited chan struct{}
	once   sync.Once
}

// Start runs script with node and args like Run, but returns once the script has called
// result() for the first time. The process is stopped when the test ends (SIGINT, then a
// kill after 10 s); Stop stops it earlier. The test fails if the script exits or stays
// silent for 60 s before it is ready.
func Start(t testing.TB, script string, args ...string) *Process {
	t.Helper()
	p, err := StartProcess(t.TempDir(), script, args...)
	if p != nil {
		t.Cleanup(func() {
			p.Stop()
			p.mu.Lock()
			defer p.mu.Unlock()
			logOutput(t, p.stdout.String(), p.stderr.String())
		})
	}
	if err != nil {
		t.Fatalf("nodepeer: %v", err)
	}
	return p
}

// StartProcess is Start for programs outside tests (the bench suites): the script file is
// written into dir, and the caller stops the process with Stop. On an error after node
// started, the process is returned too (already stopped) so that its Output can be read.
func StartProcess(dir, script string, args ...string) (*Process, error) {
	modules, err := EnsureInstalled()
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "script.js")
	if err := os.WriteFile(file, []byte(prelude+script), 0o644); err != nil {
		return nil, err
	}
	p := &Process{cmd: exec.Command("node", append([]string{file}, args...)...), exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting node: %w", err)
	}
	ready := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stdout.WriteString(line + "\n")
			p.mu.Unlock()
			if body, ok := strings.CutPrefix(line, resultPrefix); ok {
				var m map[string]any
				if json.Unmarshal([]byte(body), &m) == nil {
					select {
					case ready <- m:
					default:
					}
				}
			}
		}
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.Ready = <-ready:
		return p, nil
	case <-p.exited:
		stdout, stderr := p.Output()
		return p, fmt.Errorf("node exited before it was ready\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	case <-time.After(startTimeout):
		p.Stop()
		stdout, stderr := p.Output()
		return p, fmt.Errorf("node not ready within %v\nstdout:\n%s\nstderr:\n%s", startTimeout, stdout, stderr)
	}
}

// Pid returns the process id of node, for reading its CPU time.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output returns what node wrote to standard output and standard error so far.
func (p *Process) Output() (stdout, stderr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String(), p.stderr.String()
}

// Stop interrupts the script and waits for it to exit, killing it after 10 s. The
// script sees SIGINT and may shut down cleanly (a node-opcua server unregisters).
func (p *Process) Stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

// Results returns what the script passed to result() so far, the ready signal first.
func (p *Process) Results(t testing.TB) []map[string]any {
	t.Helper()
	p.mu.Lock()
	out := p.stdout.String()
	p.mu.Unlock()
	return Results(t, out)
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
