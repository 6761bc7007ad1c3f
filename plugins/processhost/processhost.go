// Package processhost runs node managers as plugin processes (hashicorp/go-plugin, gRPC
// with AutoMTLS and a versioned handshake): a plugin built with package sdk/process is
// started, set up with its configuration entry and mounted as a nodemgr.Manager.
//
// Operations cross as batches of frames in their OPC UA binary encoding, coalesced by
// package remote, which also bounds what is outstanding and restarts a process that dies
// (kill -9, a panic, an exit) with a bounded backoff, replaying its lifecycle. A process
// that dies is noticed at once, not at the next call: its push stream ends and go-plugin
// reports its exit. The plugin's log lines (JSON lines on its stderr) and anything
// else it writes to stderr or stdout land in the host's slog logger, each line once.
// When the host stops, Close kills the process and waits for it; when the host is
// killed, the kernel kills its plugins (Linux), and a plugin of package sdk/process
// also exits by itself once its parent is gone.
package processhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/plugins/internal/procwire"
	"uastack.dev/plugins/internal/remote"
)

// Config says which plugin to run and how to carry its operations.
type Config struct {
	// Name is the manager's name in configuration, for logs and errors.
	Name string
	// Path is the plugin's executable; Args are its arguments (Path is not repeated).
	Path string
	Args []string
	// Setup is sent to every process the host starts; an empty Setup.Name takes Name.
	Setup nodemgr.Setup
	// MaxOutstanding bounds the operations queued or in flight; zero means 256.
	MaxOutstanding int
	// LanesPerConn is the number of calls in flight to the process at once; zero
	// means 4, so that a batch waiting on a slow device does not hold every other.
	LanesPerConn int
	// CallTimeout bounds a call whose operations have no deadline, each lifecycle call,
	// and the start of a process; zero means 10s.
	CallTimeout time.Duration
	// Backoff is the first wait before a process that keeps dying is restarted,
	// doubling up to MaxBackoff; zero means 100ms and 5s.
	Backoff, MaxBackoff time.Duration
	// Reload restarts the plugin when its file is replaced (remote.Config's Watch): a
	// process of the new file starts, is set up, and takes over; the old one finishes
	// its calls and is stopped.
	Reload bool
	// Logger receives the processes' lives and the plugin's log lines, which carry
	// the attribute plugin=Name; nil discards.
	Logger *slog.Logger
}

// defaultLanes is LanesPerConn's default.
const defaultLanes = 4

// defaultCallTimeout is CallTimeout's default (remote's too).
const defaultCallTimeout = 10 * time.Second

// Open starts the plugin at cfg.Path, sets it up with cfg.Setup and returns the
// Manager; mount its Served(). The error names the file: it is missing or not
// executable, it is not a plugin of this host (a handshake or protocol version it does
// not speak), or the plugin refused its setup.
func Open(ctx context.Context, cfg Config) (*remote.Manager, error) {
	if err := checkFile(cfg.Path); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
	}
	if cfg.LanesPerConn <= 0 {
		cfg.LanesPerConn = defaultLanes
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = defaultCallTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Setup.Name == "" {
		cfg.Setup.Name = cfg.Name
	}
	d := &dialer{cfg: cfg, logger: cfg.Logger.With("plugin", cfg.Name)}
	m, err := remote.Open(ctx, d, remote.Config{
		Name:           cfg.Name,
		Setup:          cfg.Setup,
		Conns:          1,
		LanesPerConn:   cfg.LanesPerConn,
		MaxOutstanding: cfg.MaxOutstanding,
		CallTimeout:    cfg.CallTimeout,
		Backoff:        cfg.Backoff,
		MaxBackoff:     cfg.MaxBackoff,
		Logger:         d.logger,
		Watch:          watched(cfg.Reload, cfg.Path),
	})
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %s: %w", cfg.Name, cfg.Path, err)
	}
	return m, nil
}

// watched is the file remote watches: path when reload is on.
func watched(reload bool, path string) string {
	if reload {
		return path
	}
	return ""
}

