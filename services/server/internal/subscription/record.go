package subscription

import (
	"cmp"
	"slices"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Records are the state of the engine as plain data: what another server needs to carry a
// subscription on (Part 4 §6.6.2, HotAndMirrored), apart from the timers, the heap, the
// parked Publishes and the value queues that run it. See RATIONALE.md, "State and
// machinery". Each record encodes with pkg/codec (EncodeBinary, DecodeBinary); an empty
// array decodes as nil, so a record and its decoded copy compare equal.

// Settings are the revised parameters a subscription runs with (Part 4 §5.13.2).
type Settings struct {
	PublishingInterval         time.Duration
	LifetimeCount              uint32
	MaxKeepAliveCount          uint32
	MaxNotificationsPerPublish uint32 // 0 is no limit
	Priority                   byte
}

// SubscriptionRecord is the state of one subscription.
type SubscriptionRecord struct {
	ID      uint32
	Session codec.NodeId // null while detached: its session ended without deleting it
	// Owner is who may take the subscription over (Transfer); "" is nobody.
	Owner              string
	Settings           Settings
	Enabled            bool   // publishing enabled
	NextSequenceNumber uint32 // of the next NotificationMessage
	Items              []ItemRecord
	// Retransmission is the NotificationMessages sent and not yet acknowledged, oldest
	// first (Part 4 §5.13.6).
	Retransmission []ua.NotificationMessage
}

// ItemRecord is the state of one monitored item (Part 4 §5.12).
type ItemRecord struct {
	ID           uint32
	ClientHandle uint32
	Item         ua.ReadValueId
	Mode         ua.MonitoringMode
	// SamplingInterval is the revised sampling interval; 0 for an event item.
	SamplingInterval time.Duration
	QueueSize        uint32 // revised
	DiscardOldest    bool
	Timestamps       ua.TimestampsToReturn
	Filter           Filter // of a data item
	// Events is the EventFilter of an event item as the client gave it; nil for a data
	// item. Apply compiles it again against the engine's EventTypes.
	Events *ua.EventFilter
	// Triggers are the items this item triggers (SetTriggering), in the order linked.
	Triggers []uint32
	// Push and MinSamplingInterval are what the server resolved at creation
	// (ItemRequest): the node's value is pushed to Changed; the node's
	// MinimumSamplingInterval in ms, 0 for none.
	Push                bool
	MinSamplingInterval float64
	// Queued are the events an event item holds and has not sent yet, oldest first,
	// without their ClientHandle; OverflowAt is one more than the place of the
	// EventQueueOverflow event among them, 0 for none.
	Queued     []ua.EventFieldList
	OverflowAt int32
}

// Snapshot returns the state of every subscription, by ID, with their items by ID. The
// records are copies the caller owns.
func (e *Engine) Snapshot() []SubscriptionRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshotLocked()
}

