package uaserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// NATS is a NATS server with JetStream (the mirror command, services/mirror) running
// as a child process, for servers that mirror their sessions (mirror.*).
type NATS struct {
	URL string
	cmd *exec.Cmd
	key string
}

// BuildMirror compiles the mirror command into dir and returns the binary's path.
func BuildMirror(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "uastack-mirror")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "uastack.dev/services/mirror")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build uastack.dev/services/mirror: %w\n%s", err, out)
	}
	return bin, nil
}

var natsListening = regexp.MustCompile(`client=(nats://\S+)`)

// StartNATS runs the mirror binary bin on a free port with its store under dir and
// returns once JetStream is ready.
func StartNATS(ctx context.Context, bin, dir string) (*NATS, error) {
	n := &NATS{cmd: exec.Command(bin, "--port", "0", "--data", filepath.Join(dir, "nats"))}
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := n.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan string, 1)
	logs := &lockedBuffer{}
	go func() {
		sc := bufio.NewScanner(out)
		url := ""
		for sc.Scan() {
			line := sc.Text()
			_, _ = logs.Write([]byte(line + "\n"))
			if m := natsListening.FindStringSubmatch(line); m != nil {
				url = m[1]
			}
			if strings.Contains(line, "JetStream ready") && url != "" {
				ready <- url
			}
		}
	}()
	select {
	case n.URL = <-ready:
	case <-ctx.Done():
		n.Stop()
		return nil, ctx.Err()
	case <-time.After(60 * time.Second):
		n.Stop()
		return nil, fmt.Errorf("NATS not ready within 60 s:\n%s", logs.String())
	}
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	n.key = base64.StdEncoding.EncodeToString(k)
	return n, nil
}

// Pid is the NATS server's process id.
func (n *NATS) Pid() int { return n.cmd.Process.Pid }

// Sets are the --set flags of a server of the set cluster mirrored through n.
func (n *NATS) Sets(cluster string) []string {
	return []string{"mirror.urls=" + n.URL, "mirror.cluster=" + cluster, "mirror.key=" + n.key}
}

// Stop kills the NATS server and waits for it.
func (n *NATS) Stop() {
	_ = n.cmd.Process.Kill()
	_ = n.cmd.Wait()
}

// MirrorRuns turns a suite's -mirror flag into the runs to make, mirrored or not, in
// order: "off" (or "") one alone, "on" one mirrored, "ab" rounds pairs of both,
// alternating so that the machine's drift falls on both alike.
func MirrorRuns(mode string, rounds int) ([]bool, error) {
	switch mode {
	case "off", "":
		return []bool{false}, nil
	case "on":
		return []bool{true}, nil
	case "ab":
		var runs []bool
		for range max(rounds, 1) {
			runs = append(runs, false, true)
		}
		return runs, nil
	}
	return nil, fmt.Errorf("-mirror: want off, on or ab, got %q", mode)
}
