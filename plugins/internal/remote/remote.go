package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/plugins/wire"
)

// Dialer connects guests: fresh WASM instances, or a plugin process.
type Dialer interface {
	// Dial connects a new guest. push is called with every frame the guest pushes
	// (DataChanges, Events), from any goroutine, until the guest is closed; the frame is
	// only valid during the call.
	Dial(ctx context.Context, push func(frame []byte)) (Conn, error)
}

// Conn is one connected guest.
type Conn interface {
	// Call sends a batch of request frames and returns the batch of replies. The reply
	// is valid until the next Call on the same lane. An error wraps a StatusCode:
	// BadTimeout when ctx ended first, BadInternalError for a guest that trapped,
	// BadCommunicationError for one that is gone. An error that also wraps ErrBroken
	// says the guest can serve no more and must be replaced.
	Call(ctx context.Context, batch []byte) ([]byte, error)
	// Broken is closed when the guest breaks by itself (a process that exits); nil
	// when that cannot happen.
	Broken() <-chan struct{}
	// Close releases the guest.
	Close() error
}

// Refresher is a Dialer that reads the plugin's file once and has to read it again for
// a reload (a WASM host compiles the module once).
type Refresher interface {
	// Refresh makes the next Dials use the file as it is now. On error the Dialer
	// dials as before.
	Refresh(ctx context.Context) error
}

// ErrBroken marks the errors of a Conn that must be replaced.
var ErrBroken = errors.New("the guest must be replaced")

// Config says how a Manager carries operations.
type Config struct {
	// Name is the manager's name in configuration, for logs and errors.
	Name string
	// Setup is sent to every guest first (KindInfo).
	Setup nodemgr.Setup
	// Conns is the number of guests connected at once (a WASM pool's instances; 1 for
	// a process); LanesPerConn the calls in flight on each. Zero means 1.
	Conns, LanesPerConn int
	// MaxOutstanding bounds the operations queued or in flight; zero means 256.
	MaxOutstanding int
	// MaxBatch bounds the operations of one call; zero means 128.
	MaxBatch int
	// CallTimeout bounds a call whose operations have no deadline of their own, and
	// each lifecycle call; zero means 10s.
	CallTimeout time.Duration
	// Backoff is the first wait before a broken guest is replaced a second time in a
	// row, doubling up to MaxBackoff; zero means 100ms and 5s. A guest that served for
	// a minute resets it.
	Backoff, MaxBackoff time.Duration
	// Logger logs the guests' lives; nil discards.
	Logger *slog.Logger
	// HealthEvery is how often each guest is asked for its health; one that does not
	// answer within CallTimeout is replaced. Zero means 5s.
	HealthEvery time.Duration
	// Watch is the plugin's file: when it is replaced, the guests are reloaded from it
	// (Reload). "" watches nothing. WatchEvery is how often it is looked at; zero means
	// 1s.
	Watch      string
	WatchEvery time.Duration
	// Release is called by Close after the guests are closed (the host's runtime or
	// plugin client); nil for none.
	Release func(ctx context.Context) error
}

