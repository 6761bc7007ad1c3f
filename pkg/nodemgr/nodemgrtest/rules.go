package nodemgrtest

// The rules, in the order Run runs them. Each runs in a subtest named for it.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

func (k *kit) capabilities(t *testing.T) {
	got := nodemgr.CapabilitiesOf(k.m)
	if got != k.fx.Capabilities {
		t.Errorf("%T implements %v; the fixture expects %v (missing %v, unexpected %v)", k.m, got, k.fx.Capabilities,
			k.fx.Capabilities&^got, got&^k.fx.Capabilities)
	}
	if len(k.m.Namespaces()) == 0 {
		t.Errorf("Namespaces is empty; a manager serves at least one namespace")
	}
	if k.fx.NamespaceIndexes != nil && len(k.fx.NamespaceIndexes) != len(k.m.Namespaces()) {
		t.Errorf("the fixture has %d NamespaceIndexes for %d Namespaces", len(k.fx.NamespaceIndexes), len(k.m.Namespaces()))
	}
}

func (k *kit) mount(t *testing.T) {
	own := func(n codec.NodeId) bool { return slices.Contains(k.fx.NamespaceIndexes, n.Namespace()) }
	for _, mt := range k.m.(nodemgr.Mounter).Mount(k.fx.NamespaceIndexes) {
		switch {
		case !own(mt.TargetId):
			t.Errorf("Mount %v -> %v: the target is not in the manager's namespaces %v", mt.SourceId, mt.TargetId, k.fx.NamespaceIndexes)
		case own(mt.SourceId):
			t.Errorf("Mount %v -> %v: the source is the manager's own node; a Mount leads from another namespace", mt.SourceId, mt.TargetId)
		case mt.ReferenceTypeId.IsNull():
			t.Errorf("Mount %v -> %v: no ReferenceTypeId", mt.SourceId, mt.TargetId)
		}
	}
}

func (k *kit) start(t *testing.T, s nodemgr.Starter) {
	ctx, cancel := context.WithTimeout(context.Background(), k.fx.Timeout)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.Start(ctx, k.host) }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(k.fx.Timeout + time.Second):
		t.Fatalf("Start did not return within %v, though its context ended after %v", k.fx.Timeout+time.Second, k.fx.Timeout)
	}
}

func (k *kit) close(t *testing.T, c nodemgr.Closer) {
	ctx, cancel := context.WithTimeout(context.Background(), k.fx.Timeout)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- c.Close(ctx) }()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(k.fx.Timeout + time.Second):
		t.Errorf("Close did not return within %v, though its context ended after %v", k.fx.Timeout+time.Second, k.fx.Timeout)
	}
}

func (k *kit) readRules(t *testing.T) {
	fx, ctx := &k.fx, context.Background()
	rule := func(name string, items []ua.ReadValueId, want []expect, more func(t *testing.T, op *nodemgr.ReadOp)) {
		t.Run("Read/"+name, func(t *testing.T) {
			k.usable(t)
			op := k.readOp(items...)
			if !k.read(t, ctx, "Read", op) {
				return
			}
			if checkCodes(t, "Read", readCodes(op), want) && more != nil {
				more(t, op)
			}
		})
	}
	rule("Good", []ua.ReadValueId{readOf(fx.Readable, attrValue)}, []expect{good()}, nil)
	rule("NodeId", []ua.ReadValueId{readOf(fx.Readable, attrNodeId)}, []expect{good()}, func(t *testing.T, op *nodemgr.ReadOp) {
		if v := op.Results[0].Value; v.Type() != codec.TypeNodeId || v.NodeId() != fx.Readable {
			t.Errorf("Read NodeId of %v gives %v", fx.Readable, &v)
		}
	})
	rule("UnknownNode", []ua.ReadValueId{readOf(fx.Unknown, attrValue)}, []expect{code(status.BadNodeIdUnknown)}, nil)
	rule("BadAttribute", []ua.ReadValueId{readOf(fx.Readable, attrInvalid)}, []expect{code(status.BadAttributeIdInvalid)}, nil)
	rule("Mixed",
		[]ua.ReadValueId{readOf(fx.Unknown, attrValue), readOf(fx.Readable, attrValue), readOf(fx.Readable, attrInvalid), readOf(fx.Readable, attrDisplayName)},
		[]expect{code(status.BadNodeIdUnknown), good(), code(status.BadAttributeIdInvalid), good()}, nil)
	rule("Empty", []ua.ReadValueId{}, []expect{}, nil)
	const large = 1000
	items, want := make([]ua.ReadValueId, large), make([]expect, large)
	for i := range items {
		items[i], want[i] = readOf(fx.Readable, attrValue), good()
		if i%3 == 1 {
			items[i], want[i] = readOf(fx.Unknown, attrValue), code(status.BadNodeIdUnknown)
		}
	}
	rule("Large", items, want, nil)
}

