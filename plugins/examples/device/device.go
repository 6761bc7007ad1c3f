// Package device is a simulated device, the example node manager that runs as a WASM
// guest: an Object Device below the Objects folder with a sine wave, a ramp, a counter,
// a writable setpoint and a method that steps the setpoint and reports it as an event.
// It ships the model of its type, SimulatedDeviceType (model.xml), for the server to
// load.
//
// The simulated values are computed at each Read from the time of the read, not by a
// ticker: a WASM guest runs no goroutines between calls. Their phase is counted from
// the Unix epoch, so that every instance of the guest, and a restarted one, answers
// the same values at the same time. Only the Setpoint is state, held by the Device
// value: a host that spreads calls over several guest instances would see each
// instance's own. The server samples the values with Reads; Device is not a Watcher. Every method answers from memory and calls done before it returns.
//
// The package uses neither cgo nor the os or net packages, so it builds for
// GOOS=wasip1 GOARCH=wasm as well as natively.
package device

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/plugins/sdk/space"
)

// Compile-time guards: the capabilities a Device has, and only those (it is sampled
// by Reads, so it is no Watcher, and it holds nothing to Close).
var (
	_ nodemgr.Manager        = (*Device)(nil)
	_ nodemgr.Reader         = (*Device)(nil)
	_ nodemgr.Writer         = (*Device)(nil)
	_ nodemgr.Browser        = (*Device)(nil)
	_ nodemgr.Caller         = (*Device)(nil)
	_ nodemgr.Mounter        = (*Device)(nil)
	_ nodemgr.Starter        = (*Device)(nil)
	_ nodemgr.HealthReporter = (*Device)(nil)
	_ nodemgr.Modeler        = (*Device)(nil)
)

// model is the model the Device ships: SimulatedDeviceType, in the namespace
// TypesURI.
//
//go:embed model.xml
var model []byte

// TypesURI is the namespace of the model the Device ships.
const TypesURI = "urn:uastack:examples:device:types"

// Models returns the model of the Device's type (nodemgr.Modeler), which the server
// loads into its address space at start.
func (d *Device) Models() []nodemgr.Model {
	return []nodemgr.Model{{Name: "device/model.xml", NodeSet: model}}
}

// Names of the Device's nodes: their BrowseNames, and with "Device." before them their
// string NodeIds in the Device's namespace (the Object itself is "Device").
const (
	NameDevice   = "Device"
	NameSine     = "Sine"
	NameRamp     = "Ramp"
	NameCounter  = "Counter"
	NameSetpoint = "Setpoint"
	NameStep     = "Step"
)

// stepSeverity is the Severity of the event a Step reports (Part 5 §6.4.2: 1 to 1000;
// 300 is a low, informational severity).
const stepSeverity = 300

// settings configure a Device. They arrive as JSON options (see New); a missing field
// keeps its default.
type settings struct {
	// Period is the period of Sine and of Ramp's sawtooth, a Go duration; "10s" by
	// default.
	Period time.Duration
	// RampStep is how much Ramp grows per second before it wraps to 0 at the end of
	// each Period; 1 by default.
	RampStep float64
	// Tick is how often Counter increments, a Go duration; "1s" by default.
	Tick time.Duration
	// Setpoint is the initial Setpoint; 0 by default.
	Setpoint float64
}

// defaults are the settings of a Device given no options.
var defaults = settings{Period: 10 * time.Second, RampStep: 1, Tick: time.Second}

