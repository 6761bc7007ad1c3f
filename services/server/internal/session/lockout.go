package session

import (
	"sync"
	"time"
)

// maxLockoutEntries bounds the clients the lockout remembers. When the table is full,
// entries whose window and lockout are over are dropped first, then the oldest that is not
// locked, and only when every entry is locked the oldest locked one.
const maxLockoutEntries = 10000

// Lockout counts failed ActivateSession attempts per client and locks a client out after
// max failures within window, for duration (Security.MaxFailedAuthenticationAttempts,
// FailedAuthenticationWindow, FailedAuthenticationLockout). A nil *Lockout, or one with
// max 0, never locks anyone. It is safe for concurrent use.
type Lockout struct {
	max      int
	window   time.Duration
	duration time.Duration
	now      func() time.Time
	limit    int // table size; maxLockoutEntries outside tests

	mu      sync.Mutex // guards clients
	clients map[string]*failedLogins
}

// failedLogins is the record of one client.
type failedLogins struct {
	first       time.Time // first failure of the current window
	count       int       // failures since first
	lockedUntil time.Time // zero when not locked
}

// NewLockout returns a lockout after max failures within window, for duration; max 0
// never locks.
func NewLockout(max int, window, duration time.Duration, now func() time.Time) *Lockout {
	return &Lockout{max: max, window: window, duration: duration, now: now,
		limit: maxLockoutEntries, clients: make(map[string]*failedLogins)}
}

func (l *Lockout) enabled(key string) bool { return l != nil && l.max > 0 && key != "" }

// Locked reports whether key is locked out now.
func (l *Lockout) Locked(key string) bool {
	if !l.enabled(key) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.clients[key]
	if !ok {
		return false
	}
	now := l.now()
	if f.lockedUntil.IsZero() {
		return false
	}
	if now.Before(f.lockedUntil) {
		return true
	}
	delete(l.clients, key) // the lockout is over: start afresh
	return false
}

// Fail records a failed attempt of key and reports whether it locked key out.
func (l *Lockout) Fail(key string) bool {
	if !l.enabled(key) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f, ok := l.clients[key]
	if ok && !f.lockedUntil.IsZero() {
		if now.Before(f.lockedUntil) {
			return false
		}
		ok = false
	}
	if !ok || now.Sub(f.first) >= l.window {
		if _, exists := l.clients[key]; !exists && len(l.clients) >= l.limit {
			l.evictLocked(now)
		}
		f = &failedLogins{first: now}
		l.clients[key] = f
	}
	f.count++
	if f.count >= l.max {
		f.lockedUntil = now.Add(l.duration)
		return true
	}
	return false
}

// Succeed forgets the failures of key after a successful login.
func (l *Lockout) Succeed(key string) {
	if !l.enabled(key) {
		return
	}
	l.mu.Lock()
	delete(l.clients, key)
	l.mu.Unlock()
}

// evictLocked makes room for one entry (see maxLockoutEntries).
func (l *Lockout) evictLocked(now time.Time) {
	for k, f := range l.clients {
		if f.lockedUntil.IsZero() && now.Sub(f.first) >= l.window ||
			!f.lockedUntil.IsZero() && !now.Before(f.lockedUntil) {
			delete(l.clients, k)
		}
	}
	if len(l.clients) < l.limit {
		return
	}
	var victim string
	var oldest time.Time
	victimLocked := true
	for k, f := range l.clients {
		isLocked := !f.lockedUntil.IsZero()
		if victim == "" || victimLocked && !isLocked || victimLocked == isLocked && f.first.Before(oldest) {
			victim, oldest, victimLocked = k, f.first, isLocked
		}
	}
	delete(l.clients, victim)
}

// size returns the number of clients remembered.
func (l *Lockout) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}
