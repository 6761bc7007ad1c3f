package device

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/nodemgr/nodemgrtest"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

const ns = 3

func node(name string) codec.NodeId { return NodeID(ns, name) }

// TestConformance: the Device passes the node-manager conformance kit with every
// capability it has. It is not a Watcher, so the kit needs no Changing node.
func TestConformance(t *testing.T) {
	nodemgrtest.Run(t, nodemgrtest.Fixture{
		New: func(t testing.TB) nodemgr.Manager {
			d, err := New("urn:test:device", nil)
			require.NoError(t, err)
			return d
		},
		NamespaceIndexes: []uint16{ns},
		Capabilities: nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapCall |
			nodemgr.CapMount | nodemgr.CapStart | nodemgr.CapHealth | nodemgr.CapModels,
		Principal:   nodemgr.Principal{Anonymous: true},
		Readable:    node(NameSine),
		Writable:    node(NameSetpoint),
		WriteValue:  codec.DoubleVariant(21.5),
		NotWritable: node(NameSine),
		Browsable:   node(NameDevice),
		Unknown:     node("NoSuchNode"),
		Call: &ua.CallMethodRequest{ObjectId: node(NameDevice), MethodId: node(NameStep),
			InputArguments: []codec.Variant{codec.DoubleVariant(0.5)}},
	})
}

// fakeHost is a Host on a clock the test sets, recording pushes.
type fakeHost struct {
	*nodemgrtest.Host
	mu sync.Mutex // guards at
	at time.Time
}

func (h *fakeHost) Now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.at
}

func (h *fakeHost) set(t time.Time) {
	h.mu.Lock()
	h.at = t
	h.mu.Unlock()
}

// started returns a mounted and started Device with options, on a clock at t0.
func started(t *testing.T, options string, t0 time.Time) (*Device, *fakeHost) {
	t.Helper()
	d, err := New("urn:test:device", []byte(options))
	require.NoError(t, err)
	mounts := d.Mount([]uint16{ns})
	require.Equal(t, []nodemgr.Mount{{SourceId: codec.NewNumericNodeId(0, id.ObjectsFolder),
		ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes), TargetId: node(NameDevice)}}, mounts)
	h := &fakeHost{Host: nodemgrtest.NewHost(t, []uint16{ns}), at: t0}
	require.NoError(t, d.Start(context.Background(), h))
	return d, h
}

// readAt reads the Values of names at now (zero: the Host's clock).
func readAt(t *testing.T, d *Device, now time.Time, names ...string) []codec.DataValue {
	t.Helper()
	op := &nodemgr.ReadOp{Timestamps: ua.TimestampsToReturnBoth, Results: make([]codec.DataValue, len(names))}
	if !now.IsZero() {
		op.Now = codec.DateTimeOf(now)
	}
	for _, n := range names {
		op.Items = append(op.Items, ua.ReadValueId{NodeId: node(n), AttributeId: uint32(attr.Value)})
	}
	calls := 0
	d.Read(context.Background(), op, func() { calls++ })
	require.Equal(t, 1, calls, "done is called once, before Read returns")
	for i, r := range op.Results {
		require.Equal(t, status.Good, r.Status, names[i])
	}
	return op.Results
}

func double(t *testing.T, dv codec.DataValue) float64 {
	t.Helper()
	f, ok := dv.Value.Value().(float64)
	require.True(t, ok, "want a Double, got %v", &dv.Value)
	return f
}

// epoch is a period boundary for any period that divides a day: phases count from the
// Unix epoch.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestSine(t *testing.T) {
	t.Parallel()
	d, _ := started(t, `{"period": "4s"}`, epoch)
	tests := []struct {
		at   time.Duration
		want float64
	}{
		{0, 0}, {time.Second, 1}, {2 * time.Second, 0}, {3 * time.Second, -1}, {4 * time.Second, 0},
		{500 * time.Millisecond, math.Sqrt2 / 2}, {4*time.Second + 500*time.Millisecond, math.Sqrt2 / 2},
		{-time.Second, -1},
	}
	for _, tt := range tests {
		now := epoch.Add(tt.at)
		got := readAt(t, d, now, NameSine)[0]
		require.InDelta(t, tt.want, double(t, got), 1e-9, "Sine at epoch%+v", tt.at)
		require.Equal(t, codec.DateTimeOf(now), got.SourceTimestamp, "Sine is measured at the time of the read")
	}
}

