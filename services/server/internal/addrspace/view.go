package addrspace

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/ns0"
)

// view is a node of either source, a run-time Node or a namespace 0 table record, with
// the Value state the Space keeps of it (e, nil when none).
type view struct {
	n   *stored
	tab ns0.Node
	e   *entry
}

// computed reports whether v's Value comes from a ValueFunc.
func (v view) computed() bool { return v.e != nil && v.e.source != nil }

// value returns the stored Value of v, nil when there is none.
func (v view) value() *codec.DataValue {
	if v.e == nil {
		return nil
	}
	return v.e.value
}

func (v view) class() ua.NodeClass {
	if v.n != nil {
		return v.n.NodeClass
	}
	return v.tab.NodeClass()
}

func (v view) browseName() codec.QualifiedName {
	if v.n != nil {
		return v.n.BrowseName
	}
	return v.tab.BrowseName()
}

func (v view) displayName() codec.LocalizedText {
	if v.n != nil {
		return v.n.DisplayName
	}
	return v.tab.DisplayName()
}

func (v view) accessLevel() uint8 {
	if v.n != nil {
		return v.n.AccessLevel
	}
	return v.tab.AccessLevel()
}

func (v view) dataType() codec.NodeId {
	if v.n != nil {
		return v.n.DataType
	}
	if d := v.tab.DataType(); d != 0 {
		return codec.NewNumericNodeId(0, d)
	}
	return codec.NodeId{}
}

func (v view) valueRank() int32 {
	if v.n != nil {
		return v.n.ValueRank
	}
	return v.tab.ValueRank()
}

// mayWrite reports whether a principal with roles may write v (Node.WriteRoles).
func (v view) mayWrite(roles []codec.NodeId) bool {
	if v.n != nil && v.n.UserAccessDenied&uint8(ua.AccessLevelTypeCurrentWrite) != 0 {
		return false
	}
	if v.n == nil || len(v.n.WriteRoles) == 0 {
		return true
	}
	for _, r := range roles {
		for _, w := range v.n.WriteRoles {
			if r == w {
				return true
			}
		}
	}
	return false
}

// mayRead reports whether a principal with roles may read the Value of v.
func (v view) mayRead(roles []codec.NodeId) bool {
	if v.e == nil || !v.e.restricted {
		return true
	}
	for _, r := range roles {
		for _, w := range v.e.readRoles {
			if r == w {
				return true
			}
		}
	}
	return false
}

// userAccessLevel is the AccessLevel of v as seen by a principal with roles
// (Part 3 §5.6.2 UserAccessLevel): without the write bits when it may not write.
func (v view) userAccessLevel(roles []codec.NodeId) uint8 {
	al := v.accessLevel()
	if v.n != nil {
		al &^= v.n.UserAccessDenied
	}
	if !v.mayWrite(roles) {
		al &^= uint8(ua.AccessLevelTypeCurrentWrite | ua.AccessLevelTypeStatusWrite |
			ua.AccessLevelTypeTimestampWrite | ua.AccessLevelTypeHistoryWrite)
	}
	return al
}

// lookupLocked finds id among the run-time nodes, then in namespace 0; s.mu must be held.
func (s *Space) lookupLocked(id codec.NodeId) (view, bool) {
	if e := s.entries.get(id); e != nil {
		switch {
		case e.n != nil:
			return view{n: e.n, e: e}, true
		case e.inTable:
			return view{tab: e.tab, e: e}, true
		}
		return view{}, false // the entry was made knowing whether the tables hold its node
	}
	if id.Namespace() == 0 && id.Type() == codec.IDNumeric {
		if t, ok := ns0.Lookup(id.IntID()); ok {
			return view{tab: t}, true
		}
	}
	return view{}, false
}
