// Package drive drives a request/response load: N clients, each with M requests
// outstanding, a warm-up, then a measured window in which completions, latencies and the
// CPU time of the client (this process) and of the server process are counted.
package drive

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/report"
)

// Call is one request and the wait for its response. Safe for concurrent use.
type Call func(ctx context.Context) error

// Dial opens one client (a connection, a session) and returns its Call and its close.
type Dial func(ctx context.Context) (Call, func(), error)

// Options shape a run.
type Options struct {
	Clients     int           // connections, each dialled once
	Outstanding int           // requests in flight per client
	Warmup      time.Duration // load before the window, not counted
	Window      time.Duration // the measured window
	ServerPid   int           // process whose CPU is charged to the server; 0 = none
	ServerTree  bool          // charge the processes below ServerPid too (plugin processes)
	Progress    *report.Progress
}

// Result is what the window measured.
type Result struct {
	Requests  int64
	Window    time.Duration
	ServerCPU time.Duration // of ServerPid over the window
	// ServerUser is the user part of ServerCPU: the server's own code and its runtime,
	// without the kernel's work for its system calls.
	ServerUser time.Duration
	ClientCPU  time.Duration // of this process over the window
	Allocs     uint64        // heap allocations of this process over the window
	AllocB     uint64        // bytes allocated by this process over the window
	Latencies  []time.Duration
}

// PerSecond is the request rate over the window.
func (r Result) PerSecond() float64 { return float64(r.Requests) / r.Window.Seconds() }

// ServerMicros is the server CPU per request in µs.
func (r Result) ServerMicros() float64 {
	return float64(r.ServerCPU.Microseconds()) / float64(max(r.Requests, 1))
}

// ServerUserMicros is the server's user CPU per request in µs.
func (r Result) ServerUserMicros() float64 {
	return float64(r.ServerUser.Microseconds()) / float64(max(r.Requests, 1))
}

// ClientMicros is the client CPU per request in µs.
func (r Result) ClientMicros() float64 {
	return float64(r.ClientCPU.Microseconds()) / float64(max(r.Requests, 1))
}

// Add accumulates o into r: windows measured in rounds add up to one result.
func (r *Result) Add(o Result) {
	r.Requests += o.Requests
	r.Window += o.Window
	r.ServerCPU += o.ServerCPU
	r.ServerUser += o.ServerUser
	r.ClientCPU += o.ClientCPU
	r.Allocs += o.Allocs
	r.AllocB += o.AllocB
	r.Latencies = append(r.Latencies, o.Latencies...)
}

// AllocsPer is the client's heap allocations per request.
func (r Result) AllocsPer() float64 { return float64(r.Allocs) / float64(max(r.Requests, 1)) }

// BytesPer is the client's bytes allocated per request.
func (r Result) BytesPer() float64 { return float64(r.AllocB) / float64(max(r.Requests, 1)) }

// Run dials o.Clients clients and keeps o.Outstanding calls in flight on each through
// the warm-up and the window. The first call error stops the run and is returned.
func Run(ctx context.Context, dial Dial, o Options) (Result, error) {
	calls := make([]Call, 0, o.Clients)
	for range o.Clients {
		c, closeFn, err := dial(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("dial: %w", err)
		}
		defer closeFn()
		calls = append(calls, c)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		measuring atomic.Bool
		count     atomic.Int64
		firstErr  error
		errOnce   sync.Once
		wg        sync.WaitGroup
	)
	lat := make([][]time.Duration, o.Clients*o.Outstanding)
	for i, call := range calls {
		for j := range o.Outstanding {
			k := i*o.Outstanding + j
			wg.Go(func() {
				for ctx.Err() == nil {
					start := time.Now()
					if err := call(ctx); err != nil {
						if ctx.Err() == nil {
							errOnce.Do(func() { firstErr = err; cancel() })
						}
						return
					}
					if measuring.Load() {
						lat[k] = append(lat[k], time.Since(start))
						count.Add(1)
					}
				}
			})
		}
	}
	stop := make(chan struct{})
	if o.Progress != nil {
		go o.Progress.Track(o.Warmup+o.Window, stop)
	}
	var res Result
	sleep(ctx, o.Warmup)
	self, _ := proc.Start(0)
	var server *proc.Meter
	if o.ServerPid != 0 {
		var err error
		start := proc.Start
		if o.ServerTree {
			start = proc.StartTree
		}
		if server, err = start(o.ServerPid); err != nil {
			cancel()
			wg.Wait()
			return res, err
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs, bytes := ms.Mallocs, ms.TotalAlloc
	t0 := time.Now()
	measuring.Store(true)
	sleep(ctx, o.Window)
	measuring.Store(false)
	res.Window = time.Since(t0)
	res.Requests = count.Load()
	res.ClientCPU, _ = self.Stop()
	runtime.ReadMemStats(&ms)
	res.Allocs, res.AllocB = ms.Mallocs-mallocs, ms.TotalAlloc-bytes
	if server != nil {
		user, sys, err := server.StopSplit()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		res.ServerCPU, res.ServerUser = user+sys, user
	}
	close(stop)
	cancel()
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	for _, l := range lat {
		res.Latencies = append(res.Latencies, l...)
	}
	if res.Requests == 0 {
		return res, fmt.Errorf("no request completed in the %v window", o.Window)
	}
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
