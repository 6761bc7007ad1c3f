package subscription

import (
	"math"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// Overflow is the InfoBits of a DataValue whose MonitoredItem queue lost values: InfoType
// DataValue (bit 10) with the Overflow bit (bit 7) (Part 4 §7.39, §5.12.1.5).
const Overflow status.Code = 0x0480

// Filter is a checked DataChangeFilter (Part 4 §7.22.2). A percent deadband arrives here
// converted to an absolute one over the node's EURange, so the engine compares one
// number.
type Filter struct {
	Trigger  ua.DataChangeTrigger
	Deadband float64 // absolute; 0 means none
}

// DefaultFilter is the filter of an item created without one: trigger StatusValue, no
// deadband.
var DefaultFilter = Filter{Trigger: ua.DataChangeTriggerStatusValue}

// ItemRequest is one MonitoredItem to create or modify, with what the server resolved
// from the address space. Sampling intervals are in milliseconds as on the wire.
type ItemRequest struct {
	Item             ua.ReadValueId
	Mode             ua.MonitoringMode
	ClientHandle     uint32
	SamplingInterval float64
	QueueSize        uint32
	DiscardOldest    bool
	Filter           Filter
	// Push means the node's value is pushed to Changed on every write: the item is
	// never sampled except once for its initial value.
	Push bool
	// MinSamplingInterval is the node's MinimumSamplingInterval (ms); 0 for none.
	MinSamplingInterval float64
	// Events, when set, makes this an event item on an EventNotifier attribute: it
	// is never sampled and queues the events Emit hands it (Part 4 §5.12.1).
	Events *EventFilter
}

// item is one MonitoredItem (Part 4 §5.12). Its fields are guarded by Engine.mu.
type item struct {
	id     uint32
	sub    *Subscription
	handle uint32
	rv     ua.ReadValueId
	key    codec.NodeId // rv.NodeId; indexes Engine.byNode for push items
	mode   ua.MonitoringMode
	push   bool
	ts     ua.TimestampsToReturn
	filter Filter

	interval    time.Duration // revised sampling interval
	nodeMin     float64       // the node's MinimumSamplingInterval (ms)
	discardOld  bool
	timer       timer // sampling timer of a sampled item
	sampling    bool  // a sample is in flight
	initialDone bool  // the first value (initial sample or first push) arrived

	// queue is a ring of the queued DataValues: head is the oldest, n how many are
	// queued. It holds what is queued, not what was asked for (grow, release): it starts
	// empty, doubles as values arrive up to size, the revised queue size, and is released
	// once drained when it grew beyond queueRetain. large says it did, so that it
	// restarts at queueRetain rather than at one value.
	queue   []codec.DataValue
	head, n int
	size    int
	large   bool

	last    codec.DataValue // the last value that passed the filter
	hasLast bool
	dirty   bool // on sub.dirty

	// triggers are the items this item triggers (SetTriggering), by id.
	triggers  []uint32
	triggered bool // a triggering item reported: report this Sampling item's queue

	events *eventQueue // an event item's queue and filter; n mirrors its length
}

// reviseQueue returns the revised queue size: 0 and 1 are 1, at most limit.
func reviseQueue(q, limit uint32) uint32 {
	return min(max(q, 1), limit)
}

// queueRetain is the most values a drained queue keeps room for: a queue that held
// more is released once drained, so that the memory of a burst goes back, and regrows
// from queueRetain when values come again. 16 DataValues are 1.4 KB.
const queueRetain = 16

// setQueue makes size the revised queue size, keeping the newest values that fit.
func (it *item) setQueue(size uint32) {
	it.size = int(size)
	if len(it.queue) <= it.size {
		return // it grows to the new size as values arrive
	}
	keep := min(it.n, it.size)
	var q []codec.DataValue
	if keep > 0 {
		q = make([]codec.DataValue, keep)
	}
	for i := range keep {
		q[i] = it.queue[(it.head+it.n-keep+i)%len(it.queue)]
	}
	it.queue, it.head, it.n = q, 0, keep
}

// grow doubles the ring, up to size, keeping the queued values in order.
func (it *item) grow() {
	c := 2 * len(it.queue)
	switch {
	case c > 0:
	case it.large:
		c = queueRetain
	default:
		c = 1
	}
	q := make([]codec.DataValue, min(c, it.size))
	for i := range it.n {
		q[i] = it.queue[(it.head+i)%len(it.queue)]
	}
	it.queue, it.head = q, 0
	if len(q) > queueRetain {
		it.large = true
	}
}

// enqueue adds dv to the queue (Part 4 §5.12.1.5), growing it while it holds fewer than
// size values: on a full queue of more than one value, discardOldest drops the oldest
// and flags the new oldest with Overflow, otherwise the newest is replaced and flagged. A
// queue of one always holds the newest value.
func (it *item) enqueue(dv *codec.DataValue) {
	switch {
	case it.n < it.size:
		if it.n == len(it.queue) {
			it.grow()
		}
		it.queue[(it.head+it.n)%len(it.queue)] = *dv
		it.n++
	case it.size == 1:
		it.queue[it.head] = *dv
	case it.discardOld:
		// Full: len(it.queue) == it.size.
		it.sub.counters.queueOverflows++
		it.queue[it.head] = *dv // the oldest slot becomes the newest
		it.head = (it.head + 1) % len(it.queue)
		it.queue[it.head].Status |= Overflow
	default:
		it.sub.counters.queueOverflows++
		last := (it.head + it.n - 1) % len(it.queue)
		it.queue[last] = *dv
		it.queue[last].Status |= Overflow
	}
}

// dequeue takes the oldest queued value; the queue must not be empty. A queue drained
// by it that had grown beyond queueRetain is released.
func (it *item) dequeue() codec.DataValue {
	dv := it.queue[it.head]
	it.queue[it.head] = codec.DataValue{} // drop what it references
	it.head = (it.head + 1) % len(it.queue)
	it.n--
	if it.n == 0 {
		it.head = 0
		if len(it.queue) > queueRetain {
			it.queue = nil
		}
	}
	return dv
}

// clearQueue drops the queued values and releases the queue.
func (it *item) clearQueue() {
	if it.events != nil {
		it.events.clear()
	}
	it.queue, it.head, it.n = nil, 0, 0
}

// passes reports whether dv is a change the filter reports, compared with the last
// value that passed (Part 4 §7.22.2). scratch compares values that are not plain scalars.
func (it *item) passes(dv *codec.DataValue, cmp *comparer) bool {
	cmp.check(&dv.Value)
	if !it.hasLast {
		return true
	}
	if it.rv.AttributeId != uint32(attr.Value) {
		return dv.Status != it.last.Status || !cmp.equal(&dv.Value, &it.last.Value)
	}
	if dv.Status != it.last.Status {
		return true
	}
	if it.filter.Trigger == ua.DataChangeTriggerStatus {
		return false
	}
	if it.filter.Deadband > 0 {
		a, okA := numeric(&dv.Value)
		b, okB := numeric(&it.last.Value)
		if okA && okB {
			if math.Abs(a-b) > it.filter.Deadband {
				return true
			}
		} else if !cmp.equal(&dv.Value, &it.last.Value) {
			return true
		}
	} else if !cmp.equal(&dv.Value, &it.last.Value) {
		return true
	}
	return it.filter.Trigger == ua.DataChangeTriggerStatusValueTimestamp &&
		(dv.SourceTimestamp != it.last.SourceTimestamp || dv.SourcePicoseconds != it.last.SourcePicoseconds)
}

// numeric returns the value of a numeric scalar.
func numeric(v *codec.Variant) (float64, bool) {
	if v.IsArray() {
		return 0, false
	}
	b := v.Bits()
	switch v.Type() {
	case codec.TypeSByte:
		return float64(int8(b)), true
	case codec.TypeByte:
		return float64(uint8(b)), true
	case codec.TypeInt16:
		return float64(int16(b)), true
	case codec.TypeUInt16:
		return float64(uint16(b)), true
	case codec.TypeInt32:
		return float64(int32(b)), true
	case codec.TypeUInt32:
		return float64(uint32(b)), true
	case codec.TypeInt64:
		return float64(int64(b)), true
	case codec.TypeUInt64:
		return float64(b), true
	case codec.TypeFloat:
		return float64(math.Float32frombits(uint32(b))), true
	case codec.TypeDouble:
		return math.Float64frombits(b), true
	}
	return 0, false
}

// IsNumeric reports whether v is a numeric scalar, the values a deadband applies to.
func IsNumeric(v *codec.Variant) bool {
	_, ok := numeric(v)
	return ok
}

// comparer tells whether two Variants are equal. Scalars held unboxed compare by their
// bits and text; arrays and boxed scalars compare by their encodings, in two buffers that
// it keeps, so a steady comparison allocates nothing. It is used under Engine.mu.
type comparer struct {
	a, b codec.Encoder
	ba   []byte
	bb   []byte
}

func (c *comparer) equal(x, y *codec.Variant) bool {
	if x.Type() != y.Type() || x.IsArray() != y.IsArray() {
		return false
	}
	if !x.IsArray() && unboxed(x.Type()) {
		return x.Bits() == y.Bits() && x.Str() == y.Str()
	}
	c.a.Reset(c.ba[:0])
	c.a.Variant(x)
	c.b.Reset(c.bb[:0])
	c.b.Variant(y)
	c.ba, c.bb = c.a.Bytes(), c.b.Bytes()
	return string(c.ba) == string(c.bb)
}

// check encodes v when it may hold a Structure of another package (an ExtensionObject,
// alone or inside a Variant or DataValue), whose encoding runs that package's code: a
// value whose encoding panics must panic here, in a filter whose panic is recovered and
// answered for its item alone, and never reach a queue, where it would make every
// NotificationMessage that carries it fail to encode, with the other items' values.
// Other values cost a type switch.
func (c *comparer) check(v *codec.Variant) {
	switch v.Type() {
	case codec.TypeExtensionObject, codec.TypeVariant, codec.TypeDataValue:
		c.a.Reset(c.ba[:0])
		c.a.Variant(v)
		c.ba = c.a.Bytes()
	}
}

// unboxed reports whether a scalar of type t is held in a Variant's bits and text only.
func unboxed(t codec.TypeID) bool {
	switch t {
	case codec.TypeNull, codec.TypeBoolean, codec.TypeSByte, codec.TypeByte, codec.TypeInt16,
		codec.TypeUInt16, codec.TypeInt32, codec.TypeUInt32, codec.TypeInt64, codec.TypeUInt64,
		codec.TypeFloat, codec.TypeDouble, codec.TypeString, codec.TypeDateTime,
		codec.TypeStatusCode, codec.TypeXmlElement:
		return true
	}
	return false
}

// stamp applies TimestampsToReturn to a value about to be queued.
func stamp(dv *codec.DataValue, ts ua.TimestampsToReturn) {
	switch ts {
	case ua.TimestampsToReturnSource:
		dv.ServerTimestamp, dv.ServerPicoseconds = 0, 0
	case ua.TimestampsToReturnServer:
		dv.SourceTimestamp, dv.SourcePicoseconds = 0, 0
	case ua.TimestampsToReturnNeither:
		dv.ServerTimestamp, dv.ServerPicoseconds = 0, 0
		dv.SourceTimestamp, dv.SourcePicoseconds = 0, 0
	}
}
