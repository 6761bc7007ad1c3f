package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// stormProcess is the storm process seen from the suite: this binary re-executed with
// envStorm set (stormMain).
type stormProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   chan line
	done  chan struct{}
}

// line is one line of the storm process's output, or why there is none.
type line struct {
	text string
	err  error
}

// startStorm starts the storm process with p and at most procs cores of Go code
// (GOMAXPROCS), and waits until it is ready; its log goes to logw.
func startStorm(ctx context.Context, p plan, procs int, logw io.Writer) (*stormProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envStorm+"=1", "GOMAXPROCS="+strconv.Itoa(procs))
	cmd.Stderr = logw
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
	sp := &stormProcess{cmd: cmd, stdin: stdin, out: make(chan line, 4), done: make(chan struct{})}
	go func() {
		r := bufio.NewReader(stdout)
		for {
			b, err := r.ReadBytes('\n')
			l := line{err: err}
			if err != nil {
				l.err = fmt.Errorf("storm process output: %w", err)
			} else {
				l.text = string(b[:len(b)-1])
			}
			select {
			case sp.out <- l:
			default: // nobody waits for more than the plan's lines: drop the rest
			}
			if err != nil {
				break
			}
		}
		_ = cmd.Wait()
		close(sp.done)
	}()
	b, err := json.Marshal(p)
	if err == nil {
		_, err = fmt.Fprintf(stdin, "%s\n", b)
	}
	if err == nil {
		var l string
		l, err = sp.next(ctx, 2*time.Minute)
		if err == nil && l != "ready" {
			err = fmt.Errorf("storm process said %q, not ready", l)
		}
	}
	if err != nil {
		sp.stop()
		return nil, err
	}
	return sp, nil
}

// next returns the next line of output, waiting at most d.
func (sp *stormProcess) next(ctx context.Context, d time.Duration) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case l := <-sp.out:
		return l.text, l.err
	case <-ctx.Done():
		return "", ctx.Err()
	case <-t.C:
		return "", fmt.Errorf("storm process: no answer within %v", d)
	}
}

// begin starts the storm.
func (sp *stormProcess) begin() error {
	_, err := io.WriteString(sp.stdin, "go\n")
	return err
}

// expect waits at most d for the line want.
func (sp *stormProcess) expect(ctx context.Context, d time.Duration, want string) error {
	l, err := sp.next(ctx, d)
	if err == nil && l != want {
		err = fmt.Errorf("storm process said %q, not %q", l, want)
	}
	return err
}

// result waits at most d for the storm's result.
func (sp *stormProcess) result(ctx context.Context, d time.Duration) (*stormResult, error) {
	l, err := sp.next(ctx, d)
	if err != nil {
		return nil, err
	}
	var r stormResult
	if err := json.Unmarshal([]byte(l), &r); err != nil {
		return nil, fmt.Errorf("storm result: %w", err)
	}
	return &r, nil
}

// stop closes the storm process's input, which ends it, and kills it if it has not ended
// within 10 s.
func (sp *stormProcess) stop() {
	_ = sp.stdin.Close()
	select {
	case <-sp.done:
	case <-time.After(10 * time.Second):
		_ = sp.cmd.Process.Kill()
		<-sp.done
	}
}
