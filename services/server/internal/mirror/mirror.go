package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"uastack.dev/services/server/internal/session"
	"uastack.dev/services/server/internal/subscription"
)

// Config is what a Mirror needs.
type Config struct {
	// URLs of NATS servers (any of a cluster); Options add credentials, nkey, token and
	// TLS as the server's mirror.* settings say.
	URLs    []string
	Options []nats.Option
	// Cluster names the redundant set: its bucket and stream names start with it.
	Cluster string
	// Key is the cluster key (KeySize bytes) every record is sealed with.
	Key []byte
	// ServerURI is this server's ApplicationUri; Certificate its certificate (DER),
	// kept with the sessions it creates: a client that fails over may sign the nonce
	// with it.
	ServerURI   string
	Certificate []byte
	// Replicas of the buckets and the stream (1 for one NATS server, 3 for a cluster).
	Replicas int
	// MaxBytes bounds the subscription stream; MaxAge bounds how long a subscription
	// of a server that died may wait for its session to come back.
	MaxBytes int64
	MaxAge   time.Duration
	// SendWait bounds how long a Publish response waits for its NotificationMessages to
	// be kept; past it the mirror is degraded and the response leaves.
	SendWait time.Duration
	// Timeout bounds each request to NATS (connect, a session's compare-and-swap, a
	// takeover's reads).
	Timeout time.Duration
	// BatchWindow gathers the publishing cycles due within it of cycles that waited
	// for the mirror (subscription.Engine.SetSendBarrier).
	BatchWindow time.Duration

	Sessions *session.Table
	Subs     *subscription.Engine
	Log      *slog.Logger
	// Health is told when the mirror's health changes (from the connection's
	// handlers); Members when the set's servers change. Either may be nil.
	Health  func(Health)
	Members func(serverURIs []string)
	// Values, when not nil, mirrors the values written to the mirrored namespaces
	// (mirror.namespaces).
	Values *Values
}

// Health is what the mirror knows of its own state.
type Health uint8

const (
	// Healthy: connected, and every change so far is kept.
	Healthy Health = iota
	// Degraded: NATS is unreachable or refused a write; the server keeps serving its
	// own clients and writes its whole state again once NATS is back.
	Degraded
)

// Mirror keeps a server's sessions and subscriptions in JetStream and takes over those of
// other servers of the set. Its methods are safe for concurrent use.
type Mirror struct {
	cfg  Config
	log  *slog.Logger
	seal *sealer
	nc   *nats.Conn
	js   jetstream.JetStream

	sessions jetstream.KeyValue // <set>-sessions
	nodes    jetstream.KeyValue // <set>-nodes
	subs     jetstream.Stream   // <set>-subs
	values   jetstream.KeyValue // <set>-values; nil without mirrored namespaces
	browse   jetstream.KeyValue // <set>-browse: continuation points
	node     uint8              // this server's number in the set (its key in nodes)
	nodeRev  uint64
	// restoring bounds the Restores at once: a failover brings a burst of them, whose
	// reads the stream's leader serves between the other servers' writes.
	restoring chan struct{}

	// w writes the subscriptions' changes, sw the session records; resync asks them to
	// write the whole state again (after NATS was unreachable or refused a write).
	w, sw  writer
	resync atomic.Bool

	mu sync.Mutex // guards owned, claiming, subOf, deltas, restored, snaps, acks, snapAt, degraded
	// owned are the sessions this server holds, by their key in <set>-sessions.
	owned map[string]*ownedSession
	// claiming are the sessions being taken over (Claim), until the table adds them.
	claiming map[string]claim
	// subOf is the session hash of each subscription; deltas counts the changes
	// written since its last snapshot.
	subOf  map[uint32]string
	deltas map[uint32]uint64
	// restored are the subscriptions Restore is adding to the engine, with the number
	// of the last change the set has of each.
	restored map[uint32]restoredSub
	// snaps are the subscriptions whose snapshot is due (takeSnapshots); acks the
	// acknowledgements waiting to ride with their subscription's next change.
	snaps map[uint32]bool
	acks  map[uint32][]uint32
	// snapAt is when each subscription's last snapshot was written (renewSnapshots).
	snapAt   map[uint32]time.Time
	degraded bool

	stops []func()
	done  chan struct{}
	loops sync.WaitGroup
	errs  atomic.Uint64 // writes NATS refused or that failed
	// takeovers and releases count the sessions taken from and given to other servers.
	takeovers, releases atomic.Uint64
	stopped             atomic.Bool
}

