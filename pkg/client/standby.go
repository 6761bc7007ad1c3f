package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"
)

// Standby keeps, beside a Failover list, a standby: a secure channel with the client's
// security open to the best other server of the list, carrying a session of its own
// that reads that server's ServiceLevel every interval (Part 4 §6.6.2.4.5.5 allows a
// HotAndMirrored client such sessions, without subscriptions). A failover activates the
// client's session on the standby's channel at once: no handshake and no probes, which
// on both sides are the asymmetric cryptography a server taking over hundreds of
// sessions at once is short of. The standby's own session is closed then, and a new
// standby is made between one and two intervals later. Zero means every 5 s.
func Standby(interval time.Duration) Option {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	return func(c *config) { c.standby = interval }
}

// startStandby starts keeping the standby, if the Standby option asks for one.
func (c *Client) startStandby() {
	if c.cfg.standby <= 0 {
		return
	}
	c.sbStop, c.sbDone = make(chan struct{}), make(chan struct{})
	go c.keepStandby(c.cfg.standby)
}

// keepStandby tends the standby every interval, the first time at a random point of the
// first interval, so that many clients started together spread their handshakes.
func (c *Client) keepStandby(every time.Duration) {
	defer close(c.sbDone)
	t := time.NewTimer(rand.N(every))
	defer t.Stop()
	for {
		select {
		case <-c.sbStop:
			return
		case <-t.C:
		}
		c.tendStandby()
		t.Reset(every)
	}
}

// tendStandby reads the standby's ServiceLevel, which keeps its session alive, drops it
// when it does not answer or is the client's own server now, and makes one when there
// is none and none was used lately.
func (c *Client) tendStandby() {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.requestTimeout)
	defer cancel()
	c.rmu.Lock()
	cur := c.url
	others := slices.DeleteFunc(slices.Clone(c.cfg.failover), func(u string) bool { return u == cur })
	c.rmu.Unlock()
	c.sbmu.Lock()
	sb, wait := c.sb, time.Until(c.sbAfter)
	c.sbmu.Unlock()
	if sb != nil {
		if _, err := sb.ServiceLevel(ctx); err != nil || sb.url == cur {
			c.dropStandby(ctx, sb)
		}
		return
	}
	if wait > 0 || len(others) == 0 {
		return
	}
	url := c.best(ctx, others, 0)
	if url == "" {
		return
	}
	cfg := c.cfg
	cfg.failover, cfg.standby = nil, 0
	cfg.keepAlive, cfg.levelWatch = -1, -1 // its ServiceLevel reads keep it alive
	cfg.backoff, cfg.onRetry = Backoff{Attempts: 1}, nil
	nsb, err := dial(ctx, url, cfg)
	if err != nil {
		return
	}
	c.sbmu.Lock()
	keep := c.sb == nil && !c.closed.Load()
	if keep {
		c.sb = nsb
	}
	c.sbmu.Unlock()
	if !keep {
		_ = nsb.Close(ctx)
	}
}

// dropStandby closes sb if it is still the standby. The next one is made between one
// and two intervals later: the clients that lose their standby together, with the
// server it was at, spread their handshakes at the servers left.
func (c *Client) dropStandby(ctx context.Context, sb *Client) {
	c.sbmu.Lock()
	mine := c.sb == sb
	if mine {
		c.sb = nil
		c.sbAfter = c.nextStandby()
	}
	c.sbmu.Unlock()
	if mine {
		_ = sb.Close(ctx)
	}
}

// useStandby moves the session to the standby's server when the standby answers with a
// ServiceLevel above floor: the session is activated on the standby's channel (or, if
// that server does not know it, a new one is created there), and the standby's own
// session is closed. It reports whether the session moved. The caller holds rmu.
func (c *Client) useStandby(ctx context.Context, floor int) bool {
	if c.cfg.standby <= 0 {
		return false
	}
	c.sbmu.Lock()
	sb := c.sb
	c.sb = nil
	c.sbAfter = c.nextStandby()
	c.sbmu.Unlock()
	if sb == nil {
		return false
	}
	lctx, cancel := context.WithTimeout(ctx, standbyCheck)
	lvl, err := sb.ServiceLevel(lctx)
	cancel()
	if err != nil || int(lvl) <= floor {
		go closeAside(sb)
		return false
	}
	// The channel is the client's from here: the standby client is closed without
	// closing it.
	sb.closed.Store(true)
	l := sb.cur.Load()
	old := c.target()
	c.url, c.host, c.ep, c.eps, c.serverCert = sb.url, sb.host, sb.ep, sb.eps, sb.serverCert
	// A server taking many sessions over at once may refuse some as busy: they try
	// again on the same channel (bringUp keeps it as the spare), not on a new one.
	b := c.cfg.backoff
	if b.Attempts > 0 {
		b.Attempts = max(b.Attempts, standbyAttempts)
	}
	c.dropSpare()
	c.spare = l.ch
	err = retry(ctx, b, c.cfg.onRetry, func() error {
		ch := c.takeSpare()
		if ch == nil {
			return errStandbyLost
		}
		return c.bringUp(ctx, ch, true)
	})
	c.dropSpare()
	if err != nil {
		c.setTarget(old)
		l.ch.Close()
		return false
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), sb.cfg.requestTimeout)
		defer cancel()
		sb.closeSession(ctx, l.ch, l.token)
	}()
	return true
}

// nextStandby is when a new standby may be made after one was used or lost. The caller
// holds sbmu.
func (c *Client) nextStandby() time.Time {
	return time.Now().Add(c.cfg.standby + rand.N(c.cfg.standby))
}

// standbyAttempts is the least number of activations on the standby's channel a move
// makes while the server refuses them as busy.
const standbyAttempts = 5

// errStandbyLost ends the activations on the standby's channel once it closed.
var errStandbyLost = errors.New("client: the standby's channel closed")

// standbyCheck bounds the ServiceLevel read that precedes a move to the standby: a
// standby that does not answer at once is passed over for the other servers.
const standbyCheck = 2 * time.Second

// closeAside closes c off the caller's path, within its request timeout.
func closeAside(c *Client) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.requestTimeout)
	defer cancel()
	_ = c.Close(ctx)
}

// stopStandby ends the standby loop, waiting for it, and closes the standby.
func (c *Client) stopStandby(ctx context.Context) {
	if c.sbStop == nil {
		return
	}
	c.sbOnce.Do(func() { close(c.sbStop) })
	<-c.sbDone
	c.sbmu.Lock()
	sb := c.sb
	c.sb = nil
	c.sbmu.Unlock()
	if sb != nil {
		_ = sb.Close(ctx)
	}
}

// StandbyURL returns the endpoint URL of the standby's server, or "" when there is no
// standby (Standby).
func (c *Client) StandbyURL() string {
	c.sbmu.Lock()
	defer c.sbmu.Unlock()
	if c.sb == nil {
		return ""
	}
	return c.sb.url
}
