package driver_test

import (
	"sync"
	"testing"
	"time"

	"github.com/simonvetter/modbus"
	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/examples/modbus/driver"
	"uastack.dev/plugins/examples/modbus/sim"
)

// reports collects what a Poller reports.
type reports struct {
	mu   sync.Mutex // guards vals
	vals []driver.Value
}

func (r *reports) add(vals []driver.Value) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vals = append(r.vals, vals...)
}

// take returns what was reported so far and forgets it.
func (r *reports) take() []driver.Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.vals
	r.vals = nil
	return v
}

// waitFor waits up to a second until n values have been reported, and takes them.
func (r *reports) waitFor(t *testing.T, n int) []driver.Value {
	t.Helper()
	var got []driver.Value
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.vals) < n {
			return false
		}
		got, r.vals = r.vals, nil
		return true
	}, time.Second, 5*time.Millisecond)
	require.Len(t, got, n)
	return got
}

func newPoller(t *testing.T, d *driver.Device) (*driver.Poller, *reports) {
	t.Helper()
	r := &reports{}
	p := driver.NewPoller(d, r.add)
	t.Cleanup(p.Stop)
	return p, r
}

// byPoint returns the values reported, by point.
func byPoint(vals []driver.Value) map[int]driver.Value {
	m := make(map[int]driver.Value, len(vals))
	for _, v := range vals {
		m[v.Point] = v
	}
	return m
}

var pollerPoints = []driver.Point{
	{Name: "h0", Table: driver.Holding, Address: 0, Type: driver.Uint16},
	{Name: "h1", Table: driver.Holding, Address: 1, Type: driver.Uint16},
	{Name: "c0", Table: driver.Coil, Address: 0, Type: driver.Bool},
	{Name: "i0", Table: driver.Input, Address: 0, Type: driver.Int16},
}

func TestPollerPollsOnlyWatchedPoints(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SetHolding(0, 10, 11)
	d := newDevice(t, s, driver.HighFirst, pollerPoints...)
	p, r := newPoller(t, d)

	time.Sleep(150 * time.Millisecond) // several MinPollIntervals of 20ms
	require.Zero(t, s.TotalRequests(), "nothing is watched")
	require.Empty(t, r.take())

	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 1, SamplingInterval: 0}}, nil))
	got := r.waitFor(t, 1)
	require.Equal(t, 1, got[0].Point)
	require.Equal(t, uint16(11), got[0].Value)
	time.Sleep(100 * time.Millisecond)
	require.Greater(t, s.Requests(sim.ReadHoldingRegisters), 2, "polled every 20ms")
	require.Equal(t, s.Requests(sim.ReadHoldingRegisters), s.TotalRequests(), "and nothing else")

	require.NoError(t, p.Watch(nil, []int{1}))
	time.Sleep(50 * time.Millisecond) // a poll on the wire may finish
	n := s.TotalRequests()
	time.Sleep(150 * time.Millisecond)
	require.Equal(t, n, s.TotalRequests(), "nothing is watched any more")

	require.ErrorContains(t, p.Watch([]driver.WatchItem{{Point: 4}, {Point: -1}}, nil), "no points [4 -1]")
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, n, s.TotalRequests())
}

func TestPollerReportsChangesOnly(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SetHolding(0, 10, 11)
	s.SetInput(0, 215)
	d := newDevice(t, s, driver.HighFirst, pollerPoints...)
	p, r := newPoller(t, d)

	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 0}, {Point: 1}, {Point: 2}, {Point: 3}}, nil))
	first := byPoint(r.waitFor(t, 4))
	require.Equal(t, uint16(10), first[0].Value)
	require.Equal(t, uint16(11), first[1].Value)
	require.Equal(t, false, first[2].Value)
	require.Equal(t, int16(215), first[3].Value)

	before := s.TotalRequests()
	time.Sleep(150 * time.Millisecond)
	require.Greater(t, s.TotalRequests(), before+6, "it keeps polling")
	require.Empty(t, r.take(), "but nothing changed")

	s.SetHolding(1, 12)
	s.SetCoils(0, true)
	changed := byPoint(r.waitFor(t, 2))
	require.Equal(t, uint16(12), changed[1].Value)
	require.Equal(t, true, changed[2].Value)
	time.Sleep(100 * time.Millisecond)
	require.Empty(t, r.take())

	// Watching a point again with another interval is no new first value; watching it
	// after it was removed is.
	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 0, SamplingInterval: 40}}, nil))
	require.NoError(t, p.Watch(nil, []int{3}))
	time.Sleep(100 * time.Millisecond)
	require.Empty(t, r.take())
	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 3}}, nil))
	again := r.waitFor(t, 1)
	require.Equal(t, 3, again[0].Point)
	require.Equal(t, int16(215), again[0].Value)
}

