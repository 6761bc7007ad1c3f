package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"uastack.dev/bench/internal/load"
	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
)

// envStorm, set in the environment of a re-executed bench binary, makes it the storm
// process: it reads a plan on standard input, says "ready", waits for "go", storms and
// answers with the result, each a line. It runs apart from the established sessions so
// that their Read latency is the server's and the kernel's, not this process's scheduler
// queueing behind the storm's RSA work, and so that its CPU time is its own.
const envStorm = "UASTACK_BENCH_STORM"

// plan is what the storm process does.
type plan struct {
	URL      string
	Dir      string // holds the identities
	Security string // -security
	// Cooperative is the number of cooperative client applications (coopName), Rude
	// names the rude one (uaserver.NewNamedIdentity).
	Cooperative int
	Rude        string
	// Attempts are the connection attempts planned within Within: one per cooperative
	// client (its retries come on top) and the rest rude.
	Attempts int
	Within   time.Duration
	Clients  int // cooperative clients, arriving evenly over Within
	InFlight int // rude attempts in flight at most
	Sources  int // loopback source addresses the rude attempts spread over
	// DropShare of the rude attempts drop the connection mid-handshake, half of them once
	// the OpenSecureChannel request is sent and half after CreateSession (the orphan);
	// AbandonShare of the rude clients that got a whole session just disconnect.
	DropShare, AbandonShare float64
	RudeTimeout             time.Duration // a rude client gives up an attempt after it
	RudeSessionTimeout      time.Duration // the session timeout rude clients ask for
	CoopDeadline            time.Duration // a cooperative client gives up after it
	Nice                    int           // the storm process's nice value (-storm-nice)
}

// stormResult is what the storm process answers.
type stormResult struct {
	Rude rudeResult
	Coop coopResult
	// Took is the storm from its start to the last client done, RudeDone to the last
	// rude attempt done; CPU is this process's over the storm.
	Took, RudeDone, CPU time.Duration
}

// rudeResult counts the rude attempts.
type rudeResult struct {
	Planned, Fired int
	// LastFired is when the last attempt started, from the storm's start.
	LastFired   time.Duration
	MaxInFlight int
	// Whole sessions, and what became of them: closed (CloseSession and
	// CloseSecureChannel) or abandoned (the connection dropped).
	Whole, Closed, Abandoned int
	// The planned drops that happened: the connection closed once the
	// OpenSecureChannel request was sent, or after CreateSession.
	DroppedAtOpen, DroppedAtCreate int
	// Refused counts the attempts that failed, by kind (see kindOf).
	Refused map[string]int
}

// coopResult counts the cooperative clients.
type coopResult struct {
	Clients, In, Failed int
	// Attempts are the connection attempts of all of them: one each plus the retries.
	Attempts int
	// Hinted are the retries whose wait the server set (RetryAfterMs).
	Hinted int
	// Refused counts the attempts that were retried, FailedBy the last attempts of the
	// clients that gave up, by kind.
	Refused, FailedBy map[string]int
	// AllIn is the time from the storm's start until the last client was in, when all
	// were; Connect holds each client's time from its arrival until it was in.
	AllIn   time.Duration
	Connect []time.Duration
}

// stormMain is the storm process: it returns the exit code.
func stormMain(stdin io.Reader, stdout io.Writer) int {
	if err := stormServe(stdin, stdout); err != nil {
		fmt.Fprintln(os.Stderr, "storm process:", err)
		return 1
	}
	return 0
}