// ownedSession is what the mirror keeps of a session this server holds.
type ownedSession struct {
	rec     session.Record
	creator []byte // certificate of the server that created it
	rev     uint64 // the record's revision in the bucket; 0 until written
	written time.Time
}

// Defaults of Config's bounds.
const (
	defaultTimeout  = 5 * time.Second
	defaultSendWait = 2 * time.Second
	// maxRestoring is the Restores at once (Mirror.restoring). A Restore is three
	// requests NATS answers from its index of subjects; at 4, 1,000 sessions failing
	// over waited their turns for seconds (bench/RESULTS.md, Redundancy).
	maxRestoring    = 32
	defaultMaxAge   = time.Hour
	defaultMaxBytes = 1 << 30
	// snapshotEvery is how many changes of a subscription are written before its next
	// snapshot: a takeover reads at most about this many.
	snapshotEvery = 64
	// sessionGrace is added to a session's timeout as its record's TTL, for a client
	// that comes back at the last moment to find it.
	sessionGrace = 30 * time.Second
	// nodeTTL is how long a server's key in <set>-nodes outlives its last renewal.
	nodeTTL      = 15 * time.Second
	nodeInterval = 5 * time.Second
)

// Start connects to NATS, makes the set's buckets and stream if they are not there,
// takes a free number in the set and begins following the session table and the
// subscription engine. Call it before the server serves: it sets the engine's space of
// subscription IDs.
func Start(ctx context.Context, cfg Config) (*Mirror, error) {
	if cfg.Cluster == "" || strings.ContainsAny(cfg.Cluster, ".*> \t") {
		return nil, fmt.Errorf("mirror: cluster name %q: want a non-empty name without dots, wildcards or spaces", cfg.Cluster)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.SendWait <= 0 {
		cfg.SendWait = defaultSendWait
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = defaultMaxAge
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = defaultMaxBytes
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	seal, err := newSealer(cfg.Key)
	if err != nil {
		return nil, err
	}
	m := &Mirror{cfg: cfg, log: cfg.Log.With("part", "mirror"), seal: seal,
		owned: make(map[string]*ownedSession), claiming: make(map[string]claim), subOf: make(map[uint32]string), deltas: make(map[uint32]uint64), restored: make(map[uint32]restoredSub), snaps: make(map[uint32]bool), acks: make(map[uint32][]uint32), snapAt: make(map[uint32]time.Time),
		restoring: make(chan struct{}, maxRestoring), done: make(chan struct{})}
	opts := append([]nats.Option{
		nats.Name("uastack " + cfg.ServerURI),
		nats.Timeout(cfg.Timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { m.setDegraded(fmt.Errorf("disconnected: %v", err)) }),
		nats.ReconnectHandler(func(*nats.Conn) { m.w.kick(); m.sw.kick() }),
		// Asynchronous errors (a watch's consumer gone while NATS was away) go to the
		// server's log, not to stderr.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			m.log.Debug("NATS", "subject", subject, "err", err)
		}),
	}, cfg.Options...)
	if m.nc, err = nats.Connect(strings.Join(cfg.URLs, ","), opts...); err != nil {
		return nil, fmt.Errorf("mirror: connecting to %s: %w", strings.Join(cfg.URLs, ","), err)
	}
	fail := func(err error) (*Mirror, error) {
		for _, stop := range m.stops {
			stop()
		}
		close(m.done)
		m.nc.Close()
		m.loops.Wait()
		return nil, err
	}
	if m.js, err = jetstream.New(m.nc, jetstream.WithPublishAsyncMaxPending(4096)); err != nil {
		return fail(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 12*cfg.Timeout)
	defer cancel()
	if err := m.provision(sctx); err != nil {
		return fail(err)
	}
	if err := m.join(sctx); err != nil {
		return fail(err)
	}
	m.w.init(m)
	m.sw.init(m)
	cfg.Subs.SetIDSpace(m.node)
	cfg.Subs.SetSendBarrier(m.barrier, cfg.BatchWindow)
	m.stops = append(m.stops, cfg.Subs.Observe(m.subscriptionChanged))
	cfg.Sessions.Observe(m.sessionChanged)
	if err := m.watchSessions(); err != nil {
		return fail(err)
	}
	if err := m.watchValues(); err != nil {
		return fail(err)
	}
	m.loops.Go(func() { m.w.run(m.takeSnapshots, m.publishAll) })
	m.loops.Go(func() { m.sw.run(nil, m.writeSessions) })
	m.loops.Go(m.keepAlive)
	m.log.Info("mirror started", "cluster", cfg.Cluster, "node", m.node, "nats", m.nc.ConnectedUrlRedacted())
	return m, nil
}

// Node returns this server's number in the set: the high byte of its subscription IDs.
func (m *Mirror) Node() uint8 { return m.node }

// Errors returns how many writes NATS refused or that failed.
func (m *Mirror) Errors() uint64 { return m.errs.Load() }

// provision makes the buckets and the stream, or brings their settings up to date.
func (m *Mirror) provision(ctx context.Context) error {
	c := m.cfg
	var err error
	kv := func(name, what string, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
		cfg.Bucket, cfg.Description = c.Cluster+"-"+name, "uastack "+what+" of the redundant set "+c.Cluster
		cfg.History, cfg.Storage, cfg.Replicas = 1, jetstream.FileStorage, c.Replicas
		b, err := retried(ctx, c.Timeout, func(ctx context.Context) (jetstream.KeyValue, error) {
			return m.js.CreateOrUpdateKeyValue(ctx, cfg)
		})
		if err != nil {
			return nil, fmt.Errorf("mirror: %s bucket: %w", name, err)
		}
		return b, nil
	}
	// Per-key TTLs (LimitMarkerTTL): a session, server or continuation point nobody keeps
	// alive goes.
	if m.sessions, err = kv("sessions", "sessions", jetstream.KeyValueConfig{LimitMarkerTTL: time.Minute}); err != nil {
		return err
	}
	if m.nodes, err = kv("nodes", "servers", jetstream.KeyValueConfig{LimitMarkerTTL: time.Minute}); err != nil {
		return err
	}
	if m.browse, err = kv("browse", "browse continuation points", jetstream.KeyValueConfig{MaxBytes: c.MaxBytes, LimitMarkerTTL: time.Minute}); err != nil {
		return err
	}
	if c.Values != nil {
		if m.values, err = kv("values", "values written to the mirrored namespaces", jetstream.KeyValueConfig{MaxBytes: c.MaxBytes}); err != nil {
			return err
		}
	}
	m.subs, err = retried(ctx, c.Timeout, func(ctx context.Context) (jetstream.Stream, error) {
		return m.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: subsStream(c.Cluster), Description: "uastack subscriptions of the redundant set " + c.Cluster,
			Subjects: []string{c.Cluster + ".sub.>"}, Storage: jetstream.FileStorage, Replicas: c.Replicas,
			MaxAge: c.MaxAge, MaxBytes: c.MaxBytes, Discard: jetstream.DiscardOld,
			MaxMsgsPerSubject: 1, AllowDirect: true,
		})
	})
	if err != nil {
		return fmt.Errorf("mirror: subscriptions stream: %w", err)
	}
	return nil
}

