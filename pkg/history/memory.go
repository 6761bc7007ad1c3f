package history

import (
	"container/heap"
	"context"
	"math"
	"slices"
	"sync"

	"uastack.dev/pkg/codec"
)

// MemoryLimits bound a Memory store. When a bound is reached the oldest value goes: the
// node's own for PerNode, the oldest of all nodes for Total. Zero is no bound.
type MemoryLimits struct {
	PerNode int
	Total   int
	// EventsPerNotifier bounds the events kept per notifier.
	EventsPerNotifier int
}

// Memory is a bounded in-memory Store and EventStore. It is safe for concurrent use.
type Memory struct {
	limits MemoryLimits

	mu    sync.RWMutex // guards nodes, oldest, count, seq, events
	nodes map[codec.NodeId]*memSeries
	// oldest orders the nodes with raw values by their first value, for Total.
	oldest memHeap
	count  int
	seq    uint64
	events map[codec.NodeId][]Item[Event]
}

var (
	_ Store      = (*Memory)(nil)
	_ EventStore = (*Memory)(nil)
)

// NewMemory returns an empty Memory store bounded by l.
func NewMemory(l MemoryLimits) *Memory {
	return &Memory{limits: l, nodes: make(map[codec.NodeId]*memSeries), events: make(map[codec.NodeId][]Item[Event])}
}

// memSeries is one node's values, each slice in key order.
type memSeries struct {
	m    *Memory
	raw  []Item[Stored]
	mods []Item[Stored]
	at   int // index in m.oldest, -1 when not in it
}

func (m *Memory) seriesLocked(n codec.NodeId) *memSeries {
	s := m.nodes[n]
	if s == nil {
		s = &memSeries{m: m, at: -1}
		m.nodes[n] = s
	}
	return s
}

// Append records values; a bound reached drops the oldest (MemoryLimits).
func (m *Memory) Append(ctx context.Context, values []Value) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range values {
		s := m.seriesLocked(values[i].Node)
		m.seq++
		_ = s.Put(Key{Time: values[i].Value.SourceTimestamp, Seq: m.seq}, values[i].Value)
	}
	return nil
}

// trimLocked applies the bounds after s grew.
func (m *Memory) trimLocked(s *memSeries) {
	if m.limits.PerNode > 0 {
		for len(s.raw) > m.limits.PerNode {
			s.dropFirst()
		}
	}
	if m.limits.Total > 0 {
		for m.count > m.limits.Total && len(m.oldest) > 0 {
			m.oldest[0].dropFirst()
		}
	}
}

func (s *memSeries) dropFirst() {
	s.raw[0] = Item[Stored]{}
	s.raw = s.raw[1:]
	s.m.count--
	s.fix()
}

// fix places s in the heap of first values after its first value changed.
func (s *memSeries) fix() {
	h := &s.m.oldest
	switch {
	case len(s.raw) == 0 && s.at >= 0:
		heap.Remove(h, s.at)
	case len(s.raw) > 0 && s.at < 0:
		heap.Push(h, s)
	case len(s.raw) > 0:
		heap.Fix(h, s.at)
	}
}

// ReadRaw answers op's reads.
func (m *Memory) ReadRaw(ctx context.Context, op *ReadRawOp) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i := range op.Items {
		q := &op.Items[i]
		var items []Item[Stored]
		if s := m.nodes[q.Node]; s != nil {
			items = s.raw
			if q.Modified {
				items = s.mods
			}
		}
		op.Results[i] = Scan(&sliceCursor[Stored]{items: items}, q)
	}
	return nil
}

// Update applies op's updates.
func (m *Memory) Update(ctx context.Context, op *UpdateOp) error {
	return m.apply(ctx, len(op.Items), func(i int) codec.NodeId { return op.Items[i].Node }, func(i int, s *memSeries) (ItemResult, error) {
		return ApplyUpdate(s, &op.Items[i], op.User, op.Time)
	}, op.Results)
}

// DeleteRaw applies op's deletions.
func (m *Memory) DeleteRaw(ctx context.Context, op *DeleteRawOp) error {
	return m.apply(ctx, len(op.Items), func(i int) codec.NodeId { return op.Items[i].Node }, func(i int, s *memSeries) (ItemResult, error) {
		return ApplyDeleteRaw(s, &op.Items[i], op.User, op.Time)
	}, op.Results)
}

// DeleteAtTime applies op's deletions.
func (m *Memory) DeleteAtTime(ctx context.Context, op *DeleteAtTimeOp) error {
	return m.apply(ctx, len(op.Items), func(i int) codec.NodeId { return op.Items[i].Node }, func(i int, s *memSeries) (ItemResult, error) {
		return ApplyDeleteAtTime(s, &op.Items[i], op.User, op.Time)
	}, op.Results)
}

func (m *Memory) apply(ctx context.Context, n int, node func(int) codec.NodeId, fn func(int, *memSeries) (ItemResult, error), results []ItemResult) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range n {
		r, err := fn(i, m.seriesLocked(node(i)))
		if err != nil {
			return err
		}
		results[i] = r
	}
	return nil
}

