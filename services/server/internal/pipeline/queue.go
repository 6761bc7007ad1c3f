package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/services/server/internal/admission"
	"uastack.dev/services/server/internal/telemetry"
)

// Bounds of the RetryAfterMs hint of a BadServerTooBusy answer: at least RetryAfterMin so
// that rejected clients do not spin, at most RetryAfterMax so that a stalled estimate
// does not park them for long. retryAfterUnknown is the hint before any drain was seen.
const (
	RetryAfterMin     = admission.RetryAfterMin
	RetryAfterMax     = admission.RetryAfterMax
	retryAfterUnknown = 100 * time.Millisecond
)

// Stage is the stage of the pipeline a job belongs to: admission can treat session
// establishment, which spends RSA and password work, apart from service requests.
type Stage uint8

const (
	// StageSession is CreateSession and ActivateSession.
	StageSession Stage = iota
	// StageService is a service request that reaches a node manager which may wait.
	StageService
	stageCount
)

// String names the stage as metrics label it.
func (s Stage) String() string {
	switch s {
	case StageSession:
		return "session"
	case StageService:
		return "service"
	}
	return "unknown"
}

// Owner is who a job is for: the channel it came on and, once there is one, its
// session (by the session table's token key). Admission shares the queue out by owner.
type Owner struct {
	Channel uint32
	Session uint64
}

// Job is one unit of work of the request queue: whom it is for, what it costs (the
// operations of its request) and at which stage, and the work. Run must not wait on I/O:
// a node manager that waits completes through its done callback, so the worker is free
// again as soon as the manager's method returns.
type Job struct {
	Owner Owner
	// Key is who the job is charged to and takes turns as (admission.Owner): the
	// session, the channel's client before it has one, or a trusted owner. The zero Key
	// is one owner shared by every job that has none.
	Key admission.Owner
	// Class is the kind of traffic, for the request queue's reserves.
	Class admission.Class
	Cost  int
	Stage Stage
	Run   func()
	// charge is what the queue's ledger admitted, released when a worker takes the job.
	charge admission.Charge
}

// QueueConfig configures a Queue built by NewQueueWith.
type QueueConfig struct {
	// Min and Max bound the workers (limits.minRequestThreadCount,
	// limits.maxRequestThreadCount).
	Min, Max int
	Now      func() time.Time
	// Ledger, which NewQueueWith needs, admits the jobs of StageService: the request
	// queue's stage (admission.StageQueue), with the capacity of
	// limits.maxQueuedRequestCount and the profile's headroom and reserves on top.
	Ledger *admission.Ledger
	// SessionCapacity is the room for jobs of StageSession, which the pipeline admits
	// at the session establishment stage before it queues them.
	SessionCapacity int
	// Fair serves owners in weighted turns instead of one FIFO, keeps the two stages
	// in lanes of their own served in turn, and runs session establishment on at most
	// SessionWorkers workers at once (0: no bound).
	Fair           bool
	SessionWorkers int
	// Weight returns an owner's turns against an ordinary owner's one; nil is 1 for
	// every owner.
	Weight func(admission.Owner) int
	// Panics counts and logs the panics of jobs, which a worker recovers from
	// (telemetry.PlaceWorker); nil logs them only.
	Panics *telemetry.Panics
	// Handshakes, when set, is the lane of asymmetric cryptography: a job of
	// StageSession (CreateSession, ActivateSession: RSA, password hashes) runs within a
	// turn of it, at priority Finish, ahead of new channels' OpenSecureChannel.
	Handshakes *admission.Lane
}

