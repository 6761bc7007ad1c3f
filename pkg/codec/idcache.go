package codec

import "hash/maphash"

// idCache holds the NodeId identifiers (String, Guid and Opaque) a Decoder produced
// recently, so that one seen again is returned without a new copy: a session's
// authentication token arrives in every request of a channel, and clients read the same
// nodes over and over. It is two-way set-associative: a pair of slots holds the last two
// identifiers that hashed to it, so its memory stays bounded by the slot count times
// maxCachedID.
type idCache struct {
	seed  maphash.Seed
	slots []string // len is a power of two, at least 2; slots 2k and 2k+1 form a set
}

// maxCachedID is the longest identifier kept; longer ones are copied every time.
const maxCachedID = 64

// str returns b as a string, from the cache when an equal one is there.
func (c *idCache) str(b []byte) string {
	if c == nil || len(b) > maxCachedID {
		return string(b)
	}
	i := maphash.Bytes(c.seed, b) & uint64(len(c.slots)-2)
	set := c.slots[i : i+2 : i+2]
	// The comparisons do not copy b.
	if set[0] == string(b) {
		return set[0]
	}
	if set[1] == string(b) {
		return set[1]
	}
	s := string(b)
	set[0], set[1] = s, set[0]
	return s
}

// CacheNodeIds makes d keep the identifiers of the String, Guid and Opaque NodeIds it
// decodes in a cache of about n entries (rounded up to a power of two), so that a NodeId
// decoded again shares the earlier string instead of allocating a new one. n <= 0 turns
// the cache off. The cache survives Reset; it is meant for a Decoder that one connection
// reuses for all its messages. Cached strings are copies, never the input buffer.
func (d *Decoder) CacheNodeIds(n int) {
	if n <= 0 {
		d.ids = nil
		return
	}
	size := 2
	for size < n {
		size <<= 1
	}
	d.ids = &idCache{seed: maphash.MakeSeed(), slots: make([]string, size)}
}
