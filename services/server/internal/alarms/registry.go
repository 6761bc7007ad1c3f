package alarms

import (
	"fmt"
	"math"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/subscription"
)

// Sink is where the conditions' events go: the server's subscription engine.
type Sink interface {
	// Listening reports whether any client monitors events.
	Listening() bool
	// Emit hands ev to the event items of notifiers.
	Emit(ev *subscription.Event, notifiers ...codec.NodeId)
	// Refresh queues a ConditionRefresh on a session's subscription (one item when
	// itemID is not 0) and returns the method's StatusCode.
	Refresh(sessionID codec.NodeId, subID, itemID uint32, r *subscription.Refresh) status.Code
}

// Instance places a condition in the address space.
type Instance struct {
	Config
	// Source is the SourceNode (HasCondition from it), SourceName its name.
	Source     codec.NodeId
	SourceName string
	// Input is the InputNode of an alarm: each new Value of it (SetValue or Write)
	// is the alarm's input. It must not be a node of a condition.
	Input codec.NodeId
	// NormalState is the variable whose value is the normal value of an off-normal
	// alarm (Part 9 §5.8.23): each new value of it is the alarm's Normal.
	NormalState codec.NodeId
	// Parent organizes the condition, so that a Browse finds it.
	Parent codec.NodeId
	// Notifiers are the notifiers whose event items get the condition's events, the
	// Server object last; the first has a HasEventSource to Source.
	Notifiers []codec.NodeId
	// Roles, when not empty, are the roles (Part 3 §4.9) of which a caller of the
	// condition's methods must hold one; the others get BadUserAccessDenied.
	Roles []codec.NodeId
}

// entry is one condition of the Registry.
type entry struct {
	Instance
	typ      codec.NodeId // the Kind's ObjectType
	cond     *Condition
	vars     []codec.NodeId  // NodeIds of the variables, by index of fields; null where absent
	last     []codec.Variant // the values the variables hold, by index of fields
	shelving codec.NodeId    // the ShelvingState object; null for no alarm
	timer    *time.Timer     // ends a shelve
}

// Registry holds the conditions of a server: it builds their nodes, implements the
// condition methods of namespace 0's types for them, evaluates alarms as their inputs
// change and reports every state change as an event. It is safe for concurrent use.
type Registry struct {
	space *addrspace.Space
	now   func() time.Time

	mu sync.Mutex // guards sink, conds, byShelving, order, sources and each entry's Condition, last and timer
	// sink is nil until SetSink; events before it go nowhere.
	sink       Sink
	conds      map[codec.NodeId]*entry
	byShelving map[codec.NodeId]*entry
	// order holds the conditions in the order they were added, which a refresh keeps.
	order []*entry
	// sources are the notifier and source pairs linked by HasEventSource, once each.
	sources map[[2]codec.NodeId]bool

	imu     sync.RWMutex // guards inputs, normals
	inputs  map[codec.NodeId][]*entry
	normals map[codec.NodeId][]*entry // by NormalState
}

// typeOf is the ObjectType of each Kind.
var typeOf = [...]uint32{
	KindCondition:         id.ConditionType,
	KindAcknowledgeable:   id.AcknowledgeableConditionType,
	KindAlarm:             id.AlarmConditionType,
	KindExclusiveLimit:    id.ExclusiveLimitAlarmType,
	KindNonExclusiveLimit: id.NonExclusiveLimitAlarmType,
	KindDiscrete:          id.DiscreteAlarmType,
	KindOffNormal:         id.OffNormalAlarmType,
}

func n0(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }

