// Package child runs the bench suites' helper servers (the batching TCP echo server, the
// gopcua server) as subprocesses of the suite's own binary, so that each server's CPU
// time is its own process's. A suite's main (and its test's TestMain) calls Dispatch
// first; Start re-executes the binary with an environment variable naming the child.
package child

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// envKind names the child to run in a re-executed binary; envArgs holds its arguments,
// separated by newlines.
const (
	envKind = "UASTACK_BENCH_CHILD"
	envArgs = "UASTACK_BENCH_CHILD_ARGS"
)

// children are the servers a child process can run: each serves until stdin closes and
// prints "listening <address>" once ready.
var children = map[string]func(args []string) error{
	"echo":   runEcho,
	"gopcua": runGopcua,
}

// Dispatch runs the child named in the environment, if any, and exits; otherwise it
// returns at once.
func Dispatch() {
	kind := os.Getenv(envKind)
	if kind == "" {
		return
	}
	run, ok := children[kind]
	if !ok {
		fmt.Fprintf(os.Stderr, "child: unknown kind %q\n", kind)
		os.Exit(2)
	}
	var args []string
	if a := os.Getenv(envArgs); a != "" {
		args = strings.Split(a, "\n")
	}
	if err := run(args); err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", kind, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// waitStdin blocks until the parent closes our stdin (or dies).
func waitStdin() {
	buf := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return
		}
	}
}

// Process is a running child.
type Process struct {
	Addr  string // what the child printed after "listening "
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	done  chan struct{}
	once  sync.Once
}

// Start re-executes this binary as child kind with args and waits until it listens.
func Start(ctx context.Context, kind string, args ...string) (*Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^$") // a test binary runs no tests before TestMain's Dispatch
	cmd.Env = append(os.Environ(), envKind+"="+kind, envArgs+"="+strings.Join(args, "\n"))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case p.Addr = <-addr:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("child %s exited before listening", kind)
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		p.Stop()
		return nil, fmt.Errorf("child %s not listening within 30 s", kind)
	}
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop closes the child's stdin, which ends it, and waits; it kills it after 10 s.
func (p *Process) Stop() {
	p.once.Do(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}
