package nodemgrtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// memory is a small, correct node manager: a Boiler object with a Counter that changes
// on demand, a writable Setpoint, a read-only Limit and a Reset method. It answers from
// memory unless stalled, when its operations wait on a goroutine for the stall's
// release or their context, as a device driver's do. It pushes watched values from a
// poller goroutine between Start and Close.
type memory struct {
	mu      sync.Mutex // guards ns, nodes, stalled, watched, pushed, host, version
	ns      uint16
	nodes   map[codec.NodeId]*memNode
	stalled chan struct{} // non-nil while stalled; closed by the release
	watched map[nodemgr.WatchKey]time.Duration
	pushed  map[nodemgr.WatchKey]uint64 // the version of each node last pushed
	host    nodemgr.Host
	version uint64 // counts value changes, so that the poller pushes changes only

	stop chan struct{}  // closed by Close to end the poller
	wg   sync.WaitGroup // the poller
}

// memNode is one node of a memory manager.
type memNode struct {
	class    ua.NodeClass
	name     string
	value    codec.DataValue
	version  uint64
	writable bool
	refs     []ua.ReferenceDescription
}

// Well-known nodes of namespace 0.
var (
	objectsFolder = codec.NewNumericNodeId(0, 85)
	organizes     = codec.NewNumericNodeId(0, 35)
	hasComponent  = codec.NewNumericNodeId(0, 47)
)

const memoryURI = "urn:uastack:nodemgrtest:memory"

func newMemory() *memory {
	return &memory{watched: map[nodemgr.WatchKey]time.Duration{}, pushed: map[nodemgr.WatchKey]uint64{}}
}

func (m *memory) id(name string) codec.NodeId { return codec.NewStringNodeId(m.ns, name) }

// Compile-time guards: memory implements every capability.
var (
	_ nodemgr.Reader         = (*memory)(nil)
	_ nodemgr.Writer         = (*memory)(nil)
	_ nodemgr.Browser        = (*memory)(nil)
	_ nodemgr.Caller         = (*memory)(nil)
	_ nodemgr.Mounter        = (*memory)(nil)
	_ nodemgr.Starter        = (*memory)(nil)
	_ nodemgr.Closer         = (*memory)(nil)
	_ nodemgr.Watcher        = (*memory)(nil)
	_ nodemgr.HealthReporter = (*memory)(nil)
)

func (m *memory) Namespaces() []string { return []string{memoryURI} }

// Mount builds the nodes in namespace indexes[0] and hangs Boiler below the Objects
// folder.
func (m *memory) Mount(indexes []uint16) []nodemgr.Mount {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ns = indexes[0]
	boiler, counter, setpoint, limit, reset := m.id("Boiler"), m.id("Boiler.Counter"), m.id("Boiler.Setpoint"), m.id("Boiler.Limit"), m.id("Boiler.Reset")
	ref := func(typ, target codec.NodeId, forward bool) ua.ReferenceDescription {
		return ua.ReferenceDescription{ReferenceTypeId: typ, IsForward: forward, NodeId: codec.ExpandedNodeId{NodeId: target}}
	}
	variable := func(name string, v codec.Variant, writable bool) *memNode {
		return &memNode{class: ua.NodeClassVariable, name: name, value: codec.DataValue{Value: v}, writable: writable,
			refs: []ua.ReferenceDescription{ref(hasComponent, boiler, false)}}
	}
	m.nodes = map[codec.NodeId]*memNode{
		boiler: {class: ua.NodeClassObject, name: "Boiler", refs: []ua.ReferenceDescription{
			ref(organizes, objectsFolder, false), ref(hasComponent, counter, true), ref(hasComponent, setpoint, true),
			ref(hasComponent, limit, true), ref(hasComponent, reset, true)}},
		counter:  variable("Counter", codec.UInt32Variant(0), false),
		setpoint: variable("Setpoint", codec.DoubleVariant(20), true),
		limit:    variable("Limit", codec.DoubleVariant(90), false),
		reset:    {class: ua.NodeClassMethod, name: "Reset", refs: []ua.ReferenceDescription{ref(hasComponent, boiler, false)}},
	}
	return []nodemgr.Mount{{SourceId: objectsFolder, ReferenceTypeId: organizes, TargetId: boiler}}
}

