package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// routeNamespaceURI is the namespace of routeManager.
const routeNamespaceURI = "urn:uastack:test:route"

// routeChildren is the number of Int32 Variables below the routeManager's root.
const routeChildren = 5

// routeManager is a node manager for tests of the routing: one namespace holding an
// Object "Root" (a FolderType mounted below the Objects folder with Organizes), Int32
// Variables "Child0".."Child4" and a Method "Double" (Int32 in, Int32 out), all
// HasComponent of Root. It implements every capability and always completes from a
// goroutine of its own, after delay; ops counts the operations started and inFlight
// those not yet done.
type routeManager struct {
	delay time.Duration
	// release, when set, holds every operation until closed instead of for delay.
	release chan struct{}
	ns      uint16 // set by Mount

	mu     sync.Mutex // guards values
	values map[string]int32

	ops      atomic.Int32
	inFlight atomic.Int32
}

var (
	_ nodemgr.Reader  = (*routeManager)(nil)
	_ nodemgr.Writer  = (*routeManager)(nil)
	_ nodemgr.Browser = (*routeManager)(nil)
	_ nodemgr.Caller  = (*routeManager)(nil)
	_ nodemgr.Mounter = (*routeManager)(nil)
)

func newRouteManager(delay time.Duration) *routeManager {
	m := &routeManager{delay: delay, values: make(map[string]int32)}
	for i := range routeChildren {
		m.values[childName(i)] = int32(100 + i)
	}
	return m
}

func childName(i int) string { return "Child" + string(rune('0'+i)) }

func (m *routeManager) Namespaces() []string { return []string{routeNamespaceURI} }

func (m *routeManager) Mount(indexes []uint16) []nodemgr.Mount {
	m.ns = indexes[0]
	return []nodemgr.Mount{{
		SourceId:        codec.NewNumericNodeId(0, id.ObjectsFolder),
		ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes),
		TargetId:        m.node("Root"),
	}}
}

func (m *routeManager) node(name string) codec.NodeId { return codec.NewStringNodeId(m.ns, name) }

// later runs fill and done from a new goroutine after the delay (or the release).
func (m *routeManager) later(fill, done func()) {
	m.ops.Add(1)
	m.inFlight.Add(1)
	go func() {
		if m.release != nil {
			<-m.release
		} else {
			time.Sleep(m.delay)
		}
		fill()
		m.inFlight.Add(-1)
		done()
	}()
}

// testNode is what routeManager knows of one of its nodes.
type testNode struct {
	class    ua.NodeClass
	typeDef  uint32 // a namespace 0 type, 0 for none
	children bool   // whether it is Root
}

// lookup returns the node n names, if it is one of the manager's.
func (m *routeManager) lookup(n codec.NodeId) (string, testNode, bool) {
	if n.Namespace() != m.ns || n.Type() != codec.IDString {
		return "", testNode{}, false
	}
	name := n.StringID()
	switch {
	case name == "Root":
		return name, testNode{class: ua.NodeClassObject, typeDef: id.FolderType, children: true}, true
	case name == "Double":
		return name, testNode{class: ua.NodeClassMethod}, true
	}
	m.mu.Lock()
	_, ok := m.values[name]
	m.mu.Unlock()
	return name, testNode{class: ua.NodeClassVariable, typeDef: id.BaseDataVariableType}, ok
}

func (m *routeManager) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	m.later(func() {
		for i, it := range op.Items {
			op.Results[i] = m.readOne(it)
		}
	}, done)
}

func (m *routeManager) readOne(it ua.ReadValueId) codec.DataValue {
	name, n, ok := m.lookup(it.NodeId)
	if !ok {
		return codec.DataValue{Status: status.BadNodeIdUnknown}
	}
	var v codec.Variant
	switch attr.ID(it.AttributeId) {
	case attr.NodeClass:
		v = codec.Int32Variant(int32(n.class))
	case attr.BrowseName:
		v = codec.QualifiedNameVariant(codec.QualifiedName{NamespaceIndex: m.ns, Name: name})
	case attr.DisplayName:
		v = codec.MustVariant(codec.LocalizedText{Text: name})
	case attr.Value:
		if n.class != ua.NodeClassVariable {
			return codec.DataValue{Status: status.BadAttributeIdInvalid}
		}
		m.mu.Lock()
		v = codec.Int32Variant(m.values[name])
		m.mu.Unlock()
	default:
		return codec.DataValue{Status: status.BadAttributeIdInvalid}
	}
	return codec.DataValue{Value: v}
}

func (m *routeManager) Write(_ context.Context, op *nodemgr.WriteOp, done func()) {
	m.later(func() {
		for i, it := range op.Items {
			op.Results[i] = m.writeOne(it)
		}
	}, done)
}

func (m *routeManager) writeOne(it ua.WriteValue) status.Code {
	name, n, ok := m.lookup(it.NodeId)
	switch {
	case !ok:
		return status.BadNodeIdUnknown
	case attr.ID(it.AttributeId) != attr.Value || n.class != ua.NodeClassVariable:
		return status.BadNotWritable
	case it.Value.Value.Type() != codec.TypeInt32 || it.Value.Value.IsArray():
		return status.BadTypeMismatch
	}
	m.mu.Lock()
	m.values[name] = int32(it.Value.Value.Bits())
	m.mu.Unlock()
	return status.Good
}

