package alarms

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// clock is a settable time for the state machines.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func limitConfig(kind Kind) Config {
	return Config{
		Kind: kind, ID: codec.NewStringNodeId(1, "Alarm"), Name: "Alarm", Confirm: true, Severity: 100,
		Limits:         Limits{HighHigh: 0.9, High: 0.7, Low: -0.7, LowLow: -0.9, Severities: [4]uint16{900, 700, 600, 800}},
		MaxTimeShelved: time.Hour,
	}
}

// step is one action on a condition and what it must answer and leave.
type step struct {
	name string
	do   func(c *Condition, last []byte) ([]Snapshot, status.Code)
	code status.Code
	// reports is how many events the step reports.
	reports int
	check   func(t *testing.T, c *Condition, out []Snapshot)
}

func input(v float64) func(*Condition, []byte) ([]Snapshot, status.Code) {
	return func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.SetInput(v), status.Good }
}

func ack(c *Condition, last []byte) ([]Snapshot, status.Code) {
	return c.Acknowledge(last, "seen", "olga")
}

func confirm(c *Condition, last []byte) ([]Snapshot, status.Code) {
	return c.Confirm(last, "", "olga")
}

func state(want func(s Snapshot) bool) func(*testing.T, *Condition, []Snapshot) {
	return func(t *testing.T, c *Condition, _ []Snapshot) {
		t.Helper()
		require.True(t, want(c.State()), "%+v", c.State())
	}
}

// run plays steps on c; last is the EventId of the condition's newest event, which the
// methods take.
func run(t *testing.T, c *Condition, steps []step) {
	t.Helper()
	var last []byte
	seen := map[string]bool{}
	for _, s := range steps {
		out, code := s.do(c, last)
		require.Equal(t, s.code, code, s.name)
		require.Len(t, out, s.reports, s.name)
		for _, o := range out {
			require.Len(t, o.EventId, 16, s.name)
			require.False(t, seen[string(o.EventId)], "%s: EventId reused", s.name)
			seen[string(o.EventId)] = true
			if o.BranchId.IsNull() {
				last = o.EventId
			}
		}
		if s.check != nil {
			s.check(t, c, out)
		}
	}
}

func TestExclusiveLimitTransitions(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Unix(1000, 0)}
	c := NewCondition(limitConfig(KindExclusiveLimit), clk.now)
	run(t, c, []step{
		{name: "normal stays quiet", do: input(0), code: status.Good},
		{name: "high", do: input(0.75), code: status.Good, reports: 1, check: state(func(s Snapshot) bool {
			return s.Active && s.Limits == High && s.Severity == 700 && s.LastSeverity == 100 && !s.Acked && !s.Confirmed && s.Retain
		})},
		{name: "same state is quiet", do: input(0.8), code: status.Good},
		{name: "acknowledge", do: ack, code: status.Good, reports: 1, check: state(func(s Snapshot) bool {
			return s.Acked && !s.Confirmed && s.Comment == "seen" && s.ClientUserId == "olga" && s.Retain
		})},
		{name: "acknowledged twice", do: ack, code: status.BadConditionBranchAlreadyAcked},
		{name: "highhigh needs a new acknowledgement", do: input(0.95), code: status.Good, reports: 1, check: state(func(s Snapshot) bool {
			return s.Limits == HighHigh && s.Severity == 900 && s.LastSeverity == 700 && !s.Acked && !s.Confirmed
		})},
		{name: "back to high keeps the acknowledgement due", do: input(0.75), code: status.Good, reports: 1, check: state(func(s Snapshot) bool {
			return s.Limits == High && !s.Acked && s.Severity == 700 && s.LastSeverity == 900
		})},
		{name: "low", do: input(-0.8), code: status.Good, reports: 1, check: state(func(s Snapshot) bool { return s.Limits == Low })},
		{name: "lowlow", do: input(-0.95), code: status.Good, reports: 1, check: state(func(s Snapshot) bool { return s.Limits == LowLow })},
		{name: "normal", do: input(0), code: status.Good, reports: 1, check: state(func(s Snapshot) bool {
			return !s.Active && s.Limits == 0 && s.Severity == 100 && s.Retain // still unacknowledged
		})},
		{name: "active again before the acknowledgement", do: input(0.8), code: status.Good, reports: 2, check: func(t *testing.T, c *Condition, out []Snapshot) {
			// The inactive, unacknowledged state waits on a branch.
			require.False(t, out[0].BranchId.IsNull())
			require.False(t, out[0].Active)
			require.False(t, out[0].Acked)
			require.True(t, out[0].Retain)
			require.True(t, out[1].BranchId.IsNull())
			require.True(t, out[1].Active)
			require.Len(t, c.Branches(), 1)
		}},
		{name: "normal again", do: input(0), code: status.Good, reports: 1},
		{name: "acknowledge", do: ack, code: status.Good, reports: 1},
		{name: "confirm", do: confirm, code: status.Good, reports: 1, check: state(func(s Snapshot) bool {
			return s.Acked && s.Confirmed && !s.Retain
		})},
		{name: "confirmed twice", do: confirm, code: status.BadConditionBranchAlreadyConfirmed},
	})
	require.Len(t, c.Retained(), 2, "the branch is reported with the condition")
	b := c.Branches()[0]
	out, code := c.Confirm(b.EventId, "", "olga")
	require.Equal(t, status.Good, code)
	require.True(t, out[0].Retain, "confirmed, not acknowledged")
	_, code = c.Confirm(out[0].EventId, "", "olga")
	require.Equal(t, status.BadConditionBranchAlreadyConfirmed, code)
	out, code = c.Acknowledge(out[0].EventId, "", "olga")
	require.Equal(t, status.Good, code)
	require.False(t, out[0].Retain)
	require.Equal(t, b.BranchId, out[0].BranchId)
	require.Empty(t, c.Branches(), "a confirmed branch ends")
	require.Empty(t, c.Retained())
}

