package client

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// Failover names the endpoint URLs of the servers of a redundant set (Part 4 §6.6.2),
// the dialled one included or not. When the client cannot reconnect to its server, it
// reads the ServiceLevel of each of them and moves its session to the one with the
// highest: it activates the same session there, which a server of a HotAndMirrored set
// takes over with its subscriptions; another server gets a new session and the
// subscriptions are created again (subscription ids belong to one server, so they are
// not transferred across servers). The move happens once the Backoff's attempts at the
// current server are spent (with unbounded Attempts it never does), or earlier when the
// server's ServiceLevel says it is going (ServiceLevelWatch). With Standby the move goes
// to the standby's server first, on the channel already open to it.
func Failover(urls ...string) Option {
	return func(c *config) { c.failover = slices.Clone(urls) }
}

// SetFailover replaces the Failover list, for example with what RedundantServers
// found. Safe for concurrent use.
func (c *Client) SetFailover(urls ...string) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.cfg.failover = slices.Clone(urls)
}

// RedundantServers reads the ServerUriArray of the server's ServerRedundancy object
// (Part 5 §6.3.8, non-transparent redundancy) and resolves the ServerUris to discovery
// URLs with FindServers on the current server. A server without redundancy answers
// BadNodeIdUnknown or an empty array.
func (c *Client) RedundantServers(ctx context.Context) ([]string, error) {
	dv, err := c.ReadValue(ctx, codec.NewNumericNodeId(0, id.Server_ServerRedundancy_ServerUriArray))
	if err != nil {
		return nil, err
	}
	if dv.Status.IsBad() {
		return nil, &StatusError{Service: "Read", Code: dv.Status}
	}
	uris, _ := dv.Value.Value().([]string)
	if len(uris) == 0 {
		return nil, nil
	}
	apps, err := FindServers(ctx, c.URL(), uris...)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, a := range apps {
		if len(a.DiscoveryUrls) > 0 {
			urls = append(urls, a.DiscoveryUrls[0])
		}
	}
	return urls, nil
}

// serviceLevel connects to url with the client's settings, reads its ServiceLevel
// (Part 5 §6.3.34) and disconnects. It is one attempt, no retries. The ServiceLevel is
// public: when the server offers a None endpoint with anonymous access, the probe takes
// it and costs neither side any asymmetric cryptography (a failover probes every server
// of the set for every moving session); the move itself keeps the client's security.
func (c *Client) serviceLevel(ctx context.Context, url string) (byte, error) {
	cfg := c.cfg
	cfg.failover = nil
	cfg.keepAlive = -1
	cfg.levelWatch = -1
	cfg.backoff = Backoff{Attempts: 1}
	cfg.onRetry = nil
	if eps, err := cfg.cache.Get(ctx, url); err == nil && anonymousNone(eps) {
		cfg.policyURI, cfg.mode = policy.URINone, ua.MessageSecurityModeNone
		cfg.identity = identity{kind: ua.UserTokenTypeAnonymous}
	}
	probe, err := dial(ctx, url, cfg)
	if err != nil {
		return 0, err
	}
	defer func() { _ = probe.Close(ctx) }()
	return probe.ServiceLevel(ctx)
}

// ServiceLevel reads the server's ServiceLevel (Part 5 §6.3.34): 0 maintenance, 1 no
// data, 2-199 degraded, 200-255 healthy (Part 4 §6.6.2.4.2).
func (c *Client) ServiceLevel(ctx context.Context) (byte, error) {
	dv, err := c.ReadValue(ctx, codec.NewNumericNodeId(0, id.Server_ServiceLevel))
	if err != nil {
		return 0, err
	}
	if dv.Status.IsBad() || dv.Value.Type() != codec.TypeByte {
		code := dv.Status
		if !code.IsBad() {
			code = status.BadTypeMismatch
		}
		return 0, &StatusError{Service: "Read", Code: code}
	}
	return byte(dv.Value.Bits()), nil
}

// anonymousNone reports whether eps offer an endpoint without security that admits an
// anonymous session.
func anonymousNone(eps []ua.EndpointDescription) bool {
	for _, ep := range eps {
		if ep.SecurityPolicyUri != policy.URINone || ep.SecurityMode != ua.MessageSecurityModeNone {
			continue
		}
		for _, t := range ep.UserIdentityTokens {
			if t.TokenType == ua.UserTokenTypeAnonymous {
				return true
			}
		}
	}
	return false
}

// best reads the ServiceLevel of every server of urls at once and returns the one with
// the highest above floor (ties go to the earlier one), or "" when none is above it; a
// server that does not answer counts as level 0.
func (c *Client) best(ctx context.Context, urls []string, floor int) string {
	lvls := make([]byte, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			if lvl, err := c.serviceLevel(ctx, u); err == nil {
				lvls[i] = lvl
			}
		})
	}
	wg.Wait()
	best := ""
	for i, lvl := range lvls {
		if int(lvl) > floor {
			best, floor = urls[i], int(lvl)
		}
	}
	return best
}