func TestRampWraps(t *testing.T) {
	t.Parallel()
	d, _ := started(t, `{"period": "10s", "rampStep": 2}`, epoch)
	tests := []struct {
		at   time.Duration
		want float64
	}{
		{0, 0}, {time.Second, 2}, {5 * time.Second, 10}, {9*time.Second + 500*time.Millisecond, 19},
		{10 * time.Second, 0}, {11 * time.Second, 2}, {-time.Second, 18},
	}
	for _, tt := range tests {
		got := double(t, readAt(t, d, epoch.Add(tt.at), NameRamp)[0])
		require.InDelta(t, tt.want, got, 1e-9, "Ramp at epoch%+v", tt.at)
	}
}

func TestCounterGrowsWithTime(t *testing.T) {
	t.Parallel()
	d, h := started(t, `{"tick": "100ms"}`, epoch)
	counter := func(now time.Time) int64 {
		v, ok := readAt(t, d, now, NameCounter)[0].Value.Value().(int64)
		require.True(t, ok, "Counter is an Int64")
		return v
	}
	base := counter(epoch)
	require.Equal(t, epoch.UnixNano()/int64(100*time.Millisecond), base, "Counter counts ticks since the Unix epoch")
	require.Equal(t, base, counter(epoch.Add(99*time.Millisecond)))
	require.Equal(t, base+1, counter(epoch.Add(100*time.Millisecond)))
	prev := base
	for ms := 0; ms <= 2000; ms += 37 {
		c := counter(epoch.Add(time.Duration(ms) * time.Millisecond))
		require.GreaterOrEqual(t, c, prev, "Counter never goes back")
		prev = c
	}
	require.Equal(t, base+19, prev, "19 ticks in 1.998s")
	require.Equal(t, base+20, counter(epoch.Add(2*time.Second)), "20 ticks in 2s")

	// A ReadOp without Now is answered on the Host's clock.
	h.set(epoch.Add(time.Second))
	got := readAt(t, d, time.Time{}, NameCounter)[0]
	require.Equal(t, base+10, got.Value.Value())
	require.Equal(t, codec.DateTimeOf(epoch.Add(time.Second)), got.ServerTimestamp)
}

