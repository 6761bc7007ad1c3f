package alarms

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/subscription"
)

const testURI = "urn:uastack:alarms-test"

// engineSink is the Sink the server wires: the subscription engine, with event types
// looked up in the Space.
type engineSink struct {
	e     *subscription.Engine
	types *addrspace.EventTypes
}

func (s engineSink) Listening() bool { return s.e.Listening() }
func (s engineSink) Emit(ev *subscription.Event, notifiers ...codec.NodeId) {
	s.types.Warm(ev.Type)
	s.e.Emit(ev, notifiers...)
}
func (s engineSink) Refresh(sessionID codec.NodeId, subID, itemID uint32, r *subscription.Refresh) status.Code {
	return s.e.Refresh(sessionID, subID, itemID, r)
}

// inbox keeps the events of the Publish responses it gets.
type inbox struct {
	mu     sync.Mutex // guards events
	events []ua.EventFieldList
}

func (in *inbox) Respond(r *ua.PublishResponse) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, x := range r.NotificationMessage.NotificationData {
		if l, ok := x.Value.(*ua.EventNotificationList); ok {
			in.events = append(in.events, l.Events...)
		}
	}
}

func (in *inbox) take() []ua.EventFieldList {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := in.events
	in.events = nil
	return out
}

// setup is a Space with a source variable, a Registry on it and a subscription engine
// with a settable clock.
type setup struct {
	space *addrspace.Space
	reg   *Registry
	subs  *subscription.Engine
	types *addrspace.EventTypes
	clk   time.Time
	mu    sync.Mutex // guards clk
}

func (s *setup) now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clk
}

func (s *setup) advance(d time.Duration) {
	s.mu.Lock()
	s.clk = s.clk.Add(d)
	s.mu.Unlock()
	s.subs.Step()
}

type noSampler struct{}

func (noSampler) Sample(_ []ua.ReadValueId, _ []codec.DataValue, done func()) { done() }

var (
	server = n0(id.Server)
	source = codec.NewStringNodeId(1, "Source")
)

func newSetup(t testing.TB) *setup {
	s := &setup{space: addrspace.New(addrspace.NamespaceURI0, testURI), clk: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	require.NoError(t, s.space.AddNode(addrspace.Node{NodeId: source, NodeClass: ua.NodeClassVariable,
		BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "Source"}, DataType: n0(id.Double), ValueRank: -1,
		AccessLevel: uint8(ua.AccessLevelTypeCurrentRead), Value: codec.DoubleVariant(0),
		References: []addrspace.Reference{{ReferenceTypeId: n0(id.Organizes), TargetId: n0(id.ObjectsFolder)}}}))
	reg, err := NewRegistry(s.space, s.now)
	require.NoError(t, err)
	s.reg = reg
	s.subs = subscription.New(subscription.Limits{
		MaxSubscriptions: 100000, MaxSubscriptionsPerSession: 10, MaxPublishRequests: 10,
		MaxMonitoredItems: 100000, MaxMonitoredItemsPerSubscription: 10,
		MinPublishingInterval: time.Millisecond, MaxPublishingInterval: time.Hour,
		MaxKeepAliveCount: 100, MaxLifetimeCount: 1000, MinSamplingInterval: time.Millisecond, MaxSamplingInterval: time.Hour,
		MaxQueueSize: 100000, RetransmissionQueueSize: 4,
	}, s.now, noSampler{})
	s.types = addrspace.NewEventTypes(s.space)
	s.subs.SetEventTypes(s.types)
	reg.SetSink(engineSink{s.subs, s.types})
	return s
}

// alarm adds a limit alarm on the source variable named n with roles.
func (s *setup) alarm(t testing.TB, n string, kind Kind, roles ...codec.NodeId) codec.NodeId {
	cid := codec.NewStringNodeId(1, n)
	require.NoError(t, s.reg.Add(Instance{
		Config: Config{Kind: kind, ID: cid, Name: n, Confirm: true, Severity: 100, MaxTimeShelved: time.Minute,
			Limits: Limits{HighHigh: 0.9, High: 0.5, Low: -0.5, LowLow: -0.9, Severities: [4]uint16{900, 700, 700, 900}}},
		Source: source, SourceName: "Source", Input: source, Parent: n0(id.ObjectsFolder),
		Notifiers: []codec.NodeId{server}, Roles: roles,
	}))
	return cid
}