func TestPollerHonoursIntervals(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	d := newDevice(t, s, driver.HighFirst, pollerPoints...)
	p, r := newPoller(t, d)

	// The coil every 200ms; the input register at 5ms, below MinPollInterval (20ms);
	// the two holding registers, neighbours, in one request at the faster 50ms of the
	// two.
	require.NoError(t, p.Watch([]driver.WatchItem{
		{Point: 2, SamplingInterval: 200},
		{Point: 3, SamplingInterval: 5},
		{Point: 0, SamplingInterval: 50},
		{Point: 1, SamplingInterval: 5000},
	}, nil))
	r.waitFor(t, 4)
	start := time.Now()
	s.ResetRequests()
	time.Sleep(time.Second)
	elapsed := time.Since(start)
	expect := func(f sim.Function, every time.Duration) {
		t.Helper()
		want := float64(elapsed) / float64(every)
		got := float64(s.Requests(f))
		require.InDelta(t, want, got, want*0.35+1, "%v every %v", f, every)
	}
	expect(sim.ReadCoils, 200*time.Millisecond)
	expect(sim.ReadInputRegisters, 20*time.Millisecond)
	expect(sim.ReadHoldingRegisters, 50*time.Millisecond)
	require.Zero(t, s.Requests(sim.ReadDiscreteInputs))

	// A slower interval takes effect too.
	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 3, SamplingInterval: 250}}, nil))
	time.Sleep(30 * time.Millisecond) // the poll that was due at the old interval
	s.ResetRequests()
	time.Sleep(500 * time.Millisecond)
	require.InDelta(t, 2, s.Requests(sim.ReadInputRegisters), 1)
}

func TestPollerReportsFailureOnceAndRecovers(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SetHolding(0, 10)
	d := newDevice(t, s, driver.HighFirst, pollerPoints...)
	p, r := newPoller(t, d)
	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 0}, {Point: 2}}, nil))
	r.waitFor(t, 2)

	require.NoError(t, s.Stop())
	failed := r.waitFor(t, 2)
	for _, v := range failed {
		var ce *driver.CommError
		require.ErrorAs(t, v.Err, &ce)
		require.Nil(t, v.Value)
	}
	require.ElementsMatch(t, []int{0, 2}, []int{failed[0].Point, failed[1].Point})
	time.Sleep(200 * time.Millisecond) // ten intervals: it keeps trying, quietly
	require.Empty(t, r.take())
	require.True(t, d.Health().Failing)

	// A point watched while the device is down fails once too.
	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 3}}, nil))
	late := r.waitFor(t, 1)
	require.Equal(t, 3, late[0].Point)
	require.Error(t, late[0].Err)

	require.NoError(t, s.Restart())
	back := byPoint(r.waitFor(t, 3))
	require.Equal(t, uint16(10), back[0].Value, "the same value as before, reported again")
	require.Equal(t, false, back[2].Value)
	require.Equal(t, int16(0), back[3].Value)
	for _, v := range back {
		require.NoError(t, v.Err)
	}
	require.False(t, d.Health().Failing)
}

func TestPollerReportsExceptionOnce(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SetHolding(0, 10)
	s.SetCoils(0, true)
	d := newDevice(t, s, driver.HighFirst, pollerPoints...)
	p, r := newPoller(t, d)
	s.SetException(sim.ReadCoils, modbus.ErrIllegalDataAddress)
	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 0}, {Point: 2}}, nil))
	first := byPoint(r.waitFor(t, 2))
	require.Equal(t, uint16(10), first[0].Value)
	require.ErrorIs(t, first[2].Err, modbus.ErrIllegalDataAddress)

	s.SetHolding(0, 11)
	changed := r.waitFor(t, 1)
	require.Equal(t, 0, changed[0].Point, "the other request goes on; the failed one is not reported again")
	time.Sleep(60 * time.Millisecond)
	require.Empty(t, r.take())
	require.False(t, d.Health().Failing)

	s.SetException(sim.ReadCoils, nil)
	back := r.waitFor(t, 1)
	require.Equal(t, 2, back[0].Point)
	require.Equal(t, true, back[0].Value)
}

func TestPollerReportsTimeoutWhenStalled(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	s.SetHolding(0, 10)
	d := newDevice(t, s, driver.HighFirst, pollerPoints...)
	p, r := newPoller(t, d)
	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 0}}, nil))
	r.waitFor(t, 1)

	release := s.Stall()
	failed := r.waitFor(t, 1)
	var ce *driver.CommError
	require.ErrorAs(t, failed[0].Err, &ce)
	require.True(t, ce.Timeout())
	release()
	back := r.waitFor(t, 1)
	require.Equal(t, uint16(10), back[0].Value)
}

func TestPollerStop(t *testing.T) {
	t.Parallel()
	s := startSim(t)
	d := newDevice(t, s, driver.HighFirst, pollerPoints...)
	p, r := newPoller(t, d)
	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 0}}, nil))
	r.waitFor(t, 1)

	// Stop returns while a request is stalled on the wire, within the timeout.
	release := s.Stall()
	defer release()
	time.Sleep(30 * time.Millisecond)
	start := time.Now()
	p.Stop()
	require.Less(t, time.Since(start), 400*time.Millisecond)
	p.Stop()
	release()
	n := s.TotalRequests()
	require.NoError(t, p.Watch([]driver.WatchItem{{Point: 1}}, nil))
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, n, s.TotalRequests())
	require.Empty(t, r.take(), "the stalled poll's answer is not reported after Stop")
}