// Queue is the request queue and its workers (DESIGN.md "How a request flows", step 5):
// the queued jobs served by at most Max worker goroutines. A worker is started when a job
// is queued and no worker is idle; workers above Min end as soon as the queue is empty,
// the others wait for the next job. Without Fair the jobs run in the order queued; with
// it each owner has a sub-queue and the owners take turns by start-time fair queuing
// (RATIONALE.md "Fair turns"). All methods are safe for concurrent use.
type Queue struct {
	min, max int
	now      func() time.Time
	// capacity bounds the queued jobs of both stages when ledger is nil (NewQueue).
	capacity       int
	ledger         *admission.Ledger
	fair           bool
	sessionWorkers int
	weight         func(admission.Owner) int
	panics         *telemetry.Panics
	handshakes     *admission.Lane

	mu sync.Mutex // guards slots, free, n, seq, byStage, lanes, turn, running, idle, sessionsRunning, closed, lastTake, backlog, interval
	// wake is signalled once per job queued while a worker idles, and broadcast by close.
	wake sync.Cond
	// slots hold the queued jobs, each on its owner's list; free heads the list of
	// empty slots. A job's place is fixed, so queuing allocates nothing.
	slots []slot
	free  int32
	// n counts the queued jobs, byStage of them per stage; seq numbers them in order of
	// arrival.
	n       int
	seq     uint64
	byStage [stageCount]int
	// lanes are the owners with queued jobs: one lane without Fair, one per stage
	// with it (laneOf); turn is the lane served last when both have work.
	lanes [stageCount]lane
	turn  int
	// running counts the worker goroutines, idle those of them waiting on wake that no
	// push has claimed yet, sessionsRunning the workers running a job of StageSession.
	running, idle, sessionsRunning int
	closed                         bool
	// lastTake is when a worker last took a job, backlog whether jobs were left behind
	// then; interval is a moving average of the time between two takes with a backlog
	// in between: how fast the queue drains when it has work.
	lastTake time.Time
	backlog  bool
	interval time.Duration

	busy atomic.Int64   // workers running a job
	wg   sync.WaitGroup // counts the worker goroutines
	// jobs counts the queued and running jobs.
	jobs sync.WaitGroup
}

// slot is one queued job: its place in its owner's list and its start tag.
type slot struct {
	job  Job
	tag  uint64 // virtual start time (start-time fair queuing)
	seq  uint64 // arrival order, to break ties of tags
	next int32  // next slot of the owner's list, or of the free list; -1 ends it
}

// NewQueue returns a FIFO queue of capacity jobs of either stage served by min to max
// workers; none is started before the first job.
func NewQueue(capacity, min, max int, now func() time.Time) *Queue {
	q := newQueue(QueueConfig{Min: min, Max: max, Now: now}, capacity)
	q.capacity = capacity
	q.initLanes()
	return q
}

// NewQueueWith returns the queue of cfg: its ledger's capacity of service jobs and
// cfg.SessionCapacity of session jobs, served by cfg.Min to cfg.Max workers.
func NewQueueWith(cfg QueueConfig) *Queue {
	q := newQueue(cfg, cfg.Ledger.Capacity()+cfg.SessionCapacity)
	q.ledger, q.fair, q.sessionWorkers, q.weight, q.panics = cfg.Ledger, cfg.Fair, cfg.SessionWorkers, cfg.Weight, cfg.Panics
	q.handshakes = cfg.Handshakes
	q.initLanes()
	return q
}

func (q *Queue) initLanes() {
	for i := range q.lanes {
		q.lanes[i].init(!q.fair)
	}
}

func newQueue(cfg QueueConfig, slots int) *Queue {
	q := &Queue{min: cfg.Min, max: cfg.Max, now: cfg.Now, slots: make([]slot, max(slots, 1))}
	q.wake.L = &q.mu
	for i := range q.slots {
		q.slots[i].next = int32(i) + 1
	}
	q.slots[len(q.slots)-1].next = -1
	return q
}

// laneOf returns the lane of stage s: one for both stages without Fair.
func (q *Queue) laneOf(s Stage) *lane {
	if !q.fair {
		return &q.lanes[0]
	}
	return &q.lanes[s]
}

