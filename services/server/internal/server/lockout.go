package server

import (
	"crypto/sha1"
	"encoding/hex"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// maxLockoutEntries bounds the clients the lockout remembers. When the table is full,
// entries whose window and lockout are over are dropped first, then the oldest that is not
// locked, and only when every entry is locked the oldest locked one.
const maxLockoutEntries = 10000

// lockout counts failed ActivateSession attempts per client and locks a client out after
// max failures within window, for duration (Security.MaxFailedAuthenticationAttempts,
// FailedAuthenticationWindow, FailedAuthenticationLockout). A nil *lockout, or one with
// max 0, never locks anyone. It is safe for concurrent use.
type lockout struct {
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

func newLockout(max int, window, duration time.Duration, now func() time.Time) *lockout {
	return &lockout{max: max, window: window, duration: duration, now: now,
		limit: maxLockoutEntries, clients: make(map[string]*failedLogins)}
}

// failedLogins returns the server's lockout, made on first use from the configuration.
func (s *Server) failedLogins() *lockout {
	t := s.sessions
	t.failedOnce.Do(func() {
		sec := s.cfg.Security
		t.failed = newLockout(sec.MaxFailedAuthenticationAttempts, sec.FailedAuthenticationWindow, sec.FailedAuthenticationLockout, s.now)
	})
	return t.failed
}

// lockoutKey names the client an ActivateSession comes from: the thumbprint of the
// channel's client application certificate, else (SecurityPolicy None) the user name of a
// UserNameIdentityToken or the SHA-1 of the certificate of an X509IdentityToken. The
// secure channel does not expose the connection's remote address, so it cannot be the
// key. An empty key (anonymous on None) is not counted.
func lockoutKey(ch *uasc.ServerChannel, tok codec.ExtensionObject) string {
	if c := ch.ClientCertificate(); c != nil {
		return "app:" + pki.Thumbprint(c)
	}
	switch t := tok.Value.(type) {
	case *ua.UserNameIdentityToken:
		return "user:" + t.UserName
	case *ua.X509IdentityToken:
		sum := sha1.Sum(t.CertificateData)
		return "x509:" + hex.EncodeToString(sum[:])
	}
	return ""
}

func (l *lockout) enabled(key string) bool { return l != nil && l.max > 0 && key != "" }

// locked reports whether key is locked out now.
func (l *lockout) locked(key string) bool {
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

// fail records a failed attempt of key and reports whether it locked key out.
func (l *lockout) fail(key string) bool {
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

// succeed forgets the failures of key after a successful login.
func (l *lockout) succeed(key string) {
	if !l.enabled(key) {
		return
	}
	l.mu.Lock()
	delete(l.clients, key)
	l.mu.Unlock()
}

// evictLocked makes room for one entry (see maxLockoutEntries).
func (l *lockout) evictLocked(now time.Time) {
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
func (l *lockout) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}