func (k *kit) writeRules(t *testing.T) {
	fx, ctx := &k.fx, context.Background()
	rule := func(name string, items []ua.WriteValue, want []expect, more func(t *testing.T)) {
		t.Run("Write/"+name, func(t *testing.T) {
			k.usable(t)
			op := k.writeOp(items...)
			if !k.write(t, ctx, "Write", op) {
				return
			}
			if checkCodes(t, "Write", writeCodes(op), want) && more != nil {
				more(t)
			}
		})
	}
	rule("Good", []ua.WriteValue{writeOf(fx.Writable, attrValue, fx.WriteValue)}, []expect{good()}, func(t *testing.T) {
		if k.reader == nil {
			return
		}
		op := k.readOp(readOf(fx.Writable, attrValue))
		if !k.read(t, ctx, "Read after Write", op) {
			return
		}
		if !checkCodes(t, "Read after Write", readCodes(op), []expect{good()}) {
			return
		}
		if got, want := encodeVariant(&op.Results[0].Value), encodeVariant(&fx.WriteValue); !bytes.Equal(got, want) {
			t.Errorf("Read after Write gives %v; want the value written, %v", &op.Results[0].Value, &fx.WriteValue)
		}
	})
	rule("NotWritable", []ua.WriteValue{writeOf(fx.NotWritable, attrValue, fx.WriteValue)},
		[]expect{code(status.BadNotWritable, status.BadUserAccessDenied)}, nil)
	rule("UnknownNode", []ua.WriteValue{writeOf(fx.Unknown, attrValue, fx.WriteValue)}, []expect{code(status.BadNodeIdUnknown)}, nil)
	rule("BadAttribute", []ua.WriteValue{writeOf(fx.Writable, attrInvalid, fx.WriteValue)}, []expect{code(status.BadAttributeIdInvalid)}, nil)
	rule("Mixed",
		[]ua.WriteValue{writeOf(fx.NotWritable, attrValue, fx.WriteValue), writeOf(fx.Writable, attrValue, fx.WriteValue),
			writeOf(fx.Unknown, attrValue, fx.WriteValue), writeOf(fx.Writable, attrInvalid, fx.WriteValue)},
		[]expect{code(status.BadNotWritable, status.BadUserAccessDenied), good(), code(status.BadNodeIdUnknown), code(status.BadAttributeIdInvalid)}, nil)
	rule("Empty", []ua.WriteValue{}, []expect{}, nil)
}

func encodeVariant(v *codec.Variant) []byte {
	e := codec.NewEncoder(nil)
	e.Variant(v)
	return e.Bytes()
}

