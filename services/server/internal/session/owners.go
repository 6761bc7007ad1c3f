package session

import (
	"crypto/x509"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/owner"
)

// Limits bound a table. They keep one client from taking the table away from the others
// (issue 18): a session nobody activates gives way quickly, and no owner holds more than
// its share.
type Limits struct {
	// MaxSessions is the size of the table (limits.maxSessionCount).
	MaxSessions int
	// MaxPerOwner is the most sessions one owner holds; 0 is MaxSessions. Owners are
	// the client application of a signed channel (its certificate's ApplicationUri), or
	// over SecurityPolicy None the channel until activation and the session after it.
	MaxPerOwner int
	// UnactivatedTimeout ends a session that is not activated this long after
	// CreateSession, whatever its revised timeout; requests that name it do not extend
	// it. 0 leaves such a session to its timeout.
	UnactivatedTimeout time.Duration
}

// ownerOf is who holds a session's share of the table: the application of the
// certificate of its channel, which the server validated before CreateSession, when it
// names one; otherwise the channel it was created on until it is activated, then the
// session itself.
func ownerOf(channelID uint32, activated bool, cert *x509.Certificate, sessionID codec.NodeId) owner.Owner {
	if o, ok := owner.OfCertificate(cert); ok {
		return o
	}
	if activated {
		return owner.OfSession(sessionID)
	}
	return owner.OfChannel(channelID)
}

// holding is what one owner holds of the table: its sessions, and the list of those not
// activated yet, oldest first.
type holding struct {
	sessions             int
	unactivated          int
	oldestNew, newestNew *Session
}

// admitLocked makes room for a session of o, or says why there is none. An owner that
// holds its share gets BadTooManySessions. A full table first gives up a session nobody
// has activated (Part 4 §5.6.2: to protect itself against misbehaving clients and denial
// of service, a server closes the oldest unactivated session before it refuses a new
// one), then the sessions past their deadline; full of activated sessions within their
// timeouts, it refuses with BadTooManySessions.
//
// The session given up is the oldest unactivated one of o itself when it has one, else
// the oldest of the owner holding the most unactivated sessions: strictly the oldest in
// the table would let two flooding channels give up each other's sessions in turn until
// a legitimate client's, created between them, is the oldest and goes before its
// ActivateSession arrives.
func (t *Table) admitLocked(o owner.Owner) status.Code {
	h := t.owners[o]
	if t.perOwner > 0 && h != nil && h.sessions >= t.perOwner {
		return status.BadTooManySessions
	}
	if len(t.byToken) < t.max {
		return status.Good
	}
	if h == nil || h.oldestNew == nil {
		h = t.mostUnactivatedLocked()
	}
	if h != nil {
		t.evictLocked(h.oldestNew)
		return status.Good
	}
	t.expireLocked()
	if len(t.byToken) < t.max {
		return status.Good
	}
	return status.BadTooManySessions
}

// mostUnactivatedLocked returns the owner holding the most sessions not activated (the
// one whose oldest is older, of two holding as many), nil when every session is
// activated. It costs a pass over the owners, made only when the table is full and the
// client asking holds no unactivated session of its own.
func (t *Table) mostUnactivatedLocked() *holding {
	var best *holding
	for _, h := range t.owners {
		if h.unactivated == 0 {
			continue
		}
		if best == nil || h.unactivated > best.unactivated ||
			(h.unactivated == best.unactivated && h.oldestNew.created < best.oldestNew.created) {
			best = h
		}
	}
	return best
}

// evictLocked ends s, not activated, to make room: Aborted, or TimedOut when it was
// past its deadline anyway.
func (t *Table) evictLocked(s *Session) {
	t.deleteLocked(s)
	why := Aborted
	if !t.now().Before(t.deadlineLocked(s)) {
		why = TimedOut
	}
	t.changedLocked(s, Ended, why, true)
}

// holdLocked counts s, new, for o, at the new end of o's sessions not activated yet
// (unless it is activated, as a session a replay brings may be).
func (t *Table) holdLocked(s *Session, o owner.Owner) {
	s.owner = o
	h := t.owners[o]
	if h == nil {
		h = &holding{}
		t.owners[o] = h
	}
	h.sessions++
	if s.rec.Activated {
		return
	}
	h.unactivated++
	s.older = h.newestNew
	if h.newestNew != nil {
		h.newestNew.newer = s
	} else {
		h.oldestNew = s
	}
	h.newestNew = s
}

// activatedLocked takes s, just activated for the first time, off its owner's list of
// sessions not activated; a session that held the share of its channel now holds its
// own.
func (t *Table) activatedLocked(s *Session) {
	t.unlinkLocked(s)
	if s.owner.Kind == owner.Channel {
		t.dropLocked(s)
		t.holdLocked(s, owner.OfSession(s.rec.SessionID))
	}
}

// releaseLocked gives up what s, ending, held.
func (t *Table) releaseLocked(s *Session) {
	t.unlinkLocked(s)
	t.dropLocked(s)
}

// dropLocked stops counting s, off the list, for its owner.
func (t *Table) dropLocked(s *Session) {
	h := t.owners[s.owner]
	if h == nil {
		return
	}
	if h.sessions--; h.sessions == 0 {
		delete(t.owners, s.owner)
	}
}

// unlinkLocked takes s off its owner's list of sessions not activated, if it is on it.
func (t *Table) unlinkLocked(s *Session) {
	h := t.owners[s.owner]
	if h == nil || (s.older == nil && h.oldestNew != s) {
		return // not on the list
	}
	h.unactivated--
	if s.older != nil {
		s.older.newer = s.newer
	} else {
		h.oldestNew = s.newer
	}
	if s.newer != nil {
		s.newer.older = s.older
	} else {
		h.newestNew = s.older
	}
	s.older, s.newer = nil, nil
}

// Owner is who holds the session's share of the table. It is for observers of the
// table's changes, which run under its lock.
func (s *Session) Owner() owner.Owner { return s.owner }

// Owned returns the number of sessions o holds.
func (t *Table) Owned(o owner.Owner) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.owners[o]; h != nil {
		return h.sessions
	}
	return 0
}
