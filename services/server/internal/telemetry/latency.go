package telemetry

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// LatencyName is the histogram of the services' answer times; in Prometheus it is
// opcua_server_service_duration_seconds{service}.
const LatencyName = "opcua.server.service.duration"

// latencyBounds are the upper bounds of the histogram's buckets, in seconds: from 5 µs
// (an in-memory Read answers in a few) to 10 s (a call into a slow node manager).
var latencyBounds = []float64{
	5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
	1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// bucketCount is the number of buckets: one per bound and one above them all.
const bucketCount = 21

// boundsNanos are latencyBounds in nanoseconds, for Record, and the largest duration
// for the last bucket.
var boundsNanos = func() [bucketCount]int64 {
	if len(latencyBounds)+1 != bucketCount {
		panic("telemetry: bucketCount does not match latencyBounds")
	}
	var b [bucketCount]int64
	for i, s := range latencyBounds {
		b[i] = int64(s * 1e9)
	}
	b[bucketCount-1] = 1<<63 - 1
	return b
}()

// latencyShard is one shard of a service's histogram: the answers of each bucket and
// the sum of their times, a cache line apart from the next shard.
type latencyShard struct {
	buckets [bucketCount]atomic.Uint64
	sumNs   atomic.Uint64
	_       [64 - (bucketCount*8+8)%64]byte
}

// Latency keeps a histogram of the answer times of each service, exported as
// opcua_server_service_duration_seconds{service}. It is kept in atomics, sharded by
// channel, and handed to the readers when they collect (it is their metric.Producer):
// the OpenTelemetry SDK's synchronous histogram costs a hundred nanoseconds and more per
// record where contended, which an inline Read of a few hundred cannot spare.
type Latency struct {
	start time.Time
	mask  uint32
	// mu guards services.
	mu       sync.Mutex
	services []*ServiceLatency
}

// ServiceLatency is the histogram of one service. Record is safe for concurrent use and
// allocates nothing.
type ServiceLatency struct {
	name   string
	attrs  attribute.Set
	shards []latencyShard
}

// newLatency returns a Latency with shards for the processors the process may use.
func newLatency(start time.Time) *Latency {
	n := 2
	for n < 2*runtime.GOMAXPROCS(0) && n < 64 {
		n *= 2
	}
	return &Latency{start: start, mask: uint32(n - 1)}
}

// Service returns the histogram of the service named name ("Read"), made on its first
// call; a server gets one per row of its service table when it starts. A service with no
// answers yet is not exported.
func (l *Latency) Service(name string) *ServiceLatency {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.services {
		if s.name == name {
			return s
		}
	}
	s := &ServiceLatency{name: name, attrs: attribute.NewSet(attribute.String("service", name)),
		shards: make([]latencyShard, l.mask+1)}
	l.services = append(l.services, s)
	return s
}

// Record counts an answer that took d, from the arrival of the request to its answer
// handed to the channel. channel is the id of the channel that answered: the answers of
// one channel go to one shard, so that channels served on different processors do not
// write to one cache line. A nil ServiceLatency records nothing.
func (s *ServiceLatency) Record(channel uint32, d time.Duration) {
	if s == nil {
		return
	}
	ns := max(int64(d), 0)
	sh := &s.shards[channel&uint32(len(s.shards)-1)]
	i := 0
	for ns > boundsNanos[i] {
		i++
	}
	sh.buckets[i].Add(1)
	sh.sumNs.Add(uint64(ns))
}

// Count returns the number of answers recorded; 0 for a nil ServiceLatency.
func (s *ServiceLatency) Count() uint64 {
	if s == nil {
		return 0
	}
	var n uint64
	for i := range s.shards {
		for j := range s.shards[i].buckets {
			n += s.shards[i].buckets[j].Load()
		}
	}
	return n
}

// Produce returns the histograms of the services with answers, cumulative since the
// telemetry was made (metric.Producer). The buckets and sums are read one by one while
// answers are recorded: a sum may be a few answers ahead of its counts.
func (l *Latency) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	l.mu.Lock()
	services := l.services[:len(l.services):len(l.services)]
	l.mu.Unlock()
	now := time.Now()
	points := make([]metricdata.HistogramDataPoint[float64], 0, len(services))
	for _, s := range services {
		counts := make([]uint64, bucketCount)
		var count, sumNs uint64
		for i := range s.shards {
			sh := &s.shards[i]
			for j := range sh.buckets {
				c := sh.buckets[j].Load()
				counts[j] += c
				count += c
			}
			sumNs += sh.sumNs.Load()
		}
		if count == 0 {
			continue
		}
		points = append(points, metricdata.HistogramDataPoint[float64]{
			Attributes: s.attrs, StartTime: l.start, Time: now,
			Count: count, Bounds: latencyBounds, BucketCounts: counts, Sum: float64(sumNs) / 1e9,
		})
	}
	if len(points) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: ScopeName},
		Metrics: []metricdata.Metrics{{
			Name:        LatencyName,
			Description: "Time from a request's arrival to its answer handed to the channel, by service. A Publish waits for notifications: its time is how long it was parked.",
			Unit:        "s",
			Data: metricdata.Histogram[float64]{
				Temporality: metricdata.CumulativeTemporality,
				DataPoints:  points,
			},
		}},
	}}, nil
}