// sao is a select clause of typ along names.
func sao(typ uint32, names ...string) ua.SimpleAttributeOperand {
	o := ua.SimpleAttributeOperand{TypeDefinitionId: n0(typ), AttributeId: uint32(attr.Value)}
	for _, n := range names {
		o.BrowsePath = append(o.BrowsePath, codec.QualifiedName{Name: n})
	}
	return o
}

// alarmFilter selects EventType, ConditionId, Severity, ActiveState/Id, AckedState/Id,
// Retain, EventId, BranchId and Message of condition events.
func alarmFilter() *ua.EventFilter {
	return &ua.EventFilter{
		SelectClauses: []ua.SimpleAttributeOperand{
			sao(id.BaseEventType, "EventType"),
			{TypeDefinitionId: n0(id.ConditionType), AttributeId: uint32(attr.NodeId)},
			sao(id.BaseEventType, "Severity"),
			sao(id.AlarmConditionType, "ActiveState", "Id"),
			sao(id.AcknowledgeableConditionType, "AckedState", "Id"),
			sao(id.ConditionType, "Retain"),
			sao(id.BaseEventType, "EventId"),
			sao(id.ConditionType, "BranchId"),
			sao(id.BaseEventType, "Message"),
		},
		WhereClause: ua.ContentFilter{Elements: []ua.ContentFilterElement{{
			FilterOperator: ua.FilterOperatorOfType,
			FilterOperands: []codec.ExtensionObject{codec.NewExtensionObject(&ua.LiteralOperand{Value: codec.NodeIdVariant(n0(id.ConditionType))})},
		}}},
	}
}

// client is one session with a subscription and an event item on the Server object.
type client struct {
	session codec.NodeId
	sub     uint32
	item    uint32
	in      *inbox
}

func (s *setup) client(t testing.TB, n int) *client {
	c := &client{session: codec.NewNumericNodeId(1, uint32(1000+n)), in: &inbox{}}
	sub, _, code := s.subs.Create(c.session, "anonymous", subscription.Params{PublishingInterval: 1, MaxKeepAliveCount: 100, LifetimeCount: 1000}, true)
	require.Equal(t, status.Good, code)
	c.sub = sub
	ef, res, code := subscription.CompileEventFilter(alarmFilter(), s.types)
	require.Equal(t, status.Good, code)
	require.Nil(t, res)
	out, code := s.subs.CreateItems(c.session, sub, ua.TimestampsToReturnNeither, []subscription.ItemRequest{{
		Item: ua.ReadValueId{NodeId: server, AttributeId: uint32(attr.EventNotifier)}, Mode: ua.MonitoringModeReporting,
		ClientHandle: 1, QueueSize: 100000, Events: ef,
	}}, []status.Code{status.Good})
	require.Equal(t, status.Good, code)
	require.Equal(t, status.Good, out[0].StatusCode)
	c.item = out[0].MonitoredItemId
	return c
}

// publish has each client send a Publish and the engine answer them.
func (s *setup) publish(cs ...*client) {
	for _, c := range cs {
		s.subs.Publish(c.session, nil, nil, c.in, time.Time{})
	}
	s.advance(2 * time.Millisecond)
}

// call calls method on object as p through the Space, as the server's Call does.
func (s *setup) call(p nodemgr.Principal, object, method codec.NodeId, in ...codec.Variant) status.Code {
	op := &nodemgr.CallOp{Principal: p, Items: []ua.CallMethodRequest{{ObjectId: object, MethodId: method, InputArguments: in}},
		Results: make([]ua.CallMethodResult, 1)}
	s.space.Call(context.Background(), op, func() {})
	return op.Results[0].StatusCode
}

func (s *setup) read(t testing.TB, nid codec.NodeId) codec.Variant {
	op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: nid, AttributeId: uint32(attr.Value)}}, Results: make([]codec.DataValue, 1)}
	s.space.Read(context.Background(), op, func() {})
	require.Equal(t, status.Good, op.Results[0].Status, "%v", nid)
	return op.Results[0].Value
}

func setSource(s *setup, v float64) {
	s.space.SetValue(source, codec.DataValue{Value: codec.DoubleVariant(v)})
}

