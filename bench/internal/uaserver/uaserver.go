// Package uaserver runs the uastack server as a subprocess for the bench suites, so that
// the server's CPU time is its own process's (package proc) and not mixed with the load
// generator's. It builds uastack.dev/services/server with the go command of the
// workspace, gives it a fresh PKI that already trusts the bench client's certificate, and
// waits for its "listening" log line.
package uaserver

import (
	"bufio"
	"context"
	"crypto/rsa"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"uastack.dev/pkg/pki"
)

// Build compiles the server into dir and returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "uastack-server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "uastack.dev/services/server")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build uastack.dev/services/server: %w\n%s", err, out)
	}
	return bin, nil
}

// Prepare creates the bench client's identity under dir and builds the server into dir,
// unless bin already names a built server; it returns the server binary. The caller
// closes the Identity's PKI.
func Prepare(ctx context.Context, dir, bin string) (string, *Identity, error) {
	id, err := NewIdentity(dir)
	if err != nil {
		return "", nil, err
	}
	if bin == "" {
		if bin, err = Build(ctx, dir); err != nil {
			_ = id.PKI.Close()
			return "", nil, err
		}
	}
	return bin, id, nil
}

// Identity is the bench client's application instance certificate.
type Identity struct {
	URI  string
	DER  []byte
	Key  *rsa.PrivateKey
	PKI  *pki.PKI // the client's store; its trusted/certs holds the server certificate once Trust is called
	Root string
}

// NewIdentity creates a client certificate in a fresh PKI under dir.
func NewIdentity(dir string) (*Identity, error) { return NewNamedIdentity(dir, "client") }

// NewNamedIdentity creates the certificate of the bench client application called name
// (ApplicationUri urn:uastack:bench:<name>) in a PKI under dir, or loads it when dir
// already holds it: a suite that plays several client applications gives each a name,
// and a child process of the suite opens the same identity from the same dir.
func NewNamedIdentity(dir, name string) (*Identity, error) {
	uri := "urn:uastack:bench:" + name
	root := filepath.Join(dir, name+"-pki")
	p, err := pki.Open(root, pki.Options{Logger: quiet})
	if err != nil {
		return nil, err
	}
	cert, key, err := p.EnsureOwn(uri, []string{"127.0.0.1", "localhost"}, pki.OwnOptions{ApplicationName: "uastack bench"})
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	return &Identity{URI: uri, DER: cert.Raw, Key: key, PKI: p, Root: root}, nil
}

// Trust adds a server certificate to the client's trusted store.
func (id *Identity) Trust(der []byte, name string) error {
	certs := filepath.Join(id.Root, "trusted", "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(certs, name+".der"), der, 0o600); err != nil {
		return err
	}
	// Reopen so that the store reads the new file.
	_ = id.PKI.Close()
	p, err := pki.Open(id.Root, pki.Options{})
	id.PKI = p
	return err
}

// ManyClientsOneSource are the settings of a server whose many clients are the bench's,
// all from one address and with one certificate: the shares of issue 18's isolation
// would count them as one client (per source, per owner) and measure those bounds
// instead of the server.
var ManyClientsOneSource = []string{"limits.maxConnectionsPerSource=0", "limits.ownerShare=1"}

// Server is a running server subprocess.
type Server struct {
	URL  string // opc.tcp URL with the bound port
	DER  []byte // the server's application instance certificate
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
	once sync.Once
}

var listening = regexp.MustCompile(`msg=listening address=(\S+)`)

// Start runs bin with a fresh PKI under dir trusting client, listening on 127.0.0.1:0,
// logging at warn level after start-up, with extra --set key=value flags.
func Start(ctx context.Context, bin, dir string, client *Identity, sets ...string) (*Server, error) {
	var clients []*Identity
	if client != nil {
		clients = []*Identity{client}
	}
	return StartTrusting(ctx, bin, dir, clients, sets...)
}

// StartTrusting is Start with every certificate of clients trusted.
func StartTrusting(ctx context.Context, bin, dir string, clients []*Identity, sets ...string) (*Server, error) {
	pkiDir := filepath.Join(dir, "server-pki")
	certs := filepath.Join(pkiDir, "trusted", "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return nil, err
	}
	for i, c := range clients {
		name := "bench-client.der"
		if i > 0 {
			name = fmt.Sprintf("bench-client-%d.der", i)
		}
		if err := os.WriteFile(filepath.Join(certs, name), c.DER, 0o600); err != nil {
			return nil, err
		}
	}
	args := []string{"--listen", "127.0.0.1:0", "--endpoint", "opc.tcp://127.0.0.1:0", "--pki", pkiDir,
		"--set", "endpoint.hostnames=127.0.0.1,localhost"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	s := &Server{cmd: exec.Command(bin, args...), logs: &lockedBuffer{}, done: make(chan struct{})}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout = s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			_, _ = s.logs.Write([]byte(line + "\n"))
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = s.cmd.Wait()
		close(s.done)
	}()
	select {
	case a := <-addr:
		s.URL = "opc.tcp://" + a
	case <-s.done:
		return nil, fmt.Errorf("server exited before listening:\n%s", s.logs.String())
	case <-ctx.Done():
		s.Stop()
		return nil, fmt.Errorf("server not listening: %w\n%s", ctx.Err(), s.logs.String())
	case <-time.After(60 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("server not listening within 60 s:\n%s", s.logs.String())
	}
	own, err := filepath.Glob(filepath.Join(pkiDir, "own", "certs", "*.der"))
	if err != nil || len(own) != 1 {
		s.Stop()
		return nil, fmt.Errorf("server certificate: found %v (%v)", own, err)
	}
	if s.DER, err = os.ReadFile(own[0]); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Logs returns what the server logged so far.
func (s *Server) Logs() string { return s.logs.String() }

// Kill ends the server with SIGKILL, which it cannot catch: nothing is written on the way
// out and its sockets are closed by the kernel. It returns once the process is gone,
// with the time it was found gone, or when ctx ends.
func (s *Server) Kill(ctx context.Context) (time.Time, error) {
	var err error
	s.once.Do(func() { err = s.cmd.Process.Kill() })
	if err != nil {
		return time.Time{}, err
	}
	select {
	case <-s.done:
		return time.Now(), nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// Stop interrupts the server and waits for it, killing it after 10 s.
func (s *Server) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// lockedBuffer is a strings.Builder safe for the reader goroutine and callers.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// quiet drops the client PKI's log records (certificate created): a suite's output is
// its report.
var quiet = slog.New(slog.DiscardHandler)
