package addrspace

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

// SetEventNotifier sets the EventNotifier attribute of the Object or View id, of
// namespace 0 or added at run time: the server turns on HistoryRead on the Server object
// when it keeps the history of its events (Part 11 §5.3). It reports false when there is
// no such node.
func (s *Space) SetEventNotifier(id codec.NodeId, bits ua.EventNotifierType) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.lookupLocked(id)
	if !ok || v.class() != ua.NodeClassObject && v.class() != ua.NodeClassView {
		return false
	}
	e := s.entries.add(id)
	e.notifier, e.notifierSet = uint8(bits), true
	return true
}
