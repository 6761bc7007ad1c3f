package subscription

import (
	"errors"
	"fmt"
	"sync"

	"uastack.dev/pkg/codec"
)

// ErrJournalFull is the error of a Journal that reached its bound and stopped recording.
var ErrJournalFull = errors.New("subscription: journal full")

// Journal records an engine's change stream, each Change encoded as it arrives, up to a
// bound in bytes; Replay applies what it holds to another engine. Start one with
// Engine.Follow(j.Record) to record the state and then every change, or with
// Engine.Observe(j.Record) on an engine that has no subscriptions yet.
//
// The bound is the caller's: a journal never holds more than maxBytes of encoded
// changes. One that would has a hole, and a stream with a hole replays into the wrong
// state, so it stops recording instead and reports ErrJournalFull; whoever owns it
// starts a new one with Follow. Safe for concurrent use.
type Journal struct {
	max int

	mu      sync.Mutex // guards buf, ends, err, enc, scratch
	buf     []byte     // the encoded changes, back to back
	ends    []int      // where each change ends in buf
	err     error
	enc     codec.Encoder
	scratch []byte
}

// NewJournal returns an empty journal that holds at most maxBytes of encoded changes.
func NewJournal(maxBytes int) *Journal { return &Journal{max: maxBytes} }

// Record encodes c into the journal. It is an observer (Engine.Observe, Engine.Follow):
// it copies what it needs before it returns.
func (j *Journal) Record(c Change) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	j.enc.Reset(j.scratch)
	c.EncodeBinary(&j.enc)
	b := j.enc.Bytes()
	j.scratch = b
	switch {
	case j.enc.Err() != nil:
		j.err = fmt.Errorf("subscription: journal: change %d (%v): %w", len(j.ends), c.Kind, j.enc.Err())
		return
	case len(j.buf)+len(b) > j.max:
		j.err = ErrJournalFull
		return
	}
	j.buf = append(j.buf, b...)
	j.ends = append(j.ends, len(j.buf))
}

// Len returns how many changes the journal holds.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.ends)
}

// Size returns how many bytes the journal's changes take.
func (j *Journal) Size() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.buf)
}

// Err returns ErrJournalFull once the journal stopped recording at its bound, the error
// of a change that did not encode, or nil.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Changes decodes the journal's changes, in order. They are the caller's. It fails when
// the journal stopped recording (Err) or a change does not decode.
func (j *Journal) Changes() ([]Change, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return nil, j.err
	}
	out := make([]Change, len(j.ends))
	var d codec.Decoder
	start := 0
	for i, end := range j.ends {
		d.Reset(j.buf[start:end])
		out[i].DecodeBinary(&d)
		if err := d.Err(); err != nil {
			return nil, fmt.Errorf("subscription: journal: change %d: %w", i, err)
		}
		if d.Remaining() != 0 {
			return nil, fmt.Errorf("subscription: journal: change %d: %d bytes left over", i, d.Remaining())
		}
		start = end
	}
	return out, nil
}

// Replay decodes the journal's changes and applies them, in order, to e (another engine
// than the one recorded; an empty one when the journal did not start with Follow). It
// stops at the first change that fails.
func (j *Journal) Replay(e *Engine) error {
	changes, err := j.Changes()
	if err != nil {
		return err
	}
	for i := range changes {
		if err := e.Apply(changes[i]); err != nil {
			return fmt.Errorf("subscription: journal: change %d: %w", i, err)
		}
	}
	return nil
}