func (c *Config) defaults() {
	if c.Conns <= 0 {
		c.Conns = 1
	}
	if c.LanesPerConn <= 0 {
		c.LanesPerConn = 1
	}
	if c.MaxOutstanding <= 0 {
		c.MaxOutstanding = 256
	}
	if c.MaxBatch <= 0 || c.MaxBatch > wire.MaxFrames {
		c.MaxBatch = 128
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 10 * time.Second
	}
	if c.Backoff <= 0 {
		c.Backoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HealthEvery <= 0 {
		c.HealthEvery = 5 * time.Second
	}
	if c.WatchEvery <= 0 {
		c.WatchEvery = time.Second
	}
}

//go:generate go run gen_served.go

// Manager is a node manager across a boundary. Open returns it set up; Served is what
// the server mounts.
type Manager struct {
	cfg     Config
	dialer  Dialer
	info    nodemgr.Info
	shipped []nodemgr.Model // what the guest ships (CapModels), asked once at Open

	ctx    context.Context // ends at Close: lanes and supervisors stop
	cancel context.CancelFunc
	wg     sync.WaitGroup // lanes and supervisors

	mu          sync.Mutex // guards queue, outstanding, closed, ready, indexes, params, host, lastErr
	wake        *sync.Cond // signalled when the queue grows, a guest gets ready, or at Close
	queue       []*pending
	outstanding int
	closed      bool
	ready       int // guests set up and serving
	indexes     []uint16
	mounted     bool
	params      *nodemgr.StartParams
	host        nodemgr.Host
	lastErr     error

	slots []*slot

	watchMu sync.Mutex // guards watched
	watched map[nodemgr.WatchKey]float64

	health atomic.Pointer[nodemgr.Health] // the last guest health polled
	loaded fileState                      // the plugin's file as Open found it (Config.Watch)

	calls, frames atomic.Uint64 // calls across the boundary, and the operations they carried
	replaced      atomic.Uint64 // guests connected in place of one that broke
}

// Open connects the first guest, sets it up with cfg.Setup and returns the Manager. An
// error says why the guest cannot serve: it could not be connected, its setup failed,
// or it serves no namespace.
func Open(ctx context.Context, d Dialer, cfg Config) (*Manager, error) {
	cfg.defaults()
	m := &Manager{cfg: cfg, dialer: d, watched: map[nodemgr.WatchKey]float64{}}
	m.wake = sync.NewCond(&m.mu)
	if cfg.Watch != "" {
		m.loaded, _ = statFile(cfg.Watch) // before the guest reads it: a change after counts
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.slots = make([]*slot, cfg.Conns)
	for i := range m.slots {
		m.slots[i] = &slot{m: m, index: i, dirty: make(chan struct{}, 1), broke: make(chan Conn, 1),
			replace: make(chan struct{}, 1), inflight: map[Conn]int{}, retired: map[Conn]bool{}}
	}
	s0 := m.slots[0]
	conn, info, err := s0.connect(ctx)
	if err != nil {
		m.cancel()
		return nil, err
	}
	if len(info.Namespaces) == 0 {
		conn.Close()
		m.cancel()
		return nil, fmt.Errorf("the guest serves no namespace")
	}
	m.info = *info
	if info.Capabilities&nodemgr.CapModels != 0 {
		reply, err := s0.lifecycle(ctx, conn, &nodemgr.Frame{Kind: nodemgr.KindModels})
		if err != nil {
			conn.Close()
			m.cancel()
			return nil, fmt.Errorf("models: %w", err)
		}
		m.shipped = reply.(*nodemgr.Models).Models
	}
	s0.conn = conn
	return m, nil
}

// models returns the documents the guest ships (nodemgr.Modeler): asked once, since
// the server loads them once, before it mounts the manager.
func (m *Manager) models() []nodemgr.Model { return m.shipped }

// Info returns what the guest said it serves.
func (m *Manager) Info() nodemgr.Info { return m.info }

// Served returns the nodemgr.Manager to mount: the Manager's lifecycle (Mount, Start,
// Close, Health) and exactly the operations the guest implements, so that the server
// finds by type assertion what the guest serves.
func (m *Manager) Served() nodemgr.Manager { return served(m, m.info.Capabilities) }

// Stats returns the calls made across the boundary and the operations they carried.
func (m *Manager) Stats() (calls, operations uint64) { return m.calls.Load(), m.frames.Load() }

// Traffic returns what the server's metrics show of the boundary: the calls and the
// operations they carried so far, the guests that replaced broken ones, and the
// operations queued or in flight now.
func (m *Manager) Traffic() (calls, operations, replaced uint64, outstanding int) {
	m.mu.Lock()
	outstanding = m.outstanding
	m.mu.Unlock()
	return m.calls.Load(), m.frames.Load(), m.replaced.Load(), outstanding
}

// Namespaces returns the guest's namespaces (nodemgr.Manager).
func (m *Manager) Namespaces() []string { return m.info.Namespaces }

// Mount mounts the guest (nodemgr.Mounter): the indexes are kept for the guests
// connected later. A guest that is not a Mounter mounts nothing.
func (m *Manager) Mount(indexes []uint16) []nodemgr.Mount {
	m.mu.Lock()
	m.indexes, m.mounted = slices.Clone(indexes), true
	m.mu.Unlock()
	if m.info.Capabilities&nodemgr.CapMount == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.CallTimeout)
	defer cancel()
	reply, err := m.slots[0].lifecycle(ctx, m.slots[0].conn, &nodemgr.Frame{Kind: nodemgr.KindMount, Body: &nodemgr.MountRequest{Indexes: indexes}})
	if err != nil {
		m.cfg.Logger.Error("plugin: mount failed", "err", err)
		return nil
	}
	return reply.(*nodemgr.Mounts).Mounts
}

// Start starts the guest (nodemgr.Starter) and the lanes and supervisors that serve it.
func (m *Manager) Start(ctx context.Context, host nodemgr.Host) error {
	params := &nodemgr.StartParams{
		Namespaces:       m.info.Namespaces,
		NamespaceIndexes: host.NamespaceIndexes(),
		LogLevel:         int32(leastLevel(ctx, host.Logger())),
	}
	s0 := m.slots[0]
	if m.info.Capabilities&nodemgr.CapStart != 0 {
		if _, err := s0.lifecycle(ctx, s0.conn, &nodemgr.Frame{Kind: nodemgr.KindStart, Body: params}); err != nil {
			return err
		}
	}
	m.mu.Lock()
	m.params, m.host = params, host
	m.mu.Unlock()
	if m.cfg.Watch != "" {
		m.wg.Add(1)
		go m.watchFile(m.loaded)
	}
	// The first guest serves from now on: an operation right after Start is queued,
	// not answered BadNotConnected while its supervisor is being scheduled.
	s0.setUp(s0.conn)
	for _, s := range m.slots {
		m.wg.Add(1)
		go s.supervise()
		for range m.cfg.LanesPerConn {
			m.wg.Add(1)
			go s.lane()
		}
	}
	return nil
}

// leastLevel returns the least slog level logger logs.
func leastLevel(ctx context.Context, logger *slog.Logger) slog.Level {
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
		if logger.Enabled(ctx, l) {
			return l
		}
	}
	return slog.LevelError
}

