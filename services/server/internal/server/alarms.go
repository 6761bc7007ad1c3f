package server

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/services/server/internal/alarms"
	"uastack.dev/services/server/internal/demo"
	"uastack.dev/services/server/internal/subscription"
)

// conditionEvents is where the conditions' events go (alarms.Sink): the subscription
// engine, with their types looked up first, and the history of events.
type conditionEvents struct{ e *events }

var _ alarms.Sink = conditionEvents{}

// Listening reports whether any client monitors events.
func (c conditionEvents) Listening() bool { return c.e.Listening() }

// Emit hands ev to the event items of notifiers, and to the history of those that keep
// their events (Part 11: a condition's state changes are events like any other).
func (c conditionEvents) Emit(ev *subscription.Event, notifiers ...codec.NodeId) {
	c.e.types.Warm(ev.Type)
	if c.e.record != nil {
		c.e.record(ev.Type, ev.Fields, notifiers)
	}
	c.e.subs.Emit(ev, notifiers...)
}

// Refresh queues a ConditionRefresh on a session's subscription.
func (c conditionEvents) Refresh(sessionID codec.NodeId, subID, itemID uint32, r *subscription.Refresh) status.Code {
	return c.e.subs.Refresh(sessionID, subID, itemID, r)
}

// initAlarms makes the condition methods of namespace 0 work (Part 9) and, with the
// demo namespace on, adds its limit alarms on Demo/Simulation/Sine.
func (s *Server) initAlarms() error {
	reg, err := alarms.NewRegistry(s.space, s.now)
	if err != nil {
		return err
	}
	reg.SetSink(conditionEvents{s.events})
	for _, t := range alarms.Types() {
		s.eventTypes.Warm(t)
	}
	if s.demo != nil {
		if err := demo.AddAlarms(reg); err != nil {
			return err
		}
	}
	s.alarms = reg
	return nil
}
