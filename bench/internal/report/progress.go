package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress draws a single redrawn line on stderr: a label, a bar and a fraction. It draws
// nothing when stderr is not a terminal or when quiet is set (the -short smoke mode). Safe
// for concurrent use.
type Progress struct {
	mu    sync.Mutex // guards w, label, last
	w     io.Writer  // nil when silent
	label string
	last  time.Time
}

// NewProgress returns a progress bar on stderr, silent when quiet or when stderr is not a
// character device.
func NewProgress(quiet bool) *Progress {
	p := &Progress{}
	if quiet {
		return p
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		p.w = os.Stderr
	}
	return p
}

// Stage sets the label shown before the bar, for example "read uastack None".
func (p *Progress) Stage(label string) {
	p.mu.Lock()
	p.label = label
	p.last = time.Time{}
	p.mu.Unlock()
	p.Update(0)
}

// Update redraws the bar at fraction f in [0, 1], at most ten times a second.
func (p *Progress) Update(f float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	now := time.Now()
	if f < 1 && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	f = min(max(f, 0), 1)
	const width = 30
	n := int(f * width)
	fmt.Fprintf(p.w, "\r\x1b[K%-32.32s [%s%s] %3.0f%%", p.label, strings.Repeat("#", n), strings.Repeat(".", width-n), f*100)
}

// Track redraws the bar from elapsed time until d has passed or stop is closed; run it in
// its own goroutine around a measured window.
func (p *Progress) Track(d time.Duration, stop <-chan struct{}) {
	start := time.Now()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			p.Update(float64(now.Sub(start)) / float64(d))
			if now.Sub(start) >= d {
				return
			}
		}
	}
}

// Done ends the line so that later output starts on a fresh one.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
