package mirror

import (
	"context"
	"errors"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// op is one write to JetStream.
type op struct {
	subject string
	plain   []byte // sealed for subject when written; nil writes no body
	hdr     nats.Header
	// session is the key of a session record write: it is a compare-and-swap on the
	// record's revision, which the writer reads and then records (sessions.go).
	session string
	own     *ownedSession
	// purge ends the session record instead of writing it.
	purge bool
	// result, when not nil, gets the write's outcome.
	result chan error
	// seal is what the body is sealed for when not its subject (a KV key).
	seal string
	// pooled says plain came from subMessage and goes back once sealed; the sealed body
	// is then of plainBufs too, and goes back once acknowledged.
	pooled bool
	sealed []byte
}

// writer writes the ops queued by the observers, in order. The subscription writer
// publishes a batch at once and waits for its acknowledgements; the session writer
// writes one record at a time, each a compare-and-swap on the revision the last one
// left.
type writer struct {
	m *Mirror

	mu    sync.Mutex // guards queue, enq, tick
	queue []op
	enq   uint64 // ops queued so far
	// tick is closed (and replaced) whenever flushed moves on.
	tick chan struct{}
	// flushed counts the ops written (or given up on, the mirror then degraded).
	flushed uint64
	wake    chan struct{}
}

func (w *writer) init(m *Mirror) {
	w.m = m
	w.tick = make(chan struct{})
	w.wake = make(chan struct{}, 1)
}

// put queues o (called with the engine's or the table's lock held: it never blocks)
// and returns its place in the queue.
func (w *writer) put(o op) uint64 {
	w.mu.Lock()
	w.queue = append(w.queue, o)
	w.enq++
	n := w.enq
	w.mu.Unlock()
	w.kick()
	return n
}

func (w *writer) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// waitFor waits until op n is written, ctx ends or the mirror stops; false if not
// written.
func (w *writer) waitFor(ctx context.Context, n uint64) bool {
	for {
		w.mu.Lock()
		done, tick := w.flushed >= n, w.tick
		w.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-tick:
		case <-ctx.Done():
			return false
		case <-w.m.done:
			return false
		}
	}
}

// take returns the queued ops.
func (w *writer) take() []op {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queue
	w.queue = nil
	return q
}

// advance records n more ops written.
func (w *writer) advance(n int) {
	w.mu.Lock()
	w.flushed += uint64(n)
	close(w.tick)
	w.tick = make(chan struct{})
	w.mu.Unlock()
}

// run writes until the mirror stops; before, when not nil, runs before each batch is
// taken.
func (w *writer) run(before func(), write func([]op)) {
	for {
		select {
		case <-w.m.done:
			return
		case <-w.wake:
		}
		if before != nil {
			before()
		}
		if q := w.take(); len(q) > 0 || w.m.resync.Load() {
			write(q)
			w.advance(len(q))
		}
	}
}

// publishAll writes the subscription ops of q, pipelined, and waits for their
// acknowledgements; a failure degrades the mirror.
func (m *Mirror) publishAll(q []op) {
	futures := make([]jetstream.PubAckFuture, 0, len(q))
	var failed error
	for i := range q {
		f, err := m.js.PublishMsgAsync(m.message(&q[i]))
		if err != nil {
			failed = err
			break
		}
		futures = append(futures, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Timeout)
	defer cancel()
	for _, f := range futures {
		_, err := m.acked(ctx, f)
		if errors.Is(err, errStopped) {
			return
		}
		if err != nil {
			failed = err
		}
		if failed != nil {
			break
		}
	}
	if failed != nil {
		m.errs.Add(1)
		m.setDegraded(failed)
		return
	}
	// Acknowledged: NATS copied each body when it was published, and nothing resends it.
	for i := range q {
		if q[i].sealed != nil {
			release(q[i].sealed)
			q[i].sealed = nil
		}
	}
	if !m.nc.IsConnected() {
		return
	}
	m.caughtUp()
}

// errNoAck is the error of a write NATS did not acknowledge within mirror.timeout.
var errNoAck = errors.New("mirror: no acknowledgement within mirror timeout")

// acked waits for the acknowledgement of f: errNoAck once ctx ends, errStopped when the
// mirror stops first.
func (m *Mirror) acked(ctx context.Context, f jetstream.PubAckFuture) (*jetstream.PubAck, error) {
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-ctx.Done():
		return nil, errNoAck
	case <-m.done:
		return nil, errStopped
	}
}

// message builds the NATS message of o, sealing its body for its subject.
func (m *Mirror) message(o *op) *nats.Msg {
	msg := &nats.Msg{Subject: o.subject, Header: o.hdr}
	if o.plain != nil {
		where := o.subject
		if o.seal != "" {
			where = o.seal
		}
		if o.pooled {
			bp := plainBufs.Get().(*[]byte)
			msg.Data = m.seal.sealTo(*bp, where, o.plain)
			release(o.plain)
			o.plain, o.sealed = nil, msg.Data
		} else {
			msg.Data = m.seal.seal(where, o.plain)
		}
	}
	return msg
}