// TestRegistryMethodsAndRights: the input drives the alarm, the condition's variables
// follow its state, the methods need one of the condition's roles, and each change is
// an event with the condition's fields.
func TestRegistryMethodsAndRights(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	operator := n0(id.WellKnownRole_Operator)
	cid := s.alarm(t, "Alarm", KindExclusiveLimit, operator)
	c := s.client(t, 0)

	setSource(s, 0.6)
	s.publish(c)
	evs := c.in.take()
	require.Len(t, evs, 1)
	f := evs[0].EventFields
	require.Equal(t, n0(id.ExclusiveLimitAlarmType), f[0].NodeId())
	require.Equal(t, cid, f[1].NodeId())
	require.Equal(t, uint64(700), f[2].Bits())
	require.Equal(t, codec.BooleanVariant(true), f[3])
	require.Equal(t, codec.BooleanVariant(false), f[4])
	require.Equal(t, codec.BooleanVariant(true), f[5])
	eventID := f[6]
	require.Equal(t, eventID, s.read(t, codec.NewStringNodeId(1, "Alarm.EventId")), "the variables hold the last state")
	require.Equal(t, codec.BooleanVariant(true), s.read(t, codec.NewStringNodeId(1, "Alarm.ActiveState.Id")))
	lt := s.read(t, codec.NewStringNodeId(1, "Alarm.LimitState.CurrentState"))
	require.Equal(t, "High", lt.Value().(codec.LocalizedText).Text)

	ack := n0(id.AcknowledgeableConditionType_Acknowledge)
	comment := codec.MustVariant(codec.LocalizedText{Text: "on it"})
	anonymous := nodemgr.Principal{SessionID: c.session, Anonymous: true}
	olga := nodemgr.Principal{SessionID: c.session, UserName: "olga", Roles: []codec.NodeId{operator}}
	require.Equal(t, status.BadUserAccessDenied, s.call(anonymous, cid, ack, eventID, comment))
	require.Equal(t, status.BadInvalidArgument, s.call(olga, cid, ack, codec.StringVariant("x"), comment), "EventId is a ByteString")
	require.Equal(t, status.Good, s.call(olga, cid, ack, eventID, comment))
	require.Equal(t, status.BadConditionBranchAlreadyAcked, s.call(olga, cid, ack, s.read(t, codec.NewStringNodeId(1, "Alarm.EventId")), comment))
	user := s.read(t, codec.NewStringNodeId(1, "Alarm.ClientUserId"))
	require.Equal(t, "olga", user.Str())
	note := s.read(t, codec.NewStringNodeId(1, "Alarm.Comment"))
	require.Equal(t, "on it", note.Value().(codec.LocalizedText).Text)

	shelving := codec.NewStringNodeId(1, "Alarm.ShelvingState")
	require.Equal(t, status.BadUserAccessDenied, s.call(anonymous, shelving, n0(id.ShelvedStateMachineType_OneShotShelve)))
	require.Equal(t, status.Good, s.call(olga, shelving, n0(id.ShelvedStateMachineType_OneShotShelve)))
	require.Equal(t, status.Good, s.call(olga, cid, n0(id.ConditionType_Disable)))
	require.Equal(t, status.BadConditionAlreadyDisabled, s.call(olga, cid, n0(id.ConditionType_Disable)))
	require.Equal(t, codec.BooleanVariant(false), s.read(t, codec.NewStringNodeId(1, "Alarm.EnabledState.Id")))
	require.Equal(t, status.Good, s.call(olga, cid, n0(id.ConditionType_Enable)))

	s.publish(c)
	evs = c.in.take()
	require.Len(t, evs, 4, "acknowledge, shelve, disable, enable")
	require.Equal(t, codec.BooleanVariant(true), evs[0].EventFields[4])
	require.Equal(t, codec.BooleanVariant(false), evs[2].EventFields[5], "a disabled condition is not retained")
}