// failover moves the session to the server of the Failover list with the highest
// ServiceLevel (ties go to the earlier one; level 0, maintenance, is skipped). cause is
// the error of the failed reconnect, returned if no server answers. The caller holds rmu.
func (c *Client) failover(ctx context.Context, cause error) error {
	if c.useStandby(ctx, 0) {
		return nil
	}
	best := c.best(ctx, c.cfg.failover, 0)
	if best == "" {
		return fmt.Errorf("client: failover: no server of the redundant set answers: %w", cause)
	}
	return c.retarget(ctx, best)
}

// retarget points the client at url (its endpoints, certificate and host) and brings
// the session up there: the same session first, which a server of a HotAndMirrored set
// takes over with its subscriptions (Part 4 §6.6.2), else a new one. On failure the
// previous target is kept. The caller holds rmu.
func (c *Client) retarget(ctx context.Context, url string) error {
	old := c.target()
	undo := func(err error) error {
		c.setTarget(old)
		return err
	}
	_, host, err := dialAddress(url)
	if err != nil {
		return err
	}
	eps, err := c.cfg.cache.Get(ctx, url)
	if err != nil {
		return err
	}
	ep, err := SelectEndpoint(eps, c.cfg.policyURI, c.cfg.mode)
	if err != nil {
		return err
	}
	c.url, c.host, c.ep, c.eps, c.serverCert = url, host, ep, eps, nil
	if err := c.checkServer(); err != nil {
		c.cfg.cache.Forget(url)
		return undo(err)
	}
	err = c.connect(ctx, true)
	c.dropSpare() // a channel to this server must not outlive the attempt
	if err != nil {
		return undo(err)
	}
	return nil
}

// target is the server a client is pointed at.
type target struct {
	url, host  string
	ep         ua.EndpointDescription
	eps        []ua.EndpointDescription
	serverCert *x509.Certificate
}

// target returns the server the client is pointed at. The caller holds rmu.
func (c *Client) target() target { return target{c.url, c.host, c.ep, c.eps, c.serverCert} }

// setTarget points the client at t. The caller holds rmu.
func (c *Client) setTarget(t target) {
	c.url, c.host, c.ep, c.eps, c.serverCert = t.url, t.host, t.ep, t.eps, t.serverCert
}

// URL returns the endpoint URL the client is connected to; it changes on failover.
func (c *Client) URL() string {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.url
}

// Healthy and failover subranges of the ServiceLevel (Part 4 §6.6.2.4.2).
const (
	levelNoData  = 1
	levelHealthy = 200
)

// startLevelWatch arms the ServiceLevel watch (ServiceLevelWatch).
func (c *Client) startLevelWatch() {
	d := c.cfg.levelWatch
	if d == 0 {
		d = 2 * time.Second
	}
	if d < 0 {
		return
	}
	c.levelWatch = time.AfterFunc(d, func() { c.watchLevel(d) })
}

// watchLevel reads the current server's ServiceLevel when the client has a Failover list
// and moves the session if the server says it is going; then it re-arms.
func (c *Client) watchLevel(every time.Duration) {
	if c.closed.Load() {
		return
	}
	c.rmu.Lock()
	watching := len(c.cfg.failover) > 0
	c.rmu.Unlock()
	if watching {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.requestTimeout)
		if lvl, err := c.ServiceLevel(ctx); err == nil && lvl < levelHealthy {
			c.leave(ctx, lvl)
		}
		cancel()
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if !c.closed.Load() {
		c.levelWatch.Reset(every)
	}
}

// leave moves the session away from a server whose ServiceLevel is cur: to the best
// other server of the Failover list that is better placed (any that serves, when cur is
// Maintenance or NoData; a healthy one when cur is Degraded). The old channel is closed
// first, so that nothing the old server answers while it lets the session go reaches the
// client; calls in flight on it fail over to the new one.
func (c *Client) leave(ctx context.Context, cur byte) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.closed.Load() {
		return
	}
	floor := int(cur)
	if cur > levelNoData {
		floor = levelHealthy - 1
	}
	old := c.cur.Load()
	if c.StandbyURL() != "" {
		old.ch.Close()
		if c.useStandby(ctx, floor) {
			return
		}
	}
	others := slices.DeleteFunc(slices.Clone(c.cfg.failover), func(u string) bool { return u == c.url })
	best := c.best(ctx, others, floor)
	if best == "" {
		return
	}
	old.ch.Close()
	if err := c.retarget(ctx, best); err != nil {
		// Still here: the next call reconnects to the current server as after any loss.
		return
	}
}
