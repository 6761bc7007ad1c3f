package redundancy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeCPU is a CPUClock the test advances.
type fakeCPU struct {
	used time.Duration
	ok   bool
}

func (c *fakeCPU) read() (time.Duration, bool) { return c.used, c.ok }

// newTestSampler is a Sampler of two processors, smoothing over five seconds, on cpu.
func newTestSampler(cpu *fakeCPU) *Sampler {
	s := NewSampler(5*time.Second, cpu.read)
	s.procs = func() int { return 2 }
	return s
}

// TestSampleCounts checks that the load is the highest share of the counts against
// their limits, at once and unsmoothed; a limit of 0 counts nothing.
func TestSampleCounts(t *testing.T) {
	t.Parallel()
	s := newTestSampler(&fakeCPU{})
	at := time.Unix(1000, 0)
	cases := []struct {
		u    Usage
		want float64
	}{
		{Usage{}, 0},
		{Usage{Sessions: 25, MaxSessions: 100}, 0.25},
		{Usage{Sessions: 25, MaxSessions: 100, Subscriptions: 600, MaxSubscriptions: 1000}, 0.6},
		{Usage{Sessions: 1, MaxSessions: 100, MonitoredItems: 90, MaxMonitoredItems: 100}, 0.9},
		{Usage{MonitoredItems: 1 << 20, MaxMonitoredItems: 0}, 0},
		{Usage{Sessions: 120, MaxSessions: 100}, 1},
		{Usage{Sessions: -5, MaxSessions: 100}, 0},
	}
	for i, c := range cases {
		at = at.Add(time.Second)
		require.InDelta(t, c.want, s.Sample(c.u, at), 1e-9, "case %d: %+v", i, c.u)
	}
}

// TestSampleCPUSmoothed feeds one busy second among idle ones, then a busy stretch: the
// single second moves the load by less than a fifth and the level by a few steps, while
// the stretch brings it to full within a few time constants, whatever the sampling
// interval.
func TestSampleCPUSmoothed(t *testing.T) {
	t.Parallel()
	cpu := &fakeCPU{ok: true}
	s := newTestSampler(cpu)
	at := time.Unix(1000, 0)
	step := func(busy float64, dt time.Duration) float64 {
		at = at.Add(dt)
		cpu.used += time.Duration(busy * 2 * float64(dt)) // two processors
		return s.Sample(Usage{}, at)
	}
	require.Zero(t, s.Sample(Usage{}, at), "the first sample starts the clock")
	for range 10 {
		require.Zero(t, step(0, time.Second))
	}
	spike := step(1, time.Second)
	require.InDelta(t, 1-0.8187, spike, 1e-3, "1 - e^-1/5")
	require.GreaterOrEqual(t, Level(Healthy, spike), byte(245), "one busy second costs a few levels")
	prev := spike
	for range 5 {
		l := step(0, time.Second)
		require.Less(t, l, prev, "it decays")
		prev = l
	}
	for range 25 {
		prev = step(1, time.Second)
	}
	require.Greater(t, prev, 0.99, "five time constants of full CPU")
	require.Equal(t, byte(200), Level(Healthy, min(prev+0.01, 1)))

	// Sampled ten times a second, five seconds of full CPU are one time constant.
	fc := &fakeCPU{ok: true}
	fast := newTestSampler(fc)
	t0 := time.Unix(1000, 0)
	fast.Sample(Usage{}, t0)
	var l float64
	for i := 1; i <= 50; i++ {
		fc.used += 2 * 100 * time.Millisecond
		l = fast.Sample(Usage{}, t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	require.InDelta(t, 1-0.3679, l, 1e-3, "one time constant at full CPU: 1 - e^-1")
}

// TestSampleQueueAndCPU checks that the queue is smoothed with the CPU, that a CPU that
// cannot be read is left out, and that CPU beyond GOMAXPROCS counts as full.
func TestSampleQueueAndCPU(t *testing.T) {
	t.Parallel()
	cpu := &fakeCPU{ok: false}
	s := NewSampler(0, cpu.read) // no smoothing: each sample stands alone
	s.procs = func() int { return 2 }
	at := time.Unix(1000, 0)
	s.Sample(Usage{}, at)
	at = at.Add(time.Second)
	cpu.used = 10 * time.Second
	require.InDelta(t, 0.5, s.Sample(Usage{QueuedRequests: 100, MaxQueuedRequests: 200}, at), 1e-9, "unreadable CPU adds nothing")
	cpu.ok = true
	at = at.Add(time.Second)
	cpu.used += time.Second
	require.Zero(t, s.Sample(Usage{}, at), "the first readable CPU sample starts its clock")
	at = at.Add(time.Second)
	cpu.used += time.Second
	require.InDelta(t, 0.5, s.Sample(Usage{}, at), 1e-9, "one second of CPU on two processors")
	at = at.Add(time.Second)
	cpu.used += 5 * time.Second
	require.InDelta(t, 1, s.Sample(Usage{}, at), 1e-9, "beyond GOMAXPROCS is full")
	require.InDelta(t, 1, s.Sample(Usage{Sessions: 8, MaxSessions: 10}, at), 1e-9, "no time passed: the busy share stays, above the counts")
}
