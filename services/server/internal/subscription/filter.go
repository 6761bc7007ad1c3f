package subscription

import (
	"bytes"
	"strconv"
	"strings"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// EventTypes answers what an EventFilter needs to know about the type tree. The server
// implements it over its address space; it must be safe for concurrent use.
type EventTypes interface {
	// Known reports whether typ is a node of the address space.
	Known(typ codec.NodeId) bool
	// IsSubtype reports whether typ is super or one of its subtypes (HasSubtype).
	IsSubtype(typ, super codec.NodeId) bool
	// HasField reports whether the browse path names an instance declaration of typ or
	// of one of its supertypes (Part 4 §7.7.4.5).
	HasField(typ codec.NodeId, path []codec.QualifiedName) bool
}

// baseEventType is the root of every event type.
var baseEventType = codec.NewNumericNodeId(0, id.BaseEventType)

// FieldKey is the key of an event field in Event.Fields: the browse names of the path
// from the event, "/"-separated, each as "ns:name" (the form of Part 4 §A.2).
func FieldKey(path ...codec.QualifiedName) string {
	var b strings.Builder
	for i, q := range path {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(strconv.Itoa(int(q.NamespaceIndex)))
		b.WriteByte(':')
		b.WriteString(q.Name)
	}
	return b.String()
}

// field is a checked SimpleAttributeOperand: the event field it reads, or the NodeId
// of a condition (an empty path with AttributeId NodeId), which plain events have not.
type field struct {
	typ    codec.NodeId
	key    string
	nodeID bool
}

// compileField checks a SimpleAttributeOperand (Part 4 §7.7.4.5, §7.22.3).
func compileField(o *ua.SimpleAttributeOperand, types EventTypes) (field, status.Code) {
	typ := o.TypeDefinitionId
	if typ.IsNull() {
		typ = baseEventType
	}
	switch {
	case !types.Known(typ):
		return field{}, status.BadNodeIdUnknown
	case !types.IsSubtype(typ, baseEventType):
		return field{}, status.BadTypeDefinitionInvalid
	}
	if len(o.BrowsePath) == 0 {
		if o.AttributeId == uint32(attr.NodeId) {
			return field{typ: typ, nodeID: true}, status.Good
		}
		return field{}, status.BadBrowseNameInvalid
	}
	for _, q := range o.BrowsePath {
		if q.Name == "" {
			return field{}, status.BadBrowseNameInvalid
		}
	}
	// With BaseEventType the path is taken without regard to the type, so that it may
	// name a field of any subtype (Part 4 §7.22.3).
	if typ != baseEventType && !types.HasField(typ, o.BrowsePath) {
		return field{}, status.BadBrowseNameInvalid
	}
	if o.AttributeId != uint32(attr.Value) {
		return field{}, status.BadAttributeIdInvalid
	}
	if o.IndexRange != "" {
		return field{}, status.BadIndexRangeInvalid
	}
	return field{typ: typ, key: FieldKey(o.BrowsePath...)}, status.Good
}

// value reads the field of ev: null when ev is not of the operand's type.
func (f *field) value(ev *Event, types EventTypes) codec.Variant {
	if f.typ != baseEventType && !types.IsSubtype(ev.Type, f.typ) {
		return codec.Variant{}
	}
	if f.nodeID {
		return ev.Fields[KeyConditionId]
	}
	return ev.Fields[f.key]
}

// operand is a checked FilterOperand.
type operand struct {
	kind    byte // 'l' literal, 'e' element, 'a' attribute
	literal codec.Variant
	element int
	field   field
}

// element is a checked ContentFilterElement.
type element struct {
	op       ua.FilterOperator
	operands []operand
}

// whereClause is a checked ContentFilter (Part 4 §7.7); empty matches every event.
type whereClause struct {
	elements []element
	results  []codec.Variant // per element, while matches runs; used under Engine.mu
}

// operandCount returns how many operands op takes (min, max; max -1 for any) and
// whether the engine evaluates it.
func operandCount(op ua.FilterOperator) (lo, hi int, ok bool) {
	switch op {
	case ua.FilterOperatorIsNull, ua.FilterOperatorNot, ua.FilterOperatorOfType:
		return 1, 1, true
	case ua.FilterOperatorEquals, ua.FilterOperatorGreaterThan, ua.FilterOperatorLessThan,
		ua.FilterOperatorGreaterThanOrEqual, ua.FilterOperatorLessThanOrEqual, ua.FilterOperatorLike,
		ua.FilterOperatorAnd, ua.FilterOperatorOr:
		return 2, 2, true
	case ua.FilterOperatorBetween:
		return 3, 3, true
	case ua.FilterOperatorInList:
		return 2, -1, true
	}
	return 0, 0, false
}

// compileWhere checks a ContentFilter (Part 4 §7.7.1): a known, supported operator per
// element with the right number of operands, Element operands pointing forward (so the
// filter has no loops), SimpleAttributeOperands naming event fields. The result has
// one entry per element and is nil when every element is good.
func compileWhere(cf *ua.ContentFilter, types EventTypes) (whereClause, []ua.ContentFilterElementResult) {
	w := whereClause{elements: make([]element, len(cf.Elements))}
	res := make([]ua.ContentFilterElementResult, len(cf.Elements))
	bad := false
	for i := range cf.Elements {
		el := &cf.Elements[i]
		r := &res[i]
		op := el.FilterOperator
		if op < ua.FilterOperatorEquals || op > ua.FilterOperatorBitwiseOr {
			r.StatusCode, bad = status.BadFilterOperatorInvalid, true
			continue
		}
		lo, hi, ok := operandCount(op)
		if !ok {
			r.StatusCode, bad = status.BadFilterOperatorUnsupported, true
			continue
		}
		if len(el.FilterOperands) < lo || (hi >= 0 && len(el.FilterOperands) > hi) {
			r.StatusCode, bad = status.BadFilterOperandCountMismatch, true
			continue
		}
		ops := make([]operand, len(el.FilterOperands))
		codes := make([]status.Code, len(el.FilterOperands))
		opBad := false
		for j := range el.FilterOperands {
			ops[j], codes[j] = compileOperand(&el.FilterOperands[j], i, len(cf.Elements), types)
			if codes[j] != status.Good {
				opBad = true
			}
		}
		if op == ua.FilterOperatorOfType && codes[0] == status.Good &&
			(ops[0].kind != 'l' || ops[0].literal.Type() != codec.TypeNodeId || ops[0].literal.IsArray()) {
			codes[0], opBad = status.BadFilterOperandInvalid, true
		}
		if opBad {
			r.StatusCode, r.OperandStatusCodes, bad = status.BadFilterOperandInvalid, codes, true
			continue
		}
		w.elements[i] = element{op: op, operands: ops}
	}
	if !bad {
		res = nil
	}
	return w, res
}

// compileOperand checks operand j of element i of n.
func compileOperand(x *codec.ExtensionObject, i, n int, types EventTypes) (operand, status.Code) {
	switch v := x.Value.(type) {
	case *ua.LiteralOperand:
		return operand{kind: 'l', literal: v.Value}, status.Good
	case *ua.ElementOperand:
		if int(v.Index) <= i || int(v.Index) >= n {
			return operand{}, status.BadFilterOperandInvalid
		}
		return operand{kind: 'e', element: int(v.Index)}, status.Good
	case *ua.SimpleAttributeOperand:
		f, code := compileField(v, types)
		if code != status.Good {
			return operand{}, code
		}
		return operand{kind: 'a', field: f}, status.Good
	case *ua.AttributeOperand:
		return operand{}, status.BadFilterOperandInvalid // not allowed in an EventFilter (Part 4 §7.7.4.4)
	}
	return operand{}, status.BadFilterOperandInvalid
}

// matches reports whether ev passes the where clause: element 0 evaluates to true.
func (w *whereClause) matches(ev *Event, types EventTypes, cmp *comparer) bool {
	if len(w.elements) == 0 {
		return true
	}
	// Element operands point forward, so evaluating from the last element to the first
	// sees every operand already done: each element once, however many paths lead to it.
	n := len(w.elements)
	if cap(w.results) < n {
		w.results = make([]codec.Variant, n)
	}
	res := w.results[:n]
	for i := n - 1; i >= 0; i-- {
		res[i] = w.eval(i, res, ev, types, cmp)
	}
	v := res[0]
	clear(res)
	return v.Type() == codec.TypeBoolean && v.Bits() != 0
}

var (
	vTrue  = codec.BooleanVariant(true)
	vFalse = codec.BooleanVariant(false)
)

func boolV(b bool) codec.Variant {
	if b {
		return vTrue
	}
	return vFalse
}

// truth is the three-valued logic of Part 4 §7.7.3: 1 true, 0 false, -1 null.
func truth(v *codec.Variant) int {
	if v.Type() != codec.TypeBoolean || v.IsArray() {
		return -1
	}
	return int(v.Bits() & 1)
}

// eval evaluates element i; res holds the results of the elements after it.
func (w *whereClause) eval(i int, res []codec.Variant, ev *Event, types EventTypes, cmp *comparer) codec.Variant {
	el := &w.elements[i]
	if len(el.operands) == 0 {
		return codec.Variant{} // an element compileWhere refused
	}
	arg := func(j int) codec.Variant {
		o := &el.operands[j]
		switch o.kind {
		case 'e':
			return res[o.element]
		case 'a':
			return o.field.value(ev, types)
		}
		return o.literal
	}
	switch el.op {
	case ua.FilterOperatorAnd:
		a, b := arg(0), arg(1)
		ta, tb := truth(&a), truth(&b)
		switch {
		case ta == 0 || tb == 0:
			return vFalse
		case ta == 1 && tb == 1:
			return vTrue
		}
		return codec.Variant{}
	case ua.FilterOperatorOr:
		a, b := arg(0), arg(1)
		ta, tb := truth(&a), truth(&b)
		switch {
		case ta == 1 || tb == 1:
			return vTrue
		case ta == 0 && tb == 0:
			return vFalse
		}
		return codec.Variant{}
	case ua.FilterOperatorNot:
		a := arg(0)
		if t := truth(&a); t >= 0 {
			return boolV(t == 0)
		}
		return codec.Variant{}
	case ua.FilterOperatorIsNull:
		a := arg(0)
		return boolV(a.IsNull())
	case ua.FilterOperatorOfType:
		return boolV(types.IsSubtype(ev.Type, el.operands[0].literal.NodeId()))
	case ua.FilterOperatorEquals:
		a, b := arg(0), arg(1)
		if a.IsNull() || b.IsNull() {
			return vFalse
		}
		c, ok := compare(&a, &b, cmp)
		return boolV(ok && c == 0)
	case ua.FilterOperatorGreaterThan, ua.FilterOperatorLessThan,
		ua.FilterOperatorGreaterThanOrEqual, ua.FilterOperatorLessThanOrEqual:
		a, b := arg(0), arg(1)
		c, ok := order(&a, &b)
		if !ok {
			return vFalse
		}
		switch el.op {
		case ua.FilterOperatorGreaterThan:
			return boolV(c > 0)
		case ua.FilterOperatorLessThan:
			return boolV(c < 0)
		case ua.FilterOperatorGreaterThanOrEqual:
			return boolV(c >= 0)
		}
		return boolV(c <= 0)
	case ua.FilterOperatorBetween:
		a, lo, hi := arg(0), arg(1), arg(2)
		c1, ok1 := order(&a, &lo)
		c2, ok2 := order(&a, &hi)
		return boolV(ok1 && ok2 && c1 >= 0 && c2 <= 0)
	case ua.FilterOperatorInList:
		a := arg(0)
		if a.IsNull() {
			return vFalse
		}
		for j := 1; j < len(el.operands); j++ {
			b := arg(j)
			if c, ok := compare(&a, &b, cmp); ok && c == 0 {
				return vTrue
			}
		}
		return vFalse
	case ua.FilterOperatorLike:
		a, b := arg(0), arg(1)
		s, ok1 := text(&a)
		p, ok2 := text(&b)
		return boolV(ok1 && ok2 && like(s, p))
	}
	return codec.Variant{}
}

// text returns the string form of a String, LocalizedText or QualifiedName scalar.
func text(v *codec.Variant) (string, bool) {
	if v.IsArray() {
		return "", false
	}
	switch v.Type() {
	case codec.TypeString, codec.TypeXmlElement:
		return v.Str(), true
	case codec.TypeLocalizedText:
		if lt, ok := v.Value().(codec.LocalizedText); ok {
			return lt.Text, true
		}
	case codec.TypeQualifiedName:
		if q, ok := v.Value().(codec.QualifiedName); ok {
			return q.Name, true
		}
	}
	return "", false
}

// order compares two scalars that have an order (Part 4 §7.7.3, with its implicit
// conversions between numbers and numeric strings): numbers, text, DateTimes,
// StatusCodes. ok is false for values that do not compare.
func order(a, b *codec.Variant) (int, bool) {
	if a.IsArray() || b.IsArray() || a.IsNull() || b.IsNull() {
		return 0, false
	}
	x, okA := numeric(a)
	y, okB := numeric(b)
	if !okA && okB {
		x, okA = parseNumber(a)
	}
	if okA && !okB {
		y, okB = parseNumber(b)
	}
	if okA && okB {
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	if s, ok := text(a); ok {
		if t, ok := text(b); ok {
			return strings.Compare(s, t), true
		}
		return 0, false
	}
	if a.Type() != b.Type() {
		return 0, false
	}
	switch a.Type() {
	case codec.TypeDateTime:
		x, y := int64(a.Bits()), int64(b.Bits())
		return cmpInt(x, y), true
	case codec.TypeStatusCode, codec.TypeBoolean:
		return cmpInt(int64(a.Bits()), int64(b.Bits())), true
	case codec.TypeByteString:
		return bytes.Compare(a.ByteString(), b.ByteString()), true
	}
	return 0, false
}

func cmpInt(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// parseNumber converts a numeric string operand to a number.
func parseNumber(v *codec.Variant) (float64, bool) {
	if v.Type() != codec.TypeString || v.IsArray() {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v.Str()), 64)
	return f, err == nil
}

// compare is order, falling back to equality of the encodings for values without an
// order (NodeIds, Guids, arrays); c is 0 when equal.
func compare(a, b *codec.Variant, cmp *comparer) (int, bool) {
	if c, ok := order(a, b); ok {
		return c, true
	}
	if a.Type() == codec.TypeNodeId && b.Type() == codec.TypeExpandedNodeId {
		a, b = b, a
	}
	if a.Type() == codec.TypeExpandedNodeId && b.Type() == codec.TypeNodeId && !a.IsArray() && !b.IsArray() {
		if x, ok := a.Value().(codec.ExpandedNodeId); ok && x.NamespaceURI == "" && x.ServerIndex == 0 {
			if x.NodeId == b.NodeId() {
				return 0, true
			}
			return 1, true
		}
	}
	if cmp.equal(a, b) {
		return 0, true
	}
	return 1, a.Type() == b.Type()
}

// like matches s against a Like pattern (Part 4 §7.7.3 Table 117): % any run, _ any
// one character, [abc], [a-z] and [^...] one of or none of a set, \ escapes. It runs
// in O(len(s)·len(p)) however many % the pattern has.
func like(s, p string) bool {
	toks, ok := likeTokens([]rune(p))
	if !ok {
		return false
	}
	sr := []rune(s)
	// cur[i]: the tokens so far match sr[:i].
	cur := make([]bool, len(sr)+1)
	next := make([]bool, len(sr)+1)
	cur[0] = true
	for _, tk := range toks {
		clear(next)
		if tk.any {
			seen := false
			for i := range cur {
				seen = seen || cur[i]
				next[i] = seen
			}
		} else {
			for i := 0; i < len(sr); i++ {
				if cur[i] && tk.matches(sr[i]) {
					next[i+1] = true
				}
			}
		}
		cur, next = next, cur
	}
	return cur[len(sr)]
}

// likeToken is one element of a Like pattern: a run (%) or one character of a set.
type likeToken struct {
	any    bool   // %
	one    bool   // _
	neg    bool   // [^...]
	ranges []rune // pairs lo, hi
}

func (t *likeToken) matches(r rune) bool {
	if t.one {
		return true
	}
	in := false
	for k := 0; k+1 < len(t.ranges); k += 2 {
		if r >= t.ranges[k] && r <= t.ranges[k+1] {
			in = true
			break
		}
	}
	return in != t.neg
}

// likeTokens splits a Like pattern; ok is false for an unclosed [.
func likeTokens(p []rune) ([]likeToken, bool) {
	var toks []likeToken
	for j := 0; j < len(p); j++ {
		switch c := p[j]; c {
		case '%':
			if len(toks) == 0 || !toks[len(toks)-1].any {
				toks = append(toks, likeToken{any: true})
			}
		case '_':
			toks = append(toks, likeToken{one: true})
		case '[':
			end := j + 1
			for end < len(p) && p[end] != ']' {
				end++
			}
			if end >= len(p) {
				return nil, false
			}
			set := p[j+1 : end]
			t := likeToken{}
			if len(set) > 0 && set[0] == '^' {
				t.neg, set = true, set[1:]
			}
			for k := 0; k < len(set); k++ {
				if k+2 < len(set) && set[k+1] == '-' {
					t.ranges = append(t.ranges, set[k], set[k+2])
					k += 2
				} else {
					t.ranges = append(t.ranges, set[k], set[k])
				}
			}
			toks = append(toks, t)
			j = end
		case '\\':
			if j+1 < len(p) {
				j++
			}
			toks = append(toks, likeToken{ranges: []rune{p[j], p[j]}})
		default:
			toks = append(toks, likeToken{ranges: []rune{c, c}})
		}
	}
	return toks, true
}