func (e *Engine) snapshotLocked() []SubscriptionRecord {
	out := make([]SubscriptionRecord, 0, len(e.subs))
	for _, s := range e.subs {
		out = append(out, s.recordLocked(true))
	}
	slices.SortFunc(out, func(a, b SubscriptionRecord) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// recordLocked describes s; with full, also its items and retransmission queue, copied.
func (s *Subscription) recordLocked(full bool) SubscriptionRecord {
	r := SubscriptionRecord{
		ID: s.id, Owner: s.owner, Settings: s.settings(), Enabled: s.enabled, NextSequenceNumber: s.seq,
	}
	if s.session != nil {
		r.Session = s.session.id
	}
	if !full {
		return r
	}
	if len(s.items) > 0 {
		r.Items = make([]ItemRecord, 0, len(s.items))
		for _, it := range s.items {
			ir := it.record()
			ir.Triggers = clip(ir.Triggers)
			if ir.Events != nil {
				ir.Events = cloneEventFilter(ir.Events)
			}
			ir.Queued = cloneFieldLists(ir.Queued)
			r.Items = append(r.Items, ir)
		}
		slices.SortFunc(r.Items, func(a, b ItemRecord) int { return cmp.Compare(a.ID, b.ID) })
	}
	if len(s.retrans) > 0 {
		r.Retransmission = make([]ua.NotificationMessage, len(s.retrans))
		for i, m := range s.retrans {
			r.Retransmission[i] = m.copy()
		}
	}
	return r
}

func (s *Subscription) settings() Settings {
	return Settings{PublishingInterval: s.interval, LifetimeCount: s.lifetime, MaxKeepAliveCount: s.maxKeep,
		MaxNotificationsPerPublish: s.maxNotif, Priority: s.priority}
}

// record describes it. Triggers and Events are shared with the item: the caller copies
// them to keep them.
func (it *item) record() ItemRecord {
	r := ItemRecord{
		ID: it.id, ClientHandle: it.handle, Item: it.rv, Mode: it.mode, SamplingInterval: it.interval,
		QueueSize: uint32(it.size), DiscardOldest: it.discardOld, Timestamps: it.ts, Filter: it.filter,
		Push: it.push, MinSamplingInterval: it.nodeMin,
	}
	if len(it.triggers) > 0 {
		r.Triggers = it.triggers
	}
	if it.events != nil {
		r.QueueSize = uint32(it.events.size)
		r.Events = it.events.filter.source
		if len(it.events.q) > 0 {
			r.Queued = it.events.q
			r.OverflowAt = int32(it.events.ovf + 1)
		}
	}
	return r
}

// clip copies ids, nil when empty.
func clip(ids []uint32) []uint32 {
	if len(ids) == 0 {
		return nil
	}
	return slices.Clone(ids)
}

// copy returns m as a NotificationMessage that shares nothing the pool reuses: the
// arrays are copied (their values are not changed once queued, so they are shared).
func (m *message) copy() ua.NotificationMessage {
	nm := ua.NotificationMessage{SequenceNumber: m.seq, PublishTime: m.publishTime}
	if m.ndata == 0 {
		return nm
	}
	nm.NotificationData = make([]codec.ExtensionObject, m.ndata)
	for i := range m.ndata {
		switch m.data[i].Value.(type) {
		case *ua.DataChangeNotification:
			var items []ua.MonitoredItemNotification
			if len(m.items) > 0 {
				items = slices.Clone(m.items)
			}
			nm.NotificationData[i].Value = &ua.DataChangeNotification{MonitoredItems: items}
		case *ua.EventNotificationList:
			var events []ua.EventFieldList
			if len(m.events) > 0 {
				events = slices.Clone(m.events)
			}
			nm.NotificationData[i].Value = &ua.EventNotificationList{Events: events}
		}
	}
	return nm
}

// cloneEventFilter returns a deep copy of f, made by encoding and decoding it, so that
// the engine keeps nothing of a request the transport may reuse. A filter that does not
// survive that (a body kept in a foreign encoding) is copied shallowly.
func cloneEventFilter(f *ua.EventFilter) *ua.EventFilter {
	var enc codec.Encoder
	f.EncodeBinary(&enc)
	c := new(ua.EventFilter)
	if enc.Err() == nil {
		d := codec.NewDecoder(enc.Bytes())
		c.DecodeBinary(d)
		if d.Err() == nil {
			return c
		}
	}
	*c = *f
	return c
}

// Minimum encoded sizes, which bound array lengths before anything is allocated.
const (
	minItemRecord = 68
	minMessage    = 16 // SequenceNumber, PublishTime, NotificationData length
)

// EncodeBinary appends s to e's buffer.
func (s *Settings) EncodeBinary(e *codec.Encoder) {
	e.Int64(int64(s.PublishingInterval))
	e.UInt32(s.LifetimeCount)
	e.UInt32(s.MaxKeepAliveCount)
	e.UInt32(s.MaxNotificationsPerPublish)
	e.Byte(s.Priority)
}

// DecodeBinary reads s; errors stick in d.
func (s *Settings) DecodeBinary(d *codec.Decoder) {
	s.PublishingInterval = time.Duration(d.Int64())
	s.LifetimeCount = d.UInt32()
	s.MaxKeepAliveCount = d.UInt32()
	s.MaxNotificationsPerPublish = d.UInt32()
	s.Priority = d.Byte()
}

// EncodeBinary appends r to e's buffer.
func (r *SubscriptionRecord) EncodeBinary(e *codec.Encoder) {
	e.UInt32(r.ID)
	e.NodeId(r.Session)
	e.String(r.Owner)
	r.Settings.EncodeBinary(e)
	e.Boolean(r.Enabled)
	e.UInt32(r.NextSequenceNumber)
	e.ArrayLength(len(r.Items), false)
	for i := range r.Items {
		r.Items[i].EncodeBinary(e)
	}
	e.ArrayLength(len(r.Retransmission), false)
	for i := range r.Retransmission {
		r.Retransmission[i].EncodeBinary(e)
	}
}

// DecodeBinary reads r, overwriting every field; errors stick in d.
func (r *SubscriptionRecord) DecodeBinary(d *codec.Decoder) {
	r.ID = d.UInt32()
	r.Session = d.NodeId()
	r.Owner = d.String()
	r.Settings.DecodeBinary(d)
	r.Enabled = d.Boolean()
	r.NextSequenceNumber = d.UInt32()
	r.Items = nil
	if n := d.ArrayLength(minItemRecord); n > 0 {
		r.Items = make([]ItemRecord, n)
		for i := range r.Items {
			r.Items[i].DecodeBinary(d)
		}
	}
	r.Retransmission = nil
	if n := d.ArrayLength(minMessage); n > 0 {
		r.Retransmission = make([]ua.NotificationMessage, n)
		for i := range r.Retransmission {
			r.Retransmission[i].DecodeBinary(d)
		}
	}
}

// EncodeBinary appends r to e's buffer.
func (r *ItemRecord) EncodeBinary(e *codec.Encoder) {
	e.UInt32(r.ID)
	e.UInt32(r.ClientHandle)
	r.Item.EncodeBinary(e)
	e.Int32(int32(r.Mode))
	e.Int64(int64(r.SamplingInterval))
	e.UInt32(r.QueueSize)
	e.Boolean(r.DiscardOldest)
	e.Int32(int32(r.Timestamps))
	e.Int32(int32(r.Filter.Trigger))
	e.Double(r.Filter.Deadband)
	e.Boolean(r.Events != nil)
	if r.Events != nil {
		r.Events.EncodeBinary(e)
	}
	encodeIDs(e, r.Triggers)
	e.Boolean(r.Push)
	e.Double(r.MinSamplingInterval)
	e.ArrayLength(len(r.Queued), false)
	for i := range r.Queued {
		encodeVariants(e, r.Queued[i].EventFields)
	}
	e.Int32(r.OverflowAt)
}

// DecodeBinary reads r, overwriting every field; errors stick in d.
func (r *ItemRecord) DecodeBinary(d *codec.Decoder) {
	r.ID = d.UInt32()
	r.ClientHandle = d.UInt32()
	r.Item.DecodeBinary(d)
	r.Mode = ua.MonitoringMode(d.Int32())
	r.SamplingInterval = time.Duration(d.Int64())
	r.QueueSize = d.UInt32()
	r.DiscardOldest = d.Boolean()
	r.Timestamps = ua.TimestampsToReturn(d.Int32())
	r.Filter.Trigger = ua.DataChangeTrigger(d.Int32())
	r.Filter.Deadband = d.Double()
	r.Events = nil
	if d.Boolean() {
		r.Events = new(ua.EventFilter)
		r.Events.DecodeBinary(d)
	}
	r.Triggers = decodeIDs(d)
	r.Push = d.Boolean()
	r.MinSamplingInterval = d.Double()
	r.Queued = nil
	if n := d.ArrayLength(4); n > 0 {
		r.Queued = make([]ua.EventFieldList, n)
		for i := range r.Queued {
			r.Queued[i].EventFields = decodeVariants(d)
		}
	}
	r.OverflowAt = d.Int32()
	if d.Err() == nil && (r.OverflowAt < 0 || int(r.OverflowAt) > len(r.Queued)) {
		d.Fail(status.BadDecodingError)
	}
}

// cloneFieldLists copies queued events: the lists, not the Variants, which nobody
// changes.
func cloneFieldLists(q []ua.EventFieldList) []ua.EventFieldList {
	if len(q) == 0 {
		return nil
	}
	out := make([]ua.EventFieldList, len(q))
	for i := range q {
		out[i].EventFields = slices.Clone(q[i].EventFields)
	}
	return out
}

// encodeIDs writes an array of UInt32; nil and empty are the same.
func encodeIDs(e *codec.Encoder, ids []uint32) {
	e.ArrayLength(len(ids), false)
	for _, id := range ids {
		e.UInt32(id)
	}
}

// decodeIDs reads an array of UInt32, nil when empty or null.
func decodeIDs(d *codec.Decoder) []uint32 {
	n := d.ArrayLength(4)
	if n <= 0 {
		return nil
	}
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = d.UInt32()
	}
	return ids
}
