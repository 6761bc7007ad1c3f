package pipeline

import (
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the RetryAfterMs hint of a BadServerTooBusy answer: at least RetryAfterMin so
// that rejected clients do not spin, at most RetryAfterMax so that a stalled estimate
// does not park them for long. retryAfterUnknown is the hint before any drain was seen.
const (
	RetryAfterMin     = 10 * time.Millisecond
	RetryAfterMax     = 10 * time.Second
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
	Cost  int
	Stage Stage
	Run   func()
}

// Queue is the request queue and its workers (DESIGN.md "How a request flows", step 5):
// a FIFO of at most Limits.MaxQueuedRequestCount jobs served by at most
// Limits.MaxRequestThreadCount worker goroutines. A worker is started when a job is
// queued and no worker is idle; workers above Limits.MinRequestThreadCount end as soon
// as the queue is empty, the others wait for the next job. RATIONALE.md "Request queue
// and workers" argues the shape. All methods are safe for concurrent use.
type Queue struct {
	min, max int
	now      func() time.Time

	mu sync.Mutex // guards buf, head, n, byStage, running, idle, closed, lastTake, backlog, interval
	// wake is signalled once per job queued while a worker idles, and broadcast by close.
	wake sync.Cond
	// buf is the ring of queued jobs; n of them from head, byStage of them per stage.
	buf     []Job
	head, n int
	byStage [stageCount]int
	// running counts the worker goroutines, idle those of them waiting on wake that no
	// push has claimed yet.
	running, idle int
	closed        bool
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

// NewQueue returns a queue of capacity jobs served by min to max workers; none is
// started before the first job.
func NewQueue(capacity, min, max int, now func() time.Time) *Queue {
	q := &Queue{min: min, max: max, now: now, buf: make([]Job, capacity)}
	q.wake.L = &q.mu
	return q
}

// Push queues j. It returns false when the queue is full or closed, with the time the
// queue needs to drain at its recent rate (the RetryAfterMs hint).
func (q *Queue) Push(j Job) (ok bool, retryAfter time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.n == len(q.buf) {
		return false, q.retryAfterLocked()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = j
	q.n++
	q.byStage[j.Stage]++
	q.jobs.Add(1)
	switch {
	case q.idle > 0:
		q.idle--
		q.wake.Signal()
	case q.running < q.max:
		q.running++
		q.wg.Add(1)
		go q.work()
	}
	return true, 0
}

// work is a worker: it runs queued jobs in order until the queue is empty and it is
// above the minimum, or the queue is closed and drained.
func (q *Queue) work() {
	defer q.wg.Done()
	q.mu.Lock()
	for {
		for q.n == 0 {
			if q.closed || q.running > q.min {
				q.running--
				q.mu.Unlock()
				return
			}
			q.idle++
			q.wake.Wait()
		}
		j := q.buf[q.head]
		q.buf[q.head] = Job{}
		q.head = (q.head + 1) % len(q.buf)
		q.n--
		q.byStage[j.Stage]--
		q.tookLocked()
		q.mu.Unlock()
		q.busy.Add(1)
		j.Run()
		q.busy.Add(-1)
		q.jobs.Done()
		q.mu.Lock()
	}
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
