package alarms

import (
	"context"
	"slices"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/subscription"
)

// allowed reports whether p may call the methods of e.
func allowed(e *entry, p *nodemgr.Principal) bool {
	if len(e.Roles) == 0 {
		return true
	}
	if p == nil {
		return false
	}
	for _, role := range p.Roles {
		if slices.Contains(e.Roles, role) {
			return true
		}
	}
	return false
}

// user is the ClientUserId of p (Part 9 §5.5.2).
func user(p *nodemgr.Principal) string {
	switch {
	case p == nil:
		return ""
	case p.UserName != "":
		return p.UserName
	case p.Thumbprint != "":
		return p.Thumbprint
	}
	return "Anonymous"
}

// onCondition is a handler of a method called on a condition.
func (r *Registry) onCondition(fn func(c *Condition, in []codec.Variant, user string) ([]Snapshot, status.Code)) addrspace.MethodHandler {
	return func(ctx context.Context, object codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code) {
		p := addrspace.CallPrincipal(ctx)
		r.mu.Lock()
		defer r.mu.Unlock()
		e := r.conds[object]
		switch {
		case e == nil:
			return nil, status.BadNodeIdInvalid
		case !allowed(e, p):
			return nil, status.BadUserAccessDenied
		}
		out, code := fn(e.cond, in, user(p))
		r.publishLocked(e, out)
		return nil, code
	}
}

// onShelving is a handler of a method called on a condition's ShelvingState.
func (r *Registry) onShelving(fn func(c *Condition, in []codec.Variant) ([]Snapshot, status.Code)) addrspace.MethodHandler {
	return func(ctx context.Context, object codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code) {
		p := addrspace.CallPrincipal(ctx)
		r.mu.Lock()
		defer r.mu.Unlock()
		e := r.byShelving[object]
		switch {
		case e == nil:
			return nil, status.BadNodeIdInvalid
		case !allowed(e, p):
			return nil, status.BadUserAccessDenied
		}
		out, code := fn(e.cond, in)
		r.publishLocked(e, out)
		return nil, code
	}
}

// refresh is ConditionRefresh (Part 9 §5.5.7) and ConditionRefresh2 (§5.5.8), called
// on ConditionType: RefreshStartEvent, the retained states of every condition and
// RefreshEndEvent, to the caller's subscription only.
func (r *Registry) refresh(ctx context.Context, object codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code) {
	if object != n0(id.ConditionType) {
		return nil, status.BadMethodInvalid
	}
	p := addrspace.CallPrincipal(ctx)
	if p == nil {
		return nil, status.BadUserAccessDenied
	}
	subID := uint32(in[0].Bits())
	var itemID uint32
	if len(in) > 1 {
		itemID = uint32(in[1].Bits())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sink == nil {
		return nil, status.BadSubscriptionIdInvalid
	}
	now := r.now()
	mark := func(typ uint32, msg string) *subscription.Event {
		t := codec.DateTimeVariant(codec.DateTimeOf(now))
		return &subscription.Event{Type: n0(typ), Fields: map[string]codec.Variant{
			subscription.KeyEventId:     subscription.NewEventId(),
			subscription.KeyEventType:   codec.NodeIdVariant(n0(typ)),
			subscription.KeySourceNode:  codec.NodeIdVariant(n0(id.Server)),
			subscription.KeySourceName:  codec.StringVariant("Server"),
			subscription.KeyTime:        t,
			subscription.KeyReceiveTime: t,
			subscription.KeyMessage:     text(msg),
			subscription.KeySeverity:    codec.UInt16Variant(1),
		}}
	}
	ref := &subscription.Refresh{Start: mark(id.RefreshStartEventType, "Refresh started"), End: mark(id.RefreshEndEventType, "Refresh ended")}
	notifiers := make(map[*subscription.Event][]codec.NodeId)
	for _, e := range r.order {
		for _, s := range e.cond.Retained() {
			ev := event(e, values(e, &s))
			ref.Conditions = append(ref.Conditions, ev)
			notifiers[ev] = e.Notifiers
		}
	}
	ref.Notifiers = func(ev *subscription.Event) []codec.NodeId { return notifiers[ev] }
	return nil, r.sink.Refresh(p.SessionID, subID, itemID, ref)
}