// Start keeps host and starts the poller.
func (m *memory) Start(_ context.Context, host nodemgr.Host) error {
	m.mu.Lock()
	m.host = host
	m.mu.Unlock()
	m.stop = make(chan struct{})
	m.wg.Add(1)
	go m.poll()
	return nil
}

// Close stops the poller.
func (m *memory) Close(ctx context.Context) error {
	close(m.stop)
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// poll pushes the watched values that changed since it last pushed them, every 10ms
// (a real driver would honour each pair's interval).
func (m *memory) poll() {
	defer m.wg.Done()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		m.mu.Lock()
		var out []nodemgr.DataChange
		for key := range m.watched {
			n := m.nodes[key.NodeId]
			if n == nil || key.AttributeId != attrValue {
				continue
			}
			if last, ok := m.pushed[key]; !ok || last != n.version {
				m.pushed[key] = n.version
				out = append(out, nodemgr.DataChange{NodeId: key.NodeId, AttributeId: key.AttributeId, Value: n.value})
			}
		}
		host := m.host
		m.mu.Unlock()
		if len(out) > 0 {
			host.Notifier().Changed(out)
		}
	}
}

// Bump increments the Counter, the node that changes on demand.
func (m *memory) Bump() {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.nodes[m.id("Boiler.Counter")]
	m.setLocked(n, codec.UInt32Variant(uint32(n.value.Value.Bits())+1))
}

func (m *memory) setLocked(n *memNode, v codec.Variant) {
	m.version++
	n.value = codec.DataValue{Value: v, SourceTimestamp: codec.Now()}
	n.version = m.version
}

// Stall makes the operations wait until release is called.
func (m *memory) Stall() (release func()) {
	ch := make(chan struct{})
	m.mu.Lock()
	m.stalled = ch
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		if m.stalled == ch {
			m.stalled = nil
		}
		m.mu.Unlock()
		close(ch)
	}
}

// answer runs fill and calls done: at once, or when stalled, on a goroutine once the
// stall is released; if ctx ends first, timedOut fills the results instead.
func (m *memory) answer(ctx context.Context, fill, timedOut func(), done func()) {
	m.mu.Lock()
	stall := m.stalled
	m.mu.Unlock()
	if stall == nil {
		fill()
		done()
		return
	}
	go func() {
		select {
		case <-stall:
			fill()
		case <-ctx.Done():
			timedOut()
		}
		done()
	}()
}

func (m *memory) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	m.answer(ctx, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i := range op.Items {
			op.Results[i] = m.readLocked(&op.Items[i])
		}
	}, func() {
		for i := range op.Results {
			op.Results[i] = codec.DataValue{Status: status.BadTimeout}
		}
	}, done)
}

func (m *memory) readLocked(item *ua.ReadValueId) codec.DataValue {
	n := m.nodes[item.NodeId]
	if n == nil {
		return codec.DataValue{Status: status.BadNodeIdUnknown}
	}
	switch item.AttributeId {
	case attrNodeId:
		return codec.DataValue{Value: codec.NodeIdVariant(item.NodeId)}
	case 2: // NodeClass
		return codec.DataValue{Value: codec.Int32Variant(int32(n.class))}
	case 3: // BrowseName
		return codec.DataValue{Value: codec.QualifiedNameVariant(codec.QualifiedName{NamespaceIndex: m.ns, Name: n.name})}
	case attrDisplayName:
		return codec.DataValue{Value: codec.MustVariant(codec.LocalizedText{Text: n.name})}
	case attrValue:
		if n.class == ua.NodeClassVariable {
			return n.value
		}
	}
	return codec.DataValue{Status: status.BadAttributeIdInvalid}
}

func (m *memory) Write(ctx context.Context, op *nodemgr.WriteOp, done func()) {
	m.answer(ctx, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i := range op.Items {
			op.Results[i] = m.writeLocked(&op.Items[i])
		}
	}, func() {
		for i := range op.Results {
			op.Results[i] = status.BadTimeout
		}
	}, done)
}

