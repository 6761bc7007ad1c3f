package subscription

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/pkg/ua/ns0"
)

// ns0Types is EventTypes over the static namespace-0 tables: the type tree the server
// serves, without a server.
type ns0Types struct{}

func (ns0Types) Known(typ codec.NodeId) bool {
	n, ok := lookup0(typ)
	return ok && n.NodeClass() == ua.NodeClassObjectType
}

func lookup0(n codec.NodeId) (ns0.Node, bool) {
	if n.Namespace() != 0 || n.Type() != codec.IDNumeric {
		return ns0.Node{}, false
	}
	return ns0.Lookup(n.IntID())
}

func (ns0Types) IsSubtype(typ, super codec.NodeId) bool {
	for range 64 {
		if typ == super {
			return true
		}
		n, ok := lookup0(typ)
		if !ok {
			return false
		}
		if typ, ok = supertype0(n); !ok {
			return false
		}
	}
	return false
}

// HasField follows HasProperty and HasComponent from typ and its supertypes.
func (ns0Types) HasField(typ codec.NodeId, path []codec.QualifiedName) bool {
	for range 64 {
		n, ok := lookup0(typ)
		if !ok {
			return false
		}
		if pathFrom(n, path) {
			return true
		}
		super, ok := supertype0(n)
		if !ok {
			return false
		}
		typ = super
	}
	return false
}

