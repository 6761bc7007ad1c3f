// Package modbus is the example process plugin's node manager: a Modbus TCP device whose
// points (holding registers, coils, input registers, discrete inputs; package driver)
// are Variables below one Object, named by the manager's configuration entry, under the
// Objects folder.
//
// A Read of a point's Value asks the device, on a goroutine of the manager's own (the
// device's I/O blocks, and an operation's method must not); a MaxAge that a value the
// manager already has satisfies answers from it. A Write of a writable point writes the
// device. The manager is a Watcher: only the points someone monitors are polled, at the
// fastest interval asked for, and what changes is pushed. Every other attribute, and
// Browse, are answered from memory (package space).
package modbus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/plugins/examples/modbus/driver"
	"uastack.dev/plugins/sdk/space"
)

var (
	_ nodemgr.Reader         = (*Manager)(nil)
	_ nodemgr.Writer         = (*Manager)(nil)
	_ nodemgr.Browser        = (*Manager)(nil)
	_ nodemgr.Mounter        = (*Manager)(nil)
	_ nodemgr.Starter        = (*Manager)(nil)
	_ nodemgr.Closer         = (*Manager)(nil)
	_ nodemgr.Watcher        = (*Manager)(nil)
	_ nodemgr.HealthReporter = (*Manager)(nil)
)

// Manager serves one Modbus device's points.
type Manager struct {
	name, uri string
	opts      driver.Options
	dev       *driver.Device
	space     *space.Space

	object codec.NodeId
	points map[codec.NodeId]int // a point's Variable to its index
	nodes  []codec.NodeId       // a point's index to its Variable

	mu     sync.Mutex // guards last, host, poller
	last   []driver.Value
	host   nodemgr.Host
	poller *driver.Poller

	ops sync.WaitGroup // the goroutines answering operations
}

// Factory builds a Manager from its configuration entry (sdk.Factory): the options are
// driver.ParseOptions's JSON.
func Factory(setup nodemgr.Setup) (nodemgr.Manager, error) {
	opts, err := driver.ParseOptions(setup.Options)
	if err != nil {
		return nil, err
	}
	return New(setup.Name, setup.NamespaceURI, opts)
}

// New returns a Manager of the device opts describe, whose Object is called name, in
// namespace uri. It does not connect: a device that is down does not stop the server.
func New(name, uri string, opts driver.Options) (*Manager, error) {
	if uri == "" {
		return nil, errors.New("modbus: no namespace URI")
	}
	if name == "" {
		name = "Modbus"
	}
	dev, err := driver.NewDevice(opts)
	if err != nil {
		return nil, err
	}
	return &Manager{name: name, uri: uri, opts: dev.Options(), dev: dev, last: make([]driver.Value, len(opts.Points))}, nil
}

// Namespaces returns the manager's namespace.
func (m *Manager) Namespaces() []string { return []string{m.uri} }

// Mount builds the nodes in namespace indexes[0] and hangs the Object below the Objects
// folder.
func (m *Manager) Mount(indexes []uint16) []nodemgr.Mount {
	ns := indexes[0]
	m.space = space.New(nil)
	m.object = codec.NewStringNodeId(ns, m.name)
	m.points = make(map[codec.NodeId]int, len(m.opts.Points))
	m.nodes = make([]codec.NodeId, len(m.opts.Points))
	objects := codec.NewNumericNodeId(0, id.ObjectsFolder)
	err := m.space.AddObject(space.Object{NodeId: m.object, BrowseName: codec.QualifiedName{NamespaceIndex: ns, Name: m.name},
		Description: codec.LocalizedText{Text: "Modbus TCP device at " + m.opts.Address},
		Parent:      objects, ParentReference: codec.NewNumericNodeId(0, id.Organizes)})
	for i, p := range m.opts.Points {
		if err != nil {
			break
		}
		node := codec.NewStringNodeId(ns, m.name+"."+p.Name)
		m.points[node], m.nodes[i] = i, node
		access := ua.AccessLevelTypeCurrentRead
		if p.Writable {
			access |= ua.AccessLevelTypeCurrentWrite
		}
		// The Value is answered by Read before the space sees it; the getter is for a
		// Read the space answers as part of a larger one (never, as Read splits them).
		err = m.space.AddVariable(space.Variable{NodeId: node, BrowseName: codec.QualifiedName{NamespaceIndex: ns, Name: p.Name},
			Description: codec.LocalizedText{Text: fmt.Sprintf("%s %s %d", p.Table, p.Type, p.Address)},
			DataType:    codec.NewNumericNodeId(0, dataType(p.Type)), AccessLevel: access, Parent: m.object,
			MinimumSamplingInterval: float64(m.opts.MinPollInterval / time.Millisecond),
			Get:                     func(codec.DateTime) codec.DataValue { return codec.DataValue{Status: status.BadWaitingForInitialData} },
			Set:                     func(codec.DataValue) status.Code { return status.BadNotWritable }})
	}
	if err != nil {
		panic(fmt.Sprintf("modbus: nodes of %s: %v", m.name, err)) // the names were checked by ParseOptions
	}
	return []nodemgr.Mount{{SourceId: objects, ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes), TargetId: m.object}}
}

