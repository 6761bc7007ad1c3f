// Package alarms is the server's Alarms and Conditions (Part 9): the state machines of
// ConditionType and its subtypes as plain values (Condition), and their binding into the
// address space and the event path (Registry).
//
// A Condition knows nothing of nodes or subscriptions: each change returns the states
// (Snapshots) it reported, which the Registry writes into the condition's variables and
// hands to the subscription engine as events.
package alarms

import (
	"crypto/rand"
	"math"
	"strconv"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// Kind is the ObjectType a condition is an instance of (Part 9 §5.5, §5.7, §5.8).
type Kind uint8

// The kinds of condition; each is a subtype of the ones before it up to AlarmCondition,
// then of AlarmCondition (limit alarms) or of Discrete (OffNormal).
const (
	KindCondition Kind = iota
	KindAcknowledgeable
	KindAlarm
	KindExclusiveLimit
	KindNonExclusiveLimit
	KindDiscrete
	KindOffNormal
)

// acknowledgeable reports whether k has AckedState and the Acknowledge method.
func (k Kind) acknowledgeable() bool { return k != KindCondition }

// alarm reports whether k has ActiveState and shelving.
func (k Kind) alarm() bool { return k >= KindAlarm }

// limit reports whether k is a limit alarm.
func (k Kind) limit() bool { return k == KindExclusiveLimit || k == KindNonExclusiveLimit }

// Limit is one bit per limit of a limit alarm (Part 9 §5.8.11-13).
type Limit uint8

// The limits; an exclusive alarm is in at most one, a non-exclusive one may be in
// High and HighHigh (or Low and LowLow) at once.
const (
	HighHigh Limit = 1 << iota
	High
	Low
	LowLow
)

// Shelving is the state of ShelvedStateMachineType (Part 9 §5.8.10).
type Shelving uint8

// The shelving states.
const (
	Unshelved Shelving = iota
	TimedShelved
	OneShotShelved
)

// Limits are the limits of a limit alarm and the severity each raises; a NaN limit is
// absent.
type Limits struct {
	HighHigh, High, Low, LowLow float64
	// Severities are the severities of HighHigh, High, Low and LowLow, in that order.
	Severities [4]uint16
}

// NoLimit marks an absent limit.
var NoLimit = math.NaN()

// Config describes one condition.
type Config struct {
	Kind Kind
	// ID is the condition's NodeId; branches get NodeIds derived from it.
	ID codec.NodeId
	// Name is the ConditionName.
	Name string
	// Confirm gives the condition ConfirmedState and the Confirm method.
	Confirm bool
	// Limits are the limits of a limit alarm.
	Limits Limits
	// Normal is the normal value of an OffNormalAlarm.
	Normal float64
	// Severity is the severity while not active (and of an active discrete alarm).
	Severity uint16
	// MaxTimeShelved bounds a timed shelve and ends a one-shot shelve (0: no bound).
	MaxTimeShelved time.Duration
}

// Snapshot is the state of a condition or of one of its branches as one event reports
// it (Part 9 §5.5.2, §5.7.2, §5.8.2). It holds no references into the Condition.
type Snapshot struct {
	EventId  []byte
	BranchId codec.NodeId // null for the condition itself
	Time     time.Time
	Message  string

	Enabled, Active, Acked, Confirmed, Retain bool
	Severity, LastSeverity                    uint16
	Quality                                   status.Code
	Comment, ClientUserId                     string
	// Limits are the limit states of a limit alarm.
	Limits   Limit
	Shelving Shelving
	// UnshelveAt is when a shelve ends; zero when unshelved or unbounded.
	UnshelveAt time.Time

	// Transition times of the state variables.
	EnabledTime, ActiveTime, AckedTime, ConfirmedTime, ShelvingTime, LimitTime time.Time
	// SeverityTime, QualityTime and CommentTime are the SourceTimestamps of
	// LastSeverity, Quality and Comment.
	SeverityTime, QualityTime, CommentTime time.Time
}

// Condition is the state machine of one condition instance and its branches. It is not
// safe for concurrent use; the Registry locks it.
type Condition struct {
	cfg      Config
	now      func() time.Time
	st       Snapshot
	branches []*Snapshot
	branchN  uint32
	// input is the last input value, kept while disabled so that Enable evaluates it.
	input    float64
	hasInput bool
}

// NewCondition returns a condition in its initial state: enabled, inactive,
// acknowledged and confirmed, unshelved, Good quality, not retained.
func NewCondition(cfg Config, now func() time.Time) *Condition {
	t := now()
	c := &Condition{cfg: cfg, now: now}
	c.st = Snapshot{
		Enabled: true, Acked: true, Confirmed: true, Quality: status.Good,
		Severity: cfg.Severity, LastSeverity: cfg.Severity, Time: t,
		EnabledTime: t, ActiveTime: t, AckedTime: t, ConfirmedTime: t, ShelvingTime: t, LimitTime: t,
		SeverityTime: t, QualityTime: t, CommentTime: t,
	}
	return c
}

// Config returns the condition's configuration.
func (c *Condition) Config() Config { return c.cfg }

// State returns the condition's own state (not a branch's).
func (c *Condition) State() Snapshot { return c.st }

// Branches returns the open branches, oldest first.
func (c *Condition) Branches() []Snapshot {
	out := make([]Snapshot, len(c.branches))
	for i, b := range c.branches {
		out[i] = *b
	}
	return out
}

// report gives s a new EventId and Time and returns a copy.
func (c *Condition) report(s *Snapshot, t time.Time) Snapshot {
	s.EventId = newEventId()
	s.Time = t
	s.Retain = c.retain(s)
	return *s
}

// retain is Retain (Part 9 §5.5.2): an enabled condition that is active or awaits an
// acknowledgement or a confirmation; a branch while it awaits one.
func (c *Condition) retain(s *Snapshot) bool {
	if !s.Enabled {
		return false
	}
	waits := (c.cfg.Kind.acknowledgeable() && !s.Acked) || (c.cfg.Confirm && !s.Confirmed)
	if !s.BranchId.IsNull() {
		return waits
	}
	return s.Active || waits
}

func newEventId() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}