func (k *kit) browseRules(t *testing.T) {
	fx, ctx := &k.fx, context.Background()
	rule := func(name string, items []ua.BrowseDescription, want []expect, more func(t *testing.T, op *nodemgr.BrowseOp)) {
		t.Run("Browse/"+name, func(t *testing.T) {
			k.usable(t)
			op := k.browseOp(items...)
			if !k.browse(t, ctx, "Browse", op) {
				return
			}
			if checkCodes(t, "Browse", browseCodes(op), want) && more != nil {
				more(t, op)
			}
		})
	}
	rule("Good", []ua.BrowseDescription{browseOf(fx.Browsable, ua.BrowseDirectionBoth)}, []expect{good()}, func(t *testing.T, op *nodemgr.BrowseOp) {
		refs := op.Results[0].References
		if len(refs) == 0 {
			t.Errorf("Browse of %v found no references; the fixture names a node with at least one", fx.Browsable)
		}
		for i, rd := range refs {
			if rd.NodeId.NodeId.IsNull() && rd.NodeId.NamespaceURI == "" {
				t.Errorf("Browse of %v: reference %d has no target NodeId", fx.Browsable, i)
			}
			if rd.ReferenceTypeId.IsNull() {
				t.Errorf("Browse of %v: reference %d has no ReferenceTypeId though the ResultMask asks for it", fx.Browsable, i)
			}
		}
	})
	rule("Directions",
		[]ua.BrowseDescription{browseOf(fx.Browsable, ua.BrowseDirectionForward), browseOf(fx.Browsable, ua.BrowseDirectionInverse),
			browseOf(fx.Browsable, ua.BrowseDirectionBoth)},
		[]expect{good(), good(), good()}, func(t *testing.T, op *nodemgr.BrowseOp) {
			fwd, inv, both := op.Results[0].References, op.Results[1].References, op.Results[2].References
			for _, rd := range fwd {
				if !rd.IsForward {
					t.Errorf("Browse Forward of %v returns an inverse reference to %v", fx.Browsable, rd.NodeId)
				}
			}
			for _, rd := range inv {
				if rd.IsForward {
					t.Errorf("Browse Inverse of %v returns a forward reference to %v", fx.Browsable, rd.NodeId)
				}
			}
			if len(fwd)+len(inv) != len(both) {
				t.Errorf("Browse of %v: %d forward and %d inverse references, but %d in both directions", fx.Browsable, len(fwd), len(inv), len(both))
			}
		})
	rule("UnknownNode", []ua.BrowseDescription{browseOf(fx.Unknown, ua.BrowseDirectionBoth)}, []expect{code(status.BadNodeIdUnknown)}, nil)
	rule("Mixed", []ua.BrowseDescription{browseOf(fx.Unknown, ua.BrowseDirectionBoth), browseOf(fx.Browsable, ua.BrowseDirectionBoth)},
		[]expect{code(status.BadNodeIdUnknown), good()}, nil)
	rule("Empty", []ua.BrowseDescription{}, []expect{}, nil)
}

func (k *kit) callRules(t *testing.T) {
	fx, ctx := &k.fx, context.Background()
	rule := func(name string, items []ua.CallMethodRequest, want []expect) {
		t.Run("Call/"+name, func(t *testing.T) {
			k.usable(t)
			op := k.callOp(items...)
			if !k.callMethods(t, ctx, "Call", op) {
				return
			}
			checkCodes(t, "Call", callCodes(op), want)
		})
	}
	unknownObject := ua.CallMethodRequest{ObjectId: fx.Unknown, MethodId: fx.Unknown}
	if fx.Call != nil {
		unknownObject.MethodId = fx.Call.MethodId
	}
	rule("UnknownObject", []ua.CallMethodRequest{unknownObject}, []expect{code(status.BadNodeIdUnknown)})
	rule("Empty", []ua.CallMethodRequest{}, []expect{})
	if fx.Call == nil {
		return
	}
	unknownMethod := ua.CallMethodRequest{ObjectId: fx.Call.ObjectId, MethodId: fx.Unknown}
	rule("Good", []ua.CallMethodRequest{*fx.Call}, []expect{good()})
	rule("UnknownMethod", []ua.CallMethodRequest{unknownMethod}, []expect{code(status.BadMethodInvalid)})
	rule("Mixed", []ua.CallMethodRequest{unknownObject, *fx.Call, unknownMethod},
		[]expect{code(status.BadNodeIdUnknown), good(), code(status.BadMethodInvalid)})
}