// TestRegistryRefresh: ConditionRefresh reports RefreshStart, every retained state
// (branches included), RefreshEnd, to the caller's subscription only.
func TestRegistryRefresh(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	a := s.alarm(t, "A", KindExclusiveLimit)
	b := s.alarm(t, "B", KindNonExclusiveLimit)
	c1, c2 := s.client(t, 1), s.client(t, 2)
	setSource(s, 0.6) // both active
	setSource(s, 0)   // both inactive, unacknowledged
	setSource(s, 0.6) // both active again: each keeps its previous state on a branch
	s.publish(c1, c2)
	require.Len(t, c1.in.take(), 8)
	c2.in.take()

	refresh := n0(id.ConditionType_ConditionRefresh)
	p := nodemgr.Principal{SessionID: c1.session}
	require.Equal(t, status.Good, s.call(p, n0(id.ConditionType), refresh, codec.UInt32Variant(c1.sub)))
	require.Equal(t, status.BadUserAccessDenied, s.call(p, n0(id.ConditionType), refresh, codec.UInt32Variant(c2.sub)))
	require.Equal(t, status.BadSubscriptionIdInvalid, s.call(p, n0(id.ConditionType), refresh, codec.UInt32Variant(99999)))
	lone := codec.NewNumericNodeId(1, 5000)
	bare, _, code := s.subs.Create(lone, "anonymous", subscription.Params{PublishingInterval: 1, MaxKeepAliveCount: 100, LifetimeCount: 1000}, true)
	require.Equal(t, status.Good, code)
	require.Equal(t, status.BadNothingToDo, s.call(nodemgr.Principal{SessionID: lone}, n0(id.ConditionType), refresh, codec.UInt32Variant(bare)),
		"no event items")
	require.Equal(t, status.BadMethodInvalid, s.call(p, n0(id.AlarmConditionType), refresh, codec.UInt32Variant(c1.sub)),
		"only on ConditionType (Part 9 §5.5.7)")
	s.publish(c1, c2)
	require.Empty(t, c2.in.take(), "only the subscription asked")
	evs := c1.in.take()
	require.Len(t, evs, 6)
	require.Equal(t, n0(id.RefreshStartEventType), evs[0].EventFields[0].NodeId())
	require.Equal(t, n0(id.RefreshEndEventType), evs[5].EventFields[0].NodeId())
	var conds []string
	branches := 0
	for _, e := range evs[1:5] {
		require.Equal(t, codec.BooleanVariant(true), e.EventFields[5])
		conds = append(conds, e.EventFields[1].NodeId().String())
		if !e.EventFields[7].NodeId().IsNull() {
			branches++
		}
	}
	require.Equal(t, []string{a.String(), a.String(), b.String(), b.String()}, conds)
	require.Equal(t, 2, branches)

	// ConditionRefresh2 reaches one item.
	refresh2 := n0(id.ConditionType_ConditionRefresh2)
	require.Equal(t, status.Good, s.call(p, n0(id.ConditionType), refresh2, codec.UInt32Variant(c1.sub), codec.UInt32Variant(c1.item)))
	require.Equal(t, status.BadMonitoredItemIdInvalid, s.call(p, n0(id.ConditionType), refresh2, codec.UInt32Variant(c1.sub), codec.UInt32Variant(c1.item+1)))
	s.publish(c1)
	require.Len(t, c1.in.take(), 6)
}

// TestRegistryShelveExpires: a timed shelve ends by itself at its time.
func TestRegistryShelveExpires(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.mu.Lock()
	s.clk = time.Now()
	s.mu.Unlock()
	cid := s.alarm(t, "Alarm", KindExclusiveLimit)
	shelving := codec.NewStringNodeId(1, "Alarm.ShelvingState")
	p := nodemgr.Principal{}
	require.Equal(t, status.BadShelvingTimeOutOfRange, s.call(p, shelving, n0(id.ShelvedStateMachineType_TimedShelve), codec.DoubleVariant(-1)))
	require.Equal(t, status.Good, s.call(p, shelving, n0(id.ShelvedStateMachineType_TimedShelve), codec.DoubleVariant(50)))
	st, _ := s.reg.State(cid)
	require.Equal(t, TimedShelved, st.Shelving)
	require.Equal(t, codec.BooleanVariant(true), s.read(t, codec.NewStringNodeId(1, "Alarm.SuppressedOrShelved")))
	s.mu.Lock()
	s.clk = s.clk.Add(time.Second) // the timer reads the clock when it fires
	s.mu.Unlock()
	require.Eventually(t, func() bool { st, _ := s.reg.State(cid); return st.Shelving == Unshelved }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, codec.BooleanVariant(false), s.read(t, codec.NewStringNodeId(1, "Alarm.SuppressedOrShelved")))
	s.reg.Close()
}