func TestNonExclusiveLimitStates(t *testing.T) {
	t.Parallel()
	c := NewCondition(limitConfig(KindNonExclusiveLimit), (&clock{t: time.Unix(1000, 0)}).now)
	for _, tc := range []struct {
		v    float64
		want Limit
		sev  uint16
	}{
		{0.75, High, 700}, {0.95, High | HighHigh, 900}, {0.8, High, 700}, {0, 0, 100},
		{-0.8, Low, 600}, {-0.95, Low | LowLow, 800}, {-0.5, 0, 100},
	} {
		c.SetInput(tc.v)
		s := c.State()
		require.Equal(t, tc.want, s.Limits, "%v", tc.v)
		require.Equal(t, tc.want != 0, s.Active, "%v", tc.v)
		require.Equal(t, tc.sev, s.Severity, "%v", tc.v)
	}
}

func TestAbsentLimits(t *testing.T) {
	t.Parallel()
	cfg := limitConfig(KindExclusiveLimit)
	cfg.Limits.HighHigh, cfg.Limits.LowLow = NoLimit, NoLimit
	c := NewCondition(cfg, (&clock{t: time.Unix(1000, 0)}).now)
	c.SetInput(5)
	require.Equal(t, High, c.State().Limits)
	c.SetInput(-5)
	require.Equal(t, Low, c.State().Limits)
}

