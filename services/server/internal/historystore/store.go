// Package historystore is the durable history store (history.durable): the values and
// events of history.Store kept in an embedded Pebble database, so that history
// survives a restart. RATIONALE.md says why Pebble and how the keys are laid out.
package historystore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/status"
)

// Key kinds: the first byte of every key.
const (
	kindRaw      = 'r'
	kindModified = 'm'
	kindEvent    = 'e'
	kindMeta     = 'z'
)

// seqKey holds the last sequence number handed out, so that values stored after a
// restart sort after those of the same time stored before it.
var seqKey = []byte{kindMeta, 's'}

// Options tune a Store. Zero values take the defaults.
type Options struct {
	// SyncInterval is how often appended values are made durable (fsync of the
	// write-ahead log); 0 is one second. Updates and deletes are synced before they
	// return. A crash loses at most the values appended in the last interval.
	SyncInterval time.Duration
	// Retention drops values and events older than now - Retention, checked every
	// minute; 0 keeps everything.
	Retention time.Duration
	// Now is the clock of Retention; nil is time.Now.
	Now func() time.Time
	// Logger receives the database's errors; nil is slog.Default().
	Logger *slog.Logger
}

// Store is a history.Store and history.EventStore in a Pebble database. It is safe for
// concurrent use; Close it when done.
type Store struct {
	db   *pebble.DB
	opts Options

	seqMu sync.Mutex // guards seq
	seq   uint64
	// update serializes the read-modify-write of updates and deletes.
	update sync.Mutex

	stop chan struct{}
	done sync.WaitGroup
}

var (
	_ history.Store      = (*Store)(nil)
	_ history.EventStore = (*Store)(nil)
)

// MemTableSize is the Pebble memtable of a Store: 10,000 variables changing every
// 100 ms write about 6 MB a second, which fills the default 4 MB memtable, and makes a
// level 0 table, more than once a second; 64 MB makes one every ten seconds.
const MemTableSize = 64 << 20

// Open opens or creates the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: logger{opts.Logger}, MemTableSize: MemTableSize})
	if err != nil {
		return nil, fmt.Errorf("historystore: open %s: %w", dir, err)
	}
	s := &Store{db: db, opts: opts, stop: make(chan struct{})}
	v, closer, err := db.Get(seqKey)
	switch {
	case err == nil:
		if len(v) == 8 {
			s.seq = binary.BigEndian.Uint64(v)
		}
		_ = closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		_ = db.Close()
		return nil, fmt.Errorf("historystore: open %s: %w", dir, err)
	}
	s.done.Add(1)
	go s.background()
	return s, nil
}

// Close syncs and closes the database.
func (s *Store) Close() error {
	close(s.stop)
	s.done.Wait()
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		_ = s.db.Close()
		return err
	}
	return s.db.Close()
}

// Flush writes what the database holds in memory to its tables and waits for it, so
// that reads after it come from the tables (a benchmark's steady state).
func (s *Store) Flush() error { return s.db.Flush() }

// background syncs the log every SyncInterval and applies the retention every minute.
func (s *Store) background() {
	defer s.done.Done()
	sync := time.NewTicker(s.opts.SyncInterval)
	defer sync.Stop()
	var retain <-chan time.Time
	if s.opts.Retention > 0 {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		retain = t.C
		s.retain()
	}
	for {
		select {
		case <-s.stop:
			return
		case <-sync.C:
			if err := s.db.LogData(nil, pebble.Sync); err != nil {
				s.opts.Logger.Warn("history store sync", "err", err)
			}
		case <-retain:
			s.retain()
		}
	}
}

// nextSeqs reserves n sequence numbers and returns the first.
func (s *Store) nextSeqs(n int) uint64 {
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	first := s.seq + 1
	s.seq += uint64(n)
	return first
}

func (s *Store) setSeq(b *pebble.Batch) error {
	s.seqMu.Lock()
	v := binary.BigEndian.AppendUint64(nil, s.seq)
	s.seqMu.Unlock()
	return b.Set(seqKey, v, nil)
}

// prefix is kind, the length of the node's binary NodeId (2 bytes) and the NodeId: no
// prefix of one node is the prefix of another.
func prefix(kind byte, n codec.NodeId) []byte {
	var e codec.Encoder
	return appendPrefix(make([]byte, 0, 32), &e, kind, n)
}