// NewRegistry returns a Registry of conditions in space and makes it the
// implementation of the condition methods of namespace 0 (Part 9 §5.5.4-8, §5.7.3-4,
// §5.8.10), which fails if something else implements them.
func NewRegistry(space *addrspace.Space, now func() time.Time) (*Registry, error) {
	r := &Registry{space: space, now: now, conds: make(map[codec.NodeId]*entry),
		byShelving: make(map[codec.NodeId]*entry), inputs: make(map[codec.NodeId][]*entry),
		normals: make(map[codec.NodeId][]*entry), sources: make(map[[2]codec.NodeId]bool)}
	handlers := []struct {
		method uint32
		fn     addrspace.MethodHandler
	}{
		{id.ConditionType_Enable, r.onCondition(func(c *Condition, _ []codec.Variant, _ string) ([]Snapshot, status.Code) { return c.Enable() })},
		{id.ConditionType_Disable, r.onCondition(func(c *Condition, _ []codec.Variant, _ string) ([]Snapshot, status.Code) { return c.Disable() })},
		{id.ConditionType_AddComment, r.onCondition(func(c *Condition, in []codec.Variant, user string) ([]Snapshot, status.Code) {
			return c.AddComment(in[0].ByteString(), commentOf(in[1]), user)
		})},
		{id.AcknowledgeableConditionType_Acknowledge, r.onCondition(func(c *Condition, in []codec.Variant, user string) ([]Snapshot, status.Code) {
			return c.Acknowledge(in[0].ByteString(), commentOf(in[1]), user)
		})},
		{id.AcknowledgeableConditionType_Confirm, r.onCondition(func(c *Condition, in []codec.Variant, user string) ([]Snapshot, status.Code) {
			return c.Confirm(in[0].ByteString(), commentOf(in[1]), user)
		})},
		{id.ShelvedStateMachineType_TimedShelve, r.onShelving(func(c *Condition, in []codec.Variant) ([]Snapshot, status.Code) {
			ms := math.Float64frombits(in[0].Bits())
			if math.IsNaN(ms) || ms <= 0 || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
				return nil, status.BadShelvingTimeOutOfRange
			}
			return c.TimedShelve(time.Duration(ms * float64(time.Millisecond)))
		})},
		{id.ShelvedStateMachineType_OneShotShelve, r.onShelving(func(c *Condition, _ []codec.Variant) ([]Snapshot, status.Code) { return c.OneShotShelve() })},
		{id.ShelvedStateMachineType_Unshelve, r.onShelving(func(c *Condition, _ []codec.Variant) ([]Snapshot, status.Code) { return c.Unshelve() })},
		{id.ConditionType_ConditionRefresh, r.refresh},
		{id.ConditionType_ConditionRefresh2, r.refresh},
	}
	for _, h := range handlers {
		if err := space.SetMethodHandler(n0(h.method), h.fn); err != nil {
			return nil, fmt.Errorf("alarms: %w", err)
		}
	}
	space.OnChange(r.inputChanged)
	return r, nil
}

// SetSink sets where the events go; call it before serving.
func (r *Registry) SetSink(s Sink) {
	r.mu.Lock()
	r.sink = s
	r.mu.Unlock()
}

// Types are the event types of the conditions, for the server to look up before it
// serves: every Kind's ObjectType and the refresh events.
func Types() []codec.NodeId {
	out := []codec.NodeId{n0(id.RefreshStartEventType), n0(id.RefreshEndEventType)}
	for _, t := range typeOf {
		out = append(out, n0(t))
	}
	return out
}

func commentOf(v codec.Variant) string {
	if lt, ok := v.Value().(codec.LocalizedText); ok {
		return lt.Text
	}
	return ""
}

// name is the string form of a NodeId that derived NodeIds extend.
func name(n codec.NodeId) string {
	if n.Type() == codec.IDString {
		return n.StringID()
	}
	return n.String()
}