// Push queues j. It returns false when the queue is full or closed, with the time the
// queue needs to drain at its recent rate (the RetryAfterMs hint). A job of
// StageService passes the queue's ledger first (its capacity, its reserves, the owner's
// share), a job of StageSession was admitted by the pipeline.
func (q *Queue) Push(j Job) (ok bool, retryAfter time.Duration) {
	if q.ledger != nil && j.Stage == StageService {
		c, _, ok := q.ledger.Acquire(j.Key, j.Class, 1)
		if !ok {
			q.mu.Lock()
			defer q.mu.Unlock()
			return false, q.retryAfterLocked()
		}
		j.charge = c
	}
	q.mu.Lock()
	if q.closed || q.free < 0 || q.ledger == nil && q.n >= q.capacity {
		retryAfter = q.retryAfterLocked()
		q.mu.Unlock()
		q.release(j.charge)
		return false, retryAfter
	}
	i := q.free
	s := &q.slots[i]
	q.free = s.next
	s.job, s.seq = j, q.seq
	q.seq++
	weight := 1
	if q.weight != nil && q.fair {
		weight = max(q.weight(j.Key), 1)
	}
	q.laneOf(j.Stage).push(q.slots, i, j.Key, max(j.Cost, 1), weight)
	q.n++
	q.byStage[j.Stage]++
	q.jobs.Add(1)
	if q.eligibleLocked(j.Stage) {
		q.workerLocked()
	}
	q.mu.Unlock()
	return true, 0
}

// workerLocked finds a worker for a job that may run now: an idle one, or a new one
// while fewer than Max run.
func (q *Queue) workerLocked() {
	switch {
	case q.idle > 0:
		q.idle--
		q.wake.Signal()
	case q.running < q.max:
		q.running++
		q.wg.Add(1)
		go q.work()
	}
}

// release returns a job's charge to the ledger.
func (q *Queue) release(c admission.Charge) {
	if q.ledger != nil {
		q.ledger.Release(c)
	}
}

// eligibleLocked reports whether a worker may take a job of stage s now: a job of
// StageSession waits while SessionWorkers run session establishment.
func (q *Queue) eligibleLocked(s Stage) bool {
	return s != StageSession || !q.fair || q.sessionWorkers == 0 || q.sessionsRunning < q.sessionWorkers
}

// pickLocked returns the lane a worker takes its next job from, or nil when no queued
// job may run now. With both lanes ready the lanes take turns.
func (q *Queue) pickLocked() *lane {
	if !q.fair {
		if q.lanes[0].n > 0 {
			return &q.lanes[0]
		}
		return nil
	}
	service := q.lanes[StageService].n > 0
	session := q.lanes[StageSession].n > 0 && q.eligibleLocked(StageSession)
	switch {
	case service && session:
		q.turn ^= 1
		return &q.lanes[q.turn]
	case service:
		return &q.lanes[StageService]
	case session:
		return &q.lanes[StageSession]
	}
	return nil
}

// work is a worker: it runs queued jobs until the queue is empty and it is above the
// minimum, or the queue is closed and drained.
func (q *Queue) work() {
	defer q.wg.Done()
	q.mu.Lock()
	for {
		var l *lane
		for {
			if l = q.pickLocked(); l != nil {
				break
			}
			if q.n == 0 && (q.closed || q.running > q.min) {
				q.running--
				q.mu.Unlock()
				return
			}
			q.idle++
			q.wake.Wait()
		}
		i := l.pop(q.slots)
		s := &q.slots[i]
		j := s.job
		s.job = Job{}
		s.next, q.free = q.free, i
		q.n--
		q.byStage[j.Stage]--
		session := j.Stage == StageSession
		if session {
			q.sessionsRunning++
		}
		q.tookLocked()
		q.mu.Unlock()
		q.release(j.charge)
		q.busy.Add(1)
		if session {
			q.runSession(j.Run)
		} else {
			q.run(j.Run)
		}
		q.busy.Add(-1)
		q.jobs.Done()
		q.mu.Lock()
		if session {
			q.sessionsRunning--
			// A session job held back by SessionWorkers may run now; this worker
			// takes it itself unless another one is idle.
			if q.lanes[StageSession].n > 0 && q.fair && q.idle > 0 {
				q.idle--
				q.wake.Signal()
			}
		}
	}
}