func TestEnableDisableComment(t *testing.T) {
	t.Parallel()
	c := NewCondition(limitConfig(KindExclusiveLimit), (&clock{t: time.Unix(1000, 0)}).now)
	run(t, c, []step{
		{name: "enabled already", do: func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.Enable() }, code: status.BadConditionAlreadyEnabled},
		{name: "active", do: input(1), code: status.Good, reports: 1},
		{name: "comment", do: func(c *Condition, last []byte) ([]Snapshot, status.Code) {
			return c.AddComment(last, "looking", "ivan")
		},
			code: status.Good, reports: 1, check: state(func(s Snapshot) bool { return s.Comment == "looking" && s.ClientUserId == "ivan" })},
		{name: "comment on an unknown event", do: func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.AddComment([]byte("nope"), "x", "") },
			code: status.BadEventIdUnknown},
		{name: "acknowledge an unknown event", do: func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.Acknowledge(nil, "", "") },
			code: status.BadEventIdUnknown},
		{name: "disable", do: func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.Disable() }, code: status.Good, reports: 1,
			check: func(t *testing.T, c *Condition, out []Snapshot) {
				require.False(t, out[0].Retain)
				require.False(t, out[0].Enabled)
			}},
		{name: "disabled twice", do: func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.Disable() }, code: status.BadConditionAlreadyDisabled},
		{name: "a disabled condition reports nothing", do: input(-1), code: status.Good},
		{name: "acknowledge while disabled", do: ack, code: status.BadConditionDisabled},
		{name: "confirm while disabled", do: confirm, code: status.BadConditionDisabled},
		{name: "comment while disabled", do: func(c *Condition, last []byte) ([]Snapshot, status.Code) { return c.AddComment(last, "x", "") },
			code: status.BadConditionDisabled},
		{name: "enable evaluates the input it missed", do: func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.Enable() },
			code: status.Good, reports: 2, check: state(func(s Snapshot) bool { return s.Enabled && s.Retain && s.Limits == LowLow })},
	})
	require.Empty(t, c.Retained()[1:], "disabling ended the branches")
}

func TestQuality(t *testing.T) {
	t.Parallel()
	c := NewCondition(limitConfig(KindExclusiveLimit), (&clock{t: time.Unix(1000, 0)}).now)
	require.Len(t, c.SetQuality(status.UncertainLastUsableValue), 1)
	require.Empty(t, c.SetQuality(status.UncertainLastUsableValue), "no change, no event")
	require.Equal(t, status.UncertainLastUsableValue, c.State().Quality)
}

func TestShelving(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Unix(1000, 0)}
	c := NewCondition(limitConfig(KindExclusiveLimit), clk.now)
	timed := func(d time.Duration) func(*Condition, []byte) ([]Snapshot, status.Code) {
		return func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.TimedShelve(d) }
	}
	oneShot := func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.OneShotShelve() }
	unshelve := func(c *Condition, _ []byte) ([]Snapshot, status.Code) { return c.Unshelve() }
	shelving := func(want Shelving) func(*testing.T, *Condition, []Snapshot) {
		return state(func(s Snapshot) bool { return s.Shelving == want })
	}
	run(t, c, []step{
		{name: "unshelve while unshelved", do: unshelve, code: status.BadConditionNotShelved},
		{name: "zero time", do: timed(0), code: status.BadShelvingTimeOutOfRange},
		{name: "past MaxTimeShelved", do: timed(2 * time.Hour), code: status.BadShelvingTimeOutOfRange},
		{name: "timed", do: timed(time.Minute), code: status.Good, reports: 1, check: shelving(TimedShelved)},
		{name: "timed twice", do: timed(time.Minute), code: status.BadConditionAlreadyShelved},
		{name: "timed to one-shot", do: oneShot, code: status.Good, reports: 1, check: shelving(OneShotShelved)},
		{name: "one-shot twice", do: oneShot, code: status.BadConditionAlreadyShelved},
		{name: "one-shot to timed", do: timed(time.Minute), code: status.Good, reports: 1, check: shelving(TimedShelved)},
		{name: "unshelve", do: unshelve, code: status.Good, reports: 1, check: shelving(Unshelved)},
		{name: "timed again", do: timed(time.Minute), code: status.Good, reports: 1},
	})
	require.Equal(t, clk.t.Add(time.Minute), c.UnshelveAt())
	require.Empty(t, c.Expire(clk.t.Add(59*time.Second)), "not yet")
	out := c.Expire(clk.t.Add(time.Minute))
	require.Len(t, out, 1)
	require.Equal(t, Unshelved, out[0].Shelving)
	require.Empty(t, c.Expire(clk.t.Add(2*time.Minute)), "expired once")

	// A one-shot shelve ends when the alarm returns to normal.
	c.SetInput(1)
	_, code := c.OneShotShelve()
	require.Equal(t, status.Good, code)
	require.Equal(t, clk.t.Add(time.Hour), c.UnshelveAt(), "bounded by MaxTimeShelved")
	out = c.SetInput(0)
	require.Len(t, out, 1)
	require.Equal(t, Unshelved, out[0].Shelving)
}

