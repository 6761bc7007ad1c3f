package admission

import (
	"testing"
	"time"
)

// FuzzLedger drives a Balanced-like ledger with acquisitions and releases chosen by the
// input and checks its books after each step: the units held are the sum of the charges
// given out, never above the capacity; the owners tracked are those holding charges,
// never more than the table allows; an owner never holds more than the owner limit; a
// refused charge changes nothing.
func FuzzLedger(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x90, 0x11, 0x22})
	f.Add([]byte{0x03, 0x43, 0x83, 0xc3, 0x13, 0x53, 0x93, 0xd3, 0xff, 0x80, 0x81})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const shared, ownerLimit, maxOwners = 12, 5, 6
		l := NewLedger(LedgerConfig{Stage: StageSession, Shared: shared, Owners: true, Bootstrap: 2, Reconnect: 2,
			OwnerLimit: ownerLimit, MaxOwners: maxOwners, Trusted: []int{1}, Now: func() time.Time { return time.Unix(0, 0) }})
		var held []Charge
		for _, op := range ops {
			if op&0x80 != 0 && len(held) > 0 {
				i := int(op&0x7f) % len(held)
				l.Release(held[i])
				held = append(held[:i], held[i+1:]...)
			} else {
				o := src(op & 0x07)
				if op&0x07 == 7 {
					o = Owner{Kind: OwnerTrusted, ID: 0}
				}
				class := Class(op >> 3 & 0x03 % uint8(classCount))
				before := l.Stats()
				c, _, ok := l.Acquire(o, class, 1)
				if ok {
					held = append(held, c)
				} else if after := l.Stats(); after.Used != before.Used || after.Owners != before.Owners {
					t.Fatalf("a refusal changed the books: %+v -> %+v", before, after)
				}
			}
			s := l.Stats()
			perOwner := map[Owner]int{}
			for _, c := range held {
				perOwner[c.owner] += int(c.n)
			}
			if s.Used != len(held) || s.Used > s.Capacity {
				t.Fatalf("used %d, charges %d, capacity %d", s.Used, len(held), s.Capacity)
			}
			if s.Owners != len(perOwner) || s.Owners > maxOwners {
				t.Fatalf("owners %d, holding %d", s.Owners, len(perOwner))
			}
			for o, n := range perOwner {
				if o.Kind != OwnerTrusted && n > ownerLimit {
					t.Fatalf("%v holds %d", o, n)
				}
				if l.Holds(o) != n {
					t.Fatalf("%v holds %d by the ledger, %d by the charges", o, l.Holds(o), n)
				}
			}
		}
	})
}
