// Package process serves a node manager as a plugin process, run by the server's
// process host (hashicorp/go-plugin, gRPC with AutoMTLS). A plugin's main is one line:
//
//	func main() { process.Serve(mydevice.New) }
//
// The frames cross in their OPC UA binary encoding (package wire). The manager's log
// lines go to the process's stderr as JSON lines, which the host reads into its own
// log with their levels and attributes; anything else written to stderr (a panic's
// trace) reaches the host's log too. The process exits when its host does, even when
// the host could not stop it.
package process

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"uastack.dev/plugins/internal/procwire"
	"uastack.dev/plugins/sdk"
)

// pushQueue bounds the pushed frames waiting for the host: past it a push is dropped
// and counted, so that a manager never waits on its host.
const pushQueue = 1024

// parentEvery is how often the process checks that its host still lives.
const parentEvery = 250 * time.Millisecond

// Serve serves the manager f builds until the host closes the plugin, then returns.
// It is what a plugin's main calls; run by hand (not by a host), it says so on stderr
// and exits with status 1.
func Serve(f sdk.Factory) {
	// go-plugin points os.Stderr at a pipe it streams to the host once it serves; log
	// lines go to the process's own stderr, which the host reads line by line.
	l := newLink(os.Stderr)
	go exitWithParent(os.Getppid())
	go l.reportDrops()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: procwire.Handshake,
		Plugins:         procwire.Plugins(&server{guest: sdk.NewGuest(f, l), link: l}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, procwire.ServerOptions()...)...)
		},
		Logger: procwire.HCLog(slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn})), ""),
	})
}

// exitWithParent ends the process when its parent is gone: the process is then
// re-parented, and its parent id changes. The host also has the kernel kill its
// plugins when it dies (on Linux); this covers the rest.
func exitWithParent(ppid int) {
	t := time.NewTicker(parentEvery)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != ppid {
			os.Exit(1)
		}
	}
}

// server serves the service of procwire.
type server struct {
	guest *sdk.Guest
	link  *link
}

// Call answers a batch through the guest, within the host's deadline.
func (s *server) Call(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	return &wrapperspb.BytesValue{Value: s.guest.Serve(ctx, in.Value)}, nil
}

// Pushes sends the queued pushes until the host goes.
func (s *server) Pushes(stream grpc.ServerStream) error {
	ctx := stream.Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case frame := <-s.link.pushes:
			if err := stream.SendMsg(&wrapperspb.BytesValue{Value: frame}); err != nil {
				return err
			}
		}
	}
}

// link is the guest's way back to the host: pushes go to the Pushes stream, log lines
// to stderr.
type link struct {
	pushes  chan []byte
	dropped atomic.Uint64

	mu     sync.Mutex // guards stderr: a line is written whole
	stderr *os.File
}

func newLink(stderr *os.File) *link {
	return &link{pushes: make(chan []byte, pushQueue), stderr: stderr}
}

// Push queues a copy of frame for the host, or drops it when the queue is full.
func (l *link) Push(frame []byte) {
	select {
	case l.pushes <- append([]byte(nil), frame...):
	default:
		l.dropped.Add(1)
	}
}

// Log writes line to stderr, ending it with a newline when it has none.
func (l *link) Log(line []byte) {
	if len(line) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.stderr.Write(line)
	if line[len(line)-1] != '\n' {
		_, _ = l.stderr.Write([]byte{'\n'})
	}
}

// Write makes the link an io.Writer of log lines, for a slog JSON handler (one record
// per Write).
func (l *link) Write(b []byte) (int, error) {
	l.Log(b)
	return len(b), nil
}

// Now is the process's clock.
func (l *link) Now() time.Time { return time.Now() }

// reportDrops logs, at most once a second, how many pushes were dropped.
func (l *link) reportDrops() {
	logger := slog.New(slog.NewJSONHandler(l, nil))
	var reported uint64
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for range t.C {
		if n := l.dropped.Load(); n != reported {
			logger.Warn("plugin: pushes dropped: the host does not take them fast enough", "dropped", n-reported, "total", n)
			reported = n
		}
	}
}

var _ sdk.Link = (*link)(nil)