// appendPrefix appends the prefix of n's keys of kind to dst, encoding the NodeId with
// e (scratch, reused).
func appendPrefix(dst []byte, e *codec.Encoder, kind byte, n codec.NodeId) []byte {
	e.Reset(e.Bytes())
	e.NodeId(n)
	id := e.Bytes()
	dst = append(dst, kind)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(id)))
	return append(dst, id...)
}

// key is the node's prefix, the time as big-endian with the sign bit flipped (so that
// bytes sort as times do) and the sequence number.
func key(p []byte, k history.Key) []byte {
	return appendTime(append(make([]byte, 0, len(p)+16), p...), k)
}

// appendTime appends the time and sequence of k to a prefix.
func appendTime(dst []byte, k history.Key) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(k.Time)^(1<<63))
	return binary.BigEndian.AppendUint64(dst, k.Seq)
}

func parseKey(p, b []byte) history.Key {
	b = b[len(p):]
	return history.Key{Time: codec.DateTime(binary.BigEndian.Uint64(b) ^ (1 << 63)), Seq: binary.BigEndian.Uint64(b[8:])}
}

// upper is the first key after every key of prefix p.
func upper(p []byte) []byte { return key(p, history.Key{Time: math.MaxInt64, Seq: math.MaxUint64}) }

func encodeValue(v *history.Stored, modified bool) []byte {
	e := codec.NewEncoder(make([]byte, 0, 48))
	e.DataValue(&v.Value)
	if modified {
		v.Mod.EncodeBinary(e)
	}
	return e.Bytes()
}

func decodeValue(d *codec.Decoder, modified bool) (history.Stored, error) {
	var v history.Stored
	d.DataValue(&v.Value)
	if modified {
		v.Mod.DecodeBinary(d)
	}
	return v, d.Err()
}

// Append writes values in one batch, durable within SyncInterval.
func (s *Store) Append(ctx context.Context, values []history.Value) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	seq := s.nextSeqs(len(values))
	// The batch copies what Set is given: one key and one value buffer serve every value.
	var (
		last     codec.NodeId
		ke, ve   codec.Encoder
		kb, vb   []byte
		prefixed int // length of the prefix at the start of kb; 0 before the first
	)
	for i := range values {
		v := &values[i]
		if prefixed == 0 || v.Node != last {
			kb = appendPrefix(kb[:0], &ke, kindRaw, v.Node)
			prefixed, last = len(kb), v.Node
		}
		kb = appendTime(kb[:prefixed], history.Key{Time: v.Value.SourceTimestamp, Seq: seq + uint64(i)})
		ve.Reset(vb)
		ve.DataValue(&v.Value)
		vb = ve.Bytes()
		if err := b.Set(kb, vb, nil); err != nil {
			return err
		}
	}
	if err := s.setSeq(b); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}

// ReadRaw answers op's reads from a snapshot of the database.
func (s *Store) ReadRaw(ctx context.Context, op *history.ReadRawOp) error {
	for i := range op.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		q := &op.Items[i]
		kind := byte(kindRaw)
		if q.Modified {
			kind = kindModified
		}
		c, err := newCursor(s.db, kind, q.Node)
		if err != nil {
			return err
		}
		op.Results[i] = history.Scan(c, q)
		if err := c.close(); err != nil {
			return err
		}
	}
	return nil
}

// Update applies op's updates in one synced batch.
func (s *Store) Update(ctx context.Context, op *history.UpdateOp) error {
	return s.apply(ctx, len(op.Items), func(i int) codec.NodeId { return op.Items[i].Node }, func(i int, sr *series) (history.ItemResult, error) {
		return history.ApplyUpdate(sr, &op.Items[i], op.User, op.Time)
	}, op.Results)
}

// DeleteRaw applies op's deletions in one synced batch.
func (s *Store) DeleteRaw(ctx context.Context, op *history.DeleteRawOp) error {
	return s.apply(ctx, len(op.Items), func(i int) codec.NodeId { return op.Items[i].Node }, func(i int, sr *series) (history.ItemResult, error) {
		return history.ApplyDeleteRaw(sr, &op.Items[i], op.User, op.Time)
	}, op.Results)
}

// DeleteAtTime applies op's deletions in one synced batch.
func (s *Store) DeleteAtTime(ctx context.Context, op *history.DeleteAtTimeOp) error {
	return s.apply(ctx, len(op.Items), func(i int) codec.NodeId { return op.Items[i].Node }, func(i int, sr *series) (history.ItemResult, error) {
		return history.ApplyDeleteAtTime(sr, &op.Items[i], op.User, op.Time)
	}, op.Results)
}