// Close stops the guests (nodemgr.Closer): queued operations are answered BadShutdown,
// the guest is told to Close, lanes and supervisors stop, and Release runs.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	queued := m.queue
	m.queue = nil
	m.wake.Broadcast()
	m.mu.Unlock()
	for _, p := range queued {
		p.end(status.BadShutdown)
	}
	var errs []error
	if m.info.Capabilities&nodemgr.CapClose != 0 {
		for _, s := range m.slots {
			if c := s.current(); c != nil {
				if _, err := s.lifecycle(ctx, c, &nodemgr.Frame{Kind: nodemgr.KindClose}); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	m.cancel()
	m.wg.Wait()
	for _, s := range m.slots {
		s.drop()
	}
	if m.cfg.Release != nil {
		errs = append(errs, m.cfg.Release(ctx))
	}
	return errors.Join(errs...)
}

// reportLost tells the monitored items of a Watcher guest that is gone that their values
// are lost: the server does not sample watched pairs, so without this they would keep
// showing the last good value. A guest connected again pushes fresh values for the whole
// watched set, which its supervisor replays.
func (m *Manager) reportLost(host nodemgr.Host) {
	if m.info.Capabilities&nodemgr.CapWatch == 0 {
		return
	}
	now := codec.DateTimeOf(host.Now())
	m.watchMu.Lock()
	changes := make([]nodemgr.DataChange, 0, len(m.watched))
	for k := range m.watched {
		changes = append(changes, nodemgr.DataChange{NodeId: k.NodeId, AttributeId: k.AttributeId,
			Value: codec.DataValue{Status: status.BadNotConnected, SourceTimestamp: now, ServerTimestamp: now}})
	}
	m.watchMu.Unlock()
	if len(changes) > 0 {
		host.Notifier().Changed(changes)
	}
}

// Reload replaces every guest with a fresh one from the plugin's file as it is now (a
// new module, a restarted process), each as soon as the fresh one is set up: operations
// in flight finish on the old guest, the next ones go to the new, and the watched set is
// replayed to it. A file that cannot be loaded is an error and the old guests serve on;
// a fresh guest that cannot be set up is logged and the old one serves on. It returns
// once the file is read; the guests are replaced in the background.
func (m *Manager) Reload(ctx context.Context) error {
	if r, ok := m.dialer.(Refresher); ok {
		if err := r.Refresh(ctx); err != nil {
			return err
		}
	}
	for _, s := range m.slots {
		select {
		case s.replace <- struct{}{}:
		default:
		}
	}
	return nil
}

// Release closes a Manager the server provisioned but did not start (routing.Releaser);
// after Close it does nothing.
func (m *Manager) Release(ctx context.Context) error { return m.Close(ctx) }

// Health reports the guests' health (nodemgr.HealthReporter): Bad while none is
// connected, else what the guest last said (Good when it does not say).
func (m *Manager) Health(context.Context) nodemgr.Health {
	m.mu.Lock()
	ready, lastErr := m.ready, m.lastErr
	m.mu.Unlock()
	if ready == 0 && m.params != nil {
		h := nodemgr.Health{Status: status.BadNotConnected, Message: "no guest is connected"}
		if lastErr != nil {
			h.Message += ": " + lastErr.Error()
		}
		return h
	}
	if h := m.health.Load(); h != nil {
		return *h
	}
	return nodemgr.Health{Status: status.Good}
}

// watch records the change of the watched set and has every guest's supervisor send it
// (nodemgr.Watcher of the served manager); it returns at once.
func (m *Manager) watch(_ context.Context, set *nodemgr.WatchSet) {
	m.watchMu.Lock()
	for _, it := range set.Add {
		m.watched[it.Key()] = it.SamplingInterval
	}
	for _, k := range set.Remove {
		delete(m.watched, k)
	}
	m.watchMu.Unlock()
	for _, s := range m.slots {
		s.markDirty()
	}
}

// The lifecycle every served manager has; its operations are the guest's.
var (
	_ nodemgr.Mounter        = (*Manager)(nil)
	_ nodemgr.Starter        = (*Manager)(nil)
	_ nodemgr.Closer         = (*Manager)(nil)
	_ nodemgr.HealthReporter = (*Manager)(nil)
	_ nodemgr.Reader         = served1f{}
	_ nodemgr.Writer         = served1f{}
	_ nodemgr.Browser        = served1f{}
	_ nodemgr.Caller         = served1f{}
	_ nodemgr.Watcher        = served1f{}
)
