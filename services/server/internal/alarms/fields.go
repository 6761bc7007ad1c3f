package alarms

import (
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua/id"
)

// field is one field of a condition's events and, for the condition itself, one
// variable below its node: its browse path from the condition (names of namespace 0),
// how the node is made, and its value in a state.
type field struct {
	path     []string
	dataType uint32
	// component makes the node a HasComponent of its parent (a state variable), else a
	// HasProperty.
	component bool
	typeDef   uint32
	// has reports whether a condition of cfg has the field; nil for every one.
	has   func(cfg *Config) bool
	value func(e *entry, s *Snapshot) codec.Variant
}

// text is s as an English LocalizedText; the state names are made once.
func text(s string) codec.Variant {
	if v, ok := texts[s]; ok {
		return v
	}
	return codec.MustVariant(codec.LocalizedText{Locale: "en", Text: s})
}

// texts are the LocalizedTexts of the state names, made once: each state change reports
// a dozen of them.
var texts = func() map[string]codec.Variant {
	m := make(map[string]codec.Variant)
	for _, s := range []string{"", "Enabled", "Disabled", "Acknowledged", "Unacknowledged", "Confirmed", "Unconfirmed",
		"Active", "Inactive", "Unshelved", "TimedShelved", "OneShotShelved", "HighHigh", "High", "Low", "LowLow", "Process"} {
		m[s] = codec.MustVariant(codec.LocalizedText{Locale: "en", Text: s})
	}
	return m
}()

func at(t time.Time) codec.Variant { return codec.DateTimeVariant(codec.DateTimeOf(t)) }

func pick(b bool, yes, no string) codec.Variant {
	if b {
		return text(yes)
	}
	return text(no)
}

func isAck(c *Config) bool     { return c.Kind.acknowledgeable() }
func isConfirm(c *Config) bool { return c.Confirm }
func isAlarm(c *Config) bool   { return c.Kind.alarm() }
func isExcl(c *Config) bool    { return c.Kind == KindExclusiveLimit }
func isShelvedBounded(c *Config) bool {
	return c.Kind.alarm() && c.MaxTimeShelved > 0
}

// twoState returns the fields of a TwoStateVariableType state (Part 9 §5.3): its text,
// Id and TransitionTime.
func twoState(name string, has func(*Config) bool, yes, no string, get func(s *Snapshot) (bool, time.Time)) []field {
	return []field{
		{path: []string{name}, dataType: id.LocalizedText, component: true, typeDef: id.TwoStateVariableType, has: has,
			value: func(_ *entry, s *Snapshot) codec.Variant { b, _ := get(s); return pick(b, yes, no) }},
		{path: []string{name, "Id"}, dataType: id.Boolean, has: has,
			value: func(_ *entry, s *Snapshot) codec.Variant { b, _ := get(s); return codec.BooleanVariant(b) }},
		{path: []string{name, "TransitionTime"}, dataType: id.UtcTime, has: has,
			value: func(_ *entry, s *Snapshot) codec.Variant { _, t := get(s); return at(t) }},
	}
}

// limitField is a limit of a limit alarm, present when the limit is.
func limitField(name string, get func(l *Limits) float64) field {
	return field{path: []string{name}, dataType: id.Double,
		has:   func(c *Config) bool { v := get(&c.Limits); return c.Kind.limit() && v == v },
		value: func(e *entry, _ *Snapshot) codec.Variant { return codec.DoubleVariant(get(&e.cond.cfg.Limits)) }}
}

// nonExclusive is the state variable of one limit of a non-exclusive limit alarm.
func nonExclusive(name string, l Limit, get func(l *Limits) float64) []field {
	has := func(c *Config) bool { v := get(&c.Limits); return c.Kind == KindNonExclusiveLimit && v == v }
	return twoState(name, has, "Active", "Inactive", func(s *Snapshot) (bool, time.Time) { return s.Limits&l != 0, s.LimitTime })
}

// shelvingStates are the CurrentState texts and ids of ShelvedStateMachineType.
var shelvingStates = [...]struct {
	text string
	id   uint32
}{
	Unshelved:      {"Unshelved", id.ShelvedStateMachineType_Unshelved},
	TimedShelved:   {"TimedShelved", id.ShelvedStateMachineType_TimedShelved},
	OneShotShelved: {"OneShotShelved", id.ShelvedStateMachineType_OneShotShelved},
}