// mixedOp is an operation with a good and a bad item: run starts it with ctx and done,
// codes reads its StatusCodes, want says what they must be when ctx is alive.
type mixedOp struct {
	name  string
	run   func(ctx context.Context, done func())
	codes func() []status.Code
	want  []expect
}

// mixed returns a fresh mixedOp of each kind the manager answers.
func (k *kit) mixed() []mixedOp {
	fx := &k.fx
	var ops []mixedOp
	if k.reader != nil {
		op := k.readOp(readOf(fx.Readable, attrValue), readOf(fx.Unknown, attrValue))
		ops = append(ops, mixedOp{"Read", func(ctx context.Context, done func()) { k.reader.Read(ctx, op, done) },
			func() []status.Code { return readCodes(op) }, []expect{good(), code(status.BadNodeIdUnknown)}})
	}
	if k.writer != nil {
		op := k.writeOp(writeOf(fx.Writable, attrValue, fx.WriteValue), writeOf(fx.Unknown, attrValue, fx.WriteValue))
		ops = append(ops, mixedOp{"Write", func(ctx context.Context, done func()) { k.writer.Write(ctx, op, done) },
			func() []status.Code { return writeCodes(op) }, []expect{good(), code(status.BadNodeIdUnknown)}})
	}
	if k.browser != nil {
		op := k.browseOp(browseOf(fx.Browsable, ua.BrowseDirectionBoth), browseOf(fx.Unknown, ua.BrowseDirectionBoth))
		ops = append(ops, mixedOp{"Browse", func(ctx context.Context, done func()) { k.browser.Browse(ctx, op, done) },
			func() []status.Code { return browseCodes(op) }, []expect{good(), code(status.BadNodeIdUnknown)}})
	}
	if k.caller != nil {
		items := []ua.CallMethodRequest{{ObjectId: fx.Unknown, MethodId: fx.Unknown}}
		want := []expect{code(status.BadNodeIdUnknown)}
		if fx.Call != nil {
			items, want = append(items, *fx.Call), append(want, good())
		}
		op := k.callOp(items...)
		ops = append(ops, mixedOp{"Call", func(ctx context.Context, done func()) { k.caller.Call(ctx, op, done) },
			func() []status.Code { return callCodes(op) }, want})
	}
	return ops
}

// anyCodes is want with every result allowed any StatusCode but the marker: what an
// operation whose context ended may answer.
func anyCodes(want []expect) []expect {
	out := make([]expect, len(want))
	for i := range out {
		out[i] = anyCode
	}
	return out
}

// mixedOp returns a fresh mixed operation of the named kind, or nil when the manager
// does not answer it.
func (k *kit) mixedOp(name string) *mixedOp {
	for _, op := range k.mixed() {
		if op.name == name {
			return &op
		}
	}
	return nil
}

func (k *kit) cancelRules(t *testing.T) {
	for _, kind := range k.mixed() {
		name := kind.name
		for _, how := range []string{"Cancelled", "Deadline"} {
			t.Run("Cancel/"+how+"/"+name, func(t *testing.T) {
				k.usable(t)
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				defer cancel()
				what := name + " with a 1ms deadline"
				if how == "Cancelled" {
					cancel()
					what = name + " with a cancelled context"
				}
				op := k.mixedOp(name)
				if k.call(t, what, func(done func()) { op.run(ctx, done) }) {
					checkCodes(t, what, op.codes(), anyCodes(op.want))
				}
			})
		}
	}
}

