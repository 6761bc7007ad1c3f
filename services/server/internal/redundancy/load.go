package redundancy

import (
	"math"
	"runtime"
	"time"
)

// Usage is the server's use of its limits at one moment, each count beside the limit it
// is held to: the session table (limits.maxSessionCount), the subscription engine
// (limits.maxSubscriptionCount, limits.maxMonitoredItemCount) and the request queue
// (limits.maxQueuedRequestCount). A limit of 0 or less is none: its count adds no load.
type Usage struct {
	Sessions, MaxSessions             int
	Subscriptions, MaxSubscriptions   int
	MonitoredItems, MaxMonitoredItems int
	QueuedRequests, MaxQueuedRequests int
}

// CPUClock reports the CPU time the process has used since it started, user and system;
// false when it cannot be read, and the load then leaves the CPU out.
type CPUClock func() (time.Duration, bool)

// Sampler computes a server's load, 0 idle to 1 at a limit, from samples of its Usage
// and of its process's CPU time. The load is the highest share of the server's
// capacity in use: the counts against their limits as they are, the CPU (against
// GOMAXPROCS processors) and the request queue smoothed over the time constant given to
// NewSampler, so that one busy moment does not move clients (RATIONALE.md).
//
// A Sampler is not safe for concurrent use: one goroutine samples.
type Sampler struct {
	smoothing time.Duration
	cpu       CPUClock
	procs     func() int

	last    time.Time     // the time of the previous sample; zero before the first
	lastCPU time.Duration // the CPU time at last
	cpuOK   bool          // lastCPU was read
	busy    float64       // the smoothed share of the CPU and the request queue
}

// NewSampler returns a Sampler that smooths the CPU and queue shares with the time
// constant smoothing (0: not at all) and reads the process's CPU time from cpu (nil:
// the CPU is left out; ProcessCPU is the process's own).
func NewSampler(smoothing time.Duration, cpu CPUClock) *Sampler {
	if cpu == nil {
		cpu = func() (time.Duration, bool) { return 0, false }
	}
	return &Sampler{smoothing: smoothing, cpu: cpu, procs: func() int { return runtime.GOMAXPROCS(0) }}
}

// Sample takes u and the process's CPU time at now and returns the load. The first
// sample only starts the clock of the CPU and the smoothing: its load is that of the
// counts.
func (s *Sampler) Sample(u Usage, now time.Time) float64 {
	counts := max(share(u.Sessions, u.MaxSessions), share(u.Subscriptions, u.MaxSubscriptions),
		share(u.MonitoredItems, u.MaxMonitoredItems))
	cpu, cpuOK := s.cpu()
	if !s.last.IsZero() {
		if dt := now.Sub(s.last); dt > 0 {
			burst := share(u.QueuedRequests, u.MaxQueuedRequests)
			if cpuOK && s.cpuOK {
				if procs := s.procs(); procs > 0 {
					burst = max(burst, clamp(float64(cpu-s.lastCPU)/(float64(dt)*float64(procs))))
				}
			}
			s.busy += s.weight(dt) * (burst - s.busy)
		}
	}
	s.last, s.lastCPU, s.cpuOK = now, cpu, cpuOK
	return max(counts, s.busy)
}

// weight is the part of a new sample, dt after the previous one, in the smoothed share:
// an exponential moving average with the time constant s.smoothing, so that the
// sampling interval does not change how fast the share follows.
func (s *Sampler) weight(dt time.Duration) float64 {
	if s.smoothing <= 0 {
		return 1
	}
	return 1 - math.Exp(-float64(dt)/float64(s.smoothing))
}

// share is n of limit, clamped to [0, 1]; 0 when there is no limit.
func share(n, limit int) float64 {
	if limit <= 0 {
		return 0
	}
	return clamp(float64(n) / float64(limit))
}

func clamp(x float64) float64 { return min(max(x, 0), 1) }