func TestKindsWithoutMethods(t *testing.T) {
	t.Parallel()
	now := (&clock{t: time.Unix(1000, 0)}).now
	plain := NewCondition(Config{Kind: KindCondition, ID: codec.NewStringNodeId(1, "C")}, now)
	_, code := plain.Acknowledge(nil, "", "")
	require.Equal(t, status.BadMethodInvalid, code)
	_, code = plain.TimedShelve(time.Second)
	require.Equal(t, status.BadMethodInvalid, code)
	_, code = plain.OneShotShelve()
	require.Equal(t, status.BadMethodInvalid, code)
	_, code = plain.Unshelve()
	require.Equal(t, status.BadMethodInvalid, code)
	require.Empty(t, plain.SetInput(1), "a ConditionType has no ActiveState")

	noConfirm := limitConfig(KindExclusiveLimit)
	noConfirm.Confirm = false
	c := NewCondition(noConfirm, now)
	out := c.SetInput(1)
	_, code = c.Confirm(out[0].EventId, "", "")
	require.Equal(t, status.BadMethodInvalid, code)
	out, code = c.Acknowledge(out[0].EventId, "", "")
	require.Equal(t, status.Good, code)
	require.True(t, out[0].Retain, "still active")
	out = c.SetInput(0)
	require.False(t, out[0].Retain, "inactive and acknowledged")
}

func TestDiscreteAndOffNormal(t *testing.T) {
	t.Parallel()
	now := (&clock{t: time.Unix(1000, 0)}).now
	d := NewCondition(Config{Kind: KindDiscrete, ID: codec.NewStringNodeId(1, "D"), Severity: 500}, now)
	require.Len(t, d.SetInput(1), 1)
	require.True(t, d.State().Active)
	require.Empty(t, d.SetInput(2), "still active")
	require.Len(t, d.SetInput(0), 1)
	require.False(t, d.State().Active)

	o := NewCondition(Config{Kind: KindOffNormal, ID: codec.NewStringNodeId(1, "O"), Normal: 3, Severity: 500}, now)
	require.Empty(t, o.SetInput(3))
	require.Len(t, o.SetInput(4), 1)
	require.True(t, o.State().Active)
	require.Equal(t, uint16(500), o.State().Severity)
	require.Len(t, o.SetNormal(4), 1, "the input is normal now")
	require.False(t, o.State().Active)
	require.Empty(t, o.SetNormal(4))
	require.Empty(t, d.SetNormal(1), "only an off-normal alarm has a normal value")
}

// TestBranchOnReactivation: an alarm that returns to normal unacknowledged and rises
// again keeps the old state on a branch with its own EventId until acknowledged.
func TestBranchOnReactivation(t *testing.T) {
	t.Parallel()
	cfg := limitConfig(KindExclusiveLimit)
	cfg.Confirm = false
	c := NewCondition(cfg, (&clock{t: time.Unix(1000, 0)}).now)
	c.SetInput(1)
	c.SetInput(0)
	out := c.SetInput(1)
	require.Len(t, out, 2)
	br := out[0]
	require.False(t, br.BranchId.IsNull())
	require.False(t, br.Active)
	require.False(t, br.Acked)
	_, code := c.Acknowledge(br.EventId, "", "")
	require.Equal(t, status.Good, code)
	require.Empty(t, c.Branches(), "acknowledged: nothing more to wait for")
	_, code = c.Acknowledge(br.EventId, "", "")
	require.Equal(t, status.BadEventIdUnknown, code, "the branch is gone")
	require.False(t, c.State().Acked, "the condition itself still waits")
}

// TestBranchesBounded: an alarm nobody acknowledges keeps at most MaxBranches branches.
func TestBranchesBounded(t *testing.T) {
	t.Parallel()
	c := NewCondition(limitConfig(KindExclusiveLimit), (&clock{t: time.Unix(1000, 0)}).now)
	for range 3 * MaxBranches {
		c.SetInput(1)
		c.SetInput(0)
	}
	require.Len(t, c.Branches(), MaxBranches)
}
