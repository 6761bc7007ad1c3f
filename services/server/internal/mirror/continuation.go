package mirror

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Browse continuation points are kept in <set>-browse, so that a client that moves to
// another server of the set goes on with BrowseNext there (Part 4 §6.6.2: browsing
// resumes). Each is one key, under its session's hash, with the session's timeout as
// its TTL; a server reads one only when BrowseNext names a point it does not hold.

// continuationKey is the key of continuation point cp of session in <set>-browse.
func continuationKey(session codec.NodeId, cp []byte) string {
	return hashOf(session) + "." + hex.EncodeToString(cp)
}

// ContinuationSaved queues continuation point cp of session, holding refs, perNode of
// them per BrowseNext. The caller answers the Browse after Sync.
func (m *Mirror) ContinuationSaved(session codec.NodeId, timeout time.Duration, cp []byte, refs []ua.ReferenceDescription, perNode int) {
	key := continuationKey(session, cp)
	e := codec.NewEncoder(make([]byte, 0, 64+96*len(refs)))
	e.UInt32(uint32(perNode))
	e.ArrayLength(len(refs), false)
	for i := range refs {
		refs[i].EncodeBinary(e)
	}
	if e.Err() != nil {
		return
	}
	h := nats.Header{}
	h.Set(jetstream.MsgTTLHeader, (timeout + sessionGrace).String())
	m.w.put(op{subject: "$KV." + m.cfg.Cluster + "-browse." + key, plain: e.Bytes(), seal: key, hdr: h})
}

// ContinuationTaken queues the removal of continuation point cp of session, used or
// released.
func (m *Mirror) ContinuationTaken(session codec.NodeId, cp []byte) {
	m.w.put(op{subject: "$KV." + m.cfg.Cluster + "-browse." + continuationKey(session, cp), hdr: purgeHeader()})
}

// purgeHeader marks a KV message that removes its key and its history.
func purgeHeader() nats.Header {
	h := rollup()
	h.Set("KV-Operation", "PURGE")
	return h
}

// Continuation reads continuation point cp of session from the set, for a BrowseNext on
// this server of a point another server made, and removes it there: ok is false when
// the set does not have it.
func (m *Mirror) Continuation(ctx context.Context, session codec.NodeId, cp []byte) (refs []ua.ReferenceDescription, perNode int, ok bool) {
	key := continuationKey(session, cp)
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	entry, err := m.browse.Get(ctx, key)
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
			m.log.Warn("mirror: reading a continuation point", "err", err)
		}
		return nil, 0, false
	}
	plain, err := m.open("continuation point", key, entry.Value())
	if err != nil {
		return nil, 0, false
	}
	refs, perNode, err = decodeContinuation(plain)
	if err != nil {
		return nil, 0, false
	}
	m.ContinuationTaken(session, cp)
	return refs, perNode, true
}

func decodeContinuation(b []byte) ([]ua.ReferenceDescription, int, error) {
	d := codec.NewDecoder(b)
	perNode := int(d.UInt32())
	var refs []ua.ReferenceDescription
	if n := d.ArrayLength(16); n > 0 {
		refs = make([]ua.ReferenceDescription, n)
		for i := range refs {
			refs[i].DecodeBinary(d)
		}
	}
	if d.Err() == nil && (d.Remaining() != 0 || perNode <= 0) {
		d.Fail(status.BadDecodingError)
	}
	return refs, perNode, d.Err()
}

// rollup is the header of a message that replaces every earlier one of its subject.
func rollup() nats.Header {
	h := nats.Header{}
	h.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	return h
}