// retried calls fn, each call bounded by timeout, until it succeeds or ctx ends: servers
// of a set that start together make the same buckets at the same moment, and a
// replicated stream's creation can outlast one request while NATS places it.
func retried[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	wait := 100 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, timeout)
		v, err := fn(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait + time.Duration(rand.Int64N(int64(wait)))):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// Close stops following the server, writes what is queued and disconnects. The
// sessions and subscriptions stay in JetStream for the other servers of the set.
func (m *Mirror) Close() {
	if m.stopped.Swap(true) {
		return
	}
	for _, stop := range m.stops {
		stop()
	}
	// What is queued is written, within a bound: a server stopped for maintenance
	// leaves the set an exact copy.
	if !m.Degraded() {
		m.waitWritten(m.cfg.Timeout)
	}
	close(m.done)
	m.loops.Wait()
	_ = m.nc.Drain()
}

// Halt disconnects at once without writing what is queued, as a server that dies would:
// for tests of a takeover.
func (m *Mirror) Halt() {
	if m.stopped.Swap(true) {
		return
	}
	for _, stop := range m.stops {
		stop()
	}
	m.nc.Close()
	close(m.done)
	m.loops.Wait()
}

// setDegraded records that a write failed or the connection went: the server serves on,
// and the writer writes everything again once NATS answers.
func (m *Mirror) setDegraded(why error) {
	m.mu.Lock()
	was := m.degraded
	m.degraded = true
	m.mu.Unlock()
	if !was {
		m.log.Warn("mirror degraded: the server serves its own clients and catches up when NATS is back", "err", why)
		if m.cfg.Health != nil {
			m.cfg.Health(Degraded)
		}
	}
	m.resync.Store(true)
	m.w.kick()
	m.sw.kick()
}

