package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// SubscriptionParams are the requested settings of a subscription (Part 4 §5.13.2) and
// where its notifications go. The server revises the numbers; Subscription.Revised
// returns what it granted.
type SubscriptionParams struct {
	// Interval is the publishing interval; zero means 1 s.
	Interval time.Duration
	// KeepAliveCount is how many empty intervals pass before a keep-alive; zero means 10.
	KeepAliveCount uint32
	// LifetimeCount is how many intervals without a Publish the server keeps the
	// subscription; zero means 100 keep-alive periods (it must be at least three).
	LifetimeCount uint32
	// MaxNotificationsPerPublish caps one message; zero is no limit.
	MaxNotificationsPerPublish uint32
	// Priority orders subscriptions of one session in the server.
	Priority byte
	// Disabled creates the subscription with publishing off (SetPublishingMode turns
	// it on).
	Disabled bool

	// Notify, if set, is called with each notification message, in sequence-number
	// order, on the subscription's own goroutine. It may block: that stalls only this
	// subscription's delivery (see Buffer).
	Notify func(*Notification)
	// C, if Notify is nil, receives the notifications instead (a blocking send on the
	// subscription's goroutine). One of Notify and C is required.
	C chan<- *Notification
	// Buffer bounds the messages waiting for Notify or C; zero means 256. When it is
	// full, the newest message is dropped and counted in Stats().Dropped: a slow
	// consumer never holds up the session's Publish loop or other subscriptions.
	Buffer int
}

// Notification is one NotificationMessage of a subscription (Part 4 §7.21): data
// changes, events, or a status change. Keep-alive messages are not delivered. The
// receiver owns it.
type Notification struct {
	// Subscription is the subscription it belongs to.
	Subscription *Subscription
	// SequenceNumber is the server's number of the message (Part 4 §7.21).
	SequenceNumber uint32
	// PublishTime is when the server sent it.
	PublishTime time.Time
	// DataChanges are the data change notifications, by ClientHandle.
	DataChanges []ua.MonitoredItemNotification
	// Events are the event notifications, by ClientHandle.
	Events []ua.EventFieldList
	// Status is the StatusChangeNotification's code (BadTimeout when the lifetime
	// ended, GoodSubscriptionTransferred when another session took it), or Good.
	Status status.Code
}

// SubscriptionStats counts what happened to a subscription's messages.
type SubscriptionStats struct {
	Delivered   uint64 // messages handed to Notify or C
	Dropped     uint64 // messages dropped because Buffer was full
	KeepAlives  uint64 // keep-alive messages received
	Republished uint64 // messages recovered with Republish
	Lost        uint64 // messages the server no longer had (BadMessageNotAvailable)
	Late        uint64 // times the subscription stayed silent past its keep-alive period
	Transferred uint64 // times it was moved to a new session (TransferSubscriptions)
	Recreated   uint64 // times it was created again, with its items, on a new session
}

// MonitorItem is a monitored item to create (Part 4 §5.12.2): by default the Value of
// Node, reported on change.
type MonitorItem struct {
	Node       codec.NodeId
	Attribute  attr.ID // zero means Value
	IndexRange string
	// Handle is the ClientHandle the notifications carry; zero means one is assigned.
	// Handles are kept when the item is created again after a reconnect.
	Handle uint32
	// SamplingInterval zero means the publishing interval (-1 on the wire); use
	// FastestSampling for the server's fastest.
	SamplingInterval time.Duration
	// QueueSize zero means 1.
	QueueSize uint32
	// DiscardNewest keeps the oldest values when the queue overflows (the default
	// discards the oldest).
	DiscardNewest bool
	// Filter is a DataChangeFilter (trigger and deadband); nil is the server's default
	// (status or value change).
	Filter *ua.DataChangeFilter
	// EventFilter monitors events of Node (Attribute becomes EventNotifier).
	EventFilter *ua.EventFilter
}

// FastestSampling asks for the server's fastest sampling interval (0 on the wire).
const FastestSampling = time.Duration(-1)

// MonitoredItem is the server's answer for one MonitorItem.
type MonitoredItem struct {
	Handle                  uint32
	ID                      uint32
	Status                  status.Code
	RevisedSamplingInterval time.Duration
	RevisedQueueSize        uint32
}

// item is a monitored item as created, kept to create it again on another session.
type item struct {
	req ua.MonitoredItemCreateRequest
	id  uint32
}

