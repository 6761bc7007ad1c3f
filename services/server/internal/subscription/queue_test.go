package subscription

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// queueModel is a monitored item's queue as Part 4 §5.12.1.5 describes it, in a plain
// slice: the oracle the ring of item is checked against.
type queueModel struct {
	size       int
	discardOld bool
	vals       []float64
	overflow   []bool
}

func (m *queueModel) enqueue(v float64) {
	switch {
	case len(m.vals) < m.size:
		m.vals, m.overflow = append(m.vals, v), append(m.overflow, false)
	case m.size == 1:
		m.vals[0], m.overflow[0] = v, false
	case m.discardOld:
		m.vals, m.overflow = append(m.vals[1:], v), append(m.overflow[1:], false)
		m.overflow[0] = true
	default:
		m.vals[len(m.vals)-1], m.overflow[len(m.vals)-1] = v, true
	}
}

func (m *queueModel) dequeue() (float64, bool) {
	v, o := m.vals[0], m.overflow[0]
	m.vals, m.overflow = m.vals[1:], m.overflow[1:]
	return v, o
}

func (m *queueModel) resize(size int) {
	m.size = size
	if k := len(m.vals) - size; k > 0 {
		m.vals, m.overflow = m.vals[k:], m.overflow[k:]
	}
}

// FuzzItemQueue drives an item's queue and the model with the same operations (each
// byte one: enqueue, dequeue or a new queue size) and requires the same values with the
// same Overflow bits, a ring never longer than the revised size, and a drained ring no
// longer than queueRetain.
func FuzzItemQueue(f *testing.F) {
	f.Add(uint8(5), true, []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1})
	f.Add(uint8(5), false, []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1})
	f.Add(uint8(1), true, []byte{0, 0, 0, 1, 0, 1})
	f.Add(uint8(40), true, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0})
	f.Add(uint8(100), false, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc3, 0, 0, 0, 1, 0xff, 0, 0})
	f.Fuzz(func(t *testing.T, size uint8, discardOld bool, ops []byte) {
		if len(ops) > 4096 {
			ops = ops[:4096] // long enough to wrap, grow and release many times
		}
		it := &item{sub: &Subscription{}, discardOld: discardOld}
		it.setQueue(uint32(max(size, 1)))
		m := &queueModel{size: it.size, discardOld: discardOld}
		v := 0.0
		for _, op := range ops {
			switch {
			case op&3 == 0 || op&3 == 2:
				v++
				it.enqueue(&codec.DataValue{Value: codec.DoubleVariant(v)})
				m.enqueue(v)
			case op&3 == 1:
				if it.n == 0 {
					continue
				}
				dv := it.dequeue()
				want, ovf := m.dequeue()
				require.Equal(t, codec.DoubleVariant(want), dv.Value)
				require.Equal(t, ovf, dv.Status == Overflow, "overflow bit of %v", want)
				if it.n == 0 {
					require.LessOrEqual(t, len(it.queue), queueRetain, "a drained queue keeps at most queueRetain")
				}
			default: // ModifyMonitoredItems
				size := uint32(op>>2) + 1
				it.setQueue(size)
				m.resize(int(size))
			}
			// Plain comparisons: this runs per operation and per queued value.
			if it.n != len(m.vals) || len(it.queue) > it.size {
				t.Fatalf("%d values queued, %d in the model; ring of %d for size %d", it.n, len(m.vals), len(it.queue), it.size)
			}
			for i := range it.n {
				dv := &it.queue[(it.head+i)%len(it.queue)]
				if got, _ := dv.Value.Value().(float64); got != m.vals[i] || (dv.Status == Overflow) != m.overflow[i] {
					t.Fatalf("value %d is %v (status %v), the model's %v (overflow %v)", i, got, dv.Status, m.vals[i], m.overflow[i])
				}
			}
		}
	})
}

// TestQueueGrowsWithValues: items of QueueSize 1,000 hold no queue until values arrive,
// a queue doubles as they do (never past the revised size, which is what the client is
// told), and a Publish that drains a large queue releases it.
func TestQueueGrowsWithValues(t *testing.T) {
	l := testLimits()
	l.MaxQueueSize = 1000
	r := newRig(t, l)
	iv := 100 * time.Millisecond
	sub := r.create(iv, 10, 30)
	id := r.monitor(sub, 1, 1000, true, DefaultFilter)
	it := r.e.subs[sub].items[id]
	require.Equal(t, 1000, it.size)
	require.Empty(t, it.queue, "nothing is queued, nothing is held")
	res, _ := r.e.ModifyItems(r.ses, sub, ua.TimestampsToReturnBoth, []ItemModify{{ID: id, QueueSize: 1000, DiscardOldest: true, Filter: DefaultFilter}}, []status.Code{status.Good})
	require.Equal(t, uint32(1000), res[0].RevisedQueueSize)

	p := r.publish()
	r.advance(iv) // the initial value
	require.Len(t, p.got[0].items, 1)
	for v := 1.0; v <= 100; v++ {
		r.write(1, v)
	}
	require.Equal(t, 100, it.n)
	require.Equal(t, 128, len(it.queue), "doubled from one value to 128")
	p = r.publish()
	r.advance(iv)
	require.Len(t, p.got[0].items, 100)
	require.Empty(t, it.queue, "drained after a burst: released")

	// Values come again: the queue restarts at queueRetain, and fills to the revised size.
	r.write(1, 1)
	require.Equal(t, queueRetain, len(it.queue))
	for v := 2.0; v <= 1500; v++ {
		r.write(1, v)
	}
	require.Equal(t, 1000, it.n)
	require.Equal(t, 1000, len(it.queue))
	p = r.publish()
	r.advance(iv)
	require.Len(t, p.got[0].items, 1000)
	require.Equal(t, 501.0, p.got[0].items[0].Value.Value.Value())
	require.Equal(t, Overflow, p.got[0].items[0].Value.Status, "the oldest value flags the loss")
}
