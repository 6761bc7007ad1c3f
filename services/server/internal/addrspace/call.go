package addrspace

import (
	"context"
	"fmt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/telemetry"
)

// Compile-time guard: a Space answers method calls.
var _ nodemgr.Caller = (*Space)(nil)

// MethodHandler runs a Method (Part 4 §5.11.2) on object with input arguments that have
// already been checked against the Method's InputArguments property: in has one Variant
// per Argument, each of the declared DataType and ValueRank. in belongs to the request;
// the handler must not keep it. It returns the output arguments and the call's
// StatusCode; outputs are returned to the client only with a Good code. It runs on the
// caller's goroutine with the Space unlocked, so it may call SetValue; it must be fast.
type MethodHandler func(ctx context.Context, object codec.NodeId, in []codec.Variant) ([]codec.Variant, status.Code)

// Names of the argument Properties of a Method (Part 3 §5.7).
const (
	inputArgumentsName  = "InputArguments"
	outputArgumentsName = "OutputArguments"
)

// Well-known nodes for methods.
var (
	hasComponent = codec.NewNumericNodeId(0, 47)
	hasProperty  = codec.NewNumericNodeId(0, 46)
	propertyType = codec.NewNumericNodeId(0, 68)
	argumentType = codec.NewNumericNodeId(0, 296)
)

// AddMethod adds method, a node of NodeClass Method (Executable is set), as a component
// of object (a HasComponent reference from object), with InputArguments and
// OutputArguments Properties where inputArgs or outputArgs are not empty, and handler as
// its implementation. The Properties get string NodeIds in the method's namespace:
// "<id>/InputArguments" and "<id>/OutputArguments", where <id> is the method's string
// identifier, or its NodeId text for other identifier types. The caller may reuse both
// slices.
func (s *Space) AddMethod(object codec.NodeId, method Node, inputArgs, outputArgs []ua.Argument, handler MethodHandler) error {
	if handler == nil {
		return fmt.Errorf("addrspace: AddMethod %v: nil handler", method.NodeId)
	}
	method.NodeClass = ua.NodeClassMethod
	method.Executable = true
	method.References = append(method.References[:len(method.References):len(method.References)],
		Reference{ReferenceTypeId: hasComponent, TargetId: object, IsForward: false})
	s.mu.RLock()
	_, ok := s.lookupLocked(object)
	s.mu.RUnlock()
	if !ok {
		return fmt.Errorf("addrspace: AddMethod %v: unknown object %v", method.NodeId, object)
	}
	if err := s.AddNode(method); err != nil {
		return err
	}
	base := method.NodeId.String()
	if method.NodeId.Type() == codec.IDString {
		base = method.NodeId.StringID()
	}
	for _, p := range []struct {
		name string
		args []ua.Argument
	}{{inputArgumentsName, inputArgs}, {outputArgumentsName, outputArgs}} {
		if len(p.args) == 0 {
			continue
		}
		eos := make([]codec.ExtensionObject, len(p.args))
		for i := range p.args {
			a := p.args[i]
			eos[i] = codec.NewExtensionObject(&a)
		}
		err := s.AddNode(Node{
			NodeId:          codec.NewStringNodeId(method.NodeId.Namespace(), base+"/"+p.name),
			NodeClass:       ua.NodeClassVariable,
			BrowseName:      codec.QualifiedName{Name: p.name},
			DisplayName:     codec.LocalizedText{Text: p.name},
			DataType:        argumentType,
			ValueRank:       1,
			ArrayDimensions: []uint32{uint32(len(p.args))},
			AccessLevel:     uint8(ua.AccessLevelTypeCurrentRead),
			Value:           codec.MustVariant(eos),
			References: []Reference{
				{ReferenceTypeId: hasProperty, TargetId: method.NodeId, IsForward: false},
				{ReferenceTypeId: hasTypeDefinition, TargetId: propertyType, IsForward: true},
			},
		})
		if err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.methods[method.NodeId] = handler
	s.mu.Unlock()
	return nil
}

// Call answers op (Part 4 §5.11.2) and calls done before returning. For each item it
// checks the object (BadNodeIdUnknown, BadNodeIdInvalid when it is no Object or
// ObjectType), the method (BadMethodInvalid unless it is a Method that the object, its
// ObjectType or a supertype has as a component; BadNotExecutable; BadNotImplemented
// without a handler) and the input arguments against the InputArguments Property
// (BadArgumentsMissing, BadTooManyArguments, or BadInvalidArgument with BadTypeMismatch
// in InputArgumentResults for each argument of the wrong DataType or ValueRank), then
// runs the handler. Handlers run one after another on the caller's goroutine; one that
// panics is BadInternalError for its item (telemetry.PlaceAddressSpace).
func (s *Space) Call(ctx context.Context, op *nodemgr.CallOp, done func()) {
	ctx = context.WithValue(ctx, principalKey{}, &op.Principal)
	for i := range op.Items {
		op.Results[i] = s.callOne(ctx, &op.Items[i])
	}
	done()
}

func (s *Space) callOne(ctx context.Context, req *ua.CallMethodRequest) ua.CallMethodResult {
	fn, res := s.checkCall(req)
	if res.StatusCode != status.Good {
		return res
	}
	out, code := s.run(ctx, fn, req)
	res.StatusCode = code
	if code.IsGood() {
		res.OutputArguments = out
	}
	return res
}

// checkCall is checkCallLocked under the read lock.
func (s *Space) checkCall(req *ua.CallMethodRequest) (MethodHandler, ua.CallMethodResult) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.checkCallLocked(req)
}