// Subscription is a subscription of the client's session. Its methods are safe for
// concurrent use. It survives reconnects: on a re-activated session it continues and
// missing messages are fetched with Republish; on a new session it is transferred
// (TransferSubscriptions) or, failing that, created again with its monitored items.
type Subscription struct {
	c      *Client
	params SubscriptionParams
	q      chan *Notification
	done   chan struct{}

	mu        sync.Mutex // guards the fields below
	id        uint32
	revised   SubscriptionParams
	enabled   bool
	items     map[uint32]*item // by ClientHandle
	next      uint32           // sequence number expected next
	horizon   uint32           // one past the highest sequence number known to exist
	pending   map[uint32]*ua.NotificationMessage
	repairing bool
	late      bool // silent past its keep-alive period; cleared by the next message
	lastHeard time.Time
	deleted   bool
	stats     SubscriptionStats
}

// Subscribe creates a subscription (Part 4 §5.13.2) and starts the session's Publish
// loop if it is not running.
func (c *Client) Subscribe(ctx context.Context, p SubscriptionParams) (*Subscription, error) {
	if p.Notify == nil && p.C == nil {
		return nil, errors.New("client: Subscribe: Notify or C is required")
	}
	if p.Interval <= 0 {
		p.Interval = time.Second
	}
	if p.KeepAliveCount == 0 {
		p.KeepAliveCount = 10
	}
	if p.LifetimeCount == 0 {
		p.LifetimeCount = 100 * p.KeepAliveCount
	}
	if p.Buffer <= 0 {
		p.Buffer = 256
	}
	s := &Subscription{c: c, params: p, q: make(chan *Notification, p.Buffer), done: make(chan struct{}),
		items: make(map[uint32]*item), pending: make(map[uint32]*ua.NotificationMessage)}
	if err := s.create(ctx); err != nil {
		return nil, err
	}
	go s.deliver()
	c.publisher().add(s)
	return s, nil
}

// create runs CreateSubscription and resets the sequence tracking for the new id.
func (s *Subscription) create(ctx context.Context) error {
	p := s.params
	req := &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: float64(p.Interval) / float64(time.Millisecond),
		RequestedLifetimeCount:      p.LifetimeCount,
		RequestedMaxKeepAliveCount:  p.KeepAliveCount,
		MaxNotificationsPerPublish:  p.MaxNotificationsPerPublish,
		PublishingEnabled:           !p.Disabled,
		Priority:                    p.Priority,
	}
	r, err := do[*ua.CreateSubscriptionResponse](s.c, ctx, "CreateSubscription", &req.RequestHeader, req, false)
	if err != nil {
		return err
	}
	if err := check("CreateSubscription", &r.ResponseHeader); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id = r.SubscriptionId
	s.revised = p
	s.revised.Interval = time.Duration(r.RevisedPublishingInterval * float64(time.Millisecond))
	s.revised.KeepAliveCount, s.revised.LifetimeCount = r.RevisedMaxKeepAliveCount, r.RevisedLifetimeCount
	s.enabled = !p.Disabled
	s.next, s.horizon = 1, 1
	clear(s.pending)
	s.lastHeard = time.Now()
	return nil
}

// ID returns the server's SubscriptionId; it changes when the subscription is created
// again after a reconnect.
func (s *Subscription) ID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Revised returns the settings the server granted (Interval, KeepAliveCount,
// LifetimeCount).
func (s *Subscription) Revised() SubscriptionParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revised
}

// Stats returns the subscription's counters.
func (s *Subscription) Stats() SubscriptionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Monitor creates monitored items in Reporting mode (Part 4 §5.12.2). Per-item results
// are in the answer; the error is for the call as a whole. Items the server accepted
// are created again, with the same handles, if the subscription has to be recreated.
func (s *Subscription) Monitor(ctx context.Context, items ...MonitorItem) ([]MonitoredItem, error) {
	reqs := make([]ua.MonitoredItemCreateRequest, len(items))
	for i, it := range items {
		reqs[i] = s.c.itemRequest(it)
	}
	s.mu.Lock()
	id := s.id
	s.mu.Unlock()
	r, err := s.c.createItems(ctx, id, reqs)
	if err != nil {
		return nil, err
	}
	out := make([]MonitoredItem, len(reqs))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, res := range r.Results {
		out[i] = MonitoredItem{Handle: reqs[i].RequestedParameters.ClientHandle, ID: res.MonitoredItemId, Status: res.StatusCode,
			RevisedSamplingInterval: time.Duration(res.RevisedSamplingInterval * float64(time.Millisecond)), RevisedQueueSize: res.RevisedQueueSize}
		if res.StatusCode.IsGood() {
			s.items[out[i].Handle] = &item{req: reqs[i], id: res.MonitoredItemId}
		}
	}
	return out, nil
}

