package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"uastack.dev/bench/internal/drive"
	"uastack.dev/bench/internal/report"
)

// badPause is how long a caller of the blocking load waits after a failed Read before
// its next one, so that a plugin answering at once (BadResourceUnavailable) does not
// turn the load into a busy loop that competes with the measured one.
const badPause = 100 * time.Millisecond

// blockLoad is the blocking plugin's own load beside a measured target: a few clients
// that keep Reads of its node "block" in flight, each answered after 1 s.
type blockLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closes []func()

	mu    sync.Mutex // guards tally
	tally blockTally
}

// blockTally is what the blocking load's Reads got.
type blockTally struct {
	good int
	lat  []time.Duration // of the Good answers
	bad  map[string]int  // failures (not the cancelled Reads at the end), by message
}

// startBlockLoad dials clients sessions and starts outstanding Reads on each.
func startBlockLoad(ctx context.Context, dial drive.Dial, clients, outstanding int) (*blockLoad, error) {
	ctx, cancel := context.WithCancel(ctx)
	b := &blockLoad{cancel: cancel, tally: blockTally{bad: map[string]int{}}}
	for range clients {
		call, closeFn, err := dial(ctx)
		if err != nil {
			b.stop()
			return nil, err
		}
		b.closes = append(b.closes, closeFn)
		for range outstanding {
			b.wg.Go(func() { b.loop(ctx, call) })
		}
	}
	return b, nil
}

func (b *blockLoad) loop(ctx context.Context, call drive.Call) {
	for ctx.Err() == nil {
		start := time.Now()
		err := call(ctx)
		if ctx.Err() != nil {
			return // stopped: the Read was cancelled, not answered
		}
		b.mu.Lock()
		if err == nil {
			b.tally.good++
			b.tally.lat = append(b.tally.lat, time.Since(start))
		} else {
			var bs *badStatus
			msg := err.Error()
			if errors.As(err, &bs) {
				msg = bs.code.String()
			}
			b.tally.bad[msg]++
		}
		b.mu.Unlock()
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(badPause):
			}
		}
	}
}

// stop cancels the Reads in flight, closes the clients and returns the tally.
func (b *blockLoad) stop() blockTally {
	b.cancel()
	b.wg.Wait()
	for _, c := range b.closes {
		c()
	}
	return b.tally
}

// add accumulates o into t.
func (t *blockTally) add(o blockTally) {
	t.good += o.good
	t.lat = append(t.lat, o.lat...)
	if t.bad == nil {
		t.bad = map[string]int{}
	}
	for k, n := range o.bad {
		t.bad[k] += n
	}
}

// String says how many Reads were answered and how.
func (t blockTally) String() string {
	s := fmt.Sprintf("%d of its Reads answered Good", t.good)
	if t.good > 0 {
		p := report.Percentiles(t.lat, 0.5, 0.99)
		s += fmt.Sprintf(" (latency p50 %.3f s, p99 %.3f s)", p[0].Seconds(), p[1].Seconds())
	}
	if len(t.bad) == 0 {
		return s + ", none failed"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t.bad)) {
		parts = append(parts, fmt.Sprintf("%d × %s", t.bad[k], k))
	}
	return s + ", **failed**: " + strings.Join(parts, ", ")
}