// run runs the handler fn of req; one that panics is BadInternalError.
func (s *Space) run(ctx context.Context, fn MethodHandler, req *ua.CallMethodRequest) (out []codec.Variant, code status.Code) {
	defer func() {
		if v := recover(); v != nil {
			s.panics.Recovered(telemetry.PlaceAddressSpace, v, "method", req.MethodId.String())
			out, code = nil, status.BadInternalError
		}
	}()
	return fn(ctx, req.ObjectId, req.InputArguments)
}

// checkCallLocked checks req and returns the handler to run; res.StatusCode is Good when
// the call may go ahead. s.mu must be held.
func (s *Space) checkCallLocked(req *ua.CallMethodRequest) (MethodHandler, ua.CallMethodResult) {
	fail := func(c status.Code) (MethodHandler, ua.CallMethodResult) {
		return nil, ua.CallMethodResult{StatusCode: c}
	}
	ov, ok := s.lookupLocked(req.ObjectId)
	if !ok {
		return fail(status.BadNodeIdUnknown)
	}
	if c := ov.class(); c != ua.NodeClassObject && c != ua.NodeClassObjectType {
		return fail(status.BadNodeIdInvalid)
	}
	mv, ok := s.lookupLocked(req.MethodId)
	if !ok || mv.class() != ua.NodeClassMethod || !s.isComponentLocked(req.ObjectId, ov, req.MethodId) {
		return fail(status.BadMethodInvalid)
	}
	if !pick(mv.n != nil, func() bool { return mv.n.Executable }, mv.tab.Executable) {
		return fail(status.BadNotExecutable)
	}
	fn := s.methods[req.MethodId]
	if fn == nil {
		return fail(status.BadNotImplemented)
	}
	args, c := s.argumentsLocked(req.MethodId, mv)
	if c != status.Good {
		return fail(c)
	}
	in := req.InputArguments
	switch {
	case len(in) < len(args):
		return fail(status.BadArgumentsMissing)
	case len(in) > len(args):
		return fail(status.BadTooManyArguments)
	}
	var res ua.CallMethodResult
	if len(in) > 0 {
		res.InputArgumentResults = make([]status.Code, len(in))
	}
	for i := range in {
		if !s.typeMatchesLocked(&in[i], args[i].DataType, args[i].ValueRank) {
			res.InputArgumentResults[i] = status.BadTypeMismatch
			res.StatusCode = status.BadInvalidArgument
		}
	}
	return fn, res
}