func (m *memory) writeLocked(w *ua.WriteValue) status.Code {
	n := m.nodes[w.NodeId]
	switch {
	case n == nil:
		return status.BadNodeIdUnknown
	case w.AttributeId == attrValue && n.class == ua.NodeClassVariable:
	case w.AttributeId >= 1 && w.AttributeId <= 4:
		return status.BadNotWritable
	default:
		return status.BadAttributeIdInvalid
	}
	if !n.writable {
		return status.BadNotWritable
	}
	if w.Value.Value.Type() != n.value.Value.Type() {
		return status.BadTypeMismatch
	}
	m.setLocked(n, w.Value.Value)
	return status.Good
}

func (m *memory) Browse(ctx context.Context, op *nodemgr.BrowseOp, done func()) {
	m.answer(ctx, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i := range op.Items {
			op.Results[i] = m.browseLocked(&op.Items[i])
		}
	}, func() {
		for i := range op.Results {
			op.Results[i] = nodemgr.BrowseResult{Status: status.BadTimeout}
		}
	}, done)
}

func (m *memory) browseLocked(d *ua.BrowseDescription) nodemgr.BrowseResult {
	n := m.nodes[d.NodeId]
	if n == nil {
		return nodemgr.BrowseResult{Status: status.BadNodeIdUnknown}
	}
	var res nodemgr.BrowseResult
	for _, rd := range n.refs {
		if d.BrowseDirection == ua.BrowseDirectionForward && !rd.IsForward || d.BrowseDirection == ua.BrowseDirectionInverse && rd.IsForward {
			continue
		}
		if !d.ReferenceTypeId.IsNull() && d.ReferenceTypeId != rd.ReferenceTypeId {
			continue
		}
		if t := m.nodes[rd.NodeId.NodeId]; t != nil {
			rd.NodeClass = t.class
			rd.BrowseName = codec.QualifiedName{NamespaceIndex: m.ns, Name: t.name}
			rd.DisplayName = codec.LocalizedText{Text: t.name}
		}
		res.References = append(res.References, rd)
	}
	return res
}

func (m *memory) Call(ctx context.Context, op *nodemgr.CallOp, done func()) {
	m.answer(ctx, func() {
		for i := range op.Items {
			op.Results[i] = m.callOne(&op.Items[i])
		}
	}, func() {
		for i := range op.Results {
			op.Results[i] = ua.CallMethodResult{StatusCode: status.BadTimeout}
		}
	}, done)
}

// callOne runs Reset: it sets the Counter to its one UInt32 argument and returns the
// old value.
func (m *memory) callOne(c *ua.CallMethodRequest) ua.CallMethodResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(code status.Code) ua.CallMethodResult { return ua.CallMethodResult{StatusCode: code} }
	if m.nodes[c.ObjectId] == nil {
		return fail(status.BadNodeIdUnknown)
	}
	if c.ObjectId != m.id("Boiler") || c.MethodId != m.id("Boiler.Reset") {
		return fail(status.BadMethodInvalid)
	}
	switch {
	case len(c.InputArguments) < 1:
		return fail(status.BadArgumentsMissing)
	case len(c.InputArguments) > 1:
		return fail(status.BadTooManyArguments)
	case c.InputArguments[0].Type() != codec.TypeUInt32:
		return ua.CallMethodResult{StatusCode: status.BadInvalidArgument, InputArgumentResults: []status.Code{status.BadTypeMismatch}}
	}
	n := m.nodes[m.id("Boiler.Counter")]
	old := n.value.Value
	m.setLocked(n, c.InputArguments[0])
	return ua.CallMethodResult{InputArgumentResults: []status.Code{status.Good}, OutputArguments: []codec.Variant{old}}
}

func (m *memory) Watch(_ context.Context, set *nodemgr.WatchSet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range set.Add {
		m.watched[w.Key()] = time.Duration(w.SamplingInterval * float64(time.Millisecond))
	}
	for _, key := range set.Remove {
		delete(m.watched, key)
		delete(m.pushed, key)
	}
}