func (k *kit) slowRules(t *testing.T) {
	for _, kind := range k.mixed() {
		name := kind.name
		t.Run("Done/NotWaiting/"+name, func(t *testing.T) {
			k.usable(t)
			op := k.mixedOp(name)
			release := k.stall()
			p := k.begin(name+" on a stalled manager", func(done func()) { op.run(context.Background(), done) })
			ok := k.returned(t, p)
			release()
			if !ok {
				k.unwedge(p)
				return
			}
			if k.called(t, p, " after the stall was released") {
				k.settle(t, p)
				checkCodes(t, p.what, op.codes(), op.want)
			}
		})
		t.Run("Cancel/Stalled/"+name, func(t *testing.T) {
			k.usable(t)
			op := k.mixedOp(name)
			release := k.stall()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			p := k.begin(name+" on a stalled manager with a 50ms deadline", func(done func()) { op.run(ctx, done) })
			ok := k.returned(t, p) && k.called(t, p, " though its context ended: a manager that waits gives up when ctx is done")
			if ok {
				checkCodes(t, p.what, op.codes(), anyCodes(op.want))
			}
			release()
			k.unwedge(p)
			if ok {
				k.settle(t, p)
			}
		})
	}
}

// unwedge clears the mark p's method left when it did not return, if it returns now
// that its stall is released.
func (k *kit) unwedge(p *probe) {
	if w := k.wedged.Load(); w != nil && *w == p.what && k.returnedLate(p) {
		k.wedged.CompareAndSwap(w, nil)
	}
}

// returnedLate reports whether p's method returns within Timeout after all: a method
// that waited on a stall that is now released does not wedge the manager.
func (k *kit) returnedLate(p *probe) bool {
	select {
	case <-p.returned:
		return true
	case <-time.After(k.fx.Timeout):
		return false
	}
}

// encodingRules run each kind of operation as a manager across a boundary sees it:
// the request encoded and decoded on the way in, the results on the way out.
func (k *kit) encodingRules(t *testing.T) {
	fx, ctx := &k.fx, context.Background()
	// across sends req over a boundary and returns what the other side decodes.
	across := func(t *testing.T, kind nodemgr.Kind, req nodemgr.Body) nodemgr.Body {
		t.Helper()
		b, err := (&nodemgr.Frame{Kind: kind, ID: 1, Body: req}).AppendBinary(nil)
		if err != nil {
			t.Fatalf("encoding the %v request: %v", kind, err)
		}
		var f nodemgr.Frame
		if err := f.Decode(b, codec.Limits{}); err != nil {
			t.Fatalf("decoding the %v request: %v", kind, err)
		}
		return f.Body
	}
	// back sends the results in reply over the boundary into into, and checks that they
	// decode to what was sent (the same bytes again).
	back := func(t *testing.T, kind nodemgr.Kind, reply, into nodemgr.Body, results, items int) {
		t.Helper()
		if results != items {
			t.Fatalf("the manager's %v has %d results for %d items", kind, results, items)
		}
		b, err := (&nodemgr.Frame{Kind: kind | nodemgr.KindReply, ID: 1, Body: reply}).AppendBinary(nil)
		if err != nil {
			t.Fatalf("encoding the manager's %v results: %v", kind, err)
		}
		f := nodemgr.Frame{Body: into}
		if err := f.Decode(b, codec.Limits{}); err != nil {
			t.Fatalf("decoding the manager's %v results: %v", kind, err)
		}
		again, err := f.AppendBinary(nil)
		if err != nil || !bytes.Equal(b, again) {
			t.Fatalf("the manager's %v results change through encoding (%v)", kind, err)
		}
	}
	if k.reader != nil {
		t.Run("Encoding/Read", func(t *testing.T) {
			k.usable(t)
			sent := k.readOp(readOf(fx.Readable, attrValue), readOf(fx.Readable, attrDisplayName), readOf(fx.Unknown, attrValue))
			got := across(t, nodemgr.KindRead, sent).(*nodemgr.ReadOp)
			if k.read(t, ctx, "Read of a decoded ReadOp", got) {
				back(t, nodemgr.KindRead, &nodemgr.ReadResults{Results: got.Results}, &nodemgr.ReadResults{Results: sent.Results[:0]}, len(got.Results), len(sent.Items))
				checkCodes(t, "Read of a decoded ReadOp", readCodes(sent), []expect{good(), good(), code(status.BadNodeIdUnknown)})
			}
		})
	}
	if k.writer != nil {
		t.Run("Encoding/Write", func(t *testing.T) {
			k.usable(t)
			sent := k.writeOp(writeOf(fx.Writable, attrValue, fx.WriteValue), writeOf(fx.Unknown, attrValue, fx.WriteValue))
			got := across(t, nodemgr.KindWrite, sent).(*nodemgr.WriteOp)
			if k.write(t, ctx, "Write of a decoded WriteOp", got) {
				back(t, nodemgr.KindWrite, &nodemgr.WriteResults{Results: got.Results}, &nodemgr.WriteResults{Results: sent.Results[:0]}, len(got.Results), len(sent.Items))
				checkCodes(t, "Write of a decoded WriteOp", writeCodes(sent), []expect{good(), code(status.BadNodeIdUnknown)})
			}
		})
	}
	if k.browser != nil {
		t.Run("Encoding/Browse", func(t *testing.T) {
			k.usable(t)
			sent := k.browseOp(browseOf(fx.Browsable, ua.BrowseDirectionBoth), browseOf(fx.Unknown, ua.BrowseDirectionBoth))
			got := across(t, nodemgr.KindBrowse, sent).(*nodemgr.BrowseOp)
			if k.browse(t, ctx, "Browse of a decoded BrowseOp", got) {
				back(t, nodemgr.KindBrowse, &nodemgr.BrowseResults{Results: got.Results}, &nodemgr.BrowseResults{Results: sent.Results[:0]}, len(got.Results), len(sent.Items))
				checkCodes(t, "Browse of a decoded BrowseOp", browseCodes(sent), []expect{good(), code(status.BadNodeIdUnknown)})
			}
		})
	}
	if k.caller != nil {
		t.Run("Encoding/Call", func(t *testing.T) {
			k.usable(t)
			items := []ua.CallMethodRequest{{ObjectId: fx.Unknown, MethodId: fx.Unknown}}
			want := []expect{code(status.BadNodeIdUnknown)}
			if fx.Call != nil {
				items, want = append(items, *fx.Call), append(want, good())
			}
			sent := k.callOp(items...)
			got := across(t, nodemgr.KindCall, sent).(*nodemgr.CallOp)
			if k.callMethods(t, ctx, "Call of a decoded CallOp", got) {
				back(t, nodemgr.KindCall, &nodemgr.CallResults{Results: got.Results}, &nodemgr.CallResults{Results: sent.Results[:0]}, len(got.Results), len(sent.Items))
				checkCodes(t, "Call of a decoded CallOp", callCodes(sent), want)
			}
		})
	}
}

