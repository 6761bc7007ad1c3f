package addrspace

import "uastack.dev/pkg/codec"

// Computed reports whether the Value of id comes from a ValueFunc. Such values change
// without a write, so OnChange never reports them and monitored items sample them.
func (s *Space) Computed(id codec.NodeId) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.entries.get(id)
	return e != nil && e.source != nil
}
