package subscription

import (
	"container/heap"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/owner"
	"uastack.dev/services/server/internal/telemetry"
)

// Limits bound what clients may ask for. Counts of 0 mean no limit where noted.
type Limits struct {
	MaxSubscriptions           int // in the server
	MaxSubscriptionsPerSession int
	MaxPublishRequests         int // queued per session
	// MaxMonitoredItems (server) and MaxMonitoredItemsPerSubscription; 0 is no limit.
	MaxMonitoredItems                int
	MaxMonitoredItemsPerSubscription int
	MinPublishingInterval            time.Duration
	MaxPublishingInterval            time.Duration
	MaxKeepAliveCount                uint32
	MaxLifetimeCount                 uint32
	// MaxNotificationsPerPublish caps a NotificationMessage; 0 is no limit.
	MaxNotificationsPerPublish uint32
	MinSamplingInterval        time.Duration
	MaxSamplingInterval        time.Duration
	MaxQueueSize               uint32
	// RetransmissionQueueSize is how many unacknowledged NotificationMessages a
	// subscription keeps for Republish; older ones are dropped.
	RetransmissionQueueSize int

	// The shares of one owner (SetSessionOwner), so that no one client takes the
	// server-wide caps: its subscriptions (BadTooManySubscriptions beyond) and its
	// monitored items (BadTooManyMonitoredItems beyond); 0 is no limit.
	MaxSubscriptionsPerOwner  int
	MaxMonitoredItemsPerOwner int
	// OrphanLifetime bounds how long a subscription outlives its session waiting for
	// TransferSubscriptions, whatever its lifetime count; 0 leaves it to its lifetime.
	OrphanLifetime time.Duration
}

// Responder answers one Publish. Respond is called once, without the engine's lock, from
// the engine's goroutine or the caller of Publish; resp is valid only during the call
// (its notification arrays belong to the engine), so Respond encodes it before returning.
// A ServiceResult that is bad is to be sent as a ServiceFault.
type Responder interface {
	Respond(resp *ua.PublishResponse)
}

// Sampler reads the current values of sampled items. Sample fills out[i] for items[i]
// and calls done once, before returning or later from any goroutine; items and out stay
// untouched by the engine until then. It is called without the engine's lock.
type Sampler interface {
	Sample(items []ua.ReadValueId, out []codec.DataValue, done func())
}

// Engine holds every subscription of a server. Its methods are safe for concurrent use.
type Engine struct {
	limits  Limits
	now     func() time.Time
	sampler Sampler

	mu       sync.Mutex // guards everything below
	sessions map[codec.NodeId]*session
	subs     map[uint32]*Subscription
	byNode   map[codec.NodeId][]*item // push items by node; len mirrored in pushNodes
	// timers holds the sampling and orphan timers, cycles the publishing timers.
	timers   timerHeap
	cycles   timerHeap
	lastSub  uint32
	lastItem uint32
	items    int // monitored items in the server
	// holdings are the owners' shares (shares.go).
	holdings map[owner.Owner]*holding
	cmp      comparer
	batches  []*sampleBatch // free sample batches
	out      []outgoing     // Step's responses; reused
	wake     chan struct{}
	counters engineCounters // diagnostics.go

	// observers get every change to the state (change.go); lastObserver numbers them.
	observers    []observer
	lastObserver uint64
	// types is the type tree Apply compiles restored EventFilters against.
	types EventTypes

	// pushNodes is len(byNode), read without the lock so that a write to a node nobody
	// monitors costs one atomic load.
	pushNodes atomic.Int64
	// byNotifier holds the event items by the node they monitor (guarded by mu); their
	// count is mirrored in eventItems, read without the lock so that an event nobody
	// monitors costs one atomic load.
	byNotifier map[codec.NodeId][]*item
	eventItems atomic.Int64

	// panics is told of the panics the engine recovers from (SetPanics).
	panics *telemetry.Panics

	// space is the high byte of the subscription IDs this engine creates (SetIDSpace);
	// barrier runs before responses leave, and publishing cycles due within coalesce
	// of a Step that sent through it wait for holdUntil (guarded by mu), to go out
	// together (SetSendBarrier). space, barrier and coalesce are set before serving.
	space     uint8
	barrier   func()
	coalesce  time.Duration
	holdUntil time.Time
}