// concurrent runs mixed operations from many goroutines at once, as the server's
// workers do; with -race it finds a manager's data races.
func (k *kit) concurrent(t *testing.T) {
	k.usable(t)
	const goroutines, rounds = 8, 20
	var mu sync.Mutex // guards probes
	var probes []*probe
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				ops := k.mixed()
				if len(ops) == 0 {
					return
				}
				op := ops[(g+r)%len(ops)]
				p := k.begin(fmt.Sprintf("%s in goroutine %d, round %d", op.name, g, r), func(done func()) { op.run(context.Background(), done) })
				if !k.returned(t, p) || !k.called(t, p, "") {
					return
				}
				mu.Lock()
				probes = append(probes, p)
				mu.Unlock()
				checkCodes(t, p.what, op.codes(), op.want)
			}
		}()
	}
	wg.Wait()
	k.settle(t, probes...)
}

func (k *kit) pushRules(t *testing.T, w nodemgr.Watcher) {
	ch := k.fx.Changing
	key := nodemgr.WatchKey{NodeId: ch.Node, AttributeId: attrValue}
	ctx := context.Background()
	match := func(c *nodemgr.DataChange) bool { return c.NodeId == key.NodeId && c.AttributeId == key.AttributeId }
	// quiet waits for pushes already under way to arrive, and forgets them.
	quiet := func() {
		time.Sleep(3*pushInterval + k.fx.Grace)
		k.host.Reset()
	}
	t.Run("Push/Changed", func(t *testing.T) {
		k.usable(t)
		w.Watch(ctx, &nodemgr.WatchSet{Add: []nodemgr.WatchItem{{NodeId: key.NodeId, AttributeId: key.AttributeId,
			SamplingInterval: float64(pushInterval / time.Millisecond)}}})
		if ch.Change != nil {
			quiet() // a first sample may come on its own; the change must come too
			ch.Change(t, k.m)
		}
		wctx, cancel := context.WithTimeout(ctx, k.fx.Timeout)
		defer cancel()
		c, ok := k.host.WaitChange(wctx, match)
		if !ok {
			t.Fatalf("no change of %v reached the Notifier within %v after Watch added it", ch.Node, k.fx.Timeout)
		}
		b, err := (&nodemgr.Frame{Kind: nodemgr.KindDataChanges, Body: &nodemgr.DataChanges{Changes: []nodemgr.DataChange{c}}}).AppendBinary(nil)
		if err != nil {
			t.Errorf("the pushed change of %v does not encode: %v", ch.Node, err)
		}
		var f nodemgr.Frame
		if err == nil && f.Decode(b, codec.Limits{}) != nil {
			t.Errorf("the pushed change of %v does not decode", ch.Node)
		}
	})
	t.Run("Push/StopsAfterRemove", func(t *testing.T) {
		k.usable(t)
		w.Watch(ctx, &nodemgr.WatchSet{Remove: []nodemgr.WatchKey{key}})
		quiet()
		if ch.Change != nil {
			ch.Change(t, k.m)
		}
		time.Sleep(3*pushInterval + k.fx.Grace)
		for _, c := range k.host.Changes() {
			if match(&c) {
				t.Errorf("a change of %v reached the Notifier after Watch removed it: a manager polls only what is watched", ch.Node)
				break
			}
		}
	})
}