// Retained returns the states a ConditionRefresh reports (Part 9 §5.5.7): the
// condition's when it is retained or has branches, and every branch.
func (c *Condition) Retained() []Snapshot {
	if !c.st.Retain && len(c.branches) == 0 {
		return nil
	}
	out := make([]Snapshot, 0, 1+len(c.branches))
	out = append(out, c.st)
	for _, b := range c.branches {
		out = append(out, *b)
	}
	return out
}

// Enable is the Enable method (Part 9 §5.5.5).
func (c *Condition) Enable() ([]Snapshot, status.Code) {
	if c.st.Enabled {
		return nil, status.BadConditionAlreadyEnabled
	}
	t := c.now()
	c.st.Enabled, c.st.EnabledTime = true, t
	c.st.Message = "The condition was enabled"
	out := []Snapshot{c.report(&c.st, t)}
	if c.hasInput {
		// The input went on changing while nobody looked (Part 9 §5.5.4).
		out = append(out, c.SetInput(c.input)...)
	}
	return out, status.Good
}

// Disable is the Disable method (Part 9 §5.5.4): the last event of a disabled condition
// says Retain false, and its branches end.
func (c *Condition) Disable() ([]Snapshot, status.Code) {
	if !c.st.Enabled {
		return nil, status.BadConditionAlreadyDisabled
	}
	t := c.now()
	c.st.Enabled, c.st.EnabledTime = false, t
	c.st.Message = "The condition was disabled"
	c.branches = nil
	return []Snapshot{c.report(&c.st, t)}, status.Good
}

// find returns the state (the condition's or a branch's) whose last event was eventId.
func (c *Condition) find(eventId []byte) (*Snapshot, int) {
	if string(eventId) == string(c.st.EventId) && len(eventId) > 0 {
		return &c.st, -1
	}
	for i, b := range c.branches {
		if string(eventId) == string(b.EventId) {
			return b, i
		}
	}
	return nil, -1
}

// AddComment is the AddComment method (Part 9 §5.5.6) on the state of eventId.
func (c *Condition) AddComment(eventId []byte, comment, user string) ([]Snapshot, status.Code) {
	if !c.st.Enabled {
		return nil, status.BadConditionDisabled
	}
	s, _ := c.find(eventId)
	if s == nil {
		return nil, status.BadEventIdUnknown
	}
	t := c.now()
	s.Comment, s.ClientUserId, s.CommentTime = comment, user, t
	s.Message = "A comment was added"
	return []Snapshot{c.report(s, t)}, status.Good
}

// Acknowledge is the Acknowledge method (Part 9 §5.7.3) on the state of eventId; a
// comment that is not empty is added with it. A branch that needs nothing more ends.
func (c *Condition) Acknowledge(eventId []byte, comment, user string) ([]Snapshot, status.Code) {
	if !c.cfg.Kind.acknowledgeable() {
		return nil, status.BadMethodInvalid
	}
	return c.settle(eventId, comment, user, false)
}

// Confirm is the Confirm method (Part 9 §5.7.4); BadMethodInvalid for a condition
// without ConfirmedState.
func (c *Condition) Confirm(eventId []byte, comment, user string) ([]Snapshot, status.Code) {
	if !c.cfg.Confirm {
		return nil, status.BadMethodInvalid
	}
	return c.settle(eventId, comment, user, true)
}

