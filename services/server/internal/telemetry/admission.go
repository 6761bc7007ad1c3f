package telemetry

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Stage is a stage of isolation, where an owner's share of a resource is checked: the
// label stage of the isolation instruments.
type Stage uint8

// The stages of isolation (issue 18: connection admission, session establishment, the
// request queue, parked requests, retained bytes of partly received messages).
const (
	StageConnection Stage = iota
	StageSession
	StageRequest
	StageParked
	StageRetained
	stageCount
)

var stageNames = [stageCount]string{"connection", "session", "request", "parked", "retained"}

// String returns the stage's label value.
func (s Stage) String() string {
	if s >= stageCount {
		return "unknown"
	}
	return stageNames[s]
}

// Reason is why isolation refused an owner, with the .NET stack's names: the label
// reason of opcua_server_isolation_rejections_total.
type Reason uint8

// The reasons of a refusal.
const (
	// ReasonCapacity: the stage as a whole is full (or its shared part is).
	ReasonCapacity Reason = iota
	// ReasonOwnerLimit: the owner holds its share of the stage already.
	ReasonOwnerLimit
	// ReasonOwnerTableFull: the table of owners is full, and this owner is a new one.
	ReasonOwnerTableFull
	// ReasonInvalidOwner: the owner is not one the stage knows (a stale or forged one).
	ReasonInvalidOwner
	reasonCount
)

var reasonNames = [reasonCount]string{"Capacity", "OwnerLimit", "OwnerTableFull", "InvalidOwner"}

// String returns the reason's label value.
func (r Reason) String() string {
	if r >= reasonCount {
		return "unknown"
	}
	return reasonNames[r]
}

// Refusal is why the listener turned a connection away: the label reason of
// opcua_server_connections_refused_total.
type Refusal uint8

// The reasons a connection is refused.
const (
	// RefusedRate: the listener's token bucket (connections per second and burst) was empty.
	RefusedRate Refusal = iota
	// RefusedSourceLimit: the source address holds its number of connections already.
	RefusedSourceLimit
	// RefusedChannelLimit: limits.maxChannelCount channels are open.
	RefusedChannelLimit
	// RefusedIsolation: the connection stage of isolation refused the owner (counted in
	// the rejections with its reason as well).
	RefusedIsolation
	// RefusedHandshakes: the connection's OpenSecureChannel found
	// limits.maxQueuedHandshakes others waiting for a turn at the cryptography.
	RefusedHandshakes
	refusalCount
)

var refusalNames = [refusalCount]string{"rate", "source_limit", "channel_limit", "isolation", "handshakes"}

// String returns the refusal's label value.
func (r Refusal) String() string {
	if r >= refusalCount {
		return "unknown"
	}
	return refusalNames[r]
}

// Deadline is a deadline of a connection or session (issue 18 item 1): the label stage
// of opcua_server_deadline_expiries_total.
type Deadline uint8

// The deadlines.
const (
	// DeadlineHello: no Hello within the time after the connection was accepted.
	DeadlineHello Deadline = iota
	// DeadlineOpen: no OpenSecureChannel within the time after the Acknowledge.
	DeadlineOpen
	// DeadlineChunk: a chunk was started and not completed in time.
	DeadlineChunk
	// DeadlineAssembly: a message of several chunks was not completed in time.
	DeadlineAssembly
	// DeadlineWrite: a peer did not take an answer off the socket in time.
	DeadlineWrite
	// DeadlineSession: a session ended because it timed out: not activated in time, or
	// idle past its session timeout.
	DeadlineSession
	deadlineCount
)

var deadlineNames = [deadlineCount]string{"hello", "open", "chunk", "assembly", "write", "session"}

// String returns the deadline's label value.
func (d Deadline) String() string {
	if d >= deadlineCount {
		return "unknown"
	}
	return deadlineNames[d]
}

// StageUsage is what a stage holds at a moment: the amount in use (connections,
// sessions, requests or bytes, as the stage counts) and the number of owners holding
// some of it.
type StageUsage struct {
	Used, Owners int64
}

// Admission is the instruments of admission control and isolation, with the .NET
// stack's names in the Prometheus style:
//
//	opcua_server_isolation_rejections_total{stage,reason}  refusals by isolation
//	opcua_server_isolation_usage{stage}                    amount in use (ObserveStage)
//	opcua_server_isolation_owners{stage}                   owners holding some (ObserveStage)
//	opcua_server_connections_accepted_total                connections the listener admitted
//	opcua_server_connections_refused_total{reason}         connections it turned away
//	opcua_server_deadline_expiries_total{stage}            deadlines that passed
//
// Counting is an atomic add: it costs nanoseconds, does not allocate and may be called
// on any path, concurrently. Every label combination is exported from the start, at 0.
// The methods of a nil *Admission do nothing, for the packages' tests that run without
// telemetry. Labels are bounded enums, never an owner, address or token.
type Admission struct {
	rejections [stageCount][reasonCount]atomic.Uint64
	accepted   atomic.Uint64
	refused    [refusalCount]atomic.Uint64
	expired    [deadlineCount]atomic.Uint64
	// usage[s] reports stage s's usage when collected; nil for a stage nobody observes.
	usage [stageCount]atomic.Pointer[func() StageUsage]
}

