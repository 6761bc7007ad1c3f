package subscription

import (
	"slices"
	"strconv"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/telemetry"
)

// ChangeKind names a change to the engine's state.
type ChangeKind byte

// The kinds of Change, and the fields of Change each one sets (besides Kind and
// Subscription).
const (
	// ChangeCreated: a subscription was created (Record; a new one has no items and
	// NextSequenceNumber 1) or restored (Follow's state, Apply: Record with its items and
	// retransmission queue).
	ChangeCreated ChangeKind = iota + 1
	// ChangeModified: ModifySubscription revised the parameters (Settings).
	ChangeModified
	// ChangePublishingMode: SetPublishingMode (Enabled).
	ChangePublishingMode
	// ChangeDeleted: the subscription and its items are gone. Status says why: Good
	// (DeleteSubscriptions), BadTimeout (its lifetime ended), BadSessionClosed (its
	// session ended deleting its subscriptions).
	ChangeDeleted
	// ChangeTransferred: TransferSubscriptions moved it to another session (Session,
	// Owner).
	ChangeTransferred
	// ChangeDetached: its session ended without deleting it; it waits for a transfer or
	// the end of its lifetime.
	ChangeDetached
	// ChangeItemsCreated: CreateMonitoredItems created Items (their records, in request
	// order).
	ChangeItemsCreated
	// ChangeItemsModified: ModifyMonitoredItems changed Items (their records after the
	// call).
	ChangeItemsModified
	// ChangeItemsDeleted: DeleteMonitoredItems deleted ItemIDs.
	ChangeItemsDeleted
	// ChangeMonitoringMode: SetMonitoringMode set Mode on ItemIDs.
	ChangeMonitoringMode
	// ChangeTriggering: SetTriggering left item Trigger with the links Links.
	ChangeTriggering
	// ChangeSent: Message is about to be sent; it joined the retransmission queue and the
	// next sequence number is the one after it. Observers see it before the response
	// leaves.
	ChangeSent
	// ChangeAcknowledged: a Publish acknowledged message Sequence.
	ChangeAcknowledged
	// ChangeDropped: message Sequence was pushed out of a full retransmission queue.
	ChangeDropped
	// ChangeEventQueued: event item Item queued the selected fields of an event (Event),
	// making room with an EventQueueOverflow event whose fields are Overflow when it did
	// (Part 4 §5.12.1.5). The message that takes the event (ChangeSent) takes it out of
	// the queue again.
	ChangeEventQueued
)

var kindNames = [...]string{
	ChangeCreated: "Created", ChangeModified: "Modified", ChangePublishingMode: "PublishingMode",
	ChangeDeleted: "Deleted", ChangeTransferred: "Transferred", ChangeDetached: "Detached",
	ChangeItemsCreated: "ItemsCreated", ChangeItemsModified: "ItemsModified", ChangeItemsDeleted: "ItemsDeleted",
	ChangeMonitoringMode: "MonitoringMode", ChangeTriggering: "Triggering", ChangeSent: "Sent",
	ChangeAcknowledged: "Acknowledged", ChangeDropped: "Dropped", ChangeEventQueued: "EventQueued",
}

// String names the kind as its constant does, without the prefix ("Sent").
func (k ChangeKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "ChangeKind(" + strconv.Itoa(int(k)) + ")"
}

// Change is one change to the state of a subscription, as plain data: Kind says which
// fields are set (see the ChangeKind constants); the others are zero. A Change handed to
// an observer is valid only during the call: its slices, Record and Message may belong
// to the engine, which reuses them. An observer that keeps one encodes it (EncodeBinary)
// or copies it.
type Change struct {
	Kind         ChangeKind
	Subscription uint32

	Record   *SubscriptionRecord // Created
	Settings Settings            // Modified
	Enabled  bool                // PublishingMode
	Status   status.Code         // Deleted: why
	Session  codec.NodeId        // Transferred: the new session
	Owner    string              // Transferred
	Items    []ItemRecord        // ItemsCreated, ItemsModified
	ItemIDs  []uint32            // ItemsDeleted, MonitoringMode
	Mode     ua.MonitoringMode   // MonitoringMode
	Trigger  uint32              // Triggering: the triggering item
	Links    []uint32            // Triggering: its links after the call
	Sequence uint32              // Acknowledged, Dropped
	// Message is the NotificationMessage of Sent; its SequenceNumber is the message's.
	Message  ua.NotificationMessage
	Item     uint32          // EventQueued
	Event    []codec.Variant // EventQueued: the selected fields
	Overflow []codec.Variant // EventQueued: the overflow event's fields, if one was made
}

// changeFormat is the first byte of an encoded Change: the layout below. A decoder
// refuses other values, so a node never applies a stream it does not understand.
const changeFormat = 2

