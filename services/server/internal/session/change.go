package session

import (
	"fmt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/telemetry"
)

// Kind is what happened to a session.
type Kind uint8

const (
	// Created: CreateSession made the session; it is not activated yet.
	Created Kind = iota + 1
	// Activated: ActivateSession bound it to a channel and a user, with a new server
	// nonce.
	Activated
	// Ended: the session is gone (Change.End says why).
	Ended
)

// End is why a session ended (Part 5 §12.9 counts timeouts and aborts).
type End uint8

const (
	// Closed by CloseSession.
	Closed End = iota + 1
	// TimedOut: no request named it within its timeout.
	TimedOut
	// Aborted: the server dropped it, as when CreateSession failed after making it.
	Aborted
	// Moved: another server of the redundant set took it over (Part 4 §6.6.2); it goes
	// on there, with its subscriptions.
	Moved
)

// Change is one change of the session table, as observers see it.
type Change struct {
	Kind Kind
	// Record is the session after the change (before it, for Ended).
	Record Record
	// End and DeleteSubscriptions say how an Ended session ended: a timeout leaves its
	// subscriptions to their lifetime (Part 4 §5.13.7: they may still be transferred);
	// CloseSession says whether to delete them.
	End                 End
	DeleteSubscriptions bool
	// Session is the live session, for observers in this process that read its times
	// (LastSeen). It is nil in a replayed change and must not be kept past Ended.
	Session *Session
}

// changeVersion is the first byte of an encoded Change.
const changeVersion = 1

var errVersion = fmt.Errorf("session: unknown encoding version: %w", status.BadDecodingError)

// EncodeBinary appends c (without Session) to e.
func (c *Change) EncodeBinary(e *codec.Encoder) {
	e.Byte(changeVersion)
	e.Byte(byte(c.Kind))
	e.Byte(byte(c.End))
	e.Boolean(c.DeleteSubscriptions)
	c.Record.EncodeBinary(e)
}

// DecodeBinary reads c as EncodeBinary wrote it; errors stick in d.
func (c *Change) DecodeBinary(d *codec.Decoder) {
	if v := d.Byte(); d.Err() == nil && v != changeVersion {
		d.Fail(errVersion)
		return
	}
	c.Kind, c.End = Kind(d.Byte()), End(d.Byte())
	c.DeleteSubscriptions = d.Boolean()
	c.Record.DecodeBinary(d)
	c.Session = nil
	if d.Err() == nil && (c.Kind < Created || c.Kind > Ended || c.End > Moved || (c.Kind == Ended) != (c.End != 0)) {
		d.Fail(fmt.Errorf("session: change kind %d, end %d: %w", c.Kind, c.End, status.BadDecodingError))
	}
}

// Observe adds fn to the observers of the table's changes. Observers are called in the
// order of the changes, with the table locked, so that they see every change once and in
// order: fn must be quick and must not call back into the table (it may take locks that
// are never held while calling the table). Add observers before the server serves.
func (t *Table) Observe(fn func(*Change)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observers = append(t.observers, fn)
}

// changedLocked tells the observers of a change of s.
func (t *Table) changedLocked(s *Session, kind Kind, end End, deleteSubscriptions bool) {
	if len(t.observers) == 0 {
		return
	}
	c := &Change{Kind: kind, Record: s.rec, End: end, DeleteSubscriptions: deleteSubscriptions, Session: s}
	for _, fn := range t.observers {
		t.tell(fn, c)
	}
}

// tell hands c to one observer; one that panics is reported, and the table goes on.
func (t *Table) tell(fn func(*Change), c *Change) {
	defer t.panics.Recover(telemetry.PlaceObserver)
	fn(c)
}

// Apply makes the change c in the table, as a table that had made it itself: a
// Created session is added, an Activated one updated, an Ended one removed. It is how a
// table follows another's stream (a replay, a mirror). The observers are told, as for
// any change. A change that does not fit (a session created twice, activated or ended
// while unknown) is an error and changes nothing.
func (t *Table) Apply(c *Change) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	key, ok := TokenKey(c.Record.AuthenticationToken)
	if !ok {
		return fmt.Errorf("session: apply: authentication token %v: %w", c.Record.AuthenticationToken, status.BadSessionIdInvalid)
	}
	s := t.byToken[key]
	switch c.Kind {
	case Created:
		if s != nil {
			return fmt.Errorf("session: apply: %v created twice: %w", c.Record.SessionID, status.BadSessionIdInvalid)
		}
		s = t.newSessionLocked(c.Record, nil)
		t.byToken[key] = s
		t.holdLocked(s, ownerOf(s.rec.ChannelID, s.rec.Activated, s.cert, s.rec.SessionID))
		t.armLocked(t.deadlineLocked(s))
	case Activated:
		if s == nil || s.rec.AuthenticationToken != c.Record.AuthenticationToken {
			return fmt.Errorf("session: apply: %v activated while unknown: %w", c.Record.SessionID, status.BadSessionIdInvalid)
		}
		first := !s.rec.Activated && c.Record.Activated
		s.setRecordLocked(c.Record)
		if first {
			t.activatedLocked(s)
		}
		s.epoch.Add(1)
	case Ended:
		if s == nil || s.rec.AuthenticationToken != c.Record.AuthenticationToken {
			return fmt.Errorf("session: apply: %v ended while unknown: %w", c.Record.SessionID, status.BadSessionIdInvalid)
		}
		t.deleteLocked(s)
	default:
		return fmt.Errorf("session: apply: change kind %d: %w", c.Kind, status.BadDecodingError)
	}
	t.changedLocked(s, c.Kind, c.End, c.DeleteSubscriptions)
	return nil
}
