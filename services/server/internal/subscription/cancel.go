package subscription

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// CancelPublishes answers with code, and removes, the parked Publishes of session id for
// which match reports true (Cancel, Part 4 §5.6.5, names them by RequestHandle, which
// only the Responder knows). It returns how many it answered.
func (e *Engine) CancelPublishes(id codec.NodeId, match func(Responder) bool, code status.Code) int {
	var out []outgoing
	e.mu.Lock()
	if ss := e.sessions[id]; ss != nil {
		kept := ss.queue[:0]
		for _, p := range ss.queue {
			if match(p.r) {
				out = appendFault(out, p.r, code)
				continue
			}
			kept = append(kept, p)
		}
		clear(ss.queue[len(kept):])
		ss.queue = kept
	}
	e.mu.Unlock()
	e.send(out)
	return len(out)
}