func (m *memory) Health(context.Context) nodemgr.Health {
	return nodemgr.Health{Status: status.Good, Time: codec.Now()}
}

// memoryFixture is the fixture of a memory manager made by newManager (newMemory, or a
// broken variant wrapping one), mounted at namespace index 2.
func memoryFixture(newManager func() nodemgr.Manager) Fixture {
	id := func(name string) codec.NodeId { return codec.NewStringNodeId(2, name) }
	return Fixture{
		New:              func(testing.TB) nodemgr.Manager { return newManager() },
		NamespaceIndexes: []uint16{2},
		Capabilities:     nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapCall | nodemgr.CapMount | nodemgr.CapStart | nodemgr.CapClose | nodemgr.CapWatch | nodemgr.CapHealth,
		Principal:        nodemgr.Principal{Anonymous: true},
		Readable:         id("Boiler.Counter"),
		Writable:         id("Boiler.Setpoint"),
		WriteValue:       codec.DoubleVariant(21.5),
		NotWritable:      id("Boiler.Limit"),
		Browsable:        id("Boiler"),
		Unknown:          id("Boiler.NoSuchNode"),
		Call:             &ua.CallMethodRequest{ObjectId: id("Boiler"), MethodId: id("Boiler.Reset"), InputArguments: []codec.Variant{codec.UInt32Variant(7)}},
		Changing: &Changing{Node: id("Boiler.Counter"), Change: func(_ testing.TB, m nodemgr.Manager) {
			m.(interface{ Bump() }).Bump()
		}},
		Slow: func(m nodemgr.Manager) func() { return m.(interface{ Stall() func() }).Stall() },
	}
}

// TestMemory: the reference manager keeps the contract.
func TestMemory(t *testing.T) {
	t.Parallel()
	Run(t, memoryFixture(func() nodemgr.Manager { return newMemory() }))
}

// selfChanging is a memory manager whose Counter changes by itself every 20ms between
// Start and Close, as a simulated device's value does.
type selfChanging struct {
	*memory
	stop chan struct{}
	wg   *sync.WaitGroup
}

func (m selfChanging) Start(ctx context.Context, host nodemgr.Host) error {
	if err := m.memory.Start(ctx, host); err != nil {
		return err
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
				m.Bump()
			}
		}
	}()
	return nil
}

func (m selfChanging) Close(ctx context.Context) error {
	close(m.stop)
	m.wg.Wait()
	return m.memory.Close(ctx)
}

// TestSelfChanging: the push rules hold for a node that changes by itself.
func TestSelfChanging(t *testing.T) {
	t.Parallel()
	fx := memoryFixture(func() nodemgr.Manager { return selfChanging{newMemory(), make(chan struct{}), new(sync.WaitGroup)} })
	fx.Changing.Change = nil
	Run(t, fx)
}

// readOnly is a manager with only Read and Browse, answered from memory: the kit runs
// the rules of what it has and no others.
type readOnly struct{ m *memory }

func (r readOnly) Namespaces() []string { return r.m.Namespaces() }
func (r readOnly) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	r.m.Read(ctx, op, done)
}
func (r readOnly) Browse(ctx context.Context, op *nodemgr.BrowseOp, done func()) {
	r.m.Browse(ctx, op, done)
}

// TestReadOnly: a manager with fewer capabilities passes with a smaller fixture.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	fx := memoryFixture(func() nodemgr.Manager {
		m := newMemory()
		m.Mount([]uint16{2})
		return readOnly{m}
	})
	fx.Capabilities = nodemgr.CapRead | nodemgr.CapBrowse
	fx.Writable, fx.NotWritable, fx.WriteValue, fx.Call, fx.Changing, fx.Slow = codec.NodeId{}, codec.NodeId{}, codec.Variant{}, nil, nil, nil
	fx.NamespaceIndexes = nil
	Run(t, fx)
}

func TestUnsetIsNoStatusCode(t *testing.T) {
	t.Parallel()
	if unset.Name() != "" || unset.Sub().Name() != "" {
		t.Fatalf("the marker %v is a standard StatusCode; a manager may return it", unset)
	}
}