func stormServe(stdin io.Reader, stdout io.Writer) error {
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the plan: %w", err)
	}
	var p plan
	if err := json.Unmarshal(line, &p); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if p.Nice != 0 {
		if err := renice(p.Nice); err != nil {
			return fmt.Errorf("nice %d: %w", p.Nice, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := newStorm(ctx, p)
	if err != nil {
		return err
	}
	defer st.close()
	if _, err := fmt.Fprintln(stdout, "ready"); err != nil {
		return err
	}
	if line, err = in.ReadBytes('\n'); err != nil || string(line) != "go\n" {
		return fmt.Errorf("waiting for go: %q %v", line, err)
	}
	// The parent ends the storm early by closing our input (or by dying).
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	res := st.run(ctx, func() {
		// The suite counts the orphans from here: every rude client is gone.
		_, _ = fmt.Fprintln(stdout, "rude-done")
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// storm is the storm process's state.
type storm struct {
	p          plan
	rudeTarget *load.Target
	coopOpts   [][]client.Option // per cooperative application
	coopIDs    []*uaserver.Identity
	rudeID     *uaserver.Identity

	mu   sync.Mutex // guards rude, coop
	rude rudeResult
	coop coopResult
}

// newStorm loads the identities, fetches the endpoints for the rude clients and fills
// the cooperative clients' endpoint cache, so that the storm itself is connections only.
func newStorm(ctx context.Context, p plan) (*storm, error) {
	pol, mode, err := load.SecurityOf(p.Security)
	if err != nil {
		return nil, err
	}
	st := &storm{p: p}
	for i := range p.Cooperative {
		id, err := uaserver.NewNamedIdentity(p.Dir, coopName(i))
		if err != nil {
			st.close()
			return nil, err
		}
		st.coopIDs = append(st.coopIDs, id)
	}
	if st.rudeID, err = uaserver.NewNamedIdentity(p.Dir, p.Rude); err != nil {
		st.close()
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := load.Patiently(sctx, func() (err error) {
		st.rudeTarget, err = load.NewTarget(sctx, p.URL, pol, mode, st.rudeID)
		return err
	}); err != nil {
		st.close()
		return nil, err
	}
	cache := client.NewEndpointCache()
	if err := load.Patiently(sctx, func() error {
		_, err := cache.Get(sctx, p.URL)
		return err
	}); err != nil {
		st.close()
		return nil, err
	}
	for _, id := range st.coopIDs {
		st.coopOpts = append(st.coopOpts, []client.Option{
			client.Security(pol, mode), client.Certificate(id.DER, id.Key),
			client.Application(id.URI, "uastack bench storm"), client.TrustStore(id.PKI),
			client.WithEndpointCache(cache),
			// Retry until the deadline, as a client that must get in does; the delays
			// are the Backoff's defaults, never shorter than the server's hint.
			client.WithBackoff(client.Backoff{Attempts: -1}),
		})
	}
	st.rude.Refused, st.coop.Refused, st.coop.FailedBy = map[string]int{}, map[string]int{}, map[string]int{}
	return st, nil
}

func (st *storm) close() {
	for _, id := range st.coopIDs {
		_ = id.PKI.Close()
	}
	if st.rudeID != nil {
		_ = st.rudeID.PKI.Close()
	}
}

// run storms and returns the counts; rudeDone is called once the last rude attempt is
// done, while cooperative clients may still be trying.
func (st *storm) run(ctx context.Context, rudeDone func()) stormResult {
	start, cpu0 := time.Now(), proc.SelfCPU()
	var wg sync.WaitGroup
	var rudeTook time.Duration
	wg.Go(func() { st.runCooperative(ctx, start) })
	wg.Go(func() {
		st.runRude(ctx, start)
		rudeTook = time.Since(start)
		rudeDone()
	})
	wg.Wait()
	st.mu.Lock()
	defer st.mu.Unlock()
	return stormResult{Rude: st.rude, Coop: st.coop, Took: time.Since(start), RudeDone: rudeTook, CPU: proc.SelfCPU() - cpu0}
}

// runCooperative starts the cooperative clients evenly over the window: each dials with
// pkg/client, which retries with its Backoff and honours BadServerTooBusy and
// RetryAfterMs, and closes its session cleanly once in.
func (st *storm) runCooperative(ctx context.Context, start time.Time) {
	n := st.p.Clients
	st.mu.Lock()
	st.coop.Clients = n
	st.mu.Unlock()
	var wg sync.WaitGroup
	for i := range n {
		arrive := start.Add(time.Duration(i) * st.p.Within / time.Duration(n))
		if !sleepUntil(ctx, arrive) {
			break
		}
		wg.Go(func() { st.cooperative(ctx, start, arrive, st.coopOpts[i%len(st.coopOpts)]) })
	}
	wg.Wait()
}

func (st *storm) cooperative(ctx context.Context, start, arrive time.Time, app []client.Option) {
	cctx, cancel := context.WithTimeout(ctx, st.p.CoopDeadline)
	defer cancel()
	attempts := 1
	opts := append(slices.Clip(app), client.OnRetry(func(err error, _ time.Duration) {
		attempts++ // the retry hook runs on this goroutine, inside Dial
		var se *client.StatusError
		hinted := errors.As(err, &se) && se.RetryAfter > 0
		st.mu.Lock()
		st.coop.Refused[kindOf(err)]++
		if hinted {
			st.coop.Hinted++
		}
		st.mu.Unlock()
	}))
	c, err := client.Dial(cctx, st.p.URL, opts...)
	in := time.Now()
	st.mu.Lock()
	st.coop.Attempts += attempts
	if err != nil {
		st.coop.Failed++
		st.coop.FailedBy[kindOf(err)]++
	} else {
		st.coop.In++
		st.coop.Connect = append(st.coop.Connect, in.Sub(arrive))
		if st.coop.In == st.coop.Clients {
			st.coop.AllIn = in.Sub(start)
		}
	}
	st.mu.Unlock()
	if err == nil {
		closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = c.Close(closeCtx)
		cancel()
	}
}

// runRude fires the rude attempts evenly over the window, at most InFlight at once. A
// rude client refused tries again at once, and a new rude client is no different to the
// server: so the rude clients are one stream of attempts at the planned rate, each
// started as soon as it is due and a slot is free, none after the window.
func (st *storm) runRude(ctx context.Context, start time.Time) {
	n := max(st.p.Attempts-st.p.Clients, 0)
	slots := make(chan struct{}, st.p.InFlight)
	end := start.Add(st.p.Within)
	var wg sync.WaitGroup
	fired, maxInFlight := 0, 0
	var last time.Duration
	for fired < n && ctx.Err() == nil {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		due := min(n, int(int64(n)*int64(now.Sub(start))/int64(st.p.Within))+1)
		if fired >= due {
			time.Sleep(time.Millisecond)
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-time.After(time.Until(end)):
			continue // the window ended with every slot taken
		case <-ctx.Done():
			continue
		}
		maxInFlight = max(maxInFlight, len(slots))
		last = time.Since(start)
		i := fired
		fired++
		wg.Go(func() {
			defer func() { <-slots }()
			st.rudeAttempt(ctx, i)
		})
	}
	wg.Wait()
	st.mu.Lock()
	st.rude.Planned, st.rude.Fired, st.rude.MaxInFlight, st.rude.LastFired = n, fired, maxInFlight, last
	st.mu.Unlock()
}

// rudeAttempt is one rude client's try for a whole session; on any refusal it drops the
// connection, whatever state the session is in.
func (st *storm) rudeAttempt(ctx context.Context, i int) {
	actx, cancel := context.WithTimeout(ctx, st.p.RudeTimeout)
	defer cancel()
	how := load.Conn{Local: &net.TCPAddr{IP: loopback(2, i%max(st.p.Sources, 1))}}
	roll := rand.Float64()
	refused := func(err error) {
		kind := kindOf(err)
		if actx.Err() != nil && ctx.Err() == nil {
			kind = "gave up after " + st.p.RudeTimeout.String()
		}
		st.mu.Lock()
		st.rude.Refused[kind]++
		st.mu.Unlock()
	}
	if roll < st.p.DropShare/2 {
		// Drop once the OpenSecureChannel request is out: the server decrypts and
		// verifies it for nobody.
		var dropped atomic.Bool
		how.Wrap = func(nc net.Conn) net.Conn { return &dropAtOpen{Conn: nc, dropped: &dropped} }
		s, err := load.Open(actx, st.rudeTarget, how)
		switch {
		case dropped.Load():
			st.mu.Lock()
			st.rude.DroppedAtOpen++
			st.mu.Unlock()
		case err != nil:
			refused(err)
		default:
			s.Drop() // cannot happen: the wrapper fails the read of the answer
		}
		return
	}
	s, err := load.Open(actx, st.rudeTarget, how)
	if err != nil {
		refused(err)
		return
	}
	defer s.Drop()
	if err := s.Create(actx, st.p.RudeSessionTimeout); err != nil {
		refused(err)
		return
	}
	if roll < st.p.DropShare {
		st.mu.Lock()
		st.rude.DroppedAtCreate++ // the deferred Drop leaves the session unactivated
		st.mu.Unlock()
		return
	}
	if err := s.Activate(actx); err != nil {
		refused(err) // and leave the session unactivated
		return
	}
	abandon := rand.Float64() < st.p.AbandonShare
	if !abandon {
		if err := s.CloseSession(actx); err != nil {
			refused(err)
			return
		}
		s.Close()
	}
	st.mu.Lock()
	st.rude.Whole++
	if abandon {
		st.rude.Abandoned++
	} else {
		st.rude.Closed++
	}
	st.mu.Unlock()
}

// dropAtOpen is a client connection that closes itself when the client first waits for
// an answer after the Hello and the OpenSecureChannel request are written (two writes or
// more), before the server's answer to the request is read.
type dropAtOpen struct {
	net.Conn
	writes  atomic.Int32
	dropped *atomic.Bool
}

func (c *dropAtOpen) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.writes.Add(1)
	return n, err
}

func (c *dropAtOpen) Read(p []byte) (int, error) {
	if c.writes.Load() >= 2 {
		c.dropped.Store(true)
		_ = c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Read(p)
}

// kindOf names why a connection attempt failed: "ERR <status>" for an Error message of
// the connection protocol (a refusal at the listener, or of the channel), the StatusCode
// of a refused service (BadServerTooBusy, BadTooManySessions, ...), or what the network
// said.
func kindOf(err error) string {
	var ue *uacp.Error
	if errors.As(err, &ue) {
		return "ERR " + ue.Code.Sub().Name()
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no local address"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	}
	var c status.Code
	if errors.As(err, &c) {
		return c.Sub().Name()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "network timeout"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return "connection closed"
	}
	return "other"
}

// loopback returns the k-th address of block b of the loopback network: 127.b.x.y with
// y from 1 to 254. Linux routes all of 127.0.0.0/8 to the loopback interface, so a client
// bound to one reaches a server listening on 127.0.0.1 from a source address of its own.
func loopback(b byte, k int) net.IP {
	return net.IPv4(127, b, byte(k/254), byte(1+k%254))
}

// sleepUntil waits until t or until ctx ends; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