// checkFile fails when path is not an executable file, naming it.
func checkFile(path string) error {
	if path == "" {
		return errors.New("no path to the plugin's executable")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err // names the file
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a file", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

// dialer starts plugin processes (remote.Dialer).
type dialer struct {
	cfg    Config
	logger *slog.Logger
}

// Dial starts a process, connects to it and opens its push stream. Open names the
// file in the errors; remote's supervisor logs them with the plugin's name.
func (d *dialer) Dial(ctx context.Context, push func(frame []byte)) (remote.Conn, error) {
	start := d.cfg.CallTimeout
	if dl, ok := ctx.Deadline(); ok {
		start = time.Until(dl)
	}
	if start <= 0 {
		return nil, fmt.Errorf("no time left to start the process: %w", status.BadTimeout)
	}
	cmd := exec.Command(d.cfg.Path, d.cfg.Args...)
	dieWithHost(cmd)
	stderr, stdio := newLines(d.logger), newLines(d.logger)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  procwire.Handshake,
		Plugins:          procwire.Plugins(nil),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     start,
		// go-plugin's own messages go to the logger; the plugin's stderr is read here,
		// line by line, and not again by go-plugin (see procwire.HCLog).
		Logger:     procwire.HCLog(d.logger, filepath.Base(d.cfg.Path)),
		Stderr:     stderr,
		SyncStderr: stdio,
		SyncStdout: stdio,
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("start: %w", err)
	}
	raw, err := rpc.Dispense(procwire.PluginName)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("dispense: %w", err)
	}
	pc, ok := raw.(*procwire.Client)
	if !ok {
		client.Kill()
		return nil, fmt.Errorf("dispensed a %T", raw)
	}
	c := &conn{
		path:   d.cfg.Path,
		client: client,
		rpc:    pc,
		logs:   []*lines{stderr, stdio},
		broken: make(chan struct{}),
		pumped: make(chan struct{}),
	}
	var streamCtx context.Context
	streamCtx, c.stopStream = context.WithCancel(context.Background())
	recv, err := pc.Pushes(streamCtx)
	if err != nil {
		c.stopStream()
		client.Kill()
		return nil, fmt.Errorf("open the push stream: %w", err)
	}
	go c.pump(recv, push)
	go c.watch()
	if rc := client.ReattachConfig(); rc != nil {
		d.logger.Info("plugin: process started", "path", d.cfg.Path, "pid", rc.Pid)
	}
	return c, nil
}

// conn is one plugin process (remote.Conn).
type conn struct {
	path       string
	client     *plugin.Client
	rpc        *procwire.Client
	logs       []*lines
	stopStream context.CancelFunc

	breakOnce sync.Once
	broken    chan struct{} // closed when the process exited or its push stream ended
	pumped    chan struct{} // closed when pump returns
	closeOnce sync.Once
}

// Call makes one RPC. A process that is gone, or a connection that broke, is
// BadCommunicationError and remote.ErrBroken; a call that ran out of time is
// BadTimeout, and the process serves on.
func (c *conn) Call(ctx context.Context, batch []byte) ([]byte, error) {
	select {
	case <-c.broken:
		return nil, fmt.Errorf("plugin %s is gone: %w %w", c.path, status.BadCommunicationError, remote.ErrBroken)
	default:
	}
	out, err := c.rpc.Call(ctx, batch)
	if err == nil {
		return out, nil
	}
	// Canceled with ctx alive is the connection closing under the call: the process
	// is gone and the conn is being closed.
	switch code := grpcstatus.Code(err); {
	case ctx.Err() != nil || code == codes.DeadlineExceeded:
		return nil, fmt.Errorf("plugin %s: %v: %w", c.path, err, status.BadTimeout)
	case code == codes.ResourceExhausted:
		// A batch or a reply past procwire.MaxMessage: the process is fine.
		return nil, fmt.Errorf("plugin %s: %v: %w", c.path, err, status.BadEncodingLimitsExceeded)
	default:
		return nil, fmt.Errorf("plugin %s: %v: %w %w", c.path, err, status.BadCommunicationError, remote.ErrBroken)
	}
}

// Broken is closed when the process exits or its push stream ends.
func (c *conn) Broken() <-chan struct{} { return c.broken }

// Close kills the process and waits for it to exit.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.stopStream()
		c.client.Kill() // asks the plugin to stop, kills it if it does not, waits
		<-c.pumped
		c.markBroken()
		for _, l := range c.logs {
			l.flush()
		}
	})
	return nil
}

func (c *conn) markBroken() { c.breakOnce.Do(func() { close(c.broken) }) }

// pump hands every pushed frame to push until the stream ends; a stream that ends
// while the conn is open means the process is gone.
func (c *conn) pump(recv func() ([]byte, error), push func([]byte)) {
	defer close(c.pumped)
	for {
		frame, err := recv()
		if err != nil {
			c.markBroken()
			return
		}
		push(frame)
	}
}

// watch marks the conn broken when the process exits.
func (c *conn) watch() {
	select {
	case <-c.rpc.Exited():
		c.markBroken()
	case <-c.broken:
	}
}