func (s *Store) apply(ctx context.Context, n int, node func(int) codec.NodeId, fn func(int, *series) (history.ItemResult, error), results []history.ItemResult) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.update.Lock()
	defer s.update.Unlock()
	b := s.db.NewIndexedBatch()
	defer b.Close()
	for i := range n {
		sr := &series{s: s, b: b, node: node(i)}
		r, err := fn(i, sr)
		if cerr := sr.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		results[i] = r
	}
	if err := s.setSeq(b); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

// series is one node's history seen through an indexed batch, which reads its own
// writes (history.Series).
type series struct {
	s       *Store
	b       *pebble.Batch
	node    codec.NodeId
	cursors []*cursor[history.Stored]
}

func (sr *series) close() error {
	var err error
	for _, c := range sr.cursors {
		err = errors.Join(err, c.close())
	}
	sr.cursors = nil
	return err
}

func (sr *series) cursor(kind byte) history.Cursor[history.Stored] {
	// Cursors of a batch see the writes made before they were opened: one per use.
	c, err := newCursor(sr.b, kind, sr.node)
	if err != nil {
		return failed[history.Stored]{}
	}
	sr.cursors = append(sr.cursors, c)
	return c
}

func (sr *series) Raw() history.Cursor[history.Stored]      { return sr.cursor(kindRaw) }
func (sr *series) Modified() history.Cursor[history.Stored] { return sr.cursor(kindModified) }

func (sr *series) Put(k history.Key, v codec.DataValue) error {
	return sr.b.Set(key(prefix(kindRaw, sr.node), k), encodeValue(&history.Stored{Value: v}, false), nil)
}

func (sr *series) Delete(k history.Key) error {
	return sr.b.Delete(key(prefix(kindRaw, sr.node), k), nil)
}

func (sr *series) DeleteModified(k history.Key) error {
	return sr.b.Delete(key(prefix(kindModified, sr.node), k), nil)
}

func (sr *series) AddModified(v history.Stored) error {
	k := history.Key{Time: v.Value.SourceTimestamp, Seq: sr.s.nextSeqs(1)}
	return sr.b.Set(key(prefix(kindModified, sr.node), k), encodeValue(&v, true), nil)
}

func (sr *series) NextKey(t codec.DateTime) history.Key {
	return history.Key{Time: t, Seq: sr.s.nextSeqs(1)}
}

// failed is the cursor of a series whose iterator could not open: empty.
type failed[T any] struct{}

func (failed[T]) SeekGE(history.Key) *history.Item[T] { return nil }
func (failed[T]) SeekLT(history.Key) *history.Item[T] { return nil }
func (failed[T]) Next() *history.Item[T]              { return nil }
func (failed[T]) Prev() *history.Item[T]              { return nil }

// reader is what a cursor iterates: the database or an indexed batch.
type reader interface {
	NewIter(*pebble.IterOptions) (*pebble.Iterator, error)
}

// cursor walks one node's keys of one kind (history.Cursor). A value that does not
// decode ends the walk and is reported by close.
type cursor[T any] struct {
	it     *pebble.Iterator
	p      []byte
	dec    codec.Decoder // reused for every value
	decode func(*codec.Decoder) (T, error)
	err    error
	cur    history.Item[T] // the entry handed out, until the cursor moves
}

func newCursor(r reader, kind byte, n codec.NodeId) (*cursor[history.Stored], error) {
	modified := kind == kindModified
	return openCursor(r, prefix(kind, n), func(d *codec.Decoder) (history.Stored, error) { return decodeValue(d, modified) })
}

func openCursor[T any](r reader, p []byte, decode func(*codec.Decoder) (T, error)) (*cursor[T], error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: upper(p)})
	if err != nil {
		return nil, err
	}
	return &cursor[T]{it: it, p: p, decode: decode}, nil
}

// item decodes the entry the iterator is at into the cursor's one entry.
func (c *cursor[T]) item(ok bool) *history.Item[T] {
	if !ok || c.err != nil {
		return nil
	}
	raw, err := c.it.ValueAndErr()
	if err != nil {
		c.err = err
		return nil
	}
	c.dec.Reset(raw)
	v, err := c.decode(&c.dec)
	if err != nil {
		c.err = fmt.Errorf("historystore: %x: %w", c.it.Key(), err)
		return nil
	}
	c.cur = history.Item[T]{Key: parseKey(c.p, c.it.Key()), V: v}
	return &c.cur
}

