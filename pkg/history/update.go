package history

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Series is one node's history as a store lets the shared update logic (ApplyUpdate,
// ApplyDeleteRaw, ApplyDeleteAtTime) change it, under whatever lock or transaction the
// store holds for the call.
type Series interface {
	// Raw and Modified walk the raw and the modified values.
	Raw() Cursor[Stored]
	Modified() Cursor[Stored]
	// Put stores v at k among the raw values, replacing what is there.
	Put(k Key, v codec.DataValue) error
	// Delete removes the raw value at k; DeleteModified the modified one.
	Delete(k Key) error
	DeleteModified(k Key) error
	// AddModified appends v to the modified values, at its SourceTimestamp.
	AddModified(v Stored) error
	// NextKey is a key at time t after every key the series has at t.
	NextKey(t codec.DateTime) Key
}

// at returns the first raw value at time t.
func at(s Series, t codec.DateTime) (Item[Stored], bool) {
	it := s.Raw().SeekGE(Key{Time: t})
	if it == nil || it.Key.Time != t {
		return Item[Stored]{}, false
	}
	return *it, true
}

// ApplyUpdate applies u to s (Part 11 §6.9.2) and returns a code per value. A value
// replaced is kept among the modified values with its ModificationInfo. A value without
// SourceTimestamp is BadInvalidTimestamp.
func ApplyUpdate(s Series, u *Update, user string, now codec.DateTime) (ItemResult, error) {
	r := ItemResult{Operations: make([]status.Code, len(u.Values))}
	if u.Kind < ua.PerformUpdateTypeInsert || u.Kind > ua.PerformUpdateTypeUpdate {
		r.Status = status.BadHistoryOperationInvalid
		r.Operations = nil
		return r, nil
	}
	for i, v := range u.Values {
		if v.SourceTimestamp == 0 {
			r.Operations[i] = status.BadInvalidTimestamp
			continue
		}
		old, exists := at(s, v.SourceTimestamp)
		var typ ua.HistoryUpdateType
		switch {
		case exists && u.Kind == ua.PerformUpdateTypeInsert:
			r.Operations[i] = status.BadEntryExists
			continue
		case !exists && u.Kind == ua.PerformUpdateTypeReplace:
			r.Operations[i] = status.BadNoEntryExists
			continue
		case exists:
			typ, r.Operations[i] = ua.HistoryUpdateTypeReplace, status.GoodEntryReplaced
			if u.Kind == ua.PerformUpdateTypeUpdate {
				typ = ua.HistoryUpdateTypeUpdate
			}
			if err := s.AddModified(Stored{Value: old.V.Value, Mod: ua.ModificationInfo{ModificationTime: now, UpdateType: typ, UserName: user}}); err != nil {
				return r, err
			}
			if err := s.Put(old.Key, v); err != nil {
				return r, err
			}
		default:
			typ, r.Operations[i] = ua.HistoryUpdateTypeInsert, status.GoodEntryInserted
			if u.Kind == ua.PerformUpdateTypeUpdate {
				typ = ua.HistoryUpdateTypeUpdate
			}
			if err := s.AddModified(Stored{Value: v, Mod: ua.ModificationInfo{ModificationTime: now, UpdateType: typ, UserName: user}}); err != nil {
				return r, err
			}
			if err := s.Put(s.NextKey(v.SourceTimestamp), v); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}

// ApplyDeleteRaw deletes the values of d's range (Part 11 §6.9.5): raw values go to
// the modified values as deleted; with d.Modified, modified values go for good.
// BadNoData when the range holds none.
func ApplyDeleteRaw(s Series, d *DeleteRaw, user string, now codec.DateTime) (ItemResult, error) {
	lo, hi := d.Start, d.End
	if hi != 0 && hi < lo {
		lo, hi = hi, lo
	}
	c := s.Raw()
	if d.Modified {
		c = s.Modified()
	}
	var found []Item[Stored]
	for it := c.SeekGE(Key{Time: lo}); it != nil && (hi == 0 || it.Key.Time < hi); it = c.Next() {
		found = append(found, *it)
	}
	if len(found) == 0 {
		return ItemResult{Status: status.BadNoData}, nil
	}
	for _, it := range found {
		if d.Modified {
			if err := s.DeleteModified(it.Key); err != nil {
				return ItemResult{}, err
			}
			continue
		}
		if err := s.AddModified(Stored{Value: it.V.Value, Mod: ua.ModificationInfo{ModificationTime: now, UpdateType: ua.HistoryUpdateTypeDelete, UserName: user}}); err != nil {
			return ItemResult{}, err
		}
		if err := s.Delete(it.Key); err != nil {
			return ItemResult{}, err
		}
	}
	return ItemResult{Status: status.Good}, nil
}

// ApplyDeleteAtTime deletes the raw value at each of d.Times (Part 11 §6.9.6):
// BadNoEntryExists for a time without one.
func ApplyDeleteAtTime(s Series, d *DeleteAtTime, user string, now codec.DateTime) (ItemResult, error) {
	r := ItemResult{Operations: make([]status.Code, len(d.Times))}
	for i, t := range d.Times {
		it, ok := at(s, t)
		if !ok {
			r.Operations[i] = status.BadNoEntryExists
			continue
		}
		if err := s.AddModified(Stored{Value: it.V.Value, Mod: ua.ModificationInfo{ModificationTime: now, UpdateType: ua.HistoryUpdateTypeDelete, UserName: user}}); err != nil {
			return r, err
		}
		if err := s.Delete(it.Key); err != nil {
			return r, err
		}
	}
	return r, nil
}
