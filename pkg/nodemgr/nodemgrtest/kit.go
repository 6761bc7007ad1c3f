// Package nodemgrtest is the conformance kit for node managers: Run checks that a
// nodemgr.Manager keeps the contract of package nodemgr, rule by rule, each in a subtest
// whose name says which rule broke ("Read/UnknownNode", "Done/NotWaiting/Write",
// "Push/Changed").
//
// Every manager passes it: the server's address space and demo namespace, and the WASM
// and process hosts with a guest behind them. A test names nodes of the manager in a
// Fixture:
//
//	func TestConformance(t *testing.T) {
//		nodemgrtest.Run(t, nodemgrtest.Fixture{
//			New:          func(t testing.TB) nodemgr.Manager { return newBoiler(t) },
//			NamespaceIndexes: []uint16{2},
//			Capabilities: nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapMount | nodemgr.CapStart | nodemgr.CapClose | nodemgr.CapWatch,
//			Readable:     codec.NewStringNodeId(2, "Boiler.Temperature"),
//			Writable:     codec.NewStringNodeId(2, "Boiler.Setpoint"),
//			WriteValue:   codec.DoubleVariant(21.5),
//			NotWritable:  codec.NewStringNodeId(2, "Boiler.Temperature"),
//			Browsable:    codec.NewStringNodeId(2, "Boiler"),
//			Unknown:      codec.NewStringNodeId(2, "Boiler.NoSuchNode"),
//			Changing:     &nodemgrtest.Changing{Node: codec.NewStringNodeId(2, "Boiler.Temperature")},
//		})
//	}
//
// The kit drives the manager as the server does: it mounts and starts it with a Host
// that records pushes, calls each method on a goroutine of its own (so that a method
// that does not return is reported, not hung on), hands every result slot in holding a
// marker StatusCode that the manager must overwrite, and closes the manager at the end.
// Run the kit with -race: its Concurrent rule is meant for the race detector.
//
// The package uses only the standard library, so that other modules' tests import it
// without new dependencies.
package nodemgrtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Fixture says how to make the manager under test and names nodes of it. The nodes a
// capability needs are required when Capabilities holds it.
type Fixture struct {
	// New returns a fresh manager, neither mounted nor started. Run calls it once.
	New func(t testing.TB) nodemgr.Manager
	// NamespaceIndexes are the NamespaceArray indexes Run mounts the manager with and
	// its Host reports, one per URI of Namespaces; the NodeIds below use them.
	NamespaceIndexes []uint16
	// Capabilities are the optional interfaces the manager must implement, exactly
	// (nodemgr.CapabilitiesOf).
	Capabilities nodemgr.Capabilities
	// Principal is who asks in every operation; the nodes below must be readable,
	// writable and so on for it.
	Principal nodemgr.Principal

	// Readable is a Variable whose Value the Principal may read (CapRead).
	Readable codec.NodeId
	// Writable is a Variable whose Value the Principal may write, and WriteValue a value
	// it accepts (CapWrite). With CapRead, the value read back must encode as WriteValue.
	Writable   codec.NodeId
	WriteValue codec.Variant
	// NotWritable is a Variable whose Value the Principal may not write (CapWrite): the
	// answer is BadNotWritable or BadUserAccessDenied.
	NotWritable codec.NodeId
	// Browsable is a node with at least one reference (CapBrowse).
	Browsable codec.NodeId
	// Unknown is a NodeId in one of the manager's namespaces that names no node.
	Unknown codec.NodeId
	// Call is a valid call of a Method with valid input arguments (optional, CapCall):
	// it must succeed, and its ObjectId with an unknown MethodId must be BadMethodInvalid.
	Call *ua.CallMethodRequest
	// Changing is a node whose Value changes, for the push rules (required with
	// CapWatch).
	Changing *Changing
	// Slow stalls the manager, as a device that stops answering: until release is
	// called, answers that need the device wait (optional; for managers that may wait).
	// Run releases every stall it makes.
	Slow func(m nodemgr.Manager) (release func())

	// Timeout bounds each wait for a method to return, for done, or for a push; 5s when
	// zero. Grace is how long Run waits after done before it checks that done was not
	// called again; 20ms when zero.
	Timeout time.Duration
	Grace   time.Duration
}

