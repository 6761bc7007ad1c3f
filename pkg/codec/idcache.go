package codec

import "hash/maphash"

// idCache holds the NodeId identifiers (String, Guid and Opaque) a Decoder produced
// recently, so that one seen again is returned without a new copy: a session's
// authentication token arrives in every request of a channel, and clients read the same
// nodes over and over. It is four-way set-associative: a set of four slots holds the last
// four identifiers that hashed to it, so that a working set of a few hundred identifiers
// rarely evicts itself, and its memory stays bounded by the slot count times maxCachedID.
// It starts small and doubles, up to its bound, when an identifier would evict another:
// most connections use a few identifiers, and a server holds thousands of connections,
// whose slots the garbage collector scans on every cycle.
type idCache struct {
	seed  maphash.Seed
	slots []string // len is a power of two, at least idWays; slots [4k, 4k+4) form a set
	max   int      // the bound of len(slots)
	// last is the identifier returned last, checked before hashing: on a server channel
	// the token that begins each request is the one the previous request began with.
	last string
}

// idFirstSlots is the slots an idCache starts with, at most.
const idFirstSlots = 16

// idWays is the number of slots of a set.
const idWays = 4

// maxCachedID is the longest identifier kept; longer ones are copied every time.
const maxCachedID = 64

// str returns b as a string, from the cache when an equal one is there.
func (c *idCache) str(b []byte) string {
	if c == nil || len(b) > maxCachedID {
		return string(b)
	}
	if c.last == string(b) { // the comparison does not copy b
		return c.last
	}
	h := maphash.Bytes(c.seed, b)
	set := c.set(h)
	for _, s := range set {
		if s == string(b) {
			c.last = s
			return s
		}
	}
	for set[idWays-1] != "" && len(c.slots) < c.max {
		c.grow()
		set = c.set(h)
	}
	s := string(b)
	copy(set[1:], set[:idWays-1]) // the oldest leaves
	set[0] = s
	c.last = s
	return s
}

// set returns the set of hash h.
func (c *idCache) set(h uint64) []string {
	i := h & uint64(len(c.slots)-idWays)
	return c.slots[i : i+idWays : i+idWays]
}

// grow doubles the slots and places the cached identifiers again, the newer of a set
// first as before.
func (c *idCache) grow() {
	old := c.slots
	c.slots = make([]string, 2*len(old))
	for i := 0; i < len(old); i += idWays {
		for j := i + idWays - 1; j >= i; j-- { // the oldest first, so the newest ends first
			if s := old[j]; s != "" {
				set := c.set(maphash.String(c.seed, s))
				copy(set[1:], set[:idWays-1])
				set[0] = s
			}
		}
	}
}

// CacheNodeIds makes d keep the identifiers of the String, Guid and Opaque NodeIds it
// decodes in a cache of up to about n entries (rounded up to a power of two), so that a NodeId
// decoded again shares the earlier string instead of allocating a new one. n <= 0 turns
// the cache off. The cache survives Reset; it is meant for a Decoder that one connection
// reuses for all its messages. Cached strings are copies, never the input buffer.
func (d *Decoder) CacheNodeIds(n int) {
	if n <= 0 {
		d.ids = nil
		return
	}
	size := idWays
	for size < n {
		size <<= 1
	}
	d.ids = &idCache{seed: maphash.MakeSeed(), slots: make([]string, min(size, idFirstSlots)), max: size}
}