// New returns an engine with the given limits, clock (nil means time.Now) and sampler.
func New(l Limits, now func() time.Time, sampler Sampler) *Engine {
	if now == nil {
		now = time.Now
	}
	return &Engine{
		limits:   l,
		now:      now,
		sampler:  sampler,
		sessions: make(map[codec.NodeId]*session),
		subs:     make(map[uint32]*Subscription),
		byNode:   make(map[codec.NodeId][]*item),
		holdings: make(map[owner.Owner]*holding),
		wake:     make(chan struct{}, 1),
	}
}

// SetPanics has the engine report the panics it recovers from to p: a filter that
// panics on a value or an event (telemetry.PlaceFilter), an observer
// (telemetry.PlaceObserver), a publishing cycle or an answer to a Publish
// (telemetry.PlacePublish). Call it before Run.
func (e *Engine) SetPanics(p *telemetry.Panics) { e.panics = p }

// Run drives the timers until ctx ends: it sleeps until the earliest due entry or until
// an earlier one is scheduled, then runs Step. A Step that panics is reported and the
// timers go on: the cycle that panicked is lost, every other subscription publishes.
func (e *Engine) Run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next, ok := e.guardedStep()
		d := time.Hour
		if ok {
			d = max(next.Sub(e.now()), 0)
		}
		t.Reset(d)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.wake:
		}
	}
}

// guardedStep is Step, recovering from a panic: then the next Step is due when the
// earliest timer is, and no sooner than a millisecond from now (a timer that panicked
// was moved on before it ran, so the next Step does not meet it again at once).
func (e *Engine) guardedStep() (next time.Time, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			e.panics.Recovered(telemetry.PlacePublish, v)
			next, ok = e.now().Add(time.Millisecond), true
			e.mu.Lock()
			if first, found := e.nextLocked(); found {
				next = later(next, first)
			}
			e.mu.Unlock()
		}
	}()
	return e.Step()
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Step runs every timer due by now: publishing cycles send their messages (after the
// lock is released) and due sampled items are read in one batch. It returns when the
// next timer is due, if any. Tests call it with a fake clock instead of Run. The lock is
// released by deferred calls, so that a panic (reported by Run) leaves the engine
// usable.
func (e *Engine) Step() (next time.Time, ok bool) {
	out, batch, next, ok := e.due(e.now())
	e.send(out)
	if e.barrier != nil && e.coalesce > 0 && len(out) > 0 {
		e.mu.Lock()
		e.holdUntil = e.now().Add(e.coalesce)
		next, ok = e.nextLocked()
		e.mu.Unlock()
	}
	e.sent(out)
	if batch != nil {
		if cap(batch.out) < len(batch.rvs) {
			batch.out = make([]codec.DataValue, len(batch.rvs))
		}
		batch.out = batch.out[:len(batch.rvs)]
		e.sampler.Sample(batch.rvs, batch.out, batch.done)
	}
	return next, ok
}

// due runs the timers due by now: it returns the responses of the publishing cycles and
// the batch of the sampled items to read, if any, and when the next timer is due.
func (e *Engine) due(now time.Time) (out []outgoing, batch *sampleBatch, next time.Time, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out = e.out[:0]
	// The publishing cycles, unless held for a batch (SetSendBarrier).
	for !now.Before(e.holdUntil) && len(e.cycles) > 0 && !e.cycles[0].due.After(now) {
		t := e.cycles[0]
		s := t.sub
		t.due = nextDue(t.due, s.interval, now)
		heap.Fix(&e.cycles, 0)
		out = e.tickLocked(s, now, out)
	}
	for len(e.timers) > 0 && !e.timers[0].due.After(now) {
		t := e.timers[0]
		switch {
		case t.orphan != nil:
			e.expireOrphanLocked(t.orphan)
		case t.item != nil:
			it := t.item
			if it.push {
				heap.Pop(&e.timers) // sampled once, for the initial value
			} else {
				t.due = nextDue(t.due, it.interval, now)
				heap.Fix(&e.timers, 0)
			}
			if it.sampling {
				continue // the last sample is still being read
			}
			if batch == nil {
				batch = e.batchLocked()
			}
			it.sampling = true
			batch.items = append(batch.items, it)
			batch.rvs = append(batch.rvs, it.rv)
		}
	}
	next, ok = e.nextLocked()
	return out, batch, next, ok
}

// nextLocked returns when the next timer is due: the earliest sampling or orphan timer,
// or the earliest publishing cycle, no sooner than the end of a hold.
func (e *Engine) nextLocked() (next time.Time, ok bool) {
	if len(e.cycles) > 0 {
		next, ok = later(e.cycles[0].due, e.holdUntil), true
	}
	if len(e.timers) > 0 && (!ok || e.timers[0].due.Before(next)) {
		next, ok = e.timers[0].due, true
	}
	return next, ok
}

// sent releases the messages of Step's sent responses and keeps out for the next Step.
func (e *Engine) sent(out []outgoing) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.unpinLocked(out)
	e.out = clearOut(out)
}