// dataType returns the OPC UA built-in type of a point's type.
func dataType(t driver.Type) uint32 {
	switch t {
	case driver.Uint16:
		return id.UInt16
	case driver.Int16:
		return id.Int16
	case driver.Uint32:
		return id.UInt32
	case driver.Int32:
		return id.Int32
	case driver.Float32:
		return id.Float
	}
	return id.Boolean
}

// Start keeps host for its Notifier and starts the poller of watched points.
func (m *Manager) Start(_ context.Context, host nodemgr.Host) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.host = host
	m.poller = driver.NewPoller(m.dev, m.polled)
	host.Logger().Info("modbus: serving", "address", m.opts.Address, "points", len(m.opts.Points))
	return nil
}

// Close stops polling, waits for the operations in flight and closes the connection.
func (m *Manager) Close(context.Context) error {
	m.mu.Lock()
	p := m.poller
	m.poller = nil
	m.mu.Unlock()
	if p != nil {
		p.Stop()
	}
	m.ops.Wait()
	return m.dev.Close()
}

// Health reports the device's: Good while it answers.
func (m *Manager) Health(context.Context) nodemgr.Health {
	h := m.dev.Health()
	if !h.Failing {
		return nodemgr.Health{Status: status.Good, Time: codec.DateTimeOf(h.LastOK)}
	}
	msg := "no answer"
	if h.LastErr != nil {
		msg = h.LastErr.Error()
	}
	return nodemgr.Health{Status: status.BadCommunicationError, Message: msg, Time: codec.DateTimeOf(h.LastOK)}
}

// Watch tells the poller which points are monitored (nodemgr.Watcher).
func (m *Manager) Watch(_ context.Context, set *nodemgr.WatchSet) {
	var add []driver.WatchItem
	var remove []int
	for _, it := range set.Add {
		if i, ok := m.points[it.NodeId]; ok && it.AttributeId == uint32(attr.Value) {
			add = append(add, driver.WatchItem{Point: i, SamplingInterval: it.SamplingInterval})
		}
	}
	for _, k := range set.Remove {
		if i, ok := m.points[k.NodeId]; ok && k.AttributeId == uint32(attr.Value) {
			remove = append(remove, i)
		}
	}
	m.mu.Lock()
	p := m.poller
	m.mu.Unlock()
	if p != nil && (len(add) > 0 || len(remove) > 0) {
		_ = p.Watch(add, remove) // indexes come from m.points: always valid
	}
}

// polled pushes what the poller saw change.
func (m *Manager) polled(vs []driver.Value) {
	changes := make([]nodemgr.DataChange, len(vs))
	for i, v := range vs {
		changes[i] = nodemgr.DataChange{NodeId: m.nodes[v.Point], AttributeId: uint32(attr.Value), Value: m.remember(v)}
	}
	m.mu.Lock()
	host := m.host
	m.mu.Unlock()
	if host != nil {
		host.Notifier().Changed(changes)
	}
}

// remember keeps v as the point's last value and returns it as a DataValue.
func (m *Manager) remember(v driver.Value) codec.DataValue {
	m.mu.Lock()
	m.last[v.Point] = v
	m.mu.Unlock()
	return dataValue(v)
}

// dataValue turns a point's value, or its failure, into a DataValue.
func dataValue(v driver.Value) codec.DataValue {
	ts := codec.DateTimeOf(v.Time)
	if v.Err != nil {
		return codec.DataValue{Status: codeOf(v.Err), SourceTimestamp: ts}
	}
	return codec.DataValue{Value: codec.MustVariant(v.Value), SourceTimestamp: ts}
}

// codeOf maps the driver's errors to StatusCodes.
func codeOf(err error) status.Code {
	var (
		rangeErr *driver.RangeError
		typeErr  *driver.TypeError
		exc      *driver.ExceptionError
		comm     *driver.CommError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.BadTimeout
	case errors.Is(err, context.Canceled):
		return status.BadRequestCancelledByClient
	case errors.As(err, &rangeErr):
		return status.BadOutOfRange
	case errors.As(err, &typeErr):
		return status.BadTypeMismatch
	case errors.Is(err, driver.ErrNotWritable):
		return status.BadNotWritable
	case errors.As(err, &exc):
		return status.BadDeviceFailure
	case errors.As(err, &comm):
		if comm.Timeout() {
			return status.BadTimeout
		}
	}
	return status.BadCommunicationError
}