func TestSetpointAndStep(t *testing.T) {
	t.Parallel()
	d, h := started(t, `{"setpoint": 20}`, epoch)
	require.Equal(t, 20.0, double(t, readAt(t, d, time.Time{}, NameSetpoint)[0]))

	write := func(v codec.Variant) status.Code {
		op := &nodemgr.WriteOp{Items: []ua.WriteValue{{NodeId: node(NameSetpoint), AttributeId: uint32(attr.Value),
			Value: codec.DataValue{Value: v}}}, Results: make([]status.Code, 1)}
		d.Write(context.Background(), op, func() {})
		return op.Results[0]
	}
	h.set(epoch.Add(time.Minute))
	require.Equal(t, status.Good, write(codec.DoubleVariant(21.5)))
	got := readAt(t, d, time.Time{}, NameSetpoint)[0]
	require.Equal(t, 21.5, double(t, got))
	require.Equal(t, codec.DateTimeOf(epoch.Add(time.Minute)), got.SourceTimestamp, "the source is the time of the write")
	require.Equal(t, []nodemgr.DataChange{{NodeId: node(NameSetpoint), AttributeId: uint32(attr.Value),
		Value: codec.DataValue{Value: codec.DoubleVariant(21.5), SourceTimestamp: codec.DateTimeOf(epoch.Add(time.Minute))}}},
		h.Changes(), "a write is pushed through the Notifier")
	require.Equal(t, status.BadTypeMismatch, write(codec.Int32Variant(1)))
	require.Len(t, h.Changes(), 1, "a refused write pushes nothing")
	require.Empty(t, h.Events())

	call := func(args ...codec.Variant) ua.CallMethodResult {
		op := &nodemgr.CallOp{Items: []ua.CallMethodRequest{{ObjectId: node(NameDevice), MethodId: node(NameStep),
			InputArguments: args}}, Results: make([]ua.CallMethodResult, 1)}
		d.Call(context.Background(), op, func() {})
		return op.Results[0]
	}
	h.Reset()
	require.Equal(t, ua.CallMethodResult{InputArgumentResults: []status.Code{status.Good},
		OutputArguments: []codec.Variant{codec.DoubleVariant(19)}}, call(codec.DoubleVariant(-2.5)))
	require.Equal(t, 19.0, double(t, readAt(t, d, time.Time{}, NameSetpoint)[0]))
	require.Len(t, h.Changes(), 1, "Step pushes the new Setpoint")
	require.Equal(t, []nodemgr.Event{{
		EventType: codec.NewNumericNodeId(0, id.BaseEventType), SourceNode: node(NameDevice),
		Notifiers: []codec.NodeId{node(NameDevice)},
		Fields: []nodemgr.EventField{
			{BrowsePath: []codec.QualifiedName{{Name: "Message"}}, Value: codec.MustVariant(codec.LocalizedText{Text: "Setpoint stepped by -2.5 to 19"})},
			{BrowsePath: []codec.QualifiedName{{Name: "Severity"}}, Value: codec.UInt16Variant(stepSeverity)},
		},
	}}, h.Events())

	h.Reset()
	require.Equal(t, ua.CallMethodResult{StatusCode: status.BadInvalidArgument, InputArgumentResults: []status.Code{status.BadTypeMismatch}},
		call(codec.StringVariant("1")))
	require.Equal(t, status.BadArgumentsMissing, call().StatusCode)
	require.Equal(t, status.BadTooManyArguments, call(codec.DoubleVariant(1), codec.DoubleVariant(2)).StatusCode)
	require.Empty(t, h.Events(), "a refused call emits nothing")
	require.Empty(t, h.Changes())
	require.Equal(t, 19.0, double(t, readAt(t, d, time.Time{}, NameSetpoint)[0]))
}

func TestNodes(t *testing.T) {
	t.Parallel()
	d, _ := started(t, "", epoch)
	op := &nodemgr.BrowseOp{Items: []ua.BrowseDescription{{NodeId: node(NameDevice), BrowseDirection: ua.BrowseDirectionBoth,
		ReferenceTypeId: codec.NewNumericNodeId(0, id.HierarchicalReferences), IncludeSubtypes: true,
		ResultMask: uint32(ua.BrowseResultMaskAll)}}, Results: make([]nodemgr.BrowseResult, 1)}
	d.Browse(context.Background(), op, func() {})
	require.Equal(t, status.Good, op.Results[0].Status)
	var names []string
	for _, rd := range op.Results[0].References {
		if rd.IsForward {
			names = append(names, rd.BrowseName.Name)
		} else {
			require.Equal(t, codec.NewNumericNodeId(0, id.ObjectsFolder), rd.NodeId.NodeId, "the Device hangs below Objects")
		}
	}
	require.Equal(t, []string{NameSine, NameRamp, NameCounter, NameSetpoint, NameStep}, names)

	attrs := []struct {
		name string
		a    attr.ID
		want codec.Variant
	}{
		{NameDevice, attr.EventNotifier, codec.ByteVariant(byte(ua.EventNotifierTypeSubscribeToEvents))},
		{NameSine, attr.DataType, codec.NodeIdVariant(codec.NewNumericNodeId(0, id.Double))},
		{NameCounter, attr.DataType, codec.NodeIdVariant(codec.NewNumericNodeId(0, id.Int64))},
		{NameSine, attr.AccessLevel, codec.ByteVariant(byte(ua.AccessLevelTypeCurrentRead))},
		{NameSetpoint, attr.AccessLevel, codec.ByteVariant(byte(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite))},
		{NameStep, attr.Executable, codec.BooleanVariant(true)},
		{NameStep + ".InputArguments", attr.ValueRank, codec.Int32Variant(1)},
	}
	for _, tt := range attrs {
		op := &nodemgr.ReadOp{Items: []ua.ReadValueId{{NodeId: node(tt.name), AttributeId: uint32(tt.a)}}, Results: make([]codec.DataValue, 1)}
		d.Read(context.Background(), op, func() {})
		require.Equal(t, status.Good, op.Results[0].Status, "%s %v", tt.name, tt.a)
		require.Equal(t, tt.want, op.Results[0].Value, "%s %v", tt.name, tt.a)
	}

	hr := d.Health(context.Background())
	require.Equal(t, status.Good, hr.Status)
	require.Equal(t, codec.DateTimeOf(epoch), hr.Time)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		options string
		want    settings
		err     string
	}{
		{"nil", "", defaults, ""},
		{"blank", " \n", defaults, ""},
		{"null", "null", defaults, ""},
		{"empty object", "{}", defaults, ""},
		{"all", `{"period": "1m", "rampStep": 0.5, "tick": "250ms", "setpoint": -3}`,
			settings{Period: time.Minute, RampStep: 0.5, Tick: 250 * time.Millisecond, Setpoint: -3}, ""},
		{"some", `{"rampStep": 3}`, settings{Period: 10 * time.Second, RampStep: 3, Tick: time.Second}, ""},
		{"unknown field", `{"period": "1s", "amplitude": 2}`, settings{}, `unknown field "amplitude"`},
		{"bad period", `{"period": "ten seconds"}`, settings{}, "option period: time: invalid duration"},
		{"number period", `{"period": 10}`, settings{}, "field .period of type string"},
		{"zero period", `{"period": "0s"}`, settings{}, `option period: "0s" is not positive`},
		{"negative tick", `{"tick": "-1s"}`, settings{}, `option tick: "-1s" is not positive`},
		{"bad tick", `{"tick": "1 fortnight"}`, settings{}, "option tick:"},
		{"two values", `{} {}`, settings{}, "more than one JSON value"},
		{"not an object", `[]`, settings{}, "options"},
		{"truncated", `{"period": "1s"`, settings{}, "options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New("urn:test:device", []byte(tt.options))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				require.Nil(t, d)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, d.opts)
		})
	}
	_, err := New("", nil)
	require.ErrorContains(t, err, "no namespace URI")
}