// Changing names a node whose Value changes: on demand, when Change is called, or by
// itself (a simulated device) when Change is nil.
type Changing struct {
	Node   codec.NodeId
	Change func(t testing.TB, m nodemgr.Manager)
}

// The marker a result slot holds until the manager sets it: a Bad code that is no
// standard StatusCode, so no manager returns it.
const unset = status.Code(0x80FE0000)

// Attribute ids the rules use (Part 6 Table: AttributeIds.csv).
const (
	attrNodeId      = 1
	attrDisplayName = 4
	attrValue       = 13
	attrInvalid     = 999
)

// pushInterval is the sampling interval of the push rules.
const pushInterval = 50 * time.Millisecond

// kit holds the manager under test and what the rules share.
type kit struct {
	fx   Fixture
	m    nodemgr.Manager
	host *Host

	reader  nodemgr.Reader
	writer  nodemgr.Writer
	browser nodemgr.Browser
	caller  nodemgr.Caller

	// wedged names the first call that did not return; later rules that call the
	// manager are skipped with that reason.
	wedged atomic.Pointer[string]

	mu       sync.Mutex // guards releases
	releases []func()
}

// Run checks m against the contract, one subtest per rule. It returns when every rule
// has run; the manager is closed by then.
func Run(t *testing.T, fx Fixture) {
	t.Helper()
	if fx.Timeout <= 0 {
		fx.Timeout = 5 * time.Second
	}
	if fx.Grace <= 0 {
		fx.Grace = 20 * time.Millisecond
	}
	if msg := fx.check(); msg != "" {
		t.Fatalf("nodemgrtest: Fixture: %s", msg)
	}
	k := &kit{fx: fx}
	t.Cleanup(k.releaseAll)
	k.m = fx.New(t)
	if k.m == nil {
		t.Fatal("nodemgrtest: Fixture.New returned nil")
	}
	k.reader, _ = k.m.(nodemgr.Reader)
	k.writer, _ = k.m.(nodemgr.Writer)
	k.browser, _ = k.m.(nodemgr.Browser)
	k.caller, _ = k.m.(nodemgr.Caller)
	k.host = NewHost(t, fx.NamespaceIndexes)

	t.Run("Capabilities", k.capabilities)
	if _, ok := k.m.(nodemgr.Mounter); ok {
		t.Run("Mount", k.mount)
	}
	if s, ok := k.m.(nodemgr.Starter); ok {
		if !t.Run("Start", func(t *testing.T) { k.start(t, s) }) {
			return // nothing else can run on a manager that did not start
		}
	}
	if k.reader != nil {
		k.readRules(t)
	}
	if k.writer != nil {
		k.writeRules(t)
	}
	if k.browser != nil {
		k.browseRules(t)
	}
	if k.caller != nil {
		k.callRules(t)
	}
	k.cancelRules(t)
	if fx.Slow != nil {
		k.slowRules(t)
	}
	k.encodingRules(t)
	t.Run("Concurrent", k.concurrent)
	if w, ok := k.m.(nodemgr.Watcher); ok {
		k.pushRules(t, w)
	}
	if h, ok := k.m.(nodemgr.HealthReporter); ok {
		k.healthRules(t, h)
	}
	if k.reader != nil {
		// Last of the operation rules: a manager that breaks it is wedged.
		t.Run("Done/Reentrant", k.reentrant)
	}
	if c, ok := k.m.(nodemgr.Closer); ok {
		t.Run("Close", func(t *testing.T) { k.close(t, c) })
	}
}

// check returns what is missing from fx, or "".
func (fx *Fixture) check() string {
	c := fx.Capabilities
	switch {
	case fx.New == nil:
		return "New is nil"
	case c&(nodemgr.CapMount|nodemgr.CapStart) != 0 && len(fx.NamespaceIndexes) == 0:
		return "CapMount and CapStart need NamespaceIndexes"
	case c&nodemgr.CapRead != 0 && fx.Readable.IsNull():
		return "CapRead needs Readable"
	case c&nodemgr.CapWrite != 0 && (fx.Writable.IsNull() || fx.NotWritable.IsNull() || fx.WriteValue.IsNull()):
		return "CapWrite needs Writable, WriteValue and NotWritable"
	case c&nodemgr.CapBrowse != 0 && fx.Browsable.IsNull():
		return "CapBrowse needs Browsable"
	case c&(nodemgr.CapRead|nodemgr.CapWrite|nodemgr.CapBrowse|nodemgr.CapCall) != 0 && fx.Unknown.IsNull():
		return "an operation capability needs Unknown"
	case c&nodemgr.CapWatch != 0 && (fx.Changing == nil || fx.Changing.Node.IsNull()):
		return "CapWatch needs Changing"
	case fx.Call != nil && c&nodemgr.CapCall == 0:
		return "Call without CapCall"
	}
	return ""
}

