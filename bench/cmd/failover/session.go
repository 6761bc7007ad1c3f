package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/bench/internal/load"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
)

// demoNode is the variable every session monitors and the bench writes.
var demoNode = codec.NewStringNodeId(1, "Demo.Scalar_Int32")

// session is one client of the bench with its subscription, and what it saw of the
// counter: the values, and which of them came in messages published before the kill.
type session struct {
	home int // the server it was established on
	c    *client.Client
	sub  *client.Subscription
	kill *atomic.Int64 // UnixNano of the kill once the killed server is gone; 0 before

	// At the kill (set by the scenario before the server is killed, read after).
	sessionID  codec.NodeId
	keepAlives uint64

	location // at the end (locateAll)

	mu sync.Mutex // guards seen, last, lastBefore, firstAfter, resumed
	// seen[v] is set once the value v was delivered.
	seen []bool
	last int32 // the highest value delivered, -1 before any
	// lastBefore is the highest value in a message published before the kill,
	// firstAfter the lowest in the first message published after it (-1: none yet);
	// resumed is when that message, or a keep-alive after the kill, arrived.
	lastBefore, firstAfter int32
	resumed                time.Time
}

func newSession(home int, kill *atomic.Int64) *session {
	return &session{home: home, kill: kill, last: -1, lastBefore: -1, firstAfter: -1, location: location{at: -1}}
}

// observe is the subscription's Notify: it runs on the subscription's goroutine, in
// sequence-number order. A message published after the killed server was found gone
// comes from a survivor: the first of them ends the session's failover (a message
// published before it and Republished by the survivor does not).
func (s *session) observe(n *client.Notification) {
	now := time.Now()
	kill := s.kill.Load()
	after := kill != 0 && n.PublishTime.UnixNano() > kill
	s.mu.Lock()
	defer s.mu.Unlock()
	low := int32(-1)
	for _, dc := range n.DataChanges {
		if dc.Value.Value.Type() != codec.TypeInt32 {
			continue
		}
		v := int32(dc.Value.Value.Bits())
		if v < 0 {
			continue
		}
		for int(v) >= len(s.seen) {
			s.seen = append(s.seen, make([]bool, len(s.seen)+64)...)
		}
		s.seen[v] = true
		s.last = max(s.last, v)
		if low < 0 || v < low {
			low = v
		}
		if !after {
			s.lastBefore = max(s.lastBefore, v)
		}
	}
	if after && s.resumed.IsZero() {
		s.resumed, s.firstAfter = now, low
	}
}

// location is where a session is at the end of the run: the server (-1 for none or the
// killed one), its SessionId and its subscription's counts.
type location struct {
	located bool // false: the client was still moving when the run ended
	at      int
	endID   codec.NodeId
	stats   client.SubscriptionStats
}

// find returns the session's location; it waits while the client is moving.
func (s *session) find(set *redundantSet, killed int) location {
	l := location{located: true, at: set.index(s.c.URL()), endID: s.c.SessionID(), stats: s.sub.Stats()}
	if l.at == killed {
		l.at = -1
	}
	return l
}

// noteKeepAlive marks the session resumed at now if it has heard a keep-alive since
// the kill (a Publish response without notifications) and nothing before.
func (s *session) noteKeepAlive(now time.Time) bool {
	if s.sub.Stats().KeepAlives <= s.keepAlives {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resumed.IsZero() {
		s.resumed = now
	}
	return true
}

// hasResumed reports whether the session heard from a survivor since the kill.
func (s *session) hasResumed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.resumed.IsZero()
}

// saw reports whether value v was delivered.
func (s *session) saw(v int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(v) < len(s.seen) && s.seen[v]
}

// dialer establishes the bench's sessions and writers with shared settings.
type dialer struct {
	o    options
	urls []string
	apps [][]client.Option // per client application: its certificate and trust store
	opts []client.Option   // security, endpoint cache, backoff
}

func newDialer(o options, urls []string, ids []*uaserver.Identity, security client.Option) *dialer {
	d := &dialer{o: o, urls: urls}
	for _, id := range ids {
		d.apps = append(d.apps, []client.Option{client.Certificate(id.DER, id.Key),
			client.Application(id.URI, "uastack bench failover"), client.TrustStore(id.PKI)})
	}
	d.opts = []client.Option{
		security, client.WithEndpointCache(client.NewEndpointCache()),
		client.WithBackoff(o.backoff),
		// The watch reads the ServiceLevel every 2 s to leave a server that says it is
		// going; a killed server says nothing, and 1,000 sessions would read it for no
		// use.
		client.ServiceLevelWatch(-1),
	}
	return d
}

// failoverList is the Failover list of a session of server home: every server of the
// set, its own first and the others in a rotation that depends on k, so that the
// sessions of one server spread over the others when it fails (the client moves to
// the server of highest ServiceLevel and, among equals, to the earliest in its list).
func (d *dialer) failoverList(home, k int) []string {
	n := len(d.urls)
	list := []string{d.urls[home]}
	for j := range n - 1 {
		list = append(list, d.urls[(home+1+(k+j)%(n-1))%n])
	}
	return list
}

// dial connects a client to server home as the client application of its k-th
// session, with that session's Failover list when failover is set, and tries again
// while the server is busy or full.
func (d *dialer) dial(ctx context.Context, home, k int, failover bool, extra ...client.Option) (*client.Client, error) {
	opts := append(append(append([]client.Option{}, d.opts...), d.apps[k%len(d.apps)]...), extra...)
	if failover {
		opts = append(opts, client.Failover(d.failoverList(home, k)...))
	}
	var c *client.Client
	err := load.Patiently(ctx, func() (err error) {
		c, err = client.Dial(ctx, d.urls[home], opts...)
		return err
	})
	return c, err
}

// establish dials session k on server home and subscribes it to the demo variable.
func (d *dialer) establish(ctx context.Context, s *session, k int) error {
	opts := []client.Option{client.SessionName(fmt.Sprintf("failover-%d", k))}
	if d.o.standby > 0 {
		opts = append(opts, client.Standby(d.o.standby))
	}
	c, err := d.dial(ctx, s.home, k, true, opts...)
	if err != nil {
		return err
	}
	sub, err := c.Subscribe(ctx, client.SubscriptionParams{Interval: d.o.interval, Notify: s.observe})
	if err == nil {
		var items []client.MonitoredItem
		items, err = sub.Monitor(ctx, client.MonitorItem{Node: demoNode, Handle: 1, QueueSize: d.o.queue, SamplingInterval: client.FastestSampling})
		if err == nil && items[0].Status.IsBad() {
			err = fmt.Errorf("monitoring %v: %w", demoNode, items[0].Status)
		}
	}
	if err != nil {
		_ = c.Close(ctx)
		return err
	}
	s.c, s.sub = c, sub
	return nil
}