func TestStartNeedsMount(t *testing.T) {
	t.Parallel()
	d, err := New("urn:test:device", nil)
	require.NoError(t, err)
	require.ErrorContains(t, d.Start(context.Background(), nodemgrtest.NewHost(t, []uint16{ns})), "before Mount")

	d, err = New("urn:test:device", nil)
	require.NoError(t, err)
	require.Nil(t, d.Mount([]uint16{2, 3}))
	require.ErrorContains(t, d.Start(context.Background(), nodemgrtest.NewHost(t, []uint16{2, 3})), "2 namespace indexes")
}

// FuzzOptions: any options either fail with an error or give settings a Device runs
// with: positive durations, a finite rampStep, and values that read as Doubles.
func FuzzOptions(f *testing.F) {
	for _, seed := range []string{"", "{}", "null", `{"period": "10s", "rampStep": 1, "tick": "1s", "setpoint": 0}`,
		`{"period": "1ns"}`, `{"tick": "2562047h"}`, `{"rampStep": 1e308}`, `{"period": "-1s"}`, `{"x": 1}`, `{} {}`, `[`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, options []byte) {
		d, err := New("urn:test:device", options)
		if err != nil {
			return
		}
		o := d.opts
		if o.Period <= 0 || o.Tick <= 0 || math.IsNaN(o.RampStep) || math.IsInf(o.RampStep, 0) {
			t.Fatalf("New accepted %q as %+v", options, o)
		}
		for _, at := range []time.Time{epoch, time.Unix(0, -1), time.Unix(1<<40, 999)} {
			if s := d.sine(at); s < -1 || s > 1 {
				t.Fatalf("sine %v at %v", s, at)
			}
			if r := d.ramp(at); math.IsNaN(r) || math.Abs(r) > math.Abs(o.RampStep)*o.Period.Seconds() {
				t.Fatalf("ramp %v at %v beyond one period's growth", r, at)
			}
		}
		if d.counter(time.Unix(0, 1)) > d.counter(time.Unix(1<<30, 0)) {
			t.Fatalf("counter goes back with tick %v", o.Tick)
		}
	})
}
