package main

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsProbe writes a key of a bucket replicated as the mirror's are, every 100 ms, and
// keeps the time each write took by phase of the run: what a compare-and-swap of the
// mirror (a session's activation waits for one) costs the servers at that moment.
type natsProbe struct {
	nc    *nats.Conn
	kv    jetstream.KeyValue
	phase atomic.Int32
	stop  chan struct{}
	done  chan struct{}

	mu    sync.Mutex // guards took, fails
	took  [phases][]time.Duration
	fails [phases]int
}

// Phases of the run the probe tells apart.
const (
	phaseWarm = iota
	phaseFailover
	phaseAfter
	phases
)

// startNATSProbe connects to url and starts writing.
func startNATSProbe(ctx context.Context, url string, replicas int) (*natsProbe, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: clusterName + "-bench-probe", Replicas: replicas, Storage: jetstream.FileStorage})
	if err != nil {
		nc.Close()
		return nil, err
	}
	p := &natsProbe{nc: nc, kv: kv, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p, nil
}

func (p *natsProbe) run() {
	defer close(p.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		ph := p.phase.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t0 := time.Now()
		_, err := p.kv.Put(ctx, "probe", []byte(strconv.Itoa(i)))
		d := time.Since(t0)
		cancel()
		p.mu.Lock()
		if err != nil {
			p.fails[ph]++
		} else {
			p.took[ph] = append(p.took[ph], d)
		}
		p.mu.Unlock()
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// enter starts phase ph.
func (p *natsProbe) enter(ph int32) { p.phase.Store(ph) }

// finish stops the probe and returns the writes' times and failures by phase.
func (p *natsProbe) finish() ([phases][]time.Duration, [phases]int) {
	close(p.stop)
	<-p.done
	p.nc.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.took, p.fails
}
