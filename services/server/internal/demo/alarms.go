package demo

import (
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/services/server/internal/alarms"
)

// The demo's limit alarms (Part 9 §5.8.11-13) watch Demo/Simulation/Sine, which swings
// between -1 and 1: both pass all four limits twice a period.
var (
	// ExclusiveAlarmID is Demo/Simulation/SineExclusiveAlarm, an ExclusiveLimitAlarm.
	ExclusiveAlarmID = ID("Demo.Simulation.SineExclusiveAlarm")
	// NonExclusiveAlarmID is Demo/Simulation/SineNonExclusiveAlarm, a
	// NonExclusiveLimitAlarm.
	NonExclusiveAlarmID = ID("Demo.Simulation.SineNonExclusiveAlarm")
)

// SineLimits are the limits of the demo alarms and the severities they raise.
var SineLimits = alarms.Limits{HighHigh: 0.9, High: 0.5, Low: -0.5, LowLow: -0.9, Severities: [4]uint16{900, 700, 700, 900}}

// AddAlarms adds the demo's limit alarms on Sine to reg: both need an acknowledgement
// and a confirmation and may be shelved for at most an hour; their events reach the
// items on the Server object.
func AddAlarms(reg *alarms.Registry) error {
	for _, a := range []struct {
		id   codec.NodeId
		name string
		kind alarms.Kind
	}{
		{ExclusiveAlarmID, "SineExclusiveAlarm", alarms.KindExclusiveLimit},
		{NonExclusiveAlarmID, "SineNonExclusiveAlarm", alarms.KindNonExclusiveLimit},
	} {
		err := reg.Add(alarms.Instance{
			Config: alarms.Config{Kind: a.kind, ID: a.id, Name: a.name, Confirm: true, Limits: SineLimits,
				Severity: 100, MaxTimeShelved: time.Hour},
			Source: SineID, SourceName: "Demo/Simulation/Sine", Input: SineID, Parent: ID("Demo.Simulation"),
			Notifiers: []codec.NodeId{serverID},
		})
		if err != nil {
			return err
		}
	}
	return nil
}