// Read answers the points' Values from the device, or from what the manager has when
// MaxAge allows it, and everything else from memory (nodemgr.Reader).
func (m *Manager) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	now := op.Now
	if now == 0 {
		now = codec.DateTimeOf(time.Now())
	}
	var ask, at []int // points to read from the device, and their items
	var rest []int    // items the space answers
	for i, it := range op.Items {
		p, ok := m.points[it.NodeId]
		if !ok || it.AttributeId != uint32(attr.Value) || it.IndexRange != "" || it.DataEncoding.Name != "" {
			rest = append(rest, i)
			continue
		}
		if dv, ok := m.fresh(p, op.MaxAge, now); ok {
			op.Results[i] = withTimestamps(dv, op.Timestamps, now)
			continue
		}
		ask, at = append(ask, p), append(at, i)
	}
	if len(rest) > 0 {
		m.readSpace(ctx, op, rest)
	}
	if len(ask) == 0 {
		done()
		return
	}
	m.ops.Add(1)
	go func() {
		defer m.ops.Done()
		vs, err := m.dev.ReadPoints(ctx, ask)
		for k, i := range at {
			var dv codec.DataValue
			if err != nil {
				dv = codec.DataValue{Status: codeOf(err)}
			} else {
				dv = m.remember(vs[k])
			}
			op.Results[i] = withTimestamps(dv, op.Timestamps, codec.DateTimeOf(time.Now()))
		}
		done()
	}()
}

// fresh returns the last value of point p when MaxAge (ms) allows answering from it.
func (m *Manager) fresh(p int, maxAge float64, now codec.DateTime) (codec.DataValue, bool) {
	if maxAge <= 0 {
		return codec.DataValue{}, false
	}
	m.mu.Lock()
	v := m.last[p]
	m.mu.Unlock()
	if v.Time.IsZero() || v.Err != nil {
		return codec.DataValue{}, false
	}
	age := now.Time().Sub(v.Time)
	if maxAge < math.MaxInt64/float64(time.Millisecond) && age > time.Duration(maxAge*float64(time.Millisecond)) {
		return codec.DataValue{}, false
	}
	return dataValue(v), true
}

// withTimestamps keeps the timestamps TimestampsToReturn asks for (Part 4 §5.10.2).
func withTimestamps(dv codec.DataValue, ts ua.TimestampsToReturn, now codec.DateTime) codec.DataValue {
	switch ts {
	case ua.TimestampsToReturnSource:
	case ua.TimestampsToReturnServer:
		dv.SourceTimestamp, dv.ServerTimestamp = 0, now
	case ua.TimestampsToReturnBoth:
		dv.ServerTimestamp = now
	default:
		dv.SourceTimestamp = 0
	}
	return dv
}

// readSpace answers the items at indexes rest of op from the space.
func (m *Manager) readSpace(ctx context.Context, op *nodemgr.ReadOp, rest []int) {
	sub := *op
	sub.Items, sub.Results = make([]ua.ReadValueId, len(rest)), make([]codec.DataValue, len(rest))
	for k, i := range rest {
		sub.Items[k] = op.Items[i]
	}
	m.space.Read(ctx, &sub, func() {})
	for k, i := range rest {
		op.Results[i] = sub.Results[k]
	}
}

// Write writes the writable points' Values to the device (nodemgr.Writer); a value of
// another type than the point's is BadTypeMismatch (Part 4 §5.10.4), and everything
// else is answered from memory.
func (m *Manager) Write(ctx context.Context, op *nodemgr.WriteOp, done func()) {
	var at []int
	var rest []int
	for i, it := range op.Items {
		p, ok := m.points[it.NodeId]
		if !ok || it.AttributeId != uint32(attr.Value) || !m.opts.Points[p].Writable {
			rest = append(rest, i)
			continue
		}
		switch {
		case it.IndexRange != "":
			op.Results[i] = status.BadWriteNotSupported
		case it.Value.Value.Type() != codec.TypeID(dataType(m.opts.Points[p].Type)) || it.Value.Value.IsArray():
			op.Results[i] = status.BadTypeMismatch
		default:
			at = append(at, i)
		}
	}
	if len(rest) > 0 {
		sub := nodemgr.WriteOp{Principal: op.Principal, Items: make([]ua.WriteValue, len(rest)), Results: make([]status.Code, len(rest))}
		for k, i := range rest {
			sub.Items[k] = op.Items[i]
		}
		m.space.Write(ctx, &sub, func() {})
		for k, i := range rest {
			op.Results[i] = sub.Results[k]
		}
	}
	if len(at) == 0 {
		done()
		return
	}
	m.ops.Add(1)
	go func() {
		defer m.ops.Done()
		for _, i := range at {
			it := &op.Items[i]
			op.Results[i] = status.Good
			if err := m.dev.WritePoint(ctx, m.points[it.NodeId], it.Value.Value.Value()); err != nil {
				op.Results[i] = codeOf(err)
			}
		}
		done()
	}()
}

// Browse answers from memory (nodemgr.Browser).
func (m *Manager) Browse(ctx context.Context, op *nodemgr.BrowseOp, done func()) {
	m.space.Browse(ctx, op, done)
}
