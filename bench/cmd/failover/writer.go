package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
)

// writer writes a counter (1, 2, …) to the demo variable on every live server, one
// value every interval, so that all servers carry the same values: each server has its
// own client and goroutine, so that a slow server skips values instead of holding up
// the others.
type writer struct {
	interval time.Duration
	servers  []*serverWrites
	sent     atomic.Int32 // the last value handed to the servers
	stop     chan struct{}
	wg       sync.WaitGroup
}

// serverWrites is what was written to one server.
type serverWrites struct {
	c    *client.Client
	live atomic.Bool
	next chan int32 // at most one value waits

	mu sync.Mutex // guards ok, last, failed, skipped
	// ok[v] is set when the server confirmed the write of v; last is the highest.
	ok              []bool
	last            int32
	failed, skipped int
}

// newWriter starts nothing yet: it writes 0 to every server, the value before the
// first write of the counter.
func newWriter(ctx context.Context, interval time.Duration, clients []*client.Client) (*writer, error) {
	w := &writer{interval: interval, stop: make(chan struct{})}
	for _, c := range clients {
		sw := &serverWrites{c: c, next: make(chan int32, 1), ok: []bool{true}}
		sw.live.Store(true)
		if _, err := c.WriteValue(ctx, demoNode, codec.Int32Variant(0)); err != nil {
			return nil, err
		}
		w.servers = append(w.servers, sw)
	}
	return w, nil
}

// start begins the writes.
func (w *writer) start() {
	for _, sw := range w.servers {
		w.wg.Go(func() { sw.run(w.interval) })
	}
	w.wg.Go(w.tick)
}

func (w *writer) tick() {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	defer func() {
		for _, sw := range w.servers {
			close(sw.next)
		}
	}()
	for v := int32(1); ; v++ {
		w.sent.Store(v)
		for _, sw := range w.servers {
			if !sw.live.Load() {
				continue
			}
			select {
			case sw.next <- v:
			default:
				sw.mu.Lock()
				sw.skipped++
				sw.mu.Unlock()
			}
		}
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

// run writes the values handed to the server until the writer stops.
func (sw *serverWrites) run(interval time.Duration) {
	for v := range sw.next {
		if !sw.live.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(time.Second, 10*interval))
		code, err := sw.c.WriteValue(ctx, demoNode, codec.Int32Variant(v))
		cancel()
		sw.mu.Lock()
		if err == nil && code.IsGood() {
			for int(v) >= len(sw.ok) {
				sw.ok = append(sw.ok, make([]bool, len(sw.ok)+64)...)
			}
			sw.ok[v] = true
			sw.last = max(sw.last, v)
		} else {
			sw.failed++
		}
		sw.mu.Unlock()
	}
}

// drop stops writing to server i (it is about to be killed).
func (w *writer) drop(i int) { w.servers[i].live.Store(false) }

// finish stops the writes, waits for those in flight and returns the last value sent.
func (w *writer) finish() int32 {
	close(w.stop)
	w.wg.Wait()
	return w.sent.Load()
}

// wrote reports whether server i confirmed the write of v.
func (w *writer) wrote(i int, v int32) bool {
	sw := w.servers[i]
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return int(v) < len(sw.ok) && sw.ok[v]
}

// lastWritten is the highest value server i confirmed.
func (w *writer) lastWritten(i int) int32 {
	sw := w.servers[i]
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.last
}

// counts returns the failed and skipped writes over the live servers and the one
// dropped (whose last write may fail as it is killed).
func (w *writer) counts() (failed, skipped int) {
	for _, sw := range w.servers {
		sw.mu.Lock()
		if sw.live.Load() {
			failed += sw.failed
		}
		skipped += sw.skipped
		sw.mu.Unlock()
	}
	return failed, skipped
}
