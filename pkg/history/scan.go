package history

import (
	"encoding/binary"
	"math"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Key orders the entries of one node: SourceTimestamp (or event Time), then the order
// they were stored in.
type Key struct {
	Time codec.DateTime
	Seq  uint64
}

// Less reports whether k sorts before o.
func (k Key) Less(o Key) bool { return k.Time < o.Time || k.Time == o.Time && k.Seq < o.Seq }

// Item is one entry of a series at its key.
type Item[T any] struct {
	Key Key
	V   T
}

// Stored is a value as a store keeps it: the DataValue and, for a modified value, how
// it was modified.
type Stored struct {
	Value codec.DataValue
	Mod   ua.ModificationInfo
}

// Cursor walks one series of a store (a node's raw or modified values, a notifier's
// events) in key order; the entry is nil past either end. The entry is the cursor's (a
// store may hand out its own memory, or reuse one entry for the next): valid until the
// cursor moves, and never written to. Handing out a pointer spares a read a copy of
// each value at every step between the store and the answer. Stores implement it over their
// own iterators so that Scan and ScanEvents answer reads the same way for all of them.
type Cursor[T any] interface {
	// SeekGE moves to the first entry at or after k.
	SeekGE(k Key) *Item[T]
	// SeekLT moves to the last entry before k.
	SeekLT(k Key) *Item[T]
	Next() *Item[T]
	Prev() *Item[T]
}

// step turns a Cursor's answer into an entry and whether there is one.
func step[T any](it *Item[T]) (*Item[T], bool) { return it, it != nil }

// Counter is an optional capability of a Cursor that can tell cheaply how many entries
// lie between two times (in either order; 0 for an open end), so that a read makes
// room for its values once.
type Counter interface {
	Count(start, end codec.DateTime) int
}

// Scan answers q over the series c walks: q's raw values, or its modified values when
// q.Modified (then c must walk those).
func Scan(c Cursor[Stored], q *RawRead) RawResult {
	missing := func(t codec.DateTime) Stored {
		return Stored{Value: codec.DataValue{Status: status.BadBoundNotFound, SourceTimestamp: t}}
	}
	var r RawResult
	var page *[]codec.DataValue // the scratch the values gather in, without a Counter
	if k, ok := c.(Counter); ok {
		hint := k.Count(q.Start, q.End) + 2 // and the bounds
		if q.Max > 0 {
			hint = min(hint, q.Max)
		}
		r.Values = make([]codec.DataValue, 0, hint)
	} else {
		page = pages.Get().(*[]codec.DataValue)
		r.Values = (*page)[:0]
	}
	add := func(v Stored) { r.Values = append(r.Values, v.Value) }
	if q.Modified {
		add = func(v Stored) {
			r.Values = append(r.Values, v.Value)
			r.Modifications = append(r.Modifications, v.Mod)
		}
	}
	r.Next, r.Status = scan(c, q.Start, q.End, q.Max, q.Bounds && !q.Modified, q.Position, missing, add)
	if page != nil {
		// The answer gets a copy of its own size, made once: grown by doubling, a page of
		// thousands of values was allocated and copied about twice over, with the
		// collector's write barriers on every copy.
		got := r.Values
		r.Values = nil
		if len(got) > 0 {
			r.Values = append(make([]codec.DataValue, 0, len(got)), got...)
		}
		clear(got)
		if cap(got) <= maxPage {
			*page = got[:0]
			pages.Put(page)
		}
	}
	if len(r.Values) == 0 {
		r.Values = nil
	}
	return r
}

// pages are the scratch slices of reads from stores without a Counter; one grown past
// maxPage values goes to the collector instead.
var pages = sync.Pool{New: func() any { return new([]codec.DataValue) }}

const maxPage = 1 << 16

// ScanEvents answers q over the events c walks.
func ScanEvents(c Cursor[Event], q *EventRead) EventResult {
	var r EventResult
	r.Next, r.Status = scan(c, q.Start, q.End, q.Max, false, q.Position, nil, func(ev Event) { r.Events = append(r.Events, ev) })
	return r
}

// Positions: a version byte, flags, and the key of the next entry to return.
const (
	positionVersion = 1
	positionLen     = 18
	flagReverse     = 1 // the read goes newest first
	flagBoundOnly   = 2 // only the end bound remains
)

func encodePosition(k Key, flags byte) []byte {
	b := make([]byte, positionLen)
	b[0], b[1] = positionVersion, flags
	binary.BigEndian.PutUint64(b[2:], uint64(k.Time))
	binary.BigEndian.PutUint64(b[10:], k.Seq)
	return b
}

func decodePosition(b []byte) (Key, byte, bool) {
	if len(b) != positionLen || b[0] != positionVersion || b[1]&^(flagReverse|flagBoundOnly) != 0 {
		return Key{}, 0, false
	}
	return Key{codec.DateTime(binary.BigEndian.Uint64(b[2:])), binary.BigEndian.Uint64(b[10:])}, b[1], true
}

// Reverse reports whether a read from start to end returns the newest values first
// (Part 11 §6.5.3.1: end before start, or only end given).
func Reverse(start, end codec.DateTime) bool {
	return end != 0 && (start == 0 || end < start)
}

// scan walks c from start towards end, handing add at most max entries (0: all), with
// the bounding entries when bounds (missing makes the one not found). It returns a
// position when entries remain. The code is GoodNoData when nothing was added.
func scan[T any](c Cursor[T], start, end codec.DateTime, max int, bounds bool, pos []byte, missing func(codec.DateTime) T, add func(T)) ([]byte, status.Code) {
	reverse := Reverse(start, end)
	var flags byte
	if reverse {
		flags = flagReverse
	}
	var (
		n         int // entries added
		from      Key
		resumed   bool
		boundOnly bool
	)
	put := func(v T) { add(v); n++ }
	if pos != nil {
		k, f, ok := decodePosition(pos)
		if !ok || f&flagReverse != flags {
			return nil, status.BadContinuationPointInvalid
		}
		from, resumed, boundOnly = k, true, f&flagBoundOnly != 0
	}
	full := func() bool { return max > 0 && n >= max }
	done := func(code status.Code) ([]byte, status.Code) {
		if n == 0 && code == status.Good {
			code = status.GoodNoData
		}
		return nil, code
	}
	var (
		it *Item[T]
		ok bool
	)
	if !reverse {
		lo, hi := start, end // lo included, hi not; hi 0: no end
		if lo == hi && lo != 0 {
			hi = lo + 1 // equal times read the values at that time
		}
		switch {
		case boundOnly:
		case resumed:
			it, ok = step(c.SeekGE(from))
		default:
			it, ok = step(c.SeekGE(Key{Time: lo}))
			if bounds && (!ok || it.Key.Time != lo) {
				if b, bok := step(c.SeekLT(Key{Time: lo})); bok {
					put(b.V)
				} else {
					put(missing(lo))
				}
				it, ok = step(c.SeekGE(Key{Time: lo}))
			}
		}
		if !boundOnly {
			for ok && (hi == 0 || it.Key.Time < hi) {
				if full() {
					return encodePosition(it.Key, flags), status.Good
				}
				put(it.V)
				it, ok = step(c.Next())
			}
		} else {
			it, ok = step(c.SeekGE(Key{Time: hi}))
		}
		if bounds && end != 0 && start != end {
			if full() {
				return encodePosition(Key{}, flags|flagBoundOnly), status.Good
			}
			if ok {
				put(it.V)
			} else {
				put(missing(hi))
			}
		}
		return done(status.Good)
	}
	top, bottom := start, end // top included, bottom not
	if start == 0 {
		top, bottom = end, 0 // only end given: backward from it, inclusive
	}
	after := Key{Time: top + 1}
	if top == math.MaxInt64 {
		after = Key{Time: top, Seq: math.MaxUint64}
	}
	switch {
	case boundOnly:
	case resumed:
		it, ok = step(c.SeekLT(Key{Time: from.Time, Seq: from.Seq + 1}))
		if from.Seq == math.MaxUint64 {
			it, ok = step(c.SeekLT(Key{Time: from.Time + 1}))
		}
	default:
		it, ok = step(c.SeekLT(after))
		if bounds && start != 0 && (!ok || it.Key.Time != top) {
			if b, bok := step(c.SeekGE(after)); bok {
				put(b.V)
			} else {
				put(missing(top))
			}
			it, ok = step(c.SeekLT(after))
		}
	}
	if !boundOnly {
		for ok && (bottom == 0 || it.Key.Time > bottom) {
			if full() {
				return encodePosition(it.Key, flags), status.Good
			}
			put(it.V)
			it, ok = step(c.Prev())
		}
	} else {
		it, ok = step(c.SeekLT(Key{Time: bottom + 1}))
	}
	if bounds && bottom != 0 {
		if full() {
			return encodePosition(Key{}, flags|flagBoundOnly), status.Good
		}
		if ok {
			put(it.V)
		} else {
			put(missing(bottom))
		}
	}
	return done(status.Good)
}