// usable skips t when an earlier call wedged the manager.
func (k *kit) usable(t *testing.T) {
	t.Helper()
	if w := k.wedged.Load(); w != nil {
		t.Skipf("not run: %s did not return earlier, so the manager is wedged", *w)
	}
}

// stall stalls the manager through Fixture.Slow and returns its release, which may be
// called more than once; Run's cleanup calls it too.
func (k *kit) stall() func() {
	var once sync.Once
	release := k.fx.Slow(k.m)
	r := func() { once.Do(release) }
	k.mu.Lock()
	k.releases = append(k.releases, r)
	k.mu.Unlock()
	return r
}

func (k *kit) releaseAll() {
	k.mu.Lock()
	rs := k.releases
	k.releases = nil
	k.mu.Unlock()
	for _, r := range rs {
		r()
	}
}

// probe follows one call of a method: whether it returned and how often done came.
type probe struct {
	what     string
	n        atomic.Int32
	called   chan struct{} // closed at the first done
	returned chan struct{} // closed when the method returns
}

func (p *probe) done() {
	if p.n.Add(1) == 1 {
		close(p.called)
	}
}

// begin calls fn, a method of the manager, with a counting done, on a goroutine of its
// own so that a method that does not return is reported.
func (k *kit) begin(what string, fn func(done func())) *probe {
	p := &probe{what: what, called: make(chan struct{}), returned: make(chan struct{})}
	go func() {
		defer close(p.returned)
		fn(p.done)
	}()
	return p
}

// returned waits up to Timeout for p's method to return; on failure it reports the
// rule and marks the manager wedged.
func (k *kit) returned(t testing.TB, p *probe) bool {
	t.Helper()
	select {
	case <-p.returned:
		return true
	case <-time.After(k.fx.Timeout):
		what := p.what
		k.wedged.CompareAndSwap(nil, &what)
		t.Errorf("%s did not return within %v: a method must return without waiting and call done later (nodemgr)", p.what, k.fx.Timeout)
		return false
	}
}

// called waits up to Timeout for p's done.
func (k *kit) called(t testing.TB, p *probe, why string) bool {
	t.Helper()
	select {
	case <-p.called:
		return true
	case <-time.After(k.fx.Timeout):
		t.Errorf("%s: done was not called within %v%s", p.what, k.fx.Timeout, why)
		return false
	}
}

// settle waits the grace period and checks that done came exactly once for each probe.
func (k *kit) settle(t testing.TB, ps ...*probe) {
	t.Helper()
	time.Sleep(k.fx.Grace)
	for _, p := range ps {
		if n := p.n.Load(); n != 1 {
			t.Errorf("%s: done was called %d times; the contract calls for exactly once", p.what, n)
		}
	}
}

// call runs one method to completion as the server does and checks the done rules. It
// reports whether the results may be read.
func (k *kit) call(t testing.TB, what string, fn func(done func())) bool {
	t.Helper()
	p := k.begin(what, fn)
	if !k.returned(t, p) || !k.called(t, p, "") {
		return false
	}
	k.settle(t, p)
	return p.n.Load() == 1
}

// expect is what a rule wants of one result's StatusCode.
type expect struct {
	name string
	ok   func(status.Code) bool
}

var anyCode = expect{"any StatusCode", func(status.Code) bool { return true }}

func good() expect { return expect{"Good", status.Code.IsGood} }

func code(cs ...status.Code) expect {
	name := ""
	for i, c := range cs {
		if i > 0 {
			name += " or "
		}
		name += c.Sub().Name()
	}
	return expect{name, func(got status.Code) bool { return slices.Contains(cs, got.Sub()) }}
}