// Add adds a condition: its Object (of the Kind's ObjectType) with the variables of
// its fields and state machines, references to the Methods of its type, HasCondition
// from Source, HasEventSource from the first notifier to Source, and Organizes from
// Parent. Conditions are added before the server serves.
func (r *Registry) Add(in Instance) error {
	cfg := in.Config
	if int(cfg.Kind) >= len(typeOf) || cfg.ID.IsNull() || len(in.Notifiers) == 0 {
		return fmt.Errorf("alarms: Add %v: a kind, a NodeId and a notifier are needed", cfg.ID)
	}
	e := &entry{Instance: in, typ: n0(typeOf[cfg.Kind]), cond: NewCondition(cfg, r.now),
		vars: make([]codec.NodeId, len(fields)), last: make([]codec.Variant, len(fields))}
	sp := r.space
	ns := cfg.ID.Namespace()
	child := func(path []string) codec.NodeId {
		s := name(cfg.ID)
		for _, p := range path {
			s += "." + p
		}
		return codec.NewStringNodeId(ns, s)
	}
	ref := func(t uint32, target codec.NodeId, fwd bool) addrspace.Reference {
		return addrspace.Reference{ReferenceTypeId: n0(t), TargetId: target, IsForward: fwd}
	}
	refs := []addrspace.Reference{ref(id.HasTypeDefinition, e.typ, true)}
	if !in.Parent.IsNull() {
		refs = append(refs, ref(id.Organizes, in.Parent, false))
	}
	if !in.Source.IsNull() {
		refs = append(refs, ref(id.HasCondition, in.Source, false))
	}
	if err := sp.AddNode(addrspace.Node{NodeId: cfg.ID, NodeClass: ua.NodeClassObject,
		BrowseName: codec.QualifiedName{NamespaceIndex: ns, Name: cfg.Name}, DisplayName: codec.LocalizedText{Text: cfg.Name},
		References: refs}); err != nil {
		return fmt.Errorf("alarms: %w", err)
	}
	for _, o := range objects {
		if !o.has(&cfg) {
			continue
		}
		oid := child([]string{o.name})
		if err := sp.AddNode(addrspace.Node{NodeId: oid, NodeClass: ua.NodeClassObject,
			BrowseName: codec.QualifiedName{Name: o.name}, DisplayName: codec.LocalizedText{Text: o.name},
			References: []addrspace.Reference{ref(id.HasComponent, cfg.ID, false), ref(id.HasTypeDefinition, n0(o.typeDef), true)}}); err != nil {
			return fmt.Errorf("alarms: %w", err)
		}
		if o.name == "ShelvingState" {
			e.shelving = oid
		}
	}
	snap := e.cond.State()
	for i, f := range fields {
		if f.has != nil && !f.has(&cfg) {
			continue
		}
		vid := child(f.path)
		rt, td := uint32(id.HasProperty), uint32(id.PropertyType)
		if f.component {
			rt, td = id.HasComponent, f.typeDef
		}
		last := f.path[len(f.path)-1]
		e.last[i] = f.value(e, &snap)
		if err := sp.AddNode(addrspace.Node{NodeId: vid, NodeClass: ua.NodeClassVariable,
			BrowseName: codec.QualifiedName{Name: last}, DisplayName: codec.LocalizedText{Text: last},
			DataType: n0(f.dataType), ValueRank: -1, AccessLevel: uint8(ua.AccessLevelTypeCurrentRead),
			Value:      e.last[i],
			References: []addrspace.Reference{ref(rt, child(f.path[:len(f.path)-1]), false), ref(id.HasTypeDefinition, n0(td), true)}}); err != nil {
			return fmt.Errorf("alarms: %w", err)
		}
		e.vars[i] = vid
	}
	methods := []uint32{id.ConditionType_Enable, id.ConditionType_Disable, id.ConditionType_AddComment}
	if cfg.Kind.acknowledgeable() {
		methods = append(methods, id.AcknowledgeableConditionType_Acknowledge)
	}
	if cfg.Confirm {
		methods = append(methods, id.AcknowledgeableConditionType_Confirm)
	}
	// The instance shares its type's Methods (Part 3 §6.4.4 lets a Method be a
	// component of several Objects): a client finds them by browse name and calls
	// them with the instance as ObjectId.
	link := func(from codec.NodeId, ms ...uint32) error {
		for _, m := range ms {
			if err := sp.AddReference(from, ref(id.HasComponent, n0(m), true)); err != nil {
				return fmt.Errorf("alarms: %w", err)
			}
		}
		return nil
	}
	if err := link(cfg.ID, methods...); err != nil {
		return err
	}
	if !e.shelving.IsNull() {
		if err := link(e.shelving, id.ShelvedStateMachineType_TimedShelve, id.ShelvedStateMachineType_OneShotShelve,
			id.ShelvedStateMachineType_Unshelve); err != nil {
			return err
		}
	}
	r.mu.Lock()
	src := [2]codec.NodeId{in.Notifiers[0], in.Source}
	linked := r.sources[src]
	r.mu.Unlock()
	if !in.Source.IsNull() && !linked {
		if err := sp.AddReference(in.Notifiers[0], ref(id.HasEventSource, in.Source, true)); err != nil {
			return fmt.Errorf("alarms: %w", err)
		}
	}
	r.mu.Lock()
	r.sources[src] = true
	if r.conds[cfg.ID] != nil {
		r.mu.Unlock()
		return fmt.Errorf("alarms: Add %v: exists", cfg.ID)
	}
	r.conds[cfg.ID] = e
	r.order = append(r.order, e)
	if !e.shelving.IsNull() {
		r.byShelving[e.shelving] = e
	}
	r.mu.Unlock()
	r.imu.Lock()
	if !in.Input.IsNull() && cfg.Kind.alarm() {
		r.inputs[in.Input] = append(r.inputs[in.Input], e)
	}
	if !in.NormalState.IsNull() && cfg.Kind == KindOffNormal {
		r.normals[in.NormalState] = append(r.normals[in.NormalState], e)
	}
	r.imu.Unlock()
	return nil
}

