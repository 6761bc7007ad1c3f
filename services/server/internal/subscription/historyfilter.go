package subscription

import "uastack.dev/pkg/codec"

// Select runs f on ev for a history read of events (Part 11 §6.5.2): the selected
// fields when ev passes the where clause. It is safe for concurrent use: each call
// compares with its own buffers.
func (f *EventFilter) Select(ev *Event) ([]codec.Variant, bool) {
	var cmp comparer
	if !f.where.matches(ev, f.types, &cmp) {
		return nil, false
	}
	return f.fields(ev), true
}