// pathFrom reports whether path leads from n along forward HasProperty or HasComponent.
func pathFrom(n ns0.Node, path []codec.QualifiedName) bool {
	for _, q := range path {
		found := false
		for _, r := range n.References() {
			if !r.IsForward || (r.ReferenceTypeId != id.HasProperty && r.ReferenceTypeId != id.HasComponent) {
				continue
			}
			if c, ok := ns0.Lookup(r.TargetId); ok && c.BrowseName() == q {
				n, found = c, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// supertype0 returns the source of n's inverse HasSubtype.
func supertype0(n ns0.Node) (codec.NodeId, bool) {
	for _, r := range n.References() {
		if r.ReferenceTypeId == id.HasSubtype && !r.IsForward {
			return codec.NewNumericNodeId(0, r.TargetId), true
		}
	}
	return codec.NodeId{}, false
}

func n0(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }

func sao(typ uint32, names ...string) *ua.SimpleAttributeOperand {
	o := &ua.SimpleAttributeOperand{TypeDefinitionId: n0(typ), AttributeId: uint32(attr.Value)}
	for _, n := range names {
		o.BrowsePath = append(o.BrowsePath, codec.QualifiedName{Name: n})
	}
	return o
}

func lit(v codec.Variant) codec.ExtensionObject {
	return codec.NewExtensionObject(&ua.LiteralOperand{Value: v})
}

func fld(names ...string) codec.ExtensionObject {
	return codec.NewExtensionObject(sao(id.BaseEventType, names...))
}

func elem(i uint32) codec.ExtensionObject {
	return codec.NewExtensionObject(&ua.ElementOperand{Index: i})
}

func el(op ua.FilterOperator, ops ...codec.ExtensionObject) ua.ContentFilterElement {
	return ua.ContentFilterElement{FilterOperator: op, FilterOperands: ops}
}

// testEvent is a DeviceFailureEventType (a SystemEventType) of severity 700.
func testEvent() *Event {
	return &Event{Type: n0(id.DeviceFailureEventType), Fields: map[string]codec.Variant{
		KeyEventType:  codec.NodeIdVariant(n0(id.DeviceFailureEventType)),
		KeySourceName: codec.StringVariant("Pump/7"),
		KeySeverity:   codec.UInt16Variant(700),
		KeyMessage:    codec.MustVariant(codec.LocalizedText{Text: "bearing hot"}),
		KeyTime:       codec.DateTimeVariant(1000),
	}}
}

func TestWhereClauseOperators(t *testing.T) {
	t.Parallel()
	sev := fld("Severity")
	i32 := func(x int32) codec.ExtensionObject { return lit(codec.Int32Variant(x)) }
	str := func(s string) codec.ExtensionObject { return lit(codec.StringVariant(s)) }
	nid := func(i uint32) codec.ExtensionObject { return lit(codec.NodeIdVariant(n0(i))) }
	tests := []struct {
		name  string
		elems []ua.ContentFilterElement
		want  bool
	}{
		{"empty matches all", nil, true},
		{"Equals numeric across types", []ua.ContentFilterElement{el(ua.FilterOperatorEquals, sev, i32(700))}, true},
		{"Equals false", []ua.ContentFilterElement{el(ua.FilterOperatorEquals, sev, i32(701))}, false},
		{"Equals numeric string", []ua.ContentFilterElement{el(ua.FilterOperatorEquals, sev, str("700"))}, true},
		{"Equals text", []ua.ContentFilterElement{el(ua.FilterOperatorEquals, fld("SourceName"), str("Pump/7"))}, true},
		{"Equals LocalizedText to String", []ua.ContentFilterElement{el(ua.FilterOperatorEquals, fld("Message"), str("bearing hot"))}, true},
		{"Equals NodeId", []ua.ContentFilterElement{el(ua.FilterOperatorEquals, fld("EventType"), nid(id.DeviceFailureEventType))}, true},
		{"Equals null is false", []ua.ContentFilterElement{el(ua.FilterOperatorEquals, fld("ReceiveTime"), fld("ReceiveTime"))}, false},
		{"GreaterThan", []ua.ContentFilterElement{el(ua.FilterOperatorGreaterThan, sev, i32(500))}, true},
		{"GreaterThan equal", []ua.ContentFilterElement{el(ua.FilterOperatorGreaterThan, sev, i32(700))}, false},
		{"GreaterThanOrEqual", []ua.ContentFilterElement{el(ua.FilterOperatorGreaterThanOrEqual, sev, i32(700))}, true},
		{"LessThan", []ua.ContentFilterElement{el(ua.FilterOperatorLessThan, sev, i32(700))}, false},
		{"LessThan true", []ua.ContentFilterElement{el(ua.FilterOperatorLessThan, sev, lit(codec.DoubleVariant(700.5)))}, true},
		{"LessThanOrEqual", []ua.ContentFilterElement{el(ua.FilterOperatorLessThanOrEqual, sev, i32(700))}, true},
		{"GreaterThan string vs number not numeric", []ua.ContentFilterElement{el(ua.FilterOperatorGreaterThan, sev, str("abc"))}, false},
		{"GreaterThan DateTime", []ua.ContentFilterElement{el(ua.FilterOperatorGreaterThan, fld("Time"), lit(codec.DateTimeVariant(999)))}, true},
		{"Between", []ua.ContentFilterElement{el(ua.FilterOperatorBetween, sev, i32(600), i32(800))}, true},
		{"InList hit", []ua.ContentFilterElement{el(ua.FilterOperatorInList, sev, i32(100), i32(700), i32(900))}, true},
		{"InList miss", []ua.ContentFilterElement{el(ua.FilterOperatorInList, sev, i32(100), i32(900))}, false},
		{"IsNull of a missing field", []ua.ContentFilterElement{el(ua.FilterOperatorIsNull, fld("ReceiveTime"))}, true},
		{"IsNull of a present field", []ua.ContentFilterElement{el(ua.FilterOperatorIsNull, sev)}, false},
		{"OfType itself", []ua.ContentFilterElement{el(ua.FilterOperatorOfType, nid(id.DeviceFailureEventType))}, true},
		{"OfType supertype", []ua.ContentFilterElement{el(ua.FilterOperatorOfType, nid(id.SystemEventType))}, true},
		{"OfType root", []ua.ContentFilterElement{el(ua.FilterOperatorOfType, nid(id.BaseEventType))}, true},
		{"OfType sibling", []ua.ContentFilterElement{el(ua.FilterOperatorOfType, nid(id.AuditEventType))}, false},
		{"Like %", []ua.ContentFilterElement{el(ua.FilterOperatorLike, fld("SourceName"), str("Pump%"))}, true},
		{"Like _ and set", []ua.ContentFilterElement{el(ua.FilterOperatorLike, fld("SourceName"), str("Pum_/[0-9]"))}, true},
		{"Like negated set", []ua.ContentFilterElement{el(ua.FilterOperatorLike, fld("SourceName"), str("Pump/[^7]"))}, false},
		{"Like no match", []ua.ContentFilterElement{el(ua.FilterOperatorLike, fld("SourceName"), str("Valve%"))}, false},
		{"Not", []ua.ContentFilterElement{el(ua.FilterOperatorNot, elem(1)), el(ua.FilterOperatorGreaterThan, sev, i32(800))}, true},
		{"Not of null is null", []ua.ContentFilterElement{el(ua.FilterOperatorNot, fld("ReceiveTime"))}, false},
		{"And", []ua.ContentFilterElement{
			el(ua.FilterOperatorAnd, elem(1), elem(2)),
			el(ua.FilterOperatorGreaterThan, sev, i32(500)),
			el(ua.FilterOperatorOfType, nid(id.SystemEventType)),
		}, true},
		{"And one false", []ua.ContentFilterElement{
			el(ua.FilterOperatorAnd, elem(1), elem(2)),
			el(ua.FilterOperatorGreaterThan, sev, i32(500)),
			el(ua.FilterOperatorOfType, nid(id.AuditEventType)),
		}, false},
		{"Or", []ua.ContentFilterElement{
			el(ua.FilterOperatorOr, elem(1), elem(2)),
			el(ua.FilterOperatorLessThan, sev, i32(500)),
			el(ua.FilterOperatorEquals, fld("SourceName"), str("Pump/7")),
		}, true},
		{"nested Not(Or(And, ...))", []ua.ContentFilterElement{
			el(ua.FilterOperatorNot, elem(1)),
			el(ua.FilterOperatorOr, elem(2), elem(3)),
			el(ua.FilterOperatorAnd, elem(3), elem(4)),
			el(ua.FilterOperatorLessThan, sev, i32(100)),
			el(ua.FilterOperatorIsNull, fld("Severity")),
		}, true},
		{"field of another type is null", []ua.ContentFilterElement{
			el(ua.FilterOperatorIsNull, codec.NewExtensionObject(sao(id.AuditEventType, "Severity")))}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, res := compileWhere(&ua.ContentFilter{Elements: tt.elems}, ns0Types{})
			require.Nil(t, res)
			var cmp comparer
			require.Equal(t, tt.want, w.matches(testEvent(), ns0Types{}, &cmp))
		})
	}
}

// TestWhereClauseSharedElements: a filter whose elements are reached by many paths
// (here 2^200) is evaluated once per element, not once per path.
func TestWhereClauseSharedElements(t *testing.T) {
	t.Parallel()
	const n = 200
	elems := make([]ua.ContentFilterElement, n+1)
	for i := range n {
		elems[i] = el(ua.FilterOperatorAnd, elem(uint32(i+1)), elem(uint32(i+1)))
	}
	elems[n] = el(ua.FilterOperatorGreaterThan, fld("Severity"), lit(codec.Int32Variant(500)))
	w, res := compileWhere(&ua.ContentFilter{Elements: elems}, ns0Types{})
	require.Nil(t, res)
	var cmp comparer
	done := make(chan bool, 1)
	go func() { done <- w.matches(testEvent(), ns0Types{}, &cmp) }()
	select {
	case ok := <-done:
		require.True(t, ok)
	case <-time.After(5 * time.Second):
		t.Fatal("evaluation did not finish")
	}
}

func TestWhereClauseErrors(t *testing.T) {
	t.Parallel()
	sev := fld("Severity")
	one := lit(codec.Int32Variant(1))
	tests := []struct {
		name     string
		elem     ua.ContentFilterElement
		code     status.Code
		operands []status.Code
	}{
		{"unknown operator", el(ua.FilterOperator(99), sev, one), status.BadFilterOperatorInvalid, nil},
		{"unsupported operator", el(ua.FilterOperatorRelatedTo, sev, one), status.BadFilterOperatorUnsupported, nil},
		{"bitwise unsupported", el(ua.FilterOperatorBitwiseAnd, sev, one), status.BadFilterOperatorUnsupported, nil},
		{"too few operands", el(ua.FilterOperatorEquals, sev), status.BadFilterOperandCountMismatch, nil},
		{"too many operands", el(ua.FilterOperatorNot, sev, one), status.BadFilterOperandCountMismatch, nil},
		{"element pointing back", el(ua.FilterOperatorNot, elem(0)), status.BadFilterOperandInvalid, []status.Code{status.BadFilterOperandInvalid}},
		{"element out of range", el(ua.FilterOperatorNot, elem(5)), status.BadFilterOperandInvalid, []status.Code{status.BadFilterOperandInvalid}},
		{"OfType needs a NodeId", el(ua.FilterOperatorOfType, one), status.BadFilterOperandInvalid, []status.Code{status.BadFilterOperandInvalid}},
		{"unknown field", el(ua.FilterOperatorIsNull, codec.NewExtensionObject(sao(id.SystemEventType, "NoSuchField"))),
			status.BadFilterOperandInvalid, []status.Code{status.BadBrowseNameInvalid}},
		{"AttributeOperand", el(ua.FilterOperatorIsNull, codec.NewExtensionObject(&ua.AttributeOperand{})),
			status.BadFilterOperandInvalid, []status.Code{status.BadFilterOperandInvalid}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, res := compileWhere(&ua.ContentFilter{Elements: []ua.ContentFilterElement{tt.elem}}, ns0Types{})
			require.Len(t, res, 1)
			require.Equal(t, tt.code, res[0].StatusCode)
			require.Equal(t, tt.operands, res[0].OperandStatusCodes)
		})
	}
}

func TestSelectClauses(t *testing.T) {
	t.Parallel()
	unknown := sao(0, "Severity")
	unknown.TypeDefinitionId = codec.NewNumericNodeId(0, 999999)
	notEvent := sao(id.FolderType, "Severity")
	nodeIDAttr := sao(id.BaseEventType)
	nodeIDAttr.AttributeId = uint32(attr.NodeId)
	wrongAttr := sao(id.BaseEventType, "Severity")
	wrongAttr.AttributeId = uint32(attr.DisplayName)
	f := &ua.EventFilter{SelectClauses: []ua.SimpleAttributeOperand{
		*sao(id.BaseEventType, "Severity"),
		*sao(id.SystemEventType, "Message"),       // inherited from BaseEventType
		*sao(id.AuditEventType, "Severity"),       // valid, null for a SystemEvent
		*sao(id.BaseEventType, "AnySubtypeField"), // BaseEventType takes any path
		*unknown,
		*notEvent,
		*sao(id.SystemEventType, "NoSuchField"),
		*sao(id.BaseEventType),
		*nodeIDAttr, // ConditionId: null for an event that is no condition
		*wrongAttr,
	}}
	ef, res, code := CompileEventFilter(f, ns0Types{})
	require.Equal(t, status.Good, code)
	require.NotNil(t, res)
	require.Equal(t, []status.Code{status.Good, status.Good, status.Good, status.Good,
		status.BadNodeIdUnknown, status.BadTypeDefinitionInvalid, status.BadBrowseNameInvalid,
		status.BadBrowseNameInvalid, status.Good, status.BadAttributeIdInvalid}, res.SelectClauseResults)
	got := ef.fields(testEvent())
	require.Len(t, got, 10)
	require.Equal(t, codec.UInt16Variant(700), got[0])
	require.Equal(t, "bearing hot", got[1].Value().(codec.LocalizedText).Text)
	for _, i := range []int{2, 3, 4, 5, 6, 7, 8, 9} {
		require.True(t, got[i].IsNull(), "field %d", i)
	}

	_, res, code = CompileEventFilter(&ua.EventFilter{SelectClauses: f.SelectClauses[:2]}, ns0Types{})
	require.Equal(t, status.Good, code)
	require.Nil(t, res)

	_, _, code = CompileEventFilter(&ua.EventFilter{}, ns0Types{})
	require.Equal(t, status.BadEventFilterInvalid, code)

	_, res, code = CompileEventFilter(&ua.EventFilter{SelectClauses: f.SelectClauses[:1],
		WhereClause: ua.ContentFilter{Elements: []ua.ContentFilterElement{el(ua.FilterOperatorInView, fld("Severity"))}}}, ns0Types{})
	require.Equal(t, status.BadEventFilterInvalid, code)
	require.Nil(t, res.SelectClauseResults)
	require.Equal(t, status.BadFilterOperatorUnsupported, res.WhereClauseResult.ElementResults[0].StatusCode)
}

func TestLike(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s, p string
		want bool
	}{
		{"abc", "abc", true}, {"abc", "a%", true}, {"abc", "%c", true}, {"abc", "%b%", true},
		{"abc", "a_c", true}, {"abc", "a_", false}, {"abc", "[a-c]bc", true}, {"abc", "[^a]bc", false},
		{"a%c", `a\%c`, true}, {"abc", `a\%c`, false}, {"", "%", true}, {"", "_", false},
		{"abc", "[ab", false}, {"b", "[abc]", true}, {"d", "[abc]", false}, {"x", "[^abc]", true}, {"abc", "%%", true},
	} {
		require.Equal(t, tt.want, like(tt.s, tt.p), "%q like %q", tt.s, tt.p)
	}
	// Many % against a long text that almost matches: backtracking would take ages.
	start := time.Now()
	require.False(t, like(strings.Repeat("a", 5000), strings.Repeat("%a", 40)+"b"))
	require.Less(t, time.Since(start), 2*time.Second)
}