// EncodeBinary appends c to e's buffer: the format, the kind, the subscription and the
// fields of the kind.
func (c *Change) EncodeBinary(e *codec.Encoder) {
	e.Byte(changeFormat)
	e.Byte(byte(c.Kind))
	e.UInt32(c.Subscription)
	switch c.Kind {
	case ChangeCreated:
		rec := c.Record
		if rec == nil {
			rec = &SubscriptionRecord{}
		}
		rec.EncodeBinary(e)
	case ChangeModified:
		c.Settings.EncodeBinary(e)
	case ChangePublishingMode:
		e.Boolean(c.Enabled)
	case ChangeDeleted:
		e.StatusCode(c.Status)
	case ChangeTransferred:
		e.NodeId(c.Session)
		e.String(c.Owner)
	case ChangeDetached:
	case ChangeItemsCreated, ChangeItemsModified:
		e.ArrayLength(len(c.Items), false)
		for i := range c.Items {
			c.Items[i].EncodeBinary(e)
		}
	case ChangeItemsDeleted:
		encodeIDs(e, c.ItemIDs)
	case ChangeMonitoringMode:
		e.Int32(int32(c.Mode))
		encodeIDs(e, c.ItemIDs)
	case ChangeTriggering:
		e.UInt32(c.Trigger)
		encodeIDs(e, c.Links)
	case ChangeSent:
		c.Message.EncodeBinary(e)
	case ChangeAcknowledged, ChangeDropped:
		e.UInt32(c.Sequence)
	case ChangeEventQueued:
		e.UInt32(c.Item)
		encodeVariants(e, c.Event)
		encodeVariants(e, c.Overflow)
	default:
		e.Fail(status.BadEncodingError)
	}
}

// encodeVariants writes vs as an array; nil and empty both as empty, which decodes as
// nil.
func encodeVariants(e *codec.Encoder, vs []codec.Variant) {
	e.ArrayLength(len(vs), false)
	for i := range vs {
		e.Variant(&vs[i])
	}
}

func decodeVariants(d *codec.Decoder) []codec.Variant {
	n := d.ArrayLength(1)
	if n <= 0 {
		return nil
	}
	vs := make([]codec.Variant, n)
	for i := range vs {
		d.Variant(&vs[i])
	}
	return vs
}

// DecodeBinary reads c, overwriting every field; errors stick in d. An unknown format or
// kind is BadDecodingError.
func (c *Change) DecodeBinary(d *codec.Decoder) {
	*c = Change{}
	if d.Byte() != changeFormat {
		d.Fail(status.BadDecodingError)
		return
	}
	c.Kind = ChangeKind(d.Byte())
	c.Subscription = d.UInt32()
	switch c.Kind {
	case ChangeCreated:
		c.Record = new(SubscriptionRecord)
		c.Record.DecodeBinary(d)
	case ChangeModified:
		c.Settings.DecodeBinary(d)
	case ChangePublishingMode:
		c.Enabled = d.Boolean()
	case ChangeDeleted:
		c.Status = d.StatusCode()
	case ChangeTransferred:
		c.Session = d.NodeId()
		c.Owner = d.String()
	case ChangeDetached:
	case ChangeItemsCreated, ChangeItemsModified:
		if n := d.ArrayLength(minItemRecord); n > 0 {
			c.Items = make([]ItemRecord, n)
			for i := range c.Items {
				c.Items[i].DecodeBinary(d)
			}
		}
	case ChangeItemsDeleted:
		c.ItemIDs = decodeIDs(d)
	case ChangeMonitoringMode:
		c.Mode = ua.MonitoringMode(d.Int32())
		c.ItemIDs = decodeIDs(d)
	case ChangeTriggering:
		c.Trigger = d.UInt32()
		c.Links = decodeIDs(d)
	case ChangeSent:
		c.Message.DecodeBinary(d)
	case ChangeAcknowledged, ChangeDropped:
		c.Sequence = d.UInt32()
	case ChangeEventQueued:
		c.Item = d.UInt32()
		c.Event = decodeVariants(d)
		c.Overflow = decodeVariants(d)
	default:
		d.Fail(status.BadDecodingError)
	}
}

// observer is a function registered with Observe or Follow.
type observer struct {
	id uint64
	fn func(Change)
}

// Observe calls fn with every later change to the engine's state, in the order the
// changes happen, until stop is called. fn runs with the engine's lock held, on the
// goroutine that made the change (a service call, Publish, or the timer goroutine): it
// must return quickly, must not block (no I/O, no send on a channel that may be full),
// must not call the Engine (not even stop), and must copy or encode what it keeps of
// the Change. With no observer a change costs one length check. Safe for concurrent
// use; stop may be called more than once, not from fn.
func (e *Engine) Observe(fn func(Change)) (stop func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observeLocked(fn)
}

// Follow is Observe preceded by the current state: under one hold of the lock, fn gets a
// ChangeCreated with the full record of every subscription (by ID), then every later
// change. Applying what fn gets to an empty engine keeps that engine equal to this one.
func (e *Engine) Follow(fn func(Change)) (stop func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.snapshotLocked() {
		fn(Change{Kind: ChangeCreated, Subscription: r.ID, Record: &r})
	}
	return e.observeLocked(fn)
}

func (e *Engine) observeLocked(fn func(Change)) func() {
	e.lastObserver++
	id := e.lastObserver
	e.observers = append(e.observers, observer{id: id, fn: fn})
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for i, o := range e.observers {
			if o.id == id {
				e.observers = slices.Delete(e.observers, i, i+1)
				return
			}
		}
	}
}

// notifyLocked hands c to the observers. Callers check len(e.observers) first, so that
// building c costs nothing without observers. An observer that panics is reported, and
// the others get c.
func (e *Engine) notifyLocked(c Change) {
	for _, o := range e.observers {
		e.tell(o.fn, c)
	}
}

// tell hands c to one observer.
func (e *Engine) tell(fn func(Change), c Change) {
	defer e.panics.Recover(telemetry.PlaceObserver)
	fn(c)
}
