package session

import (
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
)

// Memory is a channel's memory of the session its requests named last, kept on the
// channel for its reading goroutine. While the session's epoch stays, the next request
// naming it is answered from here: no table lock, which every channel's goroutines would
// otherwise take for every request, and no map. The zero Memory remembers nothing; a
// Memory is used by one goroutine at a time.
type Memory struct {
	token     codec.NodeId
	s         *Session
	epoch     uint64
	principal nodemgr.Principal
}

// Session returns the session m remembers, nil for none. A caller that keeps state per
// session beside m compares it to know when to refill that state.
func (m *Memory) Session() *Session { return m.s }

// remembered returns the session m holds for token while its epoch stays, else nil.
func (m *Memory) remembered(token codec.NodeId) *Session {
	if m.s == nil || m.s.epoch.Load() != m.epoch || token != m.token {
		return nil
	}
	return m.s
}

// PrincipalAt returns who the activated session of token is, at time now, with the
// checks of Active. m is the memory of the channel the request was read on: a request
// naming the session it remembers is answered from there, without the table's lock, and
// any other refills it (or clears it, when the checks fail). The Principal returned lives
// in m: it is valid, and must not be modified, until m's next use.
func (t *Table) PrincipalAt(token codec.NodeId, channelID uint32, now time.Time, m *Memory) (*nodemgr.Principal, status.Code) {
	if s := m.remembered(token); s != nil {
		// The timeout checked in seen's own units: this runs for every request.
		if at := t.since(now); time.Duration(at-s.seen.Load()) <= s.timeout {
			s.touch(at)
			return &m.principal, status.Good
		}
	}
	code := t.activeAt(token, channelID, now, func(s *Session) status.Code {
		*m = Memory{token: token, s: s, epoch: s.epoch.Load(), principal: s.rec.Identity}
		return status.Good
	})
	if code != status.Good {
		*m = Memory{}
		return nil, code
	}
	return &m.principal, status.Good
}