func (c *Condition) settle(eventId []byte, comment, user string, confirm bool) ([]Snapshot, status.Code) {
	if !c.st.Enabled {
		return nil, status.BadConditionDisabled
	}
	s, i := c.find(eventId)
	if s == nil {
		return nil, status.BadEventIdUnknown
	}
	t := c.now()
	if confirm {
		if s.Confirmed {
			return nil, status.BadConditionBranchAlreadyConfirmed
		}
		s.Confirmed, s.ConfirmedTime, s.Message = true, t, "The condition was confirmed"
	} else {
		if s.Acked {
			return nil, status.BadConditionBranchAlreadyAcked
		}
		s.Acked, s.AckedTime, s.Message = true, t, "The condition was acknowledged"
	}
	if comment != "" {
		s.Comment, s.CommentTime = comment, t
	}
	s.ClientUserId = user
	out := c.report(s, t)
	if i >= 0 && !out.Retain {
		c.branches = append(c.branches[:i], c.branches[i+1:]...)
	}
	return []Snapshot{out}, status.Good
}

// TimedShelve is the TimedShelve method (Part 9 §5.8.10.3): shelved for d.
func (c *Condition) TimedShelve(d time.Duration) ([]Snapshot, status.Code) {
	switch {
	case !c.cfg.Kind.alarm():
		return nil, status.BadMethodInvalid
	case c.st.Shelving == TimedShelved:
		return nil, status.BadConditionAlreadyShelved
	case d <= 0 || (c.cfg.MaxTimeShelved > 0 && d > c.cfg.MaxTimeShelved):
		return nil, status.BadShelvingTimeOutOfRange
	}
	t := c.now()
	c.st.Shelving, c.st.ShelvingTime, c.st.UnshelveAt = TimedShelved, t, t.Add(d)
	c.st.Message = "The alarm was shelved for a time"
	return []Snapshot{c.report(&c.st, t)}, status.Good
}

// OneShotShelve is the OneShotShelve method (Part 9 §5.8.10.4): shelved until the
// alarm goes inactive (or MaxTimeShelved passes).
func (c *Condition) OneShotShelve() ([]Snapshot, status.Code) {
	switch {
	case !c.cfg.Kind.alarm():
		return nil, status.BadMethodInvalid
	case c.st.Shelving == OneShotShelved:
		return nil, status.BadConditionAlreadyShelved
	}
	t := c.now()
	c.st.Shelving, c.st.ShelvingTime, c.st.UnshelveAt = OneShotShelved, t, time.Time{}
	if c.cfg.MaxTimeShelved > 0 {
		c.st.UnshelveAt = t.Add(c.cfg.MaxTimeShelved)
	}
	c.st.Message = "The alarm was shelved once"
	return []Snapshot{c.report(&c.st, t)}, status.Good
}

// Unshelve is the Unshelve method (Part 9 §5.8.10.2).
func (c *Condition) Unshelve() ([]Snapshot, status.Code) {
	switch {
	case !c.cfg.Kind.alarm():
		return nil, status.BadMethodInvalid
	case c.st.Shelving == Unshelved:
		return nil, status.BadConditionNotShelved
	}
	return c.unshelve(c.now(), "The alarm was unshelved"), status.Good
}

func (c *Condition) unshelve(t time.Time, msg string) []Snapshot {
	c.st.Shelving, c.st.ShelvingTime, c.st.UnshelveAt = Unshelved, t, time.Time{}
	c.st.Message = msg
	return []Snapshot{c.report(&c.st, t)}
}

// UnshelveAt returns when the current shelve ends by itself; zero for never.
func (c *Condition) UnshelveAt() time.Time { return c.st.UnshelveAt }

// Expire ends a shelve whose time has come by now (Part 9 §5.8.10.1).
func (c *Condition) Expire(now time.Time) []Snapshot {
	if c.st.Shelving == Unshelved || c.st.UnshelveAt.IsZero() || now.Before(c.st.UnshelveAt) {
		return nil
	}
	return c.unshelve(now, "The shelving time expired")
}

// SetQuality sets Quality (Part 9 §5.5.2) and reports the change.
func (c *Condition) SetQuality(q status.Code) []Snapshot {
	if q == c.st.Quality || !c.st.Enabled {
		c.st.Quality = q
		return nil
	}
	t := c.now()
	c.st.Quality, c.st.QualityTime = q, t
	c.st.Message = "The quality changed"
	return []Snapshot{c.report(&c.st, t)}
}