func (m *routeManager) Call(_ context.Context, op *nodemgr.CallOp, done func()) {
	m.later(func() {
		for i, it := range op.Items {
			op.Results[i] = m.callOne(it)
		}
	}, done)
}

func (m *routeManager) callOne(it ua.CallMethodRequest) ua.CallMethodResult {
	if it.ObjectId != m.node("Root") {
		return ua.CallMethodResult{StatusCode: status.BadNodeIdUnknown}
	}
	if it.MethodId != m.node("Double") {
		return ua.CallMethodResult{StatusCode: status.BadMethodInvalid}
	}
	switch {
	case len(it.InputArguments) < 1:
		return ua.CallMethodResult{StatusCode: status.BadArgumentsMissing}
	case len(it.InputArguments) > 1:
		return ua.CallMethodResult{StatusCode: status.BadTooManyArguments}
	case it.InputArguments[0].Type() != codec.TypeInt32:
		return ua.CallMethodResult{StatusCode: status.BadInvalidArgument, InputArgumentResults: []status.Code{status.BadTypeMismatch}}
	}
	x := int32(it.InputArguments[0].Bits())
	return ua.CallMethodResult{InputArgumentResults: []status.Code{status.Good}, OutputArguments: []codec.Variant{codec.Int32Variant(2 * x)}}
}

func (m *routeManager) Browse(_ context.Context, op *nodemgr.BrowseOp, done func()) {
	m.later(func() {
		for i := range op.Items {
			op.Results[i] = m.browseOne(&op.Items[i])
		}
	}, done)
}

// supertypes lists, for the ReferenceTypes routeManager uses, their supertypes up to
// References: enough to answer IncludeSubtypes.
var supertypes = map[uint32][]uint32{
	id.Organizes:         {id.HierarchicalReferences, id.References},
	id.HasComponent:      {id.Aggregates, id.HasChild, id.HierarchicalReferences, id.References},
	id.HasTypeDefinition: {id.NonHierarchicalReferences, id.References},
}

func (m *routeManager) browseOne(d *ua.BrowseDescription) nodemgr.BrowseResult {
	_, n, ok := m.lookup(d.NodeId)
	if !ok {
		return nodemgr.BrowseResult{Status: status.BadNodeIdUnknown}
	}
	type ref struct {
		typ     uint32
		target  codec.NodeId
		forward bool
	}
	var refs []ref
	if n.typeDef != 0 {
		refs = append(refs, ref{id.HasTypeDefinition, codec.NewNumericNodeId(0, n.typeDef), true})
	}
	if n.children {
		refs = append(refs, ref{id.Organizes, codec.NewNumericNodeId(0, id.ObjectsFolder), false})
		for i := range routeChildren {
			refs = append(refs, ref{id.HasComponent, m.node(childName(i)), true})
		}
		refs = append(refs, ref{id.HasComponent, m.node("Double"), true})
	} else {
		refs = append(refs, ref{id.HasComponent, m.node("Root"), false})
	}
	var res nodemgr.BrowseResult
	mask := ua.BrowseResultMask(d.ResultMask)
	for _, r := range refs {
		if d.BrowseDirection == ua.BrowseDirectionForward && !r.forward || d.BrowseDirection == ua.BrowseDirectionInverse && r.forward {
			continue
		}
		if !d.ReferenceTypeId.IsNull() && d.ReferenceTypeId != codec.NewNumericNodeId(0, r.typ) {
			sub := false
			for _, st := range supertypes[r.typ] {
				sub = sub || d.IncludeSubtypes && d.ReferenceTypeId == codec.NewNumericNodeId(0, st)
			}
			if !sub {
				continue
			}
		}
		rd := ua.ReferenceDescription{NodeId: codec.ExpandedNodeId{NodeId: r.target}}
		if mask&ua.BrowseResultMaskReferenceTypeId != 0 {
			rd.ReferenceTypeId = codec.NewNumericNodeId(0, r.typ)
		}
		if mask&ua.BrowseResultMaskIsForward != 0 {
			rd.IsForward = r.forward
		}
		// Targets of other namespaces are left to the server to describe.
		if tname, tn, own := m.lookup(r.target); own {
			if mask&ua.BrowseResultMaskNodeClass != 0 {
				rd.NodeClass = tn.class
			}
			if mask&ua.BrowseResultMaskBrowseName != 0 {
				rd.BrowseName = codec.QualifiedName{NamespaceIndex: m.ns, Name: tname}
			}
			if mask&ua.BrowseResultMaskDisplayName != 0 {
				rd.DisplayName = codec.LocalizedText{Text: tname}
			}
			if mask&ua.BrowseResultMaskTypeDefinition != 0 && tn.typeDef != 0 {
				rd.TypeDefinition = codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, tn.typeDef)}
			}
		}
		res.References = append(res.References, rd)
	}
	return res
}