// parseOptions reads options JSON over the defaults. Nil or blank means the defaults;
// a field it does not know, a duration that does not parse or is not positive, and a
// RampStep that is not finite are errors that name the field.
func parseOptions(js []byte) (settings, error) {
	o := defaults
	if len(bytes.TrimSpace(js)) == 0 {
		return o, nil
	}
	var in struct {
		Period   *string  `json:"period"`
		RampStep *float64 `json:"rampStep"`
		Tick     *string  `json:"tick"`
		Setpoint *float64 `json:"setpoint"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return o, fmt.Errorf("device: options: %w", err)
	}
	if dec.More() {
		return o, errors.New("device: options: more than one JSON value")
	}
	for _, d := range []struct {
		name string
		in   *string
		out  *time.Duration
	}{{"period", in.Period, &o.Period}, {"tick", in.Tick, &o.Tick}} {
		if d.in == nil {
			continue
		}
		v, err := time.ParseDuration(*d.in)
		if err != nil {
			return o, fmt.Errorf("device: option %s: %w", d.name, err)
		}
		if v <= 0 {
			return o, fmt.Errorf("device: option %s: %q is not positive", d.name, *d.in)
		}
		*d.out = v
	}
	if in.RampStep != nil {
		o.RampStep = *in.RampStep
	}
	if math.IsInf(o.RampStep, 0) || math.IsNaN(o.RampStep) {
		return o, errors.New("device: option rampStep is not finite")
	}
	if in.Setpoint != nil {
		o.Setpoint = *in.Setpoint
	}
	return o, nil
}

// Device is a simulated device serving one namespace. Create it with New, then Mount
// and Start it as the server does. Read, Write, Browse, Call and Health are safe for
// concurrent use; Mount and Start are called once each, alone (package nodemgr).
type Device struct {
	uri   string
	opts  settings
	space *space.Space

	// Set once by Mount: the NodeIds of the Device's nodes, or why they could not be
	// added (Start returns it).
	mounted  bool
	mountErr error
	device   codec.NodeId
	setpoint codec.NodeId

	// host is the Host given to Start; nil before.
	host atomic.Pointer[nodemgr.Host]

	mu       sync.Mutex // guards setValue, setAt
	setValue float64
	setAt    codec.DateTime
}

// New returns a Device serving the namespace namespaceURI, configured by options, a
// JSON object such as {"period": "10s", "rampStep": 1, "tick": "1s", "setpoint": 0}
// (these are the defaults): period is the period of Sine and Ramp and tick Counter's
// step, both Go durations; rampStep is how much Ramp grows per second; setpoint is the
// initial Setpoint. Nil or blank options mean the defaults. A field New does not know,
// a duration that does not parse or is not positive, and a rampStep that is not finite
// are errors that name the field.
func New(namespaceURI string, options []byte) (*Device, error) {
	if namespaceURI == "" {
		return nil, errors.New("device: no namespace URI")
	}
	opts, err := parseOptions(options)
	if err != nil {
		return nil, err
	}
	d := &Device{uri: namespaceURI, opts: opts, setValue: opts.Setpoint}
	d.space = space.New(d.now)
	d.setAt = codec.DateTimeOf(d.now())
	return d, nil
}

// Factory builds a Device from its configuration entry (sdk.Factory): its namespace
// URI and options.
func Factory(setup nodemgr.Setup) (nodemgr.Manager, error) {
	return New(setup.NamespaceURI, setup.Options)
}

// Namespaces returns the Device's namespace URI.
func (d *Device) Namespaces() []string { return []string{d.uri} }

// Mount adds the Device's nodes in namespace indexes[0] and mounts the Device Object
// below the Objects folder (Organizes from i=85). A second Mount adds nothing.
func (d *Device) Mount(indexes []uint16) []nodemgr.Mount {
	if d.mounted {
		return nil
	}
	d.mounted = true
	if len(indexes) != 1 {
		d.mountErr = fmt.Errorf("device: Mount with %d namespace indexes for one namespace", len(indexes))
		return nil
	}
	ns := indexes[0]
	d.device = NodeID(ns, NameDevice)
	d.setpoint = NodeID(ns, NameSetpoint)
	if d.mountErr = d.addNodes(ns); d.mountErr != nil {
		return nil
	}
	return []nodemgr.Mount{{SourceId: codec.NewNumericNodeId(0, id.ObjectsFolder),
		ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes), TargetId: d.device}}
}

// NodeID returns the NodeId of the Device's node name (one of the Name constants) in
// namespace index ns: "Device" for the Object, "Device.Sine" and so on for the others.
func NodeID(ns uint16, name string) codec.NodeId {
	if name == NameDevice {
		return codec.NewStringNodeId(ns, NameDevice)
	}
	return codec.NewStringNodeId(ns, NameDevice+"."+name)
}

func (d *Device) addNodes(ns uint16) error {
	qn := func(name string) codec.QualifiedName { return codec.QualifiedName{NamespaceIndex: ns, Name: name} }
	n0 := func(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }
	double := n0(id.Double)
	err := d.space.AddObject(space.Object{NodeId: d.device, BrowseName: qn(NameDevice),
		Description:   codec.LocalizedText{Text: "A simulated device"},
		EventNotifier: ua.EventNotifierTypeSubscribeToEvents,
		Parent:        n0(id.ObjectsFolder), ParentReference: n0(id.Organizes)})
	if err != nil {
		return err
	}
	computed := func(name, what string, dt codec.NodeId, get func(codec.DateTime) codec.Variant) error {
		return d.space.AddVariable(space.Variable{NodeId: NodeID(ns, name), BrowseName: qn(name),
			Description: codec.LocalizedText{Text: what}, DataType: dt, Parent: d.device,
			Get: func(now codec.DateTime) codec.DataValue {
				return codec.DataValue{Value: get(now), SourceTimestamp: now}
			}})
	}
	for _, err := range []error{
		computed(NameSine, "A sine wave of amplitude 1 over the period", double,
			func(now codec.DateTime) codec.Variant { return codec.DoubleVariant(d.sine(now.Time())) }),
		computed(NameRamp, "A sawtooth that grows by rampStep per second and wraps each period", double,
			func(now codec.DateTime) codec.Variant { return codec.DoubleVariant(d.ramp(now.Time())) }),
		computed(NameCounter, "Whole ticks since the Unix epoch", n0(id.Int64),
			func(now codec.DateTime) codec.Variant { return codec.Int64Variant(d.counter(now.Time())) }),
		d.space.AddVariable(space.Variable{NodeId: d.setpoint, BrowseName: qn(NameSetpoint),
			Description: codec.LocalizedText{Text: "A value clients write; Step moves it"}, DataType: double,
			AccessLevel: ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite, Parent: d.device,
			Get: d.getSetpoint, Set: d.writeSetpoint}),
		d.space.AddMethod(space.Method{NodeId: NodeID(ns, NameStep), BrowseName: qn(NameStep),
			Description: codec.LocalizedText{Text: "Adds delta to the Setpoint and returns the new Setpoint"}, Parent: d.device,
			InputArguments:  []ua.Argument{{Name: "delta", DataType: double, ValueRank: -1}},
			OutputArguments: []ua.Argument{{Name: "setpoint", DataType: double, ValueRank: -1}},
			Run:             d.step}),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Start keeps host, whose clock the Device reads when a ReadOp has no Now and whose
// Notifier takes the Setpoint's changes and the Step events.
func (d *Device) Start(_ context.Context, host nodemgr.Host) error {
	switch {
	case d.mountErr != nil:
		return d.mountErr
	case !d.mounted:
		return errors.New("device: Start before Mount")
	}
	d.host.Store(&host)
	host.Logger().Info("simulated device started", "period", d.opts.Period.String(), "tick", d.opts.Tick.String())
	return nil
}

// Health reports Good: a simulation always answers.
func (d *Device) Health(context.Context) nodemgr.Health {
	return nodemgr.Health{Status: status.Good, Message: "simulated", Time: codec.DateTimeOf(d.now())}
}

// Read answers op from the Device's nodes and calls done before returning.
func (d *Device) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	d.space.Read(ctx, op, done)
}

// Write answers op (only Setpoint is writable) and calls done before returning.
func (d *Device) Write(ctx context.Context, op *nodemgr.WriteOp, done func()) {
	d.space.Write(ctx, op, done)
}

// Browse answers op and calls done before returning.
func (d *Device) Browse(ctx context.Context, op *nodemgr.BrowseOp, done func()) {
	d.space.Browse(ctx, op, done)
}

// Call answers op (the Method Step on Device) and calls done before returning.
func (d *Device) Call(ctx context.Context, op *nodemgr.CallOp, done func()) {
	d.space.Call(ctx, op, done)
}

// now is the Device's clock: the Host's once started, time.Now before.
func (d *Device) now() time.Time {
	if h := d.host.Load(); h != nil {
		return (*h).Now()
	}
	return time.Now()
}

// notifier returns the Host's Notifier, or nil before Start.
func (d *Device) notifier() nodemgr.Notifier {
	if h := d.host.Load(); h != nil {
		return (*h).Notifier()
	}
	return nil
}

// phase returns how far t is into the current period, in [0, 1).
func (d *Device) phase(t time.Time) float64 {
	p := d.opts.Period
	in := time.Duration(t.UnixNano() % int64(p))
	if in < 0 {
		in += p
	}
	return float64(in) / float64(p)
}

// sine returns the value of Sine at t: sin(2π·phase), 0 at the start of each period.
func (d *Device) sine(t time.Time) float64 { return math.Sin(2 * math.Pi * d.phase(t)) }

// ramp returns the value of Ramp at t: RampStep per second into the current period,
// so it wraps to 0 at the start of each period.
func (d *Device) ramp(t time.Time) float64 {
	return d.opts.RampStep * d.phase(t) * d.opts.Period.Seconds()
}

// counter returns the value of Counter at t: the whole Ticks since the Unix epoch.
func (d *Device) counter(t time.Time) int64 {
	n := t.UnixNano() / int64(d.opts.Tick)
	if t.UnixNano()%int64(d.opts.Tick) < 0 {
		n-- // floor, for times before the epoch
	}
	return n
}

func (d *Device) getSetpoint(codec.DateTime) codec.DataValue {
	d.mu.Lock()
	defer d.mu.Unlock()
	return codec.DataValue{Value: codec.DoubleVariant(d.setValue), SourceTimestamp: d.setAt}
}

// writeSetpoint takes a checked write of Setpoint.
func (d *Device) writeSetpoint(v codec.DataValue) status.Code {
	d.setSetpoint(func(float64) float64 { return v.Value.Value().(float64) })
	return status.Good
}

// setSetpoint replaces the setpoint by next(current), pushes the change and returns the
// new value. It pushes after the lock is released: a Notifier never waits, but the
// Device holds no lock while it calls out.
func (d *Device) setSetpoint(next func(float64) float64) float64 {
	now := codec.DateTimeOf(d.now())
	d.mu.Lock()
	d.setValue = next(d.setValue)
	d.setAt = now
	dv := codec.DataValue{Value: codec.DoubleVariant(d.setValue), SourceTimestamp: now}
	v := d.setValue
	d.mu.Unlock()
	if n := d.notifier(); n != nil {
		n.Changed([]nodemgr.DataChange{{NodeId: d.setpoint, AttributeId: uint32(attr.Value), Value: dv}})
	}
	return v
}

// step runs the Method Step: the Space checked that inputs is one Double.
func (d *Device) step(_ codec.NodeId, inputs []codec.Variant) ([]codec.Variant, status.Code) {
	delta := inputs[0].Value().(float64)
	v := d.setSetpoint(func(cur float64) float64 { return cur + delta })
	if n := d.notifier(); n != nil {
		msg := "Setpoint stepped by " + strconv.FormatFloat(delta, 'g', -1, 64) + " to " + strconv.FormatFloat(v, 'g', -1, 64)
		n.Emit([]nodemgr.Event{{
			EventType:  codec.NewNumericNodeId(0, id.BaseEventType),
			SourceNode: d.device,
			Notifiers:  []codec.NodeId{d.device},
			Fields: []nodemgr.EventField{
				{BrowsePath: []codec.QualifiedName{{Name: "Message"}}, Value: codec.MustVariant(codec.LocalizedText{Text: msg})},
				{BrowsePath: []codec.QualifiedName{{Name: "Severity"}}, Value: codec.UInt16Variant(stepSeverity)},
			},
		}})
	}
	return []codec.Variant{codec.DoubleVariant(v)}, status.Good
}