// isComponentLocked reports whether method is the target of a HasComponent (or subtype)
// reference from object, from its ObjectType, or from a supertype of that (Part 4
// §5.11.2, objectId). s.mu must be held.
func (s *Space) isComponentLocked(object codec.NodeId, ov view, method codec.NodeId) bool {
	has := func(id codec.NodeId, v view) bool {
		found := false
		s.eachRefDirLocked(id, v, ua.BrowseDirectionForward, func(r Reference) bool {
			if r.IsForward && r.TargetId == method && s.isSubtypeLocked(r.ReferenceTypeId, hasComponent) {
				found = true
				return false
			}
			return true
		})
		return found
	}
	if has(object, ov) {
		return true
	}
	typ := object
	if ov.class() == ua.NodeClassObject {
		typ = codec.NodeId{}
		s.eachRefDirLocked(object, ov, ua.BrowseDirectionForward, func(r Reference) bool {
			if r.IsForward && r.ReferenceTypeId == hasTypeDefinition {
				typ = r.TargetId
				return false
			}
			return true
		})
	} else if p, ok := s.superTypeLocked(typ); ok {
		typ = p
	} else {
		return false
	}
	for range maxTypeDepth {
		if typ.IsNull() {
			return false
		}
		tv, ok := s.lookupLocked(typ)
		if !ok {
			return false
		}
		if has(typ, tv) {
			return true
		}
		p, ok := s.superTypeLocked(typ)
		if !ok {
			return false
		}
		typ = p
	}
	return false
}

// argumentsLocked returns the Arguments of the InputArguments Property of method; a
// method without one takes no arguments. s.mu must be held.
func (s *Space) argumentsLocked(method codec.NodeId, mv view) ([]ua.Argument, status.Code) {
	var prop codec.NodeId
	s.eachRefDirLocked(method, mv, ua.BrowseDirectionForward, func(r Reference) bool {
		if !r.IsForward || r.ReferenceTypeId != hasProperty {
			return true
		}
		if pv, ok := s.lookupLocked(r.TargetId); ok && pv.browseName() == (codec.QualifiedName{Name: inputArgumentsName}) {
			prop = r.TargetId
			return false
		}
		return true
	})
	if prop.IsNull() {
		return nil, status.Good
	}
	pv, _ := s.lookupLocked(prop)
	val := s.currentValueLocked(pv)
	if val.IsNull() {
		return nil, status.Good
	}
	eos, ok := val.Value().([]codec.ExtensionObject)
	if !ok {
		return nil, status.BadInternalError
	}
	args := make([]ua.Argument, len(eos))
	for i := range eos {
		switch a := eos[i].Value.(type) {
		case *ua.Argument:
			args[i] = *a
		default:
			return nil, status.BadInternalError
		}
	}
	return args, status.Good
}

// principalKey is the context key of the caller of a Method.
type principalKey struct{}

// CallPrincipal returns who calls the Method whose handler got ctx (Part 9 asks for
// the user of an Acknowledge and the session of a ConditionRefresh), or nil outside a
// Call.
func CallPrincipal(ctx context.Context) *nodemgr.Principal {
	p, _ := ctx.Value(principalKey{}).(*nodemgr.Principal)
	return p
}

// SetMethodHandler makes handler the implementation of a Method that exists already, a
// Method of namespace 0's types such as AcknowledgeableConditionType's Acknowledge
// (Part 9), which clients call with the instance as ObjectId (Part 4 §5.11.2). It
// fails for an unknown node, one that is not a Method, or one that has a handler.
func (s *Space) SetMethodHandler(method codec.NodeId, handler MethodHandler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.lookupLocked(method)
	switch {
	case handler == nil:
		return fmt.Errorf("addrspace: SetMethodHandler %v: nil handler", method)
	case !ok || v.class() != ua.NodeClassMethod:
		return fmt.Errorf("addrspace: SetMethodHandler: %v is not a Method", method)
	case s.methods[method] != nil:
		return fmt.Errorf("addrspace: SetMethodHandler: %v has a handler", method)
	}
	s.methods[method] = handler
	return nil
}
