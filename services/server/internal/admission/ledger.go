package admission

import (
	"sync"
	"sync/atomic"
	"time"
)

// LedgerConfig configures a Ledger.
type LedgerConfig struct {
	Stage Stage
	// Shared is the capacity of the shared pool, which every charge may use; at least 1.
	Shared int
	// Owners makes the ledger count owners: it then applies OwnerLimit, MaxOwners, the
	// fair-share headroom and the reserves. Without it the ledger is the shared pool
	// alone (SharedOnly).
	Owners bool
	// Bootstrap and Reconnect are the units reserved for those classes, beside Shared.
	Bootstrap, Reconnect int
	// OwnerLimit is the most one owner may hold at once; 0 is no limit but the pools.
	// Trusted owners are not bound by it.
	OwnerLimit int
	// Headroom is the part of the shared pool an owner holding its fair share or more
	// may not take (Owners only); 0 means a sixteenth of Shared, at least 1.
	Headroom int
	// MaxOwners bounds the owners the ledger tracks at once; at least 1.
	MaxOwners int
	// Trusted are the units reserved for each configured trusted owner, by index
	// (Owner.ID of an OwnerTrusted owner).
	Trusted []int
	// Now is the clock of the drain estimate behind RetryAfter.
	Now func() time.Time
	// Rejected, when set, hears of each refusal, after the ledger's lock is released.
	Rejected func(Rejection)
}

// pool indices of a Ledger: the shared pool, the class reserves, then one per trusted
// owner.
const (
	poolShared = iota
	poolBootstrap
	poolReconnect
	poolTrusted
)

// pool is one partition of a stage's capacity.
type pool struct{ cap, used int }

// Ledger counts the units of one stage that owners hold, and admits a new charge only
// within the stage's pools and the owner's limits (RATIONALE.md "One ledger per
// stage"). A charge takes the shared pool while it has room and the owner is within its
// fair share, and a reserve of its class only when it does not: a reserve is the last
// resort, so that it is free when a flood has taken the shared pool. It is safe for
// concurrent use.
type Ledger struct {
	stage      Stage
	owners     bool
	ownerLimit int
	maxOwners  int
	// protected is the room in the owner table kept for reconnecting and trusted
	// owners: an ordinary new owner is refused once only protected slots are left.
	protected int
	// headroom is how much of the shared pool an owner at or above its fair share may
	// not take (fairBlocked).
	headroom int
	now      func() time.Time
	rejected func(Rejection)

	mu sync.Mutex // guards pools, table, spare, lastRelease, interval, turn, lent
	// pools are the shared pool, the bootstrap and reconnect reserves and the trusted
	// owners' reserves, in that order.
	pools []pool
	// table holds the owners that hold units, by Owner.Key; spare holds holdings for
	// reuse, so that an owner coming and going does not allocate.
	table map[uint64]*holding
	spare []*holding
	// lastRelease is when a unit was last released while the shared pool was nearly
	// full (zero when it was not), interval a moving average of the time between two
	// such releases: how fast the stage drains when it is busy.
	lastRelease time.Time
	interval    time.Duration
	// turn is the last turn RetryAfter gave a refused charge.
	turn time.Time
	// lent are the units Lend took out of their pools.
	lent int

	rejections [ReasonCount]atomic.Uint64
}

// holding is what one owner holds of a stage.
type holding struct{ n int }

