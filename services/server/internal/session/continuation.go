package session

import (
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// continuation is the rest of a Browse result held for BrowseNext (Part 4 §5.9.3).
type continuation struct {
	refs []ua.ReferenceDescription
	max  int
}

// SaveContinuation holds refs for BrowseNext, perNode of them per call, and returns the
// continuation point, or BadNoContinuationPoints when the session already holds max of
// them. It is for the fn of Table.Active, which holds the table's lock.
func (s *Session) SaveContinuation(refs []ua.ReferenceDescription, perNode, max int) ([]byte, status.Code) {
	if len(s.browse) >= max {
		return nil, status.BadNoContinuationPoints
	}
	cp := RandomBytes(16)
	s.browse[string(cp)] = &continuation{refs: refs, max: perNode}
	return cp, status.Good
}

// TakeContinuation removes the continuation point cp and returns the references it
// held and how many to return per call; ok is false for an unknown point. It is for the
// fn of Table.Active.
func (s *Session) TakeContinuation(cp []byte) (refs []ua.ReferenceDescription, perNode int, ok bool) {
	c, ok := s.browse[string(cp)]
	if !ok {
		return nil, 0, false
	}
	delete(s.browse, string(cp))
	return c.refs, c.max, true
}

// ID is the session's SessionId, for the fn of Table.Active.
func (s *Session) ID() codec.NodeId { return s.rec.SessionID }

// Timeout is the session's revised timeout, for the fn of Table.Active.
func (s *Session) Timeout() time.Duration { return s.timeout }