// checkCodes checks one StatusCode per item against want, want[i] for item i, and
// reports whether all are right. It reports the first few wrong results of a batch.
func checkCodes(t testing.TB, what string, got []status.Code, want []expect) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d results for %d items", what, len(got), len(want))
		return false
	}
	const shown = 5
	wrong := 0
	for i, c := range got {
		var msg string
		switch {
		case c == unset:
			msg = fmt.Sprintf("%s: result %d was not set; a manager sets every result, its StatusCode included", what, i)
		case !want[i].ok(c):
			msg = fmt.Sprintf("%s: result %d is %v; want %s", what, i, c, want[i].name)
		default:
			continue
		}
		if wrong++; wrong <= shown {
			t.Error(msg)
		}
	}
	if wrong > shown {
		t.Errorf("%s: %d more wrong results of %d", what, wrong-shown, len(got))
	}
	return wrong == 0
}

func each[T any](s []T, code func(*T) status.Code) []status.Code {
	out := make([]status.Code, len(s))
	for i := range s {
		out[i] = code(&s[i])
	}
	return out
}

func readCodes(op *nodemgr.ReadOp) []status.Code {
	return each(op.Results, func(r *codec.DataValue) status.Code { return r.Status })
}

func writeCodes(op *nodemgr.WriteOp) []status.Code { return slices.Clone(op.Results) }

func browseCodes(op *nodemgr.BrowseOp) []status.Code {
	return each(op.Results, func(r *nodemgr.BrowseResult) status.Code { return r.Status })
}

func callCodes(op *nodemgr.CallOp) []status.Code {
	return each(op.Results, func(r *ua.CallMethodResult) status.Code { return r.StatusCode })
}

// Operations as the server builds them, with marked result slots.

func (k *kit) readOp(items ...ua.ReadValueId) *nodemgr.ReadOp {
	op := &nodemgr.ReadOp{Principal: k.fx.Principal, Timestamps: ua.TimestampsToReturnBoth, Items: items,
		Results: make([]codec.DataValue, len(items))}
	for i := range op.Results {
		op.Results[i].Status = unset
	}
	return op
}

func (k *kit) writeOp(items ...ua.WriteValue) *nodemgr.WriteOp {
	op := &nodemgr.WriteOp{Principal: k.fx.Principal, Items: items, Results: make([]status.Code, len(items))}
	for i := range op.Results {
		op.Results[i] = unset
	}
	return op
}

func (k *kit) browseOp(items ...ua.BrowseDescription) *nodemgr.BrowseOp {
	op := &nodemgr.BrowseOp{Principal: k.fx.Principal, Items: items, Results: make([]nodemgr.BrowseResult, len(items))}
	for i := range op.Results {
		op.Results[i].Status = unset
	}
	return op
}

func (k *kit) callOp(items ...ua.CallMethodRequest) *nodemgr.CallOp {
	op := &nodemgr.CallOp{Principal: k.fx.Principal, Items: items, Results: make([]ua.CallMethodResult, len(items))}
	for i := range op.Results {
		op.Results[i].StatusCode = unset
	}
	return op
}

func readOf(n codec.NodeId, a uint32) ua.ReadValueId {
	return ua.ReadValueId{NodeId: n, AttributeId: a}
}

func writeOf(n codec.NodeId, a uint32, v codec.Variant) ua.WriteValue {
	return ua.WriteValue{NodeId: n, AttributeId: a, Value: codec.DataValue{Value: v}}
}

func browseOf(n codec.NodeId, dir ua.BrowseDirection) ua.BrowseDescription {
	return ua.BrowseDescription{NodeId: n, BrowseDirection: dir, IncludeSubtypes: true,
		ResultMask: uint32(ua.BrowseResultMaskAll)}
}

// read, write, browse and callMethods run one operation; they report whether its
// results may be read.
func (k *kit) read(t testing.TB, ctx context.Context, what string, op *nodemgr.ReadOp) bool {
	return k.call(t, what, func(done func()) { k.reader.Read(ctx, op, done) })
}

func (k *kit) write(t testing.TB, ctx context.Context, what string, op *nodemgr.WriteOp) bool {
	return k.call(t, what, func(done func()) { k.writer.Write(ctx, op, done) })
}

func (k *kit) browse(t testing.TB, ctx context.Context, what string, op *nodemgr.BrowseOp) bool {
	return k.call(t, what, func(done func()) { k.browser.Browse(ctx, op, done) })
}

func (k *kit) callMethods(t testing.TB, ctx context.Context, what string, op *nodemgr.CallOp) bool {
	return k.call(t, what, func(done func()) { k.caller.Call(ctx, op, done) })
}