// Rejected counts a refusal by the isolation of stage for reason. Out-of-range values
// are not counted.
func (a *Admission) Rejected(stage Stage, reason Reason) {
	if a != nil && stage < stageCount && reason < reasonCount {
		a.rejections[stage][reason].Add(1)
	}
}

// ConnectionAccepted counts a connection the listener admitted.
func (a *Admission) ConnectionAccepted() {
	if a != nil {
		a.accepted.Add(1)
	}
}

// ConnectionRefused counts a connection the listener turned away, and why.
func (a *Admission) ConnectionRefused(why Refusal) {
	if a != nil && why < refusalCount {
		a.refused[why].Add(1)
	}
}

// DeadlineExpired counts a deadline that passed.
func (a *Admission) DeadlineExpired(d Deadline) {
	if a != nil && d < deadlineCount {
		a.expired[d].Add(1)
	}
}

// ObserveStage has f report the usage of stage whenever metrics are collected (a scrape,
// an OTLP push), replacing the function given before; nil stops the reporting. f runs on
// the collecting goroutine, must be safe for concurrent use and should take no longer
// than a lock and a few loads.
func (a *Admission) ObserveStage(stage Stage, f func() StageUsage) {
	if a == nil || stage >= stageCount {
		return
	}
	if f == nil {
		a.usage[stage].Store(nil)
		return
	}
	a.usage[stage].Store(&f)
}

// Rejections returns the refusals counted for stage and reason.
func (a *Admission) Rejections(stage Stage, reason Reason) uint64 {
	if a == nil || stage >= stageCount || reason >= reasonCount {
		return 0
	}
	return a.rejections[stage][reason].Load()
}

// Accepted returns the connections counted as admitted.
func (a *Admission) Accepted() uint64 {
	if a == nil {
		return 0
	}
	return a.accepted.Load()
}

// Refused returns the connections counted as turned away for why.
func (a *Admission) Refused(why Refusal) uint64 {
	if a == nil || why >= refusalCount {
		return 0
	}
	return a.refused[why].Load()
}

// Expired returns the expiries counted of deadline d.
func (a *Admission) Expired(d Deadline) uint64 {
	if a == nil || d >= deadlineCount {
		return 0
	}
	return a.expired[d].Load()
}

// newAdmission returns Admission with its instruments registered on m; the options
// carrying each label combination are built here, once, so collecting allocates none.
func newAdmission(m metric.Meter) (*Admission, error) {
	a := &Admission{}
	rejections, err := m.Int64ObservableCounter("opcua.server.isolation.rejections",
		metric.WithDescription("Requests, connections and sessions refused by isolation, by stage and reason."))
	if err != nil {
		return nil, err
	}
	usage, err := m.Int64ObservableGauge("opcua.server.isolation.usage",
		metric.WithDescription("Amount of a stage in use: connections, sessions, requests or retained bytes."))
	if err != nil {
		return nil, err
	}
	owners, err := m.Int64ObservableGauge("opcua.server.isolation.owners",
		metric.WithDescription("Owners (peers, applications, sessions) holding some of a stage."))
	if err != nil {
		return nil, err
	}
	accepted, err := m.Int64ObservableCounter("opcua.server.connections.accepted",
		metric.WithDescription("Connections the listener admitted."))
	if err != nil {
		return nil, err
	}
	refused, err := m.Int64ObservableCounter("opcua.server.connections.refused",
		metric.WithDescription("Connections the listener turned away before any crypto, by reason."))
	if err != nil {
		return nil, err
	}
	expired, err := m.Int64ObservableCounter("opcua.server.deadline.expiries",
		metric.WithDescription("Connections, messages and sessions ended because a deadline passed, by stage."))
	if err != nil {
		return nil, err
	}

	label := func(kvs ...attribute.KeyValue) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(kvs...))
	}
	var byStage [stageCount]metric.ObserveOption
	var byStageReason [stageCount][reasonCount]metric.ObserveOption
	for s := range stageCount {
		byStage[s] = label(attribute.String("stage", s.String()))
		for r := range reasonCount {
			byStageReason[s][r] = label(attribute.String("stage", s.String()), attribute.String("reason", r.String()))
		}
	}
	var byRefusal [refusalCount]metric.ObserveOption
	for r := range refusalCount {
		byRefusal[r] = label(attribute.String("reason", r.String()))
	}
	var byDeadline [deadlineCount]metric.ObserveOption
	for d := range deadlineCount {
		byDeadline[d] = label(attribute.String("stage", d.String()))
	}

	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for s := range stageCount {
			for r := range reasonCount {
				o.ObserveInt64(rejections, int64(a.rejections[s][r].Load()), byStageReason[s][r])
			}
			if f := a.usage[s].Load(); f != nil {
				u := (*f)()
				o.ObserveInt64(usage, u.Used, byStage[s])
				o.ObserveInt64(owners, u.Owners, byStage[s])
			}
		}
		o.ObserveInt64(accepted, int64(a.accepted.Load()))
		for r := range refusalCount {
			o.ObserveInt64(refused, int64(a.refused[r].Load()), byRefusal[r])
		}
		for d := range deadlineCount {
			o.ObserveInt64(expired, int64(a.expired[d].Load()), byDeadline[d])
		}
		return nil
	}, rejections, usage, owners, accepted, refused, expired)
	if err != nil {
		return nil, err
	}
	return a, nil
}