func (k *kit) healthRules(t *testing.T, h nodemgr.HealthReporter) {
	ask := func(t *testing.T) (nodemgr.Health, bool) {
		got := make(chan nodemgr.Health, 1)
		go func() { got <- h.Health(context.Background()) }()
		select {
		case hr := <-got:
			return hr, true
		case <-time.After(k.fx.Timeout):
			t.Errorf("Health did not return within %v; it reports what the manager last saw, without waiting", k.fx.Timeout)
			return nodemgr.Health{}, false
		}
	}
	t.Run("Health/Good", func(t *testing.T) {
		if hr, ok := ask(t); ok && !hr.Status.IsGood() {
			t.Errorf("Health of a started manager is %v (%q); want Good", hr.Status, hr.Message)
		}
	})
	if k.fx.Slow != nil {
		t.Run("Health/WhileStalled", func(t *testing.T) {
			release := k.stall()
			defer release()
			ask(t)
		})
	}
}

// reentrant starts a Read from within the done of another, as the server does when a
// Browse's targets are described: a manager that holds its locks while it calls done
// deadlocks here.
func (k *kit) reentrant(t *testing.T) {
	k.usable(t)
	ctx := context.Background()
	const rule = "a manager must not hold its own locks while it calls done: the server starts further operations from within it"
	inner := k.readOp(readOf(k.fx.Readable, attrValue))
	innerProbe := &probe{what: "Read started from within done", called: make(chan struct{}), returned: make(chan struct{})}
	var once sync.Once
	outer := k.readOp(readOf(k.fx.Readable, attrValue))
	p := k.begin("Read whose done starts another Read", func(done func()) {
		k.reader.Read(ctx, outer, func() {
			done()
			once.Do(func() {
				defer close(innerProbe.returned)
				k.reader.Read(ctx, inner, innerProbe.done)
			})
		})
	})
	if !k.returned(t, p) {
		t.Error(rule)
		return
	}
	if k.called(t, p, "") && k.called(t, innerProbe, " ("+rule+")") {
		k.settle(t, p, innerProbe)
		checkCodes(t, innerProbe.what, readCodes(inner), []expect{good()})
	}
}
