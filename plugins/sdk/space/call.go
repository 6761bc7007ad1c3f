package space

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Call answers op (Part 4 §5.11.2) and calls done before returning. The ObjectId must
// be an Object of the Space with a HasComponent to the Method; the input arguments
// must match the Method's InputArguments in number (BadArgumentsMissing,
// BadTooManyArguments) and each in DataType and ValueRank (BadTypeMismatch in its
// InputArgumentResults, and BadInvalidArgument for the call). Then Method.Run runs,
// without the Space's lock held.
func (s *Space) Call(_ context.Context, op *nodemgr.CallOp, done func()) {
	defer done()
	for i := range op.Items {
		op.Results[i] = s.callOne(&op.Items[i])
	}
}

func (s *Space) callOne(req *ua.CallMethodRequest) ua.CallMethodResult {
	s.mu.RLock()
	m, c := s.methodLocked(req.ObjectId, req.MethodId)
	s.mu.RUnlock()
	if c != status.Good {
		return ua.CallMethodResult{StatusCode: c}
	}
	// m's inputs and run are fixed when it is added: no lock needed from here on.
	switch {
	case len(req.InputArguments) < len(m.inputs):
		return ua.CallMethodResult{StatusCode: status.BadArgumentsMissing}
	case len(req.InputArguments) > len(m.inputs):
		return ua.CallMethodResult{StatusCode: status.BadTooManyArguments}
	}
	var res ua.CallMethodResult
	if len(m.inputs) > 0 {
		res.InputArgumentResults = make([]status.Code, len(m.inputs))
		for i := range m.inputs {
			if !typeMatches(&req.InputArguments[i], m.inputs[i].DataType, m.inputs[i].ValueRank) {
				res.InputArgumentResults[i] = status.BadTypeMismatch
				res.StatusCode = status.BadInvalidArgument
			}
		}
		if res.StatusCode != status.Good {
			return res
		}
	}
	out, c := m.run(req.ObjectId, req.InputArguments)
	res.StatusCode = c
	if !c.IsBad() {
		res.OutputArguments = out
	}
	return res
}

// methodLocked finds the Method method called on object; s.mu must be held for reading.
func (s *Space) methodLocked(object, method codec.NodeId) (*node, status.Code) {
	o := s.nodes[object]
	if o == nil {
		return nil, status.BadNodeIdUnknown
	}
	if o.class != ua.NodeClassObject {
		return nil, status.BadNodeIdInvalid
	}
	m := s.nodes[method]
	if m == nil || m.class != ua.NodeClassMethod {
		return nil, status.BadMethodInvalid
	}
	for _, r := range o.refs {
		if r.IsForward && r.TargetId == method && isSubtype(r.ReferenceTypeId, hasComponent) {
			if !m.executable {
				return nil, status.BadNotExecutable
			}
			return m, status.Good
		}
	}
	return nil, status.BadMethodInvalid
}
