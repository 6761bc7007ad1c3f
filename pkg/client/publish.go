package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// maxOutstandingPublish is the client's own bound on Publish requests in flight per
// session; a server's BadTooManyPublishRequests lowers it.
const maxOutstandingPublish = 10

// publisher keeps Publish requests outstanding for the session's subscriptions (Part 4
// §5.13.5): one goroutine per outstanding request (a handful, not one per
// subscription), acknowledgements carried by the next request, a watchdog for silent
// subscriptions, and the restoration of subscriptions on a new session.
type publisher struct {
	c           *Client
	stop        chan struct{}
	outstanding atomic.Int32 // Publish requests sent and not answered
	probing     atomic.Bool  // a reconnect check is running

	mu      sync.Mutex // guards the fields below
	subs    map[uint32]*Subscription
	acks    []ua.SubscriptionAcknowledgement
	want    int    // Publish requests to keep outstanding
	running int    // worker goroutines
	bound   int    // upper bound of want
	gen     uint64 // the Client's session generation the subscriptions live on
	uri     string // ApplicationUri of the server they live on
	closed  bool

	restoreMu sync.Mutex // held while subscriptions are moved to a new session
}

// publisher returns the client's publisher, starting it on first use.
func (c *Client) publisher() *publisher {
	c.pubOnce.Do(func() {
		p := &publisher{c: c, stop: make(chan struct{}), subs: make(map[uint32]*Subscription),
			want: 2, bound: maxOutstandingPublish, gen: c.sessGen.Load(), uri: c.serverURI()}
		c.pub.Store(p)
		go p.watchdog()
	})
	return c.pub.Load()
}

// serverURI is the ApplicationUri of the server the client is connected to.
func (c *Client) serverURI() string {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.ep.Server.ApplicationUri
}

// PublishStats reports the Publish pipeline: requests in flight and the target.
type PublishStats struct {
	Outstanding int // Publish requests sent and not yet answered
	Target      int // how many the client keeps outstanding
}

// PublishStats returns the state of the session's Publish pipeline.
func (c *Client) PublishStats() PublishStats {
	p := c.pub.Load()
	if p == nil {
		return PublishStats{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return PublishStats{Outstanding: int(p.outstanding.Load()), Target: p.want}
}

// add registers s and grows the pipeline: one request per subscription plus one, at
// least two, so that a response in transit never leaves the server without a request.
func (p *publisher) add(s *Subscription) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.subs[s.ID()] = s
	p.want = max(p.want, min(len(p.subs)+1, p.bound))
	p.spawn()
}

// remove forgets s.
func (p *publisher) remove(s *Subscription) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, t := range p.subs {
		if t == s {
			delete(p.subs, id)
		}
	}
}

// find returns the subscription with server id id. A subscription created again
// during a restore has its new id before the map is rebuilt, so a miss looks further.
// The caller holds p.mu.
func (p *publisher) find(id uint32) *Subscription {
	if s := p.subs[id]; s != nil && s.ID() == id {
		return s
	}
	for _, s := range p.subs {
		if s.ID() == id {
			return s
		}
	}
	return nil
}

// spawn starts workers up to want. The caller holds p.mu.
func (p *publisher) spawn() {
	for !p.closed && p.running < p.want {
		p.running++
		go p.worker()
	}
}

// close stops the workers and the deliveries; the client is closing.
func (p *publisher) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stop)
	subs := make([]*Subscription, 0, len(p.subs))
	for _, s := range p.subs {
		subs = append(subs, s)
	}
	p.mu.Unlock()
	for _, s := range subs {
		s.stop()
	}
}

// timeout is how long a Publish may be held: two keep-alive periods of the slowest
// subscription plus the request timeout. The caller holds p.mu.
func (p *publisher) timeout() time.Duration {
	var d time.Duration
	for _, s := range p.subs {
		r := s.Revised()
		d = max(d, r.Interval*time.Duration(r.KeepAliveCount))
	}
	return 2*d + p.c.cfg.requestTimeout
}

// worker keeps one Publish request outstanding until there are more workers than
// wanted or the client closes.
func (p *publisher) worker() {
	for {
		p.mu.Lock()
		if p.closed || p.running > p.want || len(p.subs) == 0 {
			p.running--
			p.mu.Unlock()
			return
		}
		acks := p.acks
		p.acks = nil
		timeout := p.timeout()
		p.mu.Unlock()
		if err := p.ensureSession(); err != nil {
			p.requeue(acks)
			if !p.pause(200 * time.Millisecond) {
				return
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		req := &ua.PublishRequest{SubscriptionAcknowledgements: acks}
		p.outstanding.Add(1)
		r, err := do[*ua.PublishResponse](p.c, ctx, "Publish", &req.RequestHeader, req, false)
		p.outstanding.Add(-1)
		cancel()
		if err == nil {
			err = check("Publish", &r.ResponseHeader)
		}
		if err != nil {
			p.requeue(acks) // unprocessed; a duplicate is answered BadSequenceNumberUnknown
			if !p.failed(err) {
				p.mu.Lock()
				p.running--
				p.mu.Unlock()
				return
			}
			continue
		}
		p.handle(r)
	}
}

// requeue puts acknowledgements back for the next request.
func (p *publisher) requeue(acks []ua.SubscriptionAcknowledgement) {
	if len(acks) == 0 {
		return
	}
	p.mu.Lock()
	p.acks = append(p.acks, acks...)
	p.mu.Unlock()
}

// pause waits d, reporting false if the client closed meanwhile.
func (p *publisher) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.stop:
		return false
	}
}

