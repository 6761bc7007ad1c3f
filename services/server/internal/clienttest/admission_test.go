package clienttest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/config"
)

// retry is one retry a client's OnRetry heard of.
type retry struct {
	code  status.Code
	hint  time.Duration
	delay time.Duration
}

// retries records the retries of clients.
type retries struct {
	mu   sync.Mutex // guards list
	list []retry
}

func (r *retries) option() client.Option {
	return client.OnRetry(func(err error, delay time.Duration) {
		rt := retry{delay: delay}
		var se *client.StatusError
		if errors.As(err, &se) {
			rt.code, rt.hint = se.Code, se.RetryAfter
		} else {
			_ = errors.As(err, &rt.code)
		}
		r.mu.Lock()
		r.list = append(r.list, rt)
		r.mu.Unlock()
	})
}

func (r *retries) of(code status.Code) []retry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []retry
	for _, rt := range r.list {
		if rt.code == code {
			out = append(out, rt)
		}
	}
	return out
}

// TestAdmissionBusyConnect: 20 clients log in with passwords at once (an RSA decryption
// and a bcrypt check each) to a server that establishes one session at a time
// (limits.maxConcurrentSessionEstablishment 1, the password meter off). The admission
// refuses the others with BadServerTooBusy and a RetryAfterMs hint, spread so that they
// do not come back together; each client waits at least its hint, and all get in
// within seconds.
func TestAdmissionBusyConnect(t *testing.T) {
	t.Parallel()
	ts, trust := testServer(t, func(c *config.Config) {
		c.Limits.MaxConcurrentSessionEstablishment = 1
		c.Limits.UserNameLoginsPerMinute = 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cache := client.NewEndpointCache()
	_, err := cache.Get(ctx, ts.URL)
	require.NoError(t, err)
	var r retries
	began := time.Now()
	// A burst whose logins happen not to overlap (the goroutines start as the scheduler
	// lets them) finds the server idle each time: burst again, a few times at most.
	for burst := 0; burst < 5 && len(r.of(status.BadServerTooBusy)) == 0; burst++ {
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Go(func() {
				<-start
				c, err := client.Dial(ctx, ts.URL, dialOpts(t, securities[0], trust, client.WithEndpointCache(cache),
					client.UserName("alice", "s3cret"), client.WithBackoff(client.Backoff{Initial: time.Millisecond, Attempts: -1}), r.option())...)
				if err == nil {
					_, err = c.ReadValue(ctx, n0(id2259))
					_ = c.Close(ctx)
				}
				errs <- err
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	busy := r.of(status.BadServerTooBusy)
	t.Logf("20 clients in within %v after %d refusals", time.Since(began), len(busy))
	require.NotEmpty(t, busy, "the server was never busy: the test proves nothing")
	hints := map[time.Duration]bool{}
	for _, rt := range busy {
		require.Positive(t, rt.hint, "every refusal carries RetryAfterMs")
		require.GreaterOrEqual(t, rt.delay, rt.hint, "the client waits at least the hint")
		require.LessOrEqual(t, rt.hint, 10*time.Second, "hints are bounded")
		hints[rt.hint] = true
	}
	if len(busy) >= 5 {
		require.Greater(t, len(hints), 1, "the hints are spread: %v", busy)
	}
	require.Less(t, time.Since(began), 20*time.Second)
}

// TestAdmissionBusyReconnect: under FairShare with one new connection a second, a
// client connects (retrying its second connection, refused ERR BadTcpServerTooBusy, with
// its backoff), its connection drops at once, and the reconnect is refused by the rate
// as well: it backs off, comes back when the rate allows and re-activates the same
// session.
func TestAdmissionBusyReconnect(t *testing.T) {
	t.Parallel()
	ts, trust := testServer(t, func(c *config.Config) {
		c.Limits.IsolationProfile = "FairShare"
		c.Limits.ConnectionsPerSecond, c.Limits.ConnectionBurst = 1, 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := newProxy(t, ts.Addr.String())
	var r retries
	backoff := client.Backoff{Initial: 50 * time.Millisecond, Max: 400 * time.Millisecond, Attempts: -1}
	c := dial(t, ctx, p.URL(), dialOpts(t, securities[0], trust, client.WithBackoff(backoff), r.option())...)
	sid := c.SessionID()
	refusedAtDial := len(r.of(status.BadTcpServerTooBusy))
	require.Positive(t, p.Drop())
	start := time.Now()
	dv, err := c.ReadValue(ctx, n0(id2259))
	require.NoError(t, err)
	require.Equal(t, status.Good, dv.Status)
	require.Equal(t, sid, c.SessionID(), "the session is re-activated, not replaced")
	refused := r.of(status.BadTcpServerTooBusy)
	t.Logf("reconnected in %v; %d refusals by the rate at Dial, %d at the reconnect", time.Since(start), refusedAtDial, len(refused)-refusedAtDial)
	require.Greater(t, len(refused), refusedAtDial, "the reconnect was refused by the rate and retried")
	for _, rt := range refused {
		require.LessOrEqual(t, rt.delay, backoff.Max, "the backoff is bounded")
		require.Positive(t, rt.delay)
	}
}