// SetInput evaluates the input value v: for a limit alarm the limits it crosses, for
// an off-normal alarm whether it differs from Normal, for a discrete alarm whether it
// is not zero. A condition that is disabled reports nothing (Part 9 §5.5.4); Enable
// evaluates the last input.
func (c *Condition) SetInput(v float64) []Snapshot {
	c.input, c.hasInput = v, true
	if !c.st.Enabled || !c.cfg.Kind.alarm() {
		return nil
	}
	var lim Limit
	sev := c.cfg.Severity
	switch c.cfg.Kind {
	case KindExclusiveLimit, KindNonExclusiveLimit:
		lim = c.limits(v)
		sev = c.limitSeverity(lim)
	case KindOffNormal:
		if v != c.cfg.Normal {
			lim = High // any bit: active
		}
	default:
		if v != 0 {
			lim = High
		}
	}
	return c.setActive(lim, sev)
}

// SetNormal sets the normal value of an off-normal alarm (its NormalState's value) and
// evaluates the last input against it.
func (c *Condition) SetNormal(v float64) []Snapshot {
	if c.cfg.Kind != KindOffNormal || v == c.cfg.Normal {
		return nil
	}
	c.cfg.Normal = v
	if !c.hasInput {
		return nil
	}
	return c.SetInput(c.input)
}

// limits returns the limits v is beyond.
func (c *Condition) limits(v float64) Limit {
	l := c.cfg.Limits
	var out Limit
	if v >= l.HighHigh {
		out |= HighHigh
	}
	if v >= l.High {
		out |= High
	}
	if v <= l.LowLow {
		out |= LowLow
	}
	if v <= l.Low {
		out |= Low
	}
	if c.cfg.Kind == KindExclusiveLimit {
		// One state at a time: the most severe one (Part 9 §5.8.11).
		switch {
		case out&HighHigh != 0:
			out = HighHigh
		case out&High != 0:
			out = High
		case out&LowLow != 0:
			out = LowLow
		case out&Low != 0:
			out = Low
		}
	}
	return out
}

// limitSeverity is the severity of the most severe limit in lim.
func (c *Condition) limitSeverity(lim Limit) uint16 {
	s := c.cfg.Limits.Severities
	switch {
	case lim&HighHigh != 0:
		return s[0]
	case lim&LowLow != 0:
		return s[3]
	case lim&High != 0:
		return s[1]
	case lim&Low != 0:
		return s[2]
	}
	return c.cfg.Severity
}

// MaxBranches bounds the open branches of a condition: an alarm that goes active again
// and again with nobody acknowledging would otherwise grow without end. Past it, the
// previous state is overwritten (branches are optional in Part 9 §5.5.2).
const MaxBranches = 16

// setActive moves the alarm into the limit states lim (none: inactive) at severity sev.
// A rise (inactive to active, or to a more severe state) needs a new acknowledgement.
// When the alarm goes active again while its previous activation still awaits an
// acknowledgement or confirmation, that state goes on as a branch with its own EventId
// (Part 9 §4.4, §5.5.2).
func (c *Condition) setActive(lim Limit, sev uint16) []Snapshot {
	s := &c.st
	active := lim != 0
	if active == s.Active && lim == s.Limits && sev == s.Severity {
		return nil
	}
	t := c.now()
	var out []Snapshot
	rise := active && (!s.Active || sev > s.Severity)
	if rise && !s.Active && c.waits(s) && len(c.branches) < MaxBranches {
		b := *s
		c.branchN++
		b.BranchId = codec.NewStringNodeId(c.cfg.ID.Namespace(), branchName(c.cfg.ID, c.branchN))
		b.Message = "The previous state awaits acknowledgement"
		out = append(out, c.report(&b, t))
		c.branches = append(c.branches, &b)
	}
	if sev != s.Severity {
		s.LastSeverity, s.Severity, s.SeverityTime = s.Severity, sev, t
	}
	if active != s.Active {
		s.Active, s.ActiveTime = active, t
	}
	if lim != s.Limits {
		s.Limits, s.LimitTime = lim, t
	}
	if rise {
		if c.cfg.Kind.acknowledgeable() {
			s.Acked, s.AckedTime = false, t
		}
		if c.cfg.Confirm {
			s.Confirmed, s.ConfirmedTime = false, t
		}
		s.Comment, s.ClientUserId = "", ""
	}
	switch {
	case active:
		s.Message = "The alarm is active"
	default:
		s.Message = "The alarm returned to normal"
		if s.Shelving == OneShotShelved {
			s.Shelving, s.ShelvingTime, s.UnshelveAt = Unshelved, t, time.Time{}
		}
	}
	return append(out, c.report(s, t))
}

// waits reports whether s awaits an acknowledgement or a confirmation.
func (c *Condition) waits(s *Snapshot) bool {
	return (c.cfg.Kind.acknowledgeable() && !s.Acked) || (c.cfg.Confirm && !s.Confirmed)
}

// branchName is the string identifier of branch n of the condition id.
func branchName(id codec.NodeId, n uint32) string {
	base := id.String()
	if id.Type() == codec.IDString {
		base = id.StringID()
	}
	return base + "#" + strconv.FormatUint(uint64(n), 10)
}