// TestRegistryBrowse: the condition is an instance of its type with its components,
// and its methods are those of the type.
func TestRegistryBrowse(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	cid := s.alarm(t, "Alarm", KindNonExclusiveLimit)
	op := &nodemgr.BrowseOp{Items: []ua.BrowseDescription{{NodeId: cid, BrowseDirection: ua.BrowseDirectionBoth,
		IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}}, Results: make([]nodemgr.BrowseResult, 1)}
	s.space.Browse(context.Background(), op, func() {})
	require.Equal(t, status.Good, op.Results[0].Status)
	names := map[string]string{}
	for _, r := range op.Results[0].References {
		names[r.BrowseName.Name] = r.NodeId.NodeId.String() + " " + strconv.FormatBool(r.IsForward)
	}
	require.Equal(t, n0(id.AcknowledgeableConditionType_Acknowledge).String()+" true", names["Acknowledge"])
	require.Equal(t, n0(id.AcknowledgeableConditionType_Confirm).String()+" true", names["Confirm"])
	require.Equal(t, n0(id.NonExclusiveLimitAlarmType).String()+" true", names["NonExclusiveLimitAlarmType"])
	require.Equal(t, source.String()+" false", names["Source"], "HasCondition from the source")
	for _, n := range []string{"HighHighState", "HighState", "LowState", "LowLowState", "ActiveState", "AckedState", "ConfirmedState",
		"EnabledState", "ShelvingState", "Retain", "Severity", "EventId", "HighLimit", "LowLowLimit", "Quality", "LastSeverity", "Comment"} {
		require.Contains(t, names, n)
	}
	require.NotContains(t, names, "LimitState", "exclusive only")

	// A second condition of the same source does not link it to its notifier again.
	s.alarm(t, "Other", KindExclusiveLimit)
	op = &nodemgr.BrowseOp{Items: []ua.BrowseDescription{{NodeId: server, BrowseDirection: ua.BrowseDirectionForward,
		ReferenceTypeId: n0(id.HasEventSource), ResultMask: uint32(ua.BrowseResultMaskAll)}}, Results: make([]nodemgr.BrowseResult, 1)}
	s.space.Browse(context.Background(), op, func() {})
	require.Len(t, op.Results[0].References, 1)
	require.Equal(t, source, op.Results[0].References[0].NodeId.NodeId)
}

// TestRegistryInputKinds: an integer input drives the alarm like a Double; a value that
// is no number makes the condition's Quality BadTypeMismatch; a bad status is its Quality.
func TestRegistryInputKinds(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	cid := s.alarm(t, "Alarm", KindNonExclusiveLimit)
	s.space.SetValue(source, codec.DataValue{Value: codec.Int32Variant(1)})
	st, _ := s.reg.State(cid)
	require.Equal(t, High|HighHigh, st.Limits)
	s.space.SetValue(source, codec.DataValue{Value: codec.StringVariant("high")})
	st, _ = s.reg.State(cid)
	require.Equal(t, status.BadTypeMismatch, st.Quality)
	require.Equal(t, High|HighHigh, st.Limits, "no number, no new limit state")
	s.space.SetValue(source, codec.DataValue{Value: codec.BooleanVariant(false), Status: status.UncertainLastUsableValue})
	st, _ = s.reg.State(cid)
	require.Equal(t, status.UncertainLastUsableValue, st.Quality)
	require.Zero(t, st.Limits)
	q := s.read(t, codec.NewStringNodeId(1, "Alarm.Quality"))
	require.Equal(t, uint64(status.UncertainLastUsableValue), q.Bits())
}