// nextDue returns the next due time of a periodic timer: one interval after the last,
// or after now when the timer fell more than an interval behind.
func nextDue(last time.Time, interval time.Duration, now time.Time) time.Time {
	n := last.Add(interval)
	if !n.After(now) {
		n = now.Add(interval)
	}
	return n
}

// scheduleLocked adds t to the heap due at due and wakes Run when it became the first.
func (e *Engine) scheduleLocked(t *timer, due time.Time) {
	t.due = due
	h := e.heapOf(t)
	if t.index >= 0 {
		heap.Fix(h, t.index)
	} else {
		heap.Push(h, t)
	}
	if t.index == 0 {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// unscheduleLocked removes t from the heap.
func (e *Engine) unscheduleLocked(t *timer) {
	if t.index >= 0 {
		heap.Remove(e.heapOf(t), t.index)
	}
}

// heapOf is the heap of t: publishing cycles apart from the sampling and orphan
// timers, so that cycles held for a batch do not hold sampling up.
func (e *Engine) heapOf(t *timer) *timerHeap {
	if t.sub != nil {
		return &e.cycles
	}
	return &e.timers
}

// timer is an entry of the engine's heap: the publishing timer of a subscription, the
// sampling timer of a sampled item, or the end of a subscription left by its session
// (orphan).
type timer struct {
	due    time.Time
	index  int // in the heap; -1 when not scheduled
	sub    *Subscription
	item   *item
	orphan *Subscription
}

type timerHeap []*timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// sampleBatch is the sampled items of one Step, read with one Sampler call.
type sampleBatch struct {
	e     *Engine
	items []*item
	rvs   []ua.ReadValueId
	out   []codec.DataValue
	done  func()
}

// batchLocked returns a free batch.
func (e *Engine) batchLocked() *sampleBatch {
	if n := len(e.batches); n > 0 {
		b := e.batches[n-1]
		e.batches = e.batches[:n-1]
		return b
	}
	b := &sampleBatch{e: e}
	b.done = b.finish
	return b
}

// finish offers the sampled values to their items and frees the batch.
func (b *sampleBatch) finish() {
	e := b.e
	e.mu.Lock()
	for i, it := range b.items {
		it.sampling = false
		if it.sub == nil {
			continue // deleted while being read
		}
		if it.push {
			if it.initialDone {
				continue // a pushed value is newer than this initial sample
			}
			it.initialDone = true
		}
		e.offerLocked(it, &b.out[i])
	}
	clear(b.items)
	clear(b.out)
	b.items, b.rvs, b.out = b.items[:0], b.rvs[:0], b.out[:0]
	e.batches = append(e.batches, b)
	e.mu.Unlock()
}

// Changed offers the new value of a node's Value attribute to its push items. The
// in-memory address space calls it after every write; it does not block.
func (e *Engine) Changed(id codec.NodeId, dv *codec.DataValue) {
	if e.pushNodes.Load() == 0 {
		return
	}
	e.mu.Lock()
	for _, it := range e.byNode[id] {
		it.initialDone = true
		e.offerLocked(it, dv)
	}
	e.mu.Unlock()
}

// offerLocked queues dv on it when its mode and filter let it through, and marks it for
// reporting (with the items it triggers) when it reports. A filter that panics on dv
// (a value of a node manager's Structure whose encoding panics, comparer.check) queues
// BadInternalError with dv's timestamps in its place, unless that is the item's last
// value already.
func (e *Engine) offerLocked(it *item, dv *codec.DataValue) {
	if it.mode == ua.MonitoringModeDisabled {
		return
	}
	switch e.passes(it, dv) {
	case filterDrops:
		return
	case filterPanicked:
		if it.hasLast && it.last.Status == status.BadInternalError && it.last.Value.IsNull() {
			return
		}
		bad := codec.DataValue{Status: status.BadInternalError, SourceTimestamp: dv.SourceTimestamp,
			ServerTimestamp: dv.ServerTimestamp}
		dv = &bad
	}
	it.last, it.hasLast = *dv, true
	v := *dv
	stamp(&v, it.ts)
	it.enqueue(&v)
	e.reportLocked(it)
}

// What a data change filter made of a value.
const (
	filterPasses = iota
	filterDrops
	filterPanicked
)

// passes runs it's filter on dv (item.passes), recovering from a panic.
func (e *Engine) passes(it *item, dv *codec.DataValue) (verdict int) {
	defer func() {
		if v := recover(); v != nil {
			e.panics.Recovered(telemetry.PlaceFilter, v, "monitoredItem", it.id)
			verdict = filterPanicked
		}
	}()
	if it.passes(dv, &e.cmp) {
		return filterPasses
	}
	return filterDrops
}

// session is the per-session state: its subscriptions, its parked Publishes, the
// StatusChangeNotifications waiting for one, and who holds the shares of what it creates.
type session struct {
	id       codec.NodeId
	share    owner.Owner
	subs     []*Subscription
	queue    []parked
	statuses []*ua.PublishResponse // StatusChange messages to deliver
}

// parked is a Publish waiting for a notification: no goroutine, no worker.
type parked struct {
	r        Responder
	results  []status.Code
	deadline time.Time // zero for none
}

// sessionLocked returns the state of session id, creating it.
func (e *Engine) sessionLocked(id codec.NodeId) *session {
	ss := e.sessions[id]
	if ss == nil {
		ss = &session{id: id, share: owner.OfSession(id)}
		e.sessions[id] = ss
	}
	return ss
}

// dequeueLocked takes the oldest parked Publish of ss that has not timed out; expired
// ones are answered with BadTimeout through out.
func (e *Engine) dequeueLocked(ss *session, now time.Time, out []outgoing) (parked, bool, []outgoing) {
	for len(ss.queue) > 0 {
		p := ss.queue[0]
		n := copy(ss.queue, ss.queue[1:])
		ss.queue[n] = parked{}
		ss.queue = ss.queue[:n]
		if !p.deadline.IsZero() && now.After(p.deadline) {
			out = appendFault(out, p.r, status.BadTimeout)
			continue
		}
		return p, true, out
	}
	return parked{}, false, out
}

// hasQueuedLocked reports whether ss holds a parked Publish that has not timed out,
// answering the expired ones at the front.
func (e *Engine) hasQueuedLocked(ss *session, now time.Time, out []outgoing) (bool, []outgoing) {
	for len(ss.queue) > 0 {
		p := ss.queue[0]
		if p.deadline.IsZero() || !now.After(p.deadline) {
			return true, out
		}
		n := copy(ss.queue, ss.queue[1:])
		ss.queue[n] = parked{}
		ss.queue = ss.queue[:n]
		out = appendFault(out, p.r, status.BadTimeout)
	}
	return false, out
}

// outgoing is a response to send once the lock is released.
type outgoing struct {
	r     Responder
	resp  ua.PublishResponse
	msg   *message // pinned until sent; nil for keep-alives and faults
	own   *ua.PublishResponse
	avail []uint32
}

func appendFault(out []outgoing, r Responder, code status.Code) []outgoing {
	out = append(out, outgoing{r: r})
	out[len(out)-1].resp.ResponseHeader.ServiceResult = code
	return out
}

// send answers the responses; it runs without the lock. A Responder that panics is
// reported, and the others are answered.
func (e *Engine) send(out []outgoing) {
	if e.barrier != nil && len(out) > 0 {
		e.barrier()
	}
	for i := range out {
		e.respond(&out[i])
	}
}

// respond answers one response of send.
func (e *Engine) respond(o *outgoing) {
	defer e.panics.Recover(telemetry.PlacePublish)
	if o.own != nil {
		o.own.Results = o.resp.Results
		o.r.Respond(o.own)
		return
	}
	o.r.Respond(&o.resp)
}

// unpinLocked releases the messages of sent responses.
func (e *Engine) unpinLocked(out []outgoing) {
	for i := range out {
		if m := out[i].msg; m != nil {
			m.pins--
			if m.pins == 0 && m.released {
				m.owner.freeMessage(m)
			}
		}
	}
}

// clearOut empties out for reuse, keeping each entry's avail buffer.
func clearOut(out []outgoing) []outgoing {
	for i := range out {
		avail := out[i].avail[:0]
		out[i] = outgoing{avail: avail}
	}
	return out[:0]
}

// appendOut returns out with one more entry whose avail buffer is kept from an earlier use.
func appendOut(out []outgoing) ([]outgoing, *outgoing) {
	if len(out) < cap(out) {
		out = out[:len(out)+1]
	} else {
		out = append(out, outgoing{})
	}
	return out, &out[len(out)-1]
}

// msDuration converts milliseconds to a Duration, saturating.
func msDuration(ms float64) time.Duration {
	if ms >= float64(math.MaxInt64)/float64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// durationMs converts a Duration to milliseconds.
func durationMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