// run runs a job: one that panics is reported and the worker goes on (the pipeline's
// jobs answer their request themselves, Pipeline.enqueue).
func (q *Queue) run(job func()) {
	defer q.panics.Recover(telemetry.PlaceWorker)
	job()
}

// runSession runs a job of StageSession within a turn of the lane of asymmetric
// cryptography, if there is one.
func (q *Queue) runSession(job func()) {
	leave, _ := q.handshakes.Enter(context.Background(), admission.Finish)
	defer leave()
	q.run(job)
}

// Away runs fn, which waits on the network rather than on a processor, outside the turn
// of session establishment that the calling job holds: other session jobs run
// meanwhile, up to SessionWorkers of them and within the lane's turns, and the caller
// waits for a turn again before it goes on. Only a job of StageSession may call it.
func (q *Queue) Away(fn func()) {
	q.mu.Lock()
	q.sessionsRunning--
	if q.lanes[StageSession].n > 0 && q.eligibleLocked(StageSession) {
		q.workerLocked() // this one waits on the network meanwhile
	}
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.sessionsRunning++
		q.mu.Unlock()
	}()
	q.handshakes.Away(fn)
}

// tookLocked records a take for the drain rate.
func (q *Queue) tookLocked() {
	now := q.now()
	if q.backlog {
		dt := now.Sub(q.lastTake)
		if q.interval == 0 {
			q.interval = dt
		} else {
			q.interval += (dt - q.interval) / 8
		}
	}
	q.lastTake = now
	q.backlog = q.n > 0
}

// retryAfterLocked estimates how long the queued jobs take to drain: their number times
// the recent interval between takes, or the time since the last take when that is
// longer (workers stalled), within [RetryAfterMin, RetryAfterMax].
func (q *Queue) retryAfterLocked() time.Duration {
	per := q.interval
	if !q.lastTake.IsZero() {
		per = max(per, q.now().Sub(q.lastTake))
	}
	if per <= 0 {
		per = retryAfterUnknown
	}
	return min(max(per*time.Duration(max(q.n, 1)), RetryAfterMin), RetryAfterMax)
}

// Close refuses further jobs, lets the workers drain the queue and waits for them.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.idle = 0
	q.wake.Broadcast()
	q.mu.Unlock()
	q.wg.Wait()
}

// Wait waits until no job is queued or running.
func (q *Queue) Wait() { q.jobs.Wait() }

// Stats returns the number of queued jobs, worker goroutines and busy workers.
func (q *Queue) Stats() (queued, running, busy int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n, q.running, int(q.busy.Load())
}

// Queued returns the number of queued jobs of stage s.
func (q *Queue) Queued(s Stage) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.byStage[s]
}

// lane is a set of owners with queued jobs, served by start-time fair queuing (Goyal,
// Vin and Cheng, 1996): a job's start tag is the later of the lane's virtual time and
// its owner's last finish tag, its owner's finish tag then grows by the job's cost over
// the owner's weight, and a worker takes the job with the smallest start tag (then the
// oldest). An owner that arrives starts at the virtual time, so it waits for at most one
// job of each other owner; an owner with a backlog gets turns in proportion to its
// weight, whatever the others queued.
type lane struct {
	// fifo makes the lane one owner's queue (without Fair): the jobs run in the order
	// queued, and the lane needs neither the map nor tags.
	fifo bool
	one  ownerQueue
	// owners holds the owners with queued jobs, by admission.Owner.Key; heap orders
	// them by the start tag of their first job.
	owners map[uint64]*ownerQueue
	heap   []*ownerQueue
	// vtime is the start tag of the job taken last.
	vtime uint64
	// n counts the queued jobs.
	n int
	// spare holds emptied owner queues for reuse, so that owners coming and going do
	// not allocate.
	spare []*ownerQueue
}