// itemRequest builds the create request of it, assigning a handle if it has none.
func (c *Client) itemRequest(it MonitorItem) ua.MonitoredItemCreateRequest {
	a := it.Attribute
	if a == 0 {
		a = attr.Value
	}
	h := it.Handle
	if h == 0 {
		h = c.itemHandle.Add(1) | 1<<31 // assigned handles stay clear of small caller ones
	}
	sampling := float64(it.SamplingInterval) / float64(time.Millisecond)
	switch it.SamplingInterval {
	case 0:
		sampling = -1
	case FastestSampling:
		sampling = 0
	}
	q := it.QueueSize
	if q == 0 {
		q = 1
	}
	mp := ua.MonitoringParameters{ClientHandle: h, SamplingInterval: sampling, QueueSize: q, DiscardOldest: !it.DiscardNewest}
	switch {
	case it.EventFilter != nil:
		a = attr.EventNotifier
		mp.Filter = codec.NewExtensionObject(it.EventFilter)
	case it.Filter != nil:
		mp.Filter = codec.NewExtensionObject(it.Filter)
	}
	return ua.MonitoredItemCreateRequest{
		ItemToMonitor:       ua.ReadValueId{NodeId: it.Node, AttributeId: uint32(a), IndexRange: it.IndexRange},
		MonitoringMode:      ua.MonitoringModeReporting,
		RequestedParameters: mp,
	}
}

// createItems runs CreateMonitoredItems on subscription id.
func (c *Client) createItems(ctx context.Context, id uint32, reqs []ua.MonitoredItemCreateRequest) (*ua.CreateMonitoredItemsResponse, error) {
	req := &ua.CreateMonitoredItemsRequest{SubscriptionId: id, TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: reqs}
	r, err := do[*ua.CreateMonitoredItemsResponse](c, ctx, "CreateMonitoredItems", &req.RequestHeader, req, false)
	if err != nil {
		return nil, err
	}
	if err := check("CreateMonitoredItems", &r.ResponseHeader); err != nil {
		return nil, err
	}
	if len(r.Results) != len(reqs) {
		return nil, &StatusError{Service: "CreateMonitoredItems", Code: status.BadUnexpectedError}
	}
	return r, nil
}

// Unmonitor deletes the monitored items with the given client handles (Part 4
// §5.12.6) and returns a status per handle (BadMonitoredItemIdInvalid for an unknown one).
func (s *Subscription) Unmonitor(ctx context.Context, handles ...uint32) ([]status.Code, error) {
	s.mu.Lock()
	id := s.id
	ids := make([]uint32, len(handles))
	for i, h := range handles {
		if it, ok := s.items[h]; ok {
			ids[i] = it.id
		}
	}
	s.mu.Unlock()
	req := &ua.DeleteMonitoredItemsRequest{SubscriptionId: id, MonitoredItemIds: ids}
	r, err := do[*ua.DeleteMonitoredItemsResponse](s.c, ctx, "DeleteMonitoredItems", &req.RequestHeader, req, false)
	if err != nil {
		return nil, err
	}
	if err := check("DeleteMonitoredItems", &r.ResponseHeader); err != nil {
		return nil, err
	}
	if len(r.Results) != len(ids) {
		return nil, &StatusError{Service: "DeleteMonitoredItems", Code: status.BadUnexpectedError}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range handles {
		if r.Results[i].IsGood() {
			delete(s.items, h)
		}
	}
	return r.Results, nil
}

// SetPublishingMode turns publishing on or off (Part 4 §5.13.4).
func (s *Subscription) SetPublishingMode(ctx context.Context, enabled bool) error {
	s.mu.Lock()
	id := s.id
	s.mu.Unlock()
	req := &ua.SetPublishingModeRequest{PublishingEnabled: enabled, SubscriptionIds: []uint32{id}}
	r, err := do[*ua.SetPublishingModeResponse](s.c, ctx, "SetPublishingMode", &req.RequestHeader, req, false)
	if err != nil {
		return err
	}
	if err := check("SetPublishingMode", &r.ResponseHeader); err != nil {
		return err
	}
	if len(r.Results) != 1 {
		return &StatusError{Service: "SetPublishingMode", Code: status.BadUnexpectedError}
	}
	if r.Results[0].IsBad() {
		return &StatusError{Service: "SetPublishingMode", Code: r.Results[0]}
	}
	s.mu.Lock()
	s.enabled = enabled
	s.params.Disabled = !enabled
	s.mu.Unlock()
	return nil
}

// Modify changes the interval and counts (Part 4 §5.13.3); the delivery fields of p are
// ignored. Zero fields keep their current request.
func (s *Subscription) Modify(ctx context.Context, p SubscriptionParams) error {
	s.mu.Lock()
	id, cur := s.id, s.params
	s.mu.Unlock()
	if p.Interval > 0 {
		cur.Interval = p.Interval
	}
	if p.KeepAliveCount > 0 {
		cur.KeepAliveCount = p.KeepAliveCount
	}
	if p.LifetimeCount > 0 {
		cur.LifetimeCount = p.LifetimeCount
	}
	if p.MaxNotificationsPerPublish > 0 {
		cur.MaxNotificationsPerPublish = p.MaxNotificationsPerPublish
	}
	cur.Priority = p.Priority
	req := &ua.ModifySubscriptionRequest{
		SubscriptionId:              id,
		RequestedPublishingInterval: float64(cur.Interval) / float64(time.Millisecond),
		RequestedLifetimeCount:      cur.LifetimeCount,
		RequestedMaxKeepAliveCount:  cur.KeepAliveCount,
		MaxNotificationsPerPublish:  cur.MaxNotificationsPerPublish,
		Priority:                    cur.Priority,
	}
	r, err := do[*ua.ModifySubscriptionResponse](s.c, ctx, "ModifySubscription", &req.RequestHeader, req, false)
	if err != nil {
		return err
	}
	if err := check("ModifySubscription", &r.ResponseHeader); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.params = cur
	s.revised.Interval = time.Duration(r.RevisedPublishingInterval * float64(time.Millisecond))
	s.revised.KeepAliveCount, s.revised.LifetimeCount = r.RevisedMaxKeepAliveCount, r.RevisedLifetimeCount
	return nil
}

// Delete deletes the subscription (Part 4 §5.13.8) and stops its delivery; messages
// still buffered are discarded. Deleting twice is harmless.
func (s *Subscription) Delete(ctx context.Context) error {
	s.mu.Lock()
	if s.deleted {
		s.mu.Unlock()
		return nil
	}
	s.deleted = true
	id := s.id
	s.mu.Unlock()
	s.c.publisher().remove(s)
	close(s.done)
	req := &ua.DeleteSubscriptionsRequest{SubscriptionIds: []uint32{id}}
	r, err := do[*ua.DeleteSubscriptionsResponse](s.c, ctx, "DeleteSubscriptions", &req.RequestHeader, req, false)
	if err != nil {
		return err
	}
	if err := check("DeleteSubscriptions", &r.ResponseHeader); err != nil {
		return err
	}
	if len(r.Results) == 1 && r.Results[0].IsBad() {
		return &StatusError{Service: "DeleteSubscriptions", Code: r.Results[0]}
	}
	return nil
}

// deliver hands queued messages to Notify or C until the subscription is deleted or the
// client closed.
func (s *Subscription) deliver() {
	for {
		select {
		case n := <-s.q:
			if s.params.Notify != nil {
				s.params.Notify(n)
				continue
			}
			select {
			case s.params.C <- n:
			case <-s.done:
				return
			}
		case <-s.done:
			return
		}
	}
}

// stop ends delivery when the client closes.
func (s *Subscription) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.deleted {
		s.deleted = true
		close(s.done)
	}
}