// failed handles a failed Publish and reports whether the worker goes on.
func (p *publisher) failed(err error) bool {
	switch {
	case p.c.closed.Load():
		return false
	case errors.Is(err, status.BadTooManyPublishRequests):
		// The server's MaxPublishRequestCount is below ours: back off by one.
		p.mu.Lock()
		p.bound = max(1, p.running-1)
		p.want = min(p.want, p.bound)
		p.mu.Unlock()
		return true
	case errors.Is(err, status.BadTimeout):
		// Held longer than its timeout (or the channel stalled): the watchdog checks
		// the connection; ask again.
		return true
	case connectionLost(err) && p.c.cur.Load().ch.Err() == nil:
		// The channel was lost under the request and the session is up again (the
		// reconnect or failover that the loss set off is done): ask again at once, or
		// the subscriptions would publish nothing for the pause.
		return true
	}
	// The reconnect failed, or the session has no subscriptions (a new session not yet
	// restored): wait, and let the next request reconnect or restore.
	return p.pause(200 * time.Millisecond)
}

// handle takes a Publish answer: it queues the acknowledgement, delivers in order, and
// starts Republish for a gap.
func (p *publisher) handle(r *ua.PublishResponse) {
	msg := &r.NotificationMessage
	p.mu.Lock()
	s := p.find(r.SubscriptionId)
	if len(msg.NotificationData) > 0 {
		p.acks = append(p.acks, ua.SubscriptionAcknowledgement{SubscriptionId: r.SubscriptionId, SequenceNumber: msg.SequenceNumber})
	}
	if r.MoreNotifications && p.want < p.bound {
		p.want++
		p.spawn()
	}
	p.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.id != r.SubscriptionId {
		s.mu.Unlock()
		return
	}
	s.late = false
	start := s.claimRepairLocked(s.received(msg, r.AvailableSequenceNumbers))
	s.mu.Unlock()
	if start {
		go p.repair(s)
	}
}