// limitState returns the CurrentState text and id of an exclusive limit alarm.
func limitState(l Limit) (string, codec.NodeId) {
	n := func(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }
	switch l {
	case HighHigh:
		return "HighHigh", n(id.ExclusiveLimitStateMachineType_HighHigh)
	case High:
		return "High", n(id.ExclusiveLimitStateMachineType_High)
	case Low:
		return "Low", n(id.ExclusiveLimitStateMachineType_Low)
	case LowLow:
		return "LowLow", n(id.ExclusiveLimitStateMachineType_LowLow)
	}
	return "", codec.NodeId{}
}

// objects are the Objects below a condition that hold fields: the state machines.
var objects = []struct {
	name    string
	typeDef uint32
	has     func(*Config) bool
}{
	{"ShelvingState", id.ShelvedStateMachineType, isAlarm},
	{"LimitState", id.ExclusiveLimitStateMachineType, isExcl},
}

// fields are the fields of a condition's events (Part 9 §5.5.2, §5.7.2, §5.8.2,
// §5.8.11-13), in the order its nodes are made.
var fields = func() []field {
	n0 := func(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }
	f := []field{
		{path: []string{"EventId"}, dataType: id.ByteString, value: func(_ *entry, s *Snapshot) codec.Variant { return codec.ByteStringVariant(s.EventId) }},
		{path: []string{"EventType"}, dataType: id.NodeId, value: func(e *entry, _ *Snapshot) codec.Variant { return codec.NodeIdVariant(e.typ) }},
		{path: []string{"SourceNode"}, dataType: id.NodeId, value: func(e *entry, _ *Snapshot) codec.Variant { return codec.NodeIdVariant(e.Source) }},
		{path: []string{"SourceName"}, dataType: id.String, value: func(e *entry, _ *Snapshot) codec.Variant { return codec.StringVariant(e.SourceName) }},
		{path: []string{"Time"}, dataType: id.UtcTime, value: func(_ *entry, s *Snapshot) codec.Variant { return at(s.Time) }},
		{path: []string{"ReceiveTime"}, dataType: id.UtcTime, value: func(_ *entry, s *Snapshot) codec.Variant { return at(s.Time) }},
		{path: []string{"Message"}, dataType: id.LocalizedText, value: func(_ *entry, s *Snapshot) codec.Variant { return text(s.Message) }},
		{path: []string{"Severity"}, dataType: id.UInt16, value: func(_ *entry, s *Snapshot) codec.Variant { return codec.UInt16Variant(s.Severity) }},
		{path: []string{"ConditionClassId"}, dataType: id.NodeId, value: func(_ *entry, _ *Snapshot) codec.Variant {
			return codec.NodeIdVariant(n0(id.ProcessConditionClassType))
		}},
		{path: []string{"ConditionClassName"}, dataType: id.LocalizedText, value: func(_ *entry, _ *Snapshot) codec.Variant { return text("Process") }},
		{path: []string{"ConditionName"}, dataType: id.String, value: func(e *entry, _ *Snapshot) codec.Variant { return codec.StringVariant(e.cond.cfg.Name) }},
		{path: []string{"BranchId"}, dataType: id.NodeId, value: func(_ *entry, s *Snapshot) codec.Variant { return codec.NodeIdVariant(s.BranchId) }},
		{path: []string{"Retain"}, dataType: id.Boolean, value: func(_ *entry, s *Snapshot) codec.Variant { return codec.BooleanVariant(s.Retain) }},
		{path: []string{"Quality"}, dataType: id.StatusCode, component: true, typeDef: id.ConditionVariableType,
			value: func(_ *entry, s *Snapshot) codec.Variant { return codec.StatusCodeVariant(s.Quality) }},
		{path: []string{"Quality", "SourceTimestamp"}, dataType: id.UtcTime, value: func(_ *entry, s *Snapshot) codec.Variant { return at(s.QualityTime) }},
		{path: []string{"LastSeverity"}, dataType: id.UInt16, component: true, typeDef: id.ConditionVariableType,
			value: func(_ *entry, s *Snapshot) codec.Variant { return codec.UInt16Variant(s.LastSeverity) }},
		{path: []string{"LastSeverity", "SourceTimestamp"}, dataType: id.UtcTime, value: func(_ *entry, s *Snapshot) codec.Variant { return at(s.SeverityTime) }},
		{path: []string{"Comment"}, dataType: id.LocalizedText, component: true, typeDef: id.ConditionVariableType,
			value: func(_ *entry, s *Snapshot) codec.Variant { return text(s.Comment) }},
		{path: []string{"Comment", "SourceTimestamp"}, dataType: id.UtcTime, value: func(_ *entry, s *Snapshot) codec.Variant { return at(s.CommentTime) }},
		{path: []string{"ClientUserId"}, dataType: id.String, value: func(_ *entry, s *Snapshot) codec.Variant { return codec.StringVariant(s.ClientUserId) }},
	}
	f = append(f, twoState("EnabledState", nil, "Enabled", "Disabled", func(s *Snapshot) (bool, time.Time) { return s.Enabled, s.EnabledTime })...)
	f = append(f, twoState("AckedState", isAck, "Acknowledged", "Unacknowledged", func(s *Snapshot) (bool, time.Time) { return s.Acked, s.AckedTime })...)
	f = append(f, twoState("ConfirmedState", isConfirm, "Confirmed", "Unconfirmed", func(s *Snapshot) (bool, time.Time) { return s.Confirmed, s.ConfirmedTime })...)
	f = append(f, twoState("ActiveState", isAlarm, "Active", "Inactive", func(s *Snapshot) (bool, time.Time) { return s.Active, s.ActiveTime })...)
	f = append(f,
		field{path: []string{"InputNode"}, dataType: id.NodeId, has: isAlarm,
			value: func(e *entry, _ *Snapshot) codec.Variant { return codec.NodeIdVariant(e.Input) }},
		field{path: []string{"SuppressedOrShelved"}, dataType: id.Boolean, has: isAlarm,
			value: func(_ *entry, s *Snapshot) codec.Variant { return codec.BooleanVariant(s.Shelving != Unshelved) }},
		field{path: []string{"MaxTimeShelved"}, dataType: id.Duration, has: isShelvedBounded,
			value: func(e *entry, _ *Snapshot) codec.Variant {
				return codec.DoubleVariant(float64(e.cond.cfg.MaxTimeShelved) / float64(time.Millisecond))
			}},
		field{path: []string{"ShelvingState", "CurrentState"}, dataType: id.LocalizedText, component: true, typeDef: id.FiniteStateVariableType, has: isAlarm,
			value: func(_ *entry, s *Snapshot) codec.Variant { return text(shelvingStates[s.Shelving].text) }},
		field{path: []string{"ShelvingState", "CurrentState", "Id"}, dataType: id.NodeId, has: isAlarm,
			value: func(_ *entry, s *Snapshot) codec.Variant {
				return codec.NodeIdVariant(n0(shelvingStates[s.Shelving].id))
			}},
		field{path: []string{"ShelvingState", "UnshelveTime"}, dataType: id.Duration, has: isAlarm,
			value: func(_ *entry, s *Snapshot) codec.Variant {
				if s.UnshelveAt.IsZero() {
					return codec.DoubleVariant(0)
				}
				return codec.DoubleVariant(float64(s.UnshelveAt.Sub(s.Time)) / float64(time.Millisecond))
			}},
		field{path: []string{"NormalState"}, dataType: id.NodeId, has: func(c *Config) bool { return c.Kind == KindOffNormal },
			value: func(e *entry, _ *Snapshot) codec.Variant { return codec.NodeIdVariant(e.NormalState) }},
		limitField("HighHighLimit", func(l *Limits) float64 { return l.HighHigh }),
		limitField("HighLimit", func(l *Limits) float64 { return l.High }),
		limitField("LowLimit", func(l *Limits) float64 { return l.Low }),
		limitField("LowLowLimit", func(l *Limits) float64 { return l.LowLow }),
		field{path: []string{"LimitState", "CurrentState"}, dataType: id.LocalizedText, component: true, typeDef: id.FiniteStateVariableType, has: isExcl,
			value: func(_ *entry, s *Snapshot) codec.Variant { t, _ := limitState(s.Limits); return text(t) }},
		field{path: []string{"LimitState", "CurrentState", "Id"}, dataType: id.NodeId, has: isExcl,
			value: func(_ *entry, s *Snapshot) codec.Variant { _, i := limitState(s.Limits); return codec.NodeIdVariant(i) }},
	)
	f = append(f, nonExclusive("HighHighState", HighHigh, func(l *Limits) float64 { return l.HighHigh })...)
	f = append(f, nonExclusive("HighState", High, func(l *Limits) float64 { return l.High })...)
	f = append(f, nonExclusive("LowState", Low, func(l *Limits) float64 { return l.Low })...)
	f = append(f, nonExclusive("LowLowState", LowLow, func(l *Limits) float64 { return l.LowLow })...)
	return f
}()