// NewLedger returns the ledger of cfg.
func NewLedger(cfg LedgerConfig) *Ledger {
	l := &Ledger{
		stage:      cfg.Stage,
		owners:     cfg.Owners,
		ownerLimit: cfg.OwnerLimit,
		maxOwners:  max(cfg.MaxOwners, 1),
		headroom:   cfg.Headroom,
		now:        cfg.Now,
		rejected:   cfg.Rejected,
		pools:      make([]pool, poolTrusted+len(cfg.Trusted)),
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.headroom <= 0 {
		l.headroom = headroomOf(cfg.Shared)
	}
	l.pools[poolShared].cap = max(cfg.Shared, 1)
	if cfg.Owners {
		l.pools[poolBootstrap].cap = cfg.Bootstrap
		l.pools[poolReconnect].cap = cfg.Reconnect
		for i, r := range cfg.Trusted {
			l.pools[poolTrusted+i].cap = r
		}
		l.protected = min(cfg.Reconnect+len(cfg.Trusted), l.maxOwners-1)
		l.table = make(map[uint64]*holding, min(l.maxOwners, 1024))
	}
	return l
}

// headroomOf is the headroom of a shared pool of n units: a sixteenth, at least one.
func headroomOf(n int) int { return max(n/16, 1) }

// Charge is what a Ledger admitted: n units of one pool for one owner. The holder
// releases it once with Ledger.Release; the zero Charge holds nothing.
type Charge struct {
	owner Owner
	n     int32
	pool  int16 // pool index + 1; 0 for the zero Charge
	class Class
}

// IsZero reports whether c holds nothing.
func (c Charge) IsZero() bool { return c.pool == 0 }

// Class returns the class the charge was admitted as: the class asked for, or Bootstrap
// for an Ordinary charge of an owner that held nothing at the stage.
func (c Charge) Class() Class { return c.class }

// Reserved reports whether the charge took a reserve rather than the shared pool.
func (c Charge) Reserved() bool { return c.pool > poolShared+1 }

// Acquire charges n units to owner o for traffic of class c. An Ordinary charge of an
// owner that holds nothing at the stage is a Bootstrap charge (with Owners). On refusal
// it returns the reason; the refusal is counted and reported.
func (l *Ledger) Acquire(o Owner, c Class, n int) (Charge, Reason, bool) {
	l.mu.Lock()
	ch, reason, ok := l.acquireLocked(o, c, n)
	l.mu.Unlock()
	if !ok {
		l.rejections[reason].Add(1)
		if l.rejected != nil {
			l.rejected(Rejection{Stage: l.stage, Reason: reason, Class: c, Owner: o})
		}
	}
	return ch, reason, ok
}

func (l *Ledger) acquireLocked(o Owner, c Class, n int) (Charge, Reason, bool) {
	shared := &l.pools[poolShared]
	if !l.owners {
		if shared.used+n > shared.cap {
			return Charge{}, Capacity, false
		}
		shared.used += n
		return Charge{owner: o, n: int32(n), pool: poolShared + 1, class: c}, 0, true
	}
	trusted := o.Kind == OwnerTrusted
	if o.IsZero() || trusted && o.ID >= uint64(len(l.pools)-poolTrusted) {
		return Charge{}, InvalidOwner, false
	}
	h := l.table[o.Key()]
	held := 0
	if h != nil {
		held = h.n
	}
	if !trusted && l.ownerLimit > 0 && held+n > l.ownerLimit {
		return Charge{}, OwnerLimit, false
	}
	if h == nil {
		room := l.maxOwners
		if !trusted && c != Reconnect {
			room -= l.protected
		}
		if len(l.table) >= room {
			return Charge{}, OwnerTableFull, false
		}
		if c == Ordinary {
			c = Bootstrap
		}
	}
	fits := shared.used+n <= shared.cap
	p := poolShared
	if !fits || l.fairBlocked(held, n) {
		p = l.reserveLocked(o, c, h == nil, n)
		if p < 0 {
			if fits {
				return Charge{}, OwnerLimit, false
			}
			return Charge{}, Capacity, false
		}
	}
	l.pools[p].used += n
	if h == nil {
		h = l.newHolding()
		l.table[o.Key()] = h
	}
	h.n += n
	return Charge{owner: o, n: int32(n), pool: int16(p) + 1, class: c}, 0, true
}

// reserveLocked returns the reserve a charge of n units for owner o of class c takes
// when the shared pool does not admit it, or -1 for none with room: a trusted owner's
// own reserve, the reconnect reserve for Reconnect, and the bootstrap reserve for an
// owner that holds nothing yet (first; a Bootstrap charge always is).
func (l *Ledger) reserveLocked(o Owner, c Class, first bool, n int) int {
	room := func(p int) bool { return l.pools[p].used+n <= l.pools[p].cap }
	switch {
	case o.Kind == OwnerTrusted && room(poolTrusted+int(o.ID)):
		return poolTrusted + int(o.ID)
	case c == Reconnect && room(poolReconnect):
		return poolReconnect
	case first && room(poolBootstrap):
		return poolBootstrap
	}
	return -1
}

// fairBlocked reports whether an owner holding held units may not take n more of the
// shared pool: the pool is within its headroom of full, and the owner holds at least
// its fair share of it counting one newcomer, 1/(owners+1). A single flooder thus stops
// a headroom short of the top, and any number of owners leave room for the next one
// until each holds less than a headroom's worth.
func (l *Ledger) fairBlocked(held, n int) bool {
	shared := l.pools[poolShared]
	return held > 0 && shared.used+n > shared.cap-l.headroom && held*(len(l.table)+1) >= shared.cap
}

func (l *Ledger) newHolding() *holding {
	if k := len(l.spare); k > 0 {
		h := l.spare[k-1]
		l.spare = l.spare[:k-1]
		return h
	}
	return new(holding)
}

// Release returns the units of c. Releasing the zero Charge does nothing; releasing a
// Charge twice is a bug of the caller.
func (l *Ledger) Release(c Charge) {
	if c.pool == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.freeLocked(c)
	l.disownLocked(c)
}

// Lend takes the units of c out of their pool while the holder waits on the network
// (pipeline.Request.Away), so that they admit other charges meanwhile: a stage bounds
// work that runs, and a session takeover spends most of its time waiting on NATS. At
// most as many units as the stage has are lent at once, so that what runs and what
// waits stay within twice its capacity. It reports whether it lent them. Return takes
// them back, beyond the pool's capacity if need be, since the holder was admitted
// before; a charge released while lent goes with ReleaseLent.
func (l *Ledger) Lend(c Charge) bool {
	if c.pool == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lent+int(c.n) > l.capacityLocked() {
		return false
	}
	l.lent += int(c.n)
	l.freeLocked(c)
	return true
}

// Return counts the units of c, which Lend lent, in their pool again.
func (l *Ledger) Return(c Charge) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lent -= int(c.n)
	l.pools[c.pool-1].used += int(c.n)
}