// repair fetches missing messages of s with Republish (Part 4 §5.13.6), in order, so
// that later ones are delivered after them. A message the server no longer has
// (BadMessageNotAvailable) is counted as lost and skipped.
func (p *publisher) repair(s *Subscription) {
	// Answers of pipelined Publishes can be handled out of order: give the one that
	// fills the gap a moment to arrive before asking for it again.
	grace := min(s.Revised().Interval/2, 50*time.Millisecond)
	if !p.pause(grace) {
		return
	}
	for tries := 0; ; {
		s.mu.Lock()
		if s.deleted || s.next >= s.horizon {
			s.repairing = false
			s.mu.Unlock()
			return
		}
		id, seq := s.id, s.next
		if tries > 50 {
			// The server keeps failing: count the rest as lost rather than stall.
			s.stats.Lost += uint64(s.horizon - s.next)
			s.next = s.horizon
			s.drain()
			s.repairing = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		req := &ua.RepublishRequest{SubscriptionId: id, RetransmitSequenceNumber: seq}
		r, err := do[*ua.RepublishResponse](p.c, context.Background(), "Republish", &req.RequestHeader, req, true)
		if err == nil {
			err = check("Republish", &r.ResponseHeader)
		}
		ack := false
		s.mu.Lock()
		switch {
		case s.id != id:
			// Recreated meanwhile: the old numbers are gone.
		case err == nil && seq >= s.next && len(r.NotificationMessage.NotificationData) > 0:
			s.stats.Republished++
			s.received(&r.NotificationMessage, nil)
			ack = true
		case err == nil || errors.Is(err, status.BadMessageNotAvailable):
			if seq == s.next {
				s.stats.Lost++
				s.next++
				s.drain()
			}
		default:
			tries++
		}
		s.mu.Unlock()
		if ack {
			p.requeue([]ua.SubscriptionAcknowledgement{{SubscriptionId: id, SequenceNumber: seq}})
		}
		if err != nil && !errors.Is(err, status.BadMessageNotAvailable) && !p.pause(200*time.Millisecond) {
			return
		}
	}
}

// ensureSession moves the subscriptions to the current session if the client had to
// create a new one since they were placed.
func (p *publisher) ensureSession() error {
	g := p.c.sessGen.Load()
	p.mu.Lock()
	same := g == p.gen
	p.mu.Unlock()
	if same {
		return nil
	}
	p.restoreMu.Lock()
	defer p.restoreMu.Unlock()
	p.mu.Lock()
	same = g == p.gen
	p.mu.Unlock()
	if same {
		return nil
	}
	return p.restore(g)
}

// restore moves the subscriptions to the session of generation g: TransferSubscriptions
// without initial values (Part 4 §5.13.7), then Republish of what the old session had
// not delivered; a subscription that cannot be transferred, or lived on another server,
// is created again with its monitored items and handles.
func (p *publisher) restore(g uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.c.cfg.requestTimeout)
	defer cancel()
	p.mu.Lock()
	subs := make([]*Subscription, 0, len(p.subs))
	for _, s := range p.subs {
		subs = append(subs, s)
	}
	prev := p.uri
	p.mu.Unlock()
	uri := p.c.serverURI()
	// Subscription ids are per server: on another server of a redundant set the same
	// id may be someone else's, so failover recreates rather than transfers.
	sameServer := prev == uri

	moved := make(map[*Subscription]bool, len(subs))
	if sameServer && len(subs) > 0 {
		ids := make([]uint32, len(subs))
		for i, s := range subs {
			ids[i] = s.ID()
		}
		req := &ua.TransferSubscriptionsRequest{SubscriptionIds: ids}
		r, err := do[*ua.TransferSubscriptionsResponse](p.c, ctx, "TransferSubscriptions", &req.RequestHeader, req, false)
		if err == nil {
			err = check("TransferSubscriptions", &r.ResponseHeader)
		}
		if err != nil && connectionLost(err) {
			return err
		}
		if err == nil && len(r.Results) == len(ids) {
			for i, s := range subs {
				res := r.Results[i]
				if res.StatusCode.IsBad() {
					continue
				}
				moved[s] = true
				s.mu.Lock()
				s.stats.Transferred++
				s.lastHeard = time.Now()
				start := s.claimRepairLocked(s.noteAvailable(res.AvailableSequenceNumbers))
				s.mu.Unlock()
				if start {
					go p.repair(s)
				}
			}
		}
	}
	var errs []error
	for _, s := range subs {
		if !moved[s] {
			errs = append(errs, p.recreate(ctx, s))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.subs)
	for _, s := range subs {
		if !s.isDeleted() {
			p.subs[s.ID()] = s
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.gen, p.uri = g, uri
	return nil
}

// recreate creates s again on the current session with its monitored items.
func (p *publisher) recreate(ctx context.Context, s *Subscription) error {
	if s.isDeleted() {
		return nil
	}
	if err := s.create(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	id := s.id
	handles := make([]uint32, 0, len(s.items))
	reqs := make([]ua.MonitoredItemCreateRequest, 0, len(s.items))
	for h, it := range s.items {
		handles = append(handles, h)
		reqs = append(reqs, it.req)
	}
	s.mu.Unlock()
	if len(reqs) > 0 {
		r, err := p.c.createItems(ctx, id, reqs)
		if err != nil {
			return err
		}
		s.mu.Lock()
		for i, h := range handles {
			if res := r.Results[i]; res.StatusCode.IsGood() {
				s.items[h].id = res.MonitoredItemId
			} else {
				delete(s.items, h)
			}
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.stats.Recreated++
	s.mu.Unlock()
	return nil
}

// watchdog reports subscriptions that heard nothing for longer than their keep-alive
// period with slack (Part 4 §5.13.1.1), and then checks the connection: a channel whose
// server stopped answering is closed so that the next request reconnects.
func (p *publisher) watchdog() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		late := false
		for _, s := range p.subs {
			s.mu.Lock()
			period := s.revised.Interval * time.Duration(s.revised.KeepAliveCount)
			if !s.late && time.Since(s.lastHeard) > period+max(period/2, time.Second) {
				s.late = true
				s.stats.Late++
				late = true
			}
			s.mu.Unlock()
		}
		p.mu.Unlock()
		if late && p.probing.CompareAndSwap(false, true) {
			go p.probe()
		}
	}
}

// probe reads the server state; a read that times out on a channel that still looks
// open means a hung peer, so the channel is closed and the next request reconnects.
func (p *publisher) probe() {
	defer p.probing.Store(false)
	l := p.c.cur.Load()
	ctx, cancel := context.WithTimeout(context.Background(), p.c.cfg.requestTimeout)
	defer cancel()
	_, err := p.c.ReadValue(ctx, codec.NewNumericNodeId(0, serverStatusState))
	if err != nil && errors.Is(err, status.BadTimeout) && p.c.cur.Load() == l {
		l.ch.Close()
	}
}

// isDeleted reports whether s was deleted or its client closed.
func (s *Subscription) isDeleted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleted
}

// claimRepairLocked reports whether a gap needs a repair that is not running yet, and
// marks it running; the caller then starts it. s.mu must be held.
func (s *Subscription) claimRepairLocked(gap bool) bool {
	if !gap || s.repairing {
		return false
	}
	s.repairing = true
	return true
}