// TestRegistryEveryKind: a condition of each kind is an instance of its ObjectType with
// the components its kind has and the Methods it may call, and the where clause's
// OfType sees its events as its type's.
func TestRegistryEveryKind(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	c := s.client(t, 0)
	for _, tc := range []struct {
		kind     Kind
		confirm  bool
		has, not []string
	}{
		{KindCondition, false, []string{"EnabledState", "Enable", "Disable", "AddComment", "Retain"}, []string{"AckedState", "Acknowledge", "ActiveState", "ShelvingState"}},
		{KindAcknowledgeable, true, []string{"AckedState", "ConfirmedState", "Acknowledge", "Confirm"}, []string{"ActiveState", "ShelvingState"}},
		{KindAlarm, false, []string{"ActiveState", "ShelvingState", "SuppressedOrShelved", "InputNode", "MaxTimeShelved"}, []string{"ConfirmedState", "Confirm", "HighLimit"}},
		{KindExclusiveLimit, true, []string{"LimitState", "HighHighLimit"}, []string{"HighState"}},
		{KindNonExclusiveLimit, true, []string{"HighState", "LowLowState", "LowLimit"}, []string{"LimitState"}},
		{KindDiscrete, false, []string{"ActiveState"}, []string{"HighLimit", "LimitState"}},
		{KindOffNormal, false, []string{"ActiveState"}, []string{"HighLimit"}},
	} {
		cid := codec.NewStringNodeId(1, "Kind"+strconv.Itoa(int(tc.kind)))
		require.NoError(t, s.reg.Add(Instance{
			Config: Config{Kind: tc.kind, ID: cid, Name: "Kind", Confirm: tc.confirm, Severity: 300, MaxTimeShelved: time.Minute,
				Limits: Limits{HighHigh: 0.9, High: 0.5, Low: -0.5, LowLow: -0.9, Severities: [4]uint16{900, 700, 700, 900}}},
			Source: source, SourceName: "Source", Input: source, Notifiers: []codec.NodeId{server},
		}))
		op := &nodemgr.BrowseOp{Items: []ua.BrowseDescription{{NodeId: cid, BrowseDirection: ua.BrowseDirectionForward,
			IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}}, Results: make([]nodemgr.BrowseResult, 1)}
		s.space.Browse(context.Background(), op, func() {})
		names := map[string]bool{}
		for _, r := range op.Results[0].References {
			names[r.BrowseName.Name] = true
		}
		require.True(t, names[typeNames[tc.kind]], "%v: its type, in %v", tc.kind, names)
		for _, n := range tc.has {
			require.True(t, names[n], "%v has %s", tc.kind, n)
		}
		for _, n := range tc.not {
			require.False(t, names[n], "%v has no %s", tc.kind, n)
		}
	}
	// The input moves every alarm at once; the events are of each alarm's own type.
	setSource(s, 1)
	s.publish(c)
	types := map[codec.NodeId]bool{}
	for _, e := range c.in.take() {
		types[e.EventFields[0].NodeId()] = true
	}
	for _, k := range []Kind{KindAlarm, KindExclusiveLimit, KindNonExclusiveLimit, KindDiscrete, KindOffNormal} {
		require.True(t, types[n0(typeOf[k])], "an event of %v", k)
	}
	require.False(t, types[n0(typeOf[KindCondition])], "a plain condition has no input")
}

// typeNames are the browse names of the kinds' ObjectTypes.
var typeNames = map[Kind]string{
	KindCondition: "ConditionType", KindAcknowledgeable: "AcknowledgeableConditionType", KindAlarm: "AlarmConditionType",
	KindExclusiveLimit: "ExclusiveLimitAlarmType", KindNonExclusiveLimit: "NonExclusiveLimitAlarmType",
	KindDiscrete: "DiscreteAlarmType", KindOffNormal: "OffNormalAlarmType",
}

// TestRegistryOffNormal: an off-normal alarm compares its input with the value of its
// NormalState variable as both change.
func TestRegistryOffNormal(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	normal := codec.NewStringNodeId(1, "Normal")
	require.NoError(t, s.space.AddNode(addrspace.Node{NodeId: normal, NodeClass: ua.NodeClassVariable,
		BrowseName: codec.QualifiedName{NamespaceIndex: 1, Name: "Normal"}, DataType: n0(id.Int32), ValueRank: -1,
		AccessLevel: uint8(ua.AccessLevelTypeCurrentRead), Value: codec.Int32Variant(3)}))
	cid := codec.NewStringNodeId(1, "OffNormal")
	require.NoError(t, s.reg.Add(Instance{Config: Config{Kind: KindOffNormal, ID: cid, Name: "OffNormal", Normal: 3, Severity: 400},
		Source: source, Input: source, NormalState: normal, Notifiers: []codec.NodeId{server}}))
	ns := s.read(t, codec.NewStringNodeId(1, "OffNormal.NormalState"))
	require.Equal(t, normal, ns.NodeId())
	active := func() bool { st, _ := s.reg.State(cid); return st.Active }
	s.space.SetValue(source, codec.DataValue{Value: codec.Int32Variant(3)})
	require.False(t, active())
	s.space.SetValue(normal, codec.DataValue{Value: codec.Int32Variant(4)})
	require.True(t, active(), "3 is off the new normal 4")
	s.space.SetValue(source, codec.DataValue{Value: codec.Int32Variant(4)})
	require.False(t, active())
}