// ReleaseLent releases c while Lend has lent its units: only its owner's holding is
// left to give back.
func (l *Ledger) ReleaseLent(c Charge) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lent -= int(c.n)
	l.disownLocked(c)
}

// freeLocked gives the units of c back to their pool.
func (l *Ledger) freeLocked(c Charge) {
	shared := &l.pools[poolShared]
	if shared.used >= shared.cap-l.headroom {
		l.drainedLocked()
	} else {
		l.lastRelease, l.turn = time.Time{}, time.Time{}
	}
	l.pools[c.pool-1].used -= int(c.n)
}

// disownLocked takes the units of c off its owner's holding.
func (l *Ledger) disownLocked(c Charge) {
	if !l.owners {
		return
	}
	if h := l.table[c.owner.Key()]; h != nil {
		h.n -= int(c.n)
		if h.n <= 0 {
			delete(l.table, c.owner.Key())
			h.n = 0
			if len(l.spare) < 64 {
				l.spare = append(l.spare, h)
			}
		}
	}
}

// drainedLocked records a release while the stage is busy, for RetryAfter.
func (l *Ledger) drainedLocked() {
	now := l.now()
	if !l.lastRelease.IsZero() {
		dt := now.Sub(l.lastRelease)
		if l.interval == 0 {
			l.interval = dt
		} else {
			l.interval += (dt - l.interval) / 8
		}
	}
	l.lastRelease = now
}

// retryAfterUnknown is the hint before any drain was seen.
const retryAfterUnknown = 100 * time.Millisecond

// RetryAfter tells a refused charge how long to wait: the refused are given turns one
// recent interval between releases of the busy stage apart (or the time since the last
// release, when that is longer: the stage is stalled), each behind the turns already
// given, within [RetryAfterMin, RetryAfterMax]. A busy stage frees about one unit an
// interval, so the k-th refused finds one free after about k intervals; the units held
// are released side by side, and telling every refused charge to wait for all of them
// kept clients away for seconds after the stage had room again.
func (l *Ledger) RetryAfter() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	per := l.interval
	if !l.lastRelease.IsZero() {
		per = max(per, now.Sub(l.lastRelease))
	}
	if per <= 0 {
		per = retryAfterUnknown
	}
	if l.turn.Before(now) {
		l.turn = now
	}
	l.turn = l.turn.Add(per)
	return clampRetryAfter(l.turn.Sub(now))
}

// StageStats is a snapshot of one stage.
type StageStats struct {
	// Capacity is the stage's units: the shared pool and every reserve.
	Capacity int
	// Shared is the capacity of the shared pool.
	Shared int
	// Used is the units held; Owners the owners holding them (0 for SharedOnly).
	Used, Owners int
	// Rejections counts the refusals by reason since the start.
	Rejections [ReasonCount]uint64
}

// Stats returns a snapshot of the ledger.
func (l *Ledger) Stats() StageStats {
	l.mu.Lock()
	s := StageStats{Shared: l.pools[poolShared].cap, Owners: len(l.table)}
	for _, p := range l.pools {
		s.Capacity += p.cap
		s.Used += p.used
	}
	l.mu.Unlock()
	for i := range s.Rejections {
		s.Rejections[i] = l.rejections[i].Load()
	}
	return s
}

// Capacity returns the stage's units: the shared pool and every reserve.
func (l *Ledger) Capacity() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.capacityLocked()
}

func (l *Ledger) capacityLocked() int {
	n := 0
	for _, p := range l.pools {
		n += p.cap
	}
	return n
}

// Holds returns the units owner o holds (0 without owners).
func (l *Ledger) Holds(o Owner) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.table[o.Key()]; h != nil {
		return h.n
	}
	return 0
}