// caughtUp is told by a writer that a batch was written. After a failure the first
// success writes the whole state again (resyncAll); once that is written too the
// mirror is healthy.
func (m *Mirror) caughtUp() {
	if m.resync.Swap(false) {
		m.resyncAll()
		return
	}
	m.w.mu.Lock()
	pending := len(m.w.queue)
	m.w.mu.Unlock()
	m.sw.mu.Lock()
	pending += len(m.sw.queue)
	m.sw.mu.Unlock()
	if pending == 0 {
		m.setHealthy()
	}
}

// setHealthy records that everything the server holds is kept again.
func (m *Mirror) setHealthy() {
	m.mu.Lock()
	was := m.degraded
	m.degraded = false
	m.mu.Unlock()
	if was {
		m.log.Info("mirror healthy again")
		if m.cfg.Health != nil {
			m.cfg.Health(Healthy)
		}
	}
}

// Degraded reports whether the mirror is degraded.
func (m *Mirror) Degraded() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.degraded
}

// errStopped is the error of a call after Close or Halt.
var errStopped = errors.New("mirror: stopped")

// Stats is what the mirror reports on /metrics.
type Stats struct {
	// Pending are the records queued and not yet kept in JetStream: the mirror's lag.
	Pending int
	// Errors are the writes NATS refused or that failed.
	Errors uint64
	// Degraded is set while NATS is unreachable or the last write failed.
	Degraded bool
	// Sessions and Subscriptions are those this server holds in the set.
	Sessions, Subscriptions int
	// Takeovers are the sessions taken over from other servers; Releases those another
	// server took over from this one.
	Takeovers, Releases uint64
}

// Stats returns the mirror's figures.
func (m *Mirror) Stats() Stats {
	m.w.mu.Lock()
	pending := int(m.w.enq - m.w.flushed)
	m.w.mu.Unlock()
	m.sw.mu.Lock()
	pending += int(m.sw.enq - m.sw.flushed)
	m.sw.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Pending: pending, Errors: m.errs.Load(), Degraded: m.degraded, Sessions: len(m.owned),
		Subscriptions: len(m.subOf), Takeovers: m.takeovers.Load(), Releases: m.releases.Load()}
}