// received records msg (from Publish or Republish) and delivers what is now in order.
// It reports whether a gap is left that Republish must fill. The caller holds s.mu.
func (s *Subscription) received(msg *ua.NotificationMessage, avail []uint32) bool {
	s.lastHeard = time.Now()
	seq := msg.SequenceNumber
	if len(msg.NotificationData) == 0 {
		// A keep-alive carries the number of the next message: all before it exist.
		s.stats.KeepAlives++
		s.horizon = max(s.horizon, seq)
	} else {
		s.horizon = max(s.horizon, seq+1)
		if seq >= s.next {
			s.pending[seq] = msg
		}
	}
	return s.noteAvailable(avail)
}

// noteAvailable records the sequence numbers the server still holds, delivers what is
// in order and reports whether a gap is left. The caller holds s.mu.
func (s *Subscription) noteAvailable(avail []uint32) bool {
	for _, a := range avail {
		s.horizon = max(s.horizon, a+1)
	}
	s.drain()
	return s.next < s.horizon
}

// drain delivers the pending messages that follow in order. The caller holds s.mu.
func (s *Subscription) drain() {
	for {
		m, ok := s.pending[s.next]
		if !ok {
			return
		}
		delete(s.pending, s.next)
		s.next++
		s.enqueue(m)
	}
}

// enqueue converts m and queues it for delivery, dropping it if the buffer is full.
// The caller holds s.mu.
func (s *Subscription) enqueue(m *ua.NotificationMessage) {
	n := &Notification{Subscription: s, SequenceNumber: m.SequenceNumber, PublishTime: m.PublishTime.Time()}
	for i := range m.NotificationData {
		switch v := m.NotificationData[i].Value.(type) {
		case *ua.DataChangeNotification:
			n.DataChanges = append(n.DataChanges, v.MonitoredItems...)
		case *ua.EventNotificationList:
			n.Events = append(n.Events, v.Events...)
		case *ua.StatusChangeNotification:
			n.Status = v.Status
		}
	}
	if s.deleted {
		return
	}
	select {
	case s.q <- n:
		s.stats.Delivered++
	default:
		s.stats.Dropped++
	}
}