// AppendEvents records events, dropping a notifier's oldest beyond
// MemoryLimits.EventsPerNotifier.
func (m *Memory) AppendEvents(ctx context.Context, events []Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ev := range events {
		m.seq++
		list := insertSorted(m.events[ev.Notifier], Item[Event]{Key: Key{Time: ev.Time, Seq: m.seq}, V: ev})
		if l := m.limits.EventsPerNotifier; l > 0 && len(list) > l {
			clear(list[:len(list)-l])
			list = list[len(list)-l:]
		}
		m.events[ev.Notifier] = list
	}
	return nil
}

// ReadEvents answers op's reads.
func (m *Memory) ReadEvents(ctx context.Context, op *ReadEventsOp) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i := range op.Items {
		op.Results[i] = ScanEvents(&sliceCursor[Event]{items: m.events[op.Items[i].Notifier]}, &op.Items[i])
	}
	return nil
}

// Len returns the number of raw values held.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.count
}

// insertSorted inserts it into items in key order; at the end when it is newest.
func insertSorted[T any](items []Item[T], it Item[T]) []Item[T] {
	if n := len(items); n == 0 || items[n-1].Key.Less(it.Key) {
		return append(items, it)
	}
	i, _ := slices.BinarySearchFunc(items, it.Key, func(e Item[T], k Key) int { return cmpKey(e.Key, k) })
	return slices.Insert(items, i, it)
}

func cmpKey(a, b Key) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

func search[T any](items []Item[T], k Key) int {
	i, _ := slices.BinarySearchFunc(items, k, func(e Item[T], k Key) int { return cmpKey(e.Key, k) })
	return i
}

// Series for the shared update logic; m.mu is held.

func (s *memSeries) Raw() Cursor[Stored]      { return &sliceCursor[Stored]{items: s.raw} }
func (s *memSeries) Modified() Cursor[Stored] { return &sliceCursor[Stored]{items: s.mods} }

func (s *memSeries) Put(k Key, v codec.DataValue) error {
	if n := len(s.raw); n > 0 && s.raw[n-1].Key.Less(k) {
		// The newest value: the way nearly every value comes.
		s.raw = append(s.raw, Item[Stored]{Key: k, V: Stored{Value: v}})
		s.m.count++
		s.m.trimLocked(s)
		return nil
	}
	i := search(s.raw, k)
	if i < len(s.raw) && s.raw[i].Key == k {
		s.raw[i].V = Stored{Value: v}
		return nil
	}
	s.raw = insertSorted(s.raw, Item[Stored]{Key: k, V: Stored{Value: v}})
	s.m.count++
	if i == 0 {
		s.fix()
	}
	s.m.trimLocked(s)
	return nil
}

func (s *memSeries) Delete(k Key) error {
	i := search(s.raw, k)
	if i < len(s.raw) && s.raw[i].Key == k {
		s.raw = slices.Delete(s.raw, i, i+1)
		s.m.count--
		if i == 0 {
			s.fix()
		}
	}
	return nil
}

func (s *memSeries) DeleteModified(k Key) error {
	i := search(s.mods, k)
	if i < len(s.mods) && s.mods[i].Key == k {
		s.mods = slices.Delete(s.mods, i, i+1)
	}
	return nil
}

func (s *memSeries) AddModified(v Stored) error {
	s.m.seq++
	s.mods = insertSorted(s.mods, Item[Stored]{Key: Key{Time: v.Value.SourceTimestamp, Seq: s.m.seq}, V: v})
	if l := s.m.limits.PerNode; l > 0 && len(s.mods) > l {
		s.mods = slices.Delete(s.mods, 0, len(s.mods)-l)
	}
	return nil
}

func (s *memSeries) NextKey(t codec.DateTime) Key {
	s.m.seq++
	return Key{Time: t, Seq: s.m.seq}
}

// sliceCursor walks a slice in key order.
type sliceCursor[T any] struct {
	items []Item[T]
	i     int
}

func (c *sliceCursor[T]) get() *Item[T] {
	if c.i < 0 || c.i >= len(c.items) {
		return nil
	}
	return &c.items[c.i]
}

// Count is the number of entries between start and end (history.Counter).
func (c *sliceCursor[T]) Count(start, end codec.DateTime) int {
	lo, hi := min(start, end), max(start, end)
	if start == 0 || end == 0 {
		lo, hi = max(start, end), math.MaxInt64
		if Reverse(start, end) {
			lo, hi = math.MinInt64, end+1
		}
	}
	return search(c.items, Key{Time: hi}) - search(c.items, Key{Time: lo})
}

func (c *sliceCursor[T]) SeekGE(k Key) *Item[T] { c.i = search(c.items, k); return c.get() }
func (c *sliceCursor[T]) SeekLT(k Key) *Item[T] { c.i = search(c.items, k) - 1; return c.get() }
func (c *sliceCursor[T]) Next() *Item[T]        { c.i++; return c.get() }
func (c *sliceCursor[T]) Prev() *Item[T]        { c.i--; return c.get() }

// memHeap orders series by their first raw value.
type memHeap []*memSeries

func (h memHeap) Len() int           { return len(h) }
func (h memHeap) Less(i, j int) bool { return h[i].raw[0].Key.Less(h[j].raw[0].Key) }
func (h memHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].at, h[j].at = i, j
}
func (h *memHeap) Push(x any) {
	s := x.(*memSeries)
	s.at = len(*h)
	*h = append(*h, s)
}
func (h *memHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	s.at = -1
	*h = old[:len(old)-1]
	return s
}