// inputChanged evaluates the alarms whose input or normal value is id (Space.OnChange).
func (r *Registry) inputChanged(nid codec.NodeId, dv *codec.DataValue) {
	r.imu.RLock()
	es, normals := r.inputs[nid], r.normals[nid]
	r.imu.RUnlock()
	if len(es) == 0 && len(normals) == 0 {
		return
	}
	v, ok := number(dv.Value)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range normals {
		if ok {
			r.publishLocked(e, e.cond.SetNormal(v))
		}
	}
	for _, e := range es {
		q := dv.Status
		if !ok && q.IsGood() {
			q = status.BadTypeMismatch
		}
		r.publishLocked(e, e.cond.SetQuality(q))
		if ok {
			r.publishLocked(e, e.cond.SetInput(v))
		}
	}
}

// number is a numeric or Boolean Value as a float64.
func number(v codec.Variant) (float64, bool) {
	switch x := v.Value().(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// Set evaluates the alarm id with the input value v, as a change of its InputNode
// would; false for no such condition.
func (r *Registry) Set(cid codec.NodeId, v float64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.conds[cid]
	if e == nil {
		return false
	}
	r.publishLocked(e, e.cond.SetInput(v))
	return true
}

// State returns the current state of the condition id.
func (r *Registry) State(cid codec.NodeId) (Snapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.conds[cid]
	if e == nil {
		return Snapshot{}, false
	}
	return e.cond.State(), true
}

// publishLocked writes the condition's own state into its variables and reports each
// of out as an event; it (re)arms the end of a shelve. r.mu must be held.
func (r *Registry) publishLocked(e *entry, out []Snapshot) {
	if len(out) == 0 {
		return
	}
	listening := r.sink != nil && r.sink.Listening()
	for i := range out {
		s := &out[i]
		vals := values(e, s)
		if s.BranchId.IsNull() {
			r.storeLocked(e, s, vals)
		}
		if listening {
			r.sink.Emit(event(e, vals), e.Notifiers...)
		}
	}
	r.armLocked(e)
}

// storeLocked sets the condition's variables to s; those whose value stays are not
// written, so that their monitored items see no change and a state change costs a
// few writes instead of one per field.
func (r *Registry) storeLocked(e *entry, s *Snapshot, vals []codec.Variant) {
	ts := codec.DateTimeOf(s.Time)
	for i := range vals {
		if e.vars[i].IsNull() || same(&vals[i], &e.last[i]) {
			continue
		}
		e.last[i] = vals[i]
		r.space.SetValue(e.vars[i], codec.DataValue{Value: vals[i], SourceTimestamp: ts, ServerTimestamp: ts})
	}
}

// values are the values of the fields of e in the state s, null where e has none.
func values(e *entry, s *Snapshot) []codec.Variant {
	out := make([]codec.Variant, len(fields))
	for i, f := range fields {
		if !e.vars[i].IsNull() {
			out[i] = f.value(e, s)
		}
	}
	return out
}

// same reports whether two scalar field values are equal.
func same(a, b *codec.Variant) bool {
	if a.Type() != b.Type() || a.IsArray() || b.IsArray() || a.Bits() != b.Bits() || a.Str() != b.Str() {
		return false
	}
	// The types with neither bits nor text (LocalizedText) hold a comparable value.
	return a.Type() != codec.TypeLocalizedText || a.Value() == b.Value()
}

// event is the event of the field values vals of e.
func event(e *entry, vals []codec.Variant) *subscription.Event {
	m := make(map[string]codec.Variant, len(fields)+1)
	for i := range vals {
		if !e.vars[i].IsNull() {
			m[fieldKeys[i]] = vals[i]
		}
	}
	m[subscription.KeyConditionId] = codec.NodeIdVariant(e.cond.cfg.ID)
	return &subscription.Event{Type: e.typ, Fields: m}
}

// fieldKeys are the event field keys of fields.
var fieldKeys = func() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		q := make([]codec.QualifiedName, len(f.path))
		for j, p := range f.path {
			q[j] = codec.QualifiedName{Name: p}
		}
		out[i] = subscription.FieldKey(q...)
	}
	return out
}()

// armLocked has the end of the condition's shelve (if any) come at its time.
func (r *Registry) armLocked(e *entry) {
	at := e.cond.UnshelveAt()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	if at.IsZero() {
		return
	}
	e.timer = time.AfterFunc(at.Sub(r.now()), func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.publishLocked(e, e.cond.Expire(r.now()))
	})
}

// Close stops the shelving timers.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.conds {
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
	}
}
