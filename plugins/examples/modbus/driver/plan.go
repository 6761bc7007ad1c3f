package driver

import (
	"math"
	"reflect"
	"slices"
)

// request is one Modbus read: count registers or bits of table from start, and the
// points it answers.
type request struct {
	table  Table
	start  uint16
	count  uint16
	points []int // indexes into Options.Points, by address
}

// plan groups the points idx (indexes into pts, valid, possibly repeated) into as few
// reads as it can: points of one table whose registers touch or overlap share a read,
// up to the most a read may ask for. Registers between points are never read, since a
// device may not have them.
func plan(pts []Point, idx []int) []request {
	sorted := slices.Clone(idx)
	slices.SortFunc(sorted, func(a, b int) int {
		pa, pb := pts[a], pts[b]
		if pa.Table != pb.Table {
			return int(pa.Table) - int(pb.Table)
		}
		if pa.Address != pb.Address {
			return int(pa.Address) - int(pb.Address)
		}
		return a - b
	})
	sorted = slices.Compact(sorted)
	var reqs []request
	for _, i := range sorted {
		p := pts[i]
		start, end := int(p.Address), int(p.Address)+int(p.Width())
		if n := len(reqs); n > 0 {
			r := &reqs[n-1]
			rEnd := int(r.start) + int(r.count)
			if r.table == p.Table && start <= rEnd && max(rEnd, end)-int(r.start) <= p.Table.maxPerRequest() {
				r.count = uint16(max(rEnd, end) - int(r.start))
				r.points = append(r.points, i)
				continue
			}
		}
		reqs = append(reqs, request{table: p.Table, start: p.Address, count: p.Width(), points: []int{i}})
	}
	return reqs
}

// decode returns the value of p from the registers regs, which start at p's address.
func decode(p Point, order WordOrder, regs []uint16) any {
	switch p.Type {
	case Uint16:
		return regs[0]
	case Int16:
		return int16(regs[0])
	}
	hi, lo := regs[0], regs[1]
	if order == LowFirst {
		hi, lo = lo, hi
	}
	u := uint32(hi)<<16 | uint32(lo)
	switch p.Type {
	case Int32:
		return int32(u)
	case Float32:
		return math.Float32frombits(u)
	}
	return u
}

// encode returns the registers that hold u, a 32-bit value, in the given order.
func encode32(u uint32, order WordOrder) []uint16 {
	hi, lo := uint16(u>>16), uint16(u)
	if order == LowFirst {
		return []uint16{lo, hi}
	}
	return []uint16{hi, lo}
}

// convert returns v as the Go type of p's type, or a *RangeError or *TypeError. It takes
// every Go integer and float type for the numeric types (an integer type only a whole
// number) and only bool for Bool.
func convert(p Point, v any) (any, error) {
	rangeErr := func() (any, error) { return nil, &RangeError{Point: p.Name, Type: p.Type, Value: v} }
	typeErr := func() (any, error) { return nil, &TypeError{Point: p.Name, Type: p.Type, Value: v} }
	if p.Type == Bool {
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return typeErr()
	}
	rv := reflect.ValueOf(v)
	var (
		i     int64
		u     uint64
		f     float64
		kind  byte // 'i', 'u' or 'f'
		valid = true
	)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, kind = rv.Int(), 'i'
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u, kind = rv.Uint(), 'u'
	case reflect.Float32, reflect.Float64:
		f, kind = rv.Float(), 'f'
	default:
		valid = false
	}
	if !valid {
		return typeErr()
	}
	if p.Type == Float32 {
		switch kind {
		case 'i':
			return float32(i), nil
		case 'u':
			return float32(u), nil
		}
		if !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) > math.MaxFloat32 {
			return rangeErr()
		}
		return float32(f), nil
	}
	// An integer type: bring every kind to a sign and a magnitude.
	switch kind {
	case 'f':
		if math.IsNaN(f) || f != math.Trunc(f) {
			return typeErr()
		}
		if f < math.MinInt64 || f >= math.MaxUint64 {
			return rangeErr()
		}
		if f < 0 {
			i, kind = int64(f), 'i'
		} else {
			u, kind = uint64(f), 'u'
		}
	case 'i':
		if i >= 0 {
			u, kind = uint64(i), 'u'
		}
	}
	lo, hi := p.Type.intRange()
	if kind == 'i' {
		if i < lo {
			return rangeErr()
		}
		return castInt(p.Type, uint64(i)), nil
	}
	if u > uint64(hi) {
		return rangeErr()
	}
	return castInt(p.Type, u), nil
}

// intRange returns the least and greatest value of an integer type.
func (t Type) intRange() (lo int64, hi int64) {
	switch t {
	case Uint16:
		return 0, math.MaxUint16
	case Int16:
		return math.MinInt16, math.MaxInt16
	case Uint32:
		return 0, math.MaxUint32
	}
	return math.MinInt32, math.MaxInt32
}

// castInt returns the two's complement bits b, already checked against t's range, as
// t's Go type.
func castInt(t Type, b uint64) any {
	switch t {
	case Uint16:
		return uint16(b)
	case Int16:
		return int16(b)
	case Uint32:
		return uint32(b)
	}
	return int32(b)
}

// registers returns the registers that hold v, of p's Go type, in the given order.
func registers(p Point, v any, order WordOrder) []uint16 {
	switch x := v.(type) {
	case uint16:
		return []uint16{x}
	case int16:
		return []uint16{uint16(x)}
	case uint32:
		return encode32(x, order)
	case int32:
		return encode32(uint32(x), order)
	case float32:
		return encode32(math.Float32bits(x), order)
	}
	panic("driver: registers of " + p.Type.String())
}

// same reports whether two values of one point are the same: the Poller reports only
// changes. Floats compare by bits, so that a NaN that stays NaN is no change.
func same(a, b any) bool {
	if fa, ok := a.(float32); ok {
		fb, ok := b.(float32)
		return ok && math.Float32bits(fa) == math.Float32bits(fb)
	}
	return a == b
}