func (c *cursor[T]) SeekGE(k history.Key) *history.Item[T] {
	return c.item(c.it.SeekGE(key(c.p, k)))
}
func (c *cursor[T]) SeekLT(k history.Key) *history.Item[T] {
	return c.item(c.it.SeekLT(key(c.p, k)))
}
func (c *cursor[T]) Next() *history.Item[T] { return c.item(c.it.Next()) }
func (c *cursor[T]) Prev() *history.Item[T] { return c.item(c.it.Prev()) }

func (c *cursor[T]) close() error { return errors.Join(c.err, c.it.Close()) }

// AppendEvents writes events in one batch, durable within SyncInterval.
func (s *Store) AppendEvents(ctx context.Context, events []history.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	seq := s.nextSeqs(len(events))
	for i := range events {
		ev := &events[i]
		if err := b.Set(key(prefix(kindEvent, ev.Notifier), history.Key{Time: ev.Time, Seq: seq + uint64(i)}), encodeEvent(ev), nil); err != nil {
			return err
		}
	}
	if err := s.setSeq(b); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}

// ReadEvents answers op's reads.
func (s *Store) ReadEvents(ctx context.Context, op *history.ReadEventsOp) error {
	for i := range op.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		q := &op.Items[i]
		notifier := q.Notifier
		c, err := openCursor(s.db, prefix(kindEvent, notifier), func(d *codec.Decoder) (history.Event, error) {
			ev, err := decodeEvent(d)
			ev.Notifier = notifier
			return ev, err
		})
		if err != nil {
			return err
		}
		op.Results[i] = history.ScanEvents(c, q)
		if err := c.close(); err != nil {
			return err
		}
	}
	return nil
}

// maxEventFields bounds the fields decoded of one stored event.
const maxEventFields = 4096

func encodeEvent(ev *history.Event) []byte {
	e := codec.NewEncoder(make([]byte, 0, 256))
	e.DateTime(ev.Time)
	e.NodeId(ev.Type)
	e.UInt32(uint32(len(ev.Fields)))
	for i := range ev.Fields {
		e.String(ev.Fields[i].Key)
		e.Variant(&ev.Fields[i].Value)
	}
	return e.Bytes()
}

func decodeEvent(d *codec.Decoder) (history.Event, error) {
	ev := history.Event{Time: d.DateTime(), Type: d.NodeId()}
	n := d.UInt32()
	if d.Err() == nil && n > maxEventFields {
		return ev, fmt.Errorf("historystore: event of %d fields: %w", n, status.BadDecodingError)
	}
	if d.Err() == nil {
		ev.Fields = make([]history.EventField, n)
	}
	for i := range ev.Fields {
		ev.Fields[i].Key = d.String()
		d.Variant(&ev.Fields[i].Value)
	}
	return ev, d.Err()
}

// retain drops the values and events older than the retention: one range deletion per
// node and kind, found by jumping from one node's prefix to the next.
func (s *Store) retain() {
	cutoff := codec.DateTimeOf(s.opts.Now().Add(-s.opts.Retention))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindEvent}, UpperBound: []byte{kindMeta}})
	if err != nil {
		s.opts.Logger.Warn("history store retention", "err", err)
		return
	}
	defer it.Close()
	b := s.db.NewBatch()
	defer b.Close()
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) < 3+16 {
			ok = it.Next()
			continue
		}
		p := append([]byte(nil), k[:len(k)-16]...)
		if err := b.DeleteRange(key(p, history.Key{Time: math.MinInt64}), key(p, history.Key{Time: cutoff}), nil); err != nil {
			s.opts.Logger.Warn("history store retention", "err", err)
			return
		}
		ok = it.SeekGE(upper(p))
	}
	if err := b.Commit(pebble.Sync); err != nil {
		s.opts.Logger.Warn("history store retention", "err", err)
	}
}

// logger hands Pebble's records to slog: its information is noise here.
type logger struct{ l *slog.Logger }

func (logger) Infof(string, ...any) {}
func (l logger) Errorf(format string, args ...any) {
	l.l.Error("history store", "msg", fmt.Sprintf(format, args...))
}
func (l logger) Fatalf(format string, args ...any) {
	l.l.Error("history store", "msg", fmt.Sprintf(format, args...))
	panic(fmt.Sprintf(format, args...))
}