// ownerQueue is one owner's queued jobs: a list through the queue's slots.
type ownerQueue struct {
	key        uint64
	head, tail int32
	// finish is the finish tag of the owner's last queued job.
	finish uint64
	// index is the owner's place in the lane's heap.
	index int
}

// tagUnit is the virtual time a job of cost 1 and weight 1 takes: weights divide it.
const tagUnit = 1 << 12

func (l *lane) init(fifo bool) {
	l.fifo = fifo
	l.one = ownerQueue{head: -1, tail: -1}
	l.owners = make(map[uint64]*ownerQueue)
}

// push appends slot i, a job of owner key costing cost, to the lane.
func (l *lane) push(slots []slot, i int32, key admission.Owner, cost, weight int) {
	s := &slots[i]
	s.next = -1
	l.n++
	if l.fifo {
		if o := &l.one; o.head < 0 {
			o.head, o.tail = i, i
		} else {
			slots[o.tail].next = i
			o.tail = i
		}
		return
	}
	o := l.owners[key.Key()]
	if o == nil {
		if k := len(l.spare); k > 0 {
			o = l.spare[k-1]
			l.spare = l.spare[:k-1]
		} else {
			o = new(ownerQueue)
		}
		*o = ownerQueue{key: key.Key(), head: -1, tail: -1}
		l.owners[o.key] = o
	}
	s.tag = max(l.vtime, o.finish)
	o.finish = s.tag + uint64(cost)*tagUnit/uint64(weight)
	if o.head < 0 {
		o.head, o.tail = i, i
		l.heapPush(slots, o)
	} else {
		slots[o.tail].next = i
		o.tail = i
	}
}

// pop removes and returns the slot of the job with the smallest start tag (the oldest
// job of a fifo lane).
func (l *lane) pop(slots []slot) int32 {
	l.n--
	if l.fifo {
		i := l.one.head
		l.one.head = slots[i].next
		return i
	}
	o := l.heap[0]
	i := o.head
	s := &slots[i]
	l.vtime = max(l.vtime, s.tag)
	o.head = s.next
	if o.head < 0 {
		l.heapRemoveTop(slots)
		delete(l.owners, o.key)
		if len(l.spare) < 64 {
			l.spare = append(l.spare, o)
		}
	} else {
		l.down(slots, 0)
	}
	return i
}

// before reports whether owner a's first job goes before owner b's.
func before(slots []slot, a, b *ownerQueue) bool {
	sa, sb := &slots[a.head], &slots[b.head]
	return sa.tag < sb.tag || sa.tag == sb.tag && sa.seq < sb.seq
}

func (l *lane) heapPush(slots []slot, o *ownerQueue) {
	o.index = len(l.heap)
	l.heap = append(l.heap, o)
	l.up(slots, o.index)
}

func (l *lane) heapRemoveTop(slots []slot) {
	last := len(l.heap) - 1
	l.swap(0, last)
	l.heap[last] = nil
	l.heap = l.heap[:last]
	if last > 0 {
		l.down(slots, 0)
	}
}

func (l *lane) swap(i, j int) {
	l.heap[i], l.heap[j] = l.heap[j], l.heap[i]
	l.heap[i].index, l.heap[j].index = i, j
}

func (l *lane) up(slots []slot, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !before(slots, l.heap[i], l.heap[p]) {
			return
		}
		l.swap(i, p)
		i = p
	}
}

func (l *lane) down(slots []slot, i int) {
	for {
		c := 2*i + 1
		if c >= len(l.heap) {
			return
		}
		if r := c + 1; r < len(l.heap) && before(slots, l.heap[r], l.heap[c]) {
			c = r
		}
		if !before(slots, l.heap[c], l.heap[i]) {
			return
		}
		l.swap(i, c)
		i = c
	}
}
