package addrspace

import (
	"unicode/utf8"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// span is one dimension of a NumericRange: the indexes lo..hi inclusive.
type span struct{ lo, hi uint32 }

// maxRangeDims bounds the dimensions of a NumericRange; a Variant has at most this many.
const maxRangeDims = 8

// numericRange is a parsed NumericRange (Part 4 §7.27).
type numericRange struct {
	dims [maxRangeDims]span
	n    int
}

// parseNumericRange parses s: dimensions separated by ',', each an index "n" or a range
// "n:m" with n < m, in decimal without sign or spaces. It returns BadIndexRangeInvalid
// for anything else. It does not allocate.
func parseNumericRange(s string) (numericRange, status.Code) {
	var r numericRange
	if s == "" {
		return r, status.BadIndexRangeInvalid
	}
	i := 0
	for {
		if r.n == maxRangeDims {
			return r, status.BadIndexRangeInvalid
		}
		lo, j, ok := parseIndex(s, i)
		if !ok {
			return r, status.BadIndexRangeInvalid
		}
		hi := lo
		if j < len(s) && s[j] == ':' {
			hi, j, ok = parseIndex(s, j+1)
			if !ok || hi <= lo {
				return r, status.BadIndexRangeInvalid
			}
		}
		r.dims[r.n] = span{lo, hi}
		r.n++
		if j == len(s) {
			return r, status.Good
		}
		if s[j] != ',' {
			return r, status.BadIndexRangeInvalid
		}
		i = j + 1
	}
}

func parseIndex(s string, i int) (uint32, int, bool) {
	start := i
	var v uint64
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		v = v*10 + uint64(s[i]-'0')
		if v > 1<<32-1 {
			return 0, i, false
		}
		i++
	}
	return uint32(v), i, i > start
}

// clip returns the part of sp inside a length, or false when sp starts beyond it.
func (sp span) clip(length int) (lo, hi int, ok bool) {
	if int64(sp.lo) >= int64(length) {
		return 0, 0, false
	}
	hi = int(min(int64(sp.hi), int64(length)-1))
	return int(sp.lo), hi + 1, true
}

// applyRange returns the part of v that r selects (Part 4 §7.27): elements of an array,
// characters of a String, bytes of a ByteString; with one more dimension than an array
// of Strings or ByteStrings has, the last selects inside each element. A range outside
// the value gives BadIndexRangeNoData, a range of the wrong dimension count
// BadIndexRangeInvalid. The result may share memory with v, which is immutable.
func applyRange(v *codec.Variant, r *numericRange) (codec.Variant, status.Code) {
	if v.IsNull() {
		return codec.Variant{}, status.BadIndexRangeNoData
	}
	if !v.IsArray() {
		if r.n != 1 {
			return codec.Variant{}, status.BadIndexRangeNoData
		}
		switch v.Type() {
		case codec.TypeString:
			s, ok := subString(v.Str(), r.dims[0])
			if !ok {
				return codec.Variant{}, status.BadIndexRangeNoData
			}
			return codec.StringVariant(s), status.Good
		case codec.TypeByteString:
			b := v.ByteString()
			lo, hi, ok := r.dims[0].clip(len(b))
			if !ok {
				return codec.Variant{}, status.BadIndexRangeNoData
			}
			return codec.ByteStringVariant(b[lo:hi]), status.Good
		}
		return codec.Variant{}, status.BadIndexRangeNoData
	}
	dims := v.Dimensions()
	flat := v.Value()
	if len(dims) == 1 {
		switch {
		case r.n == 1:
			out, ok := sliceAny(flat, r.dims[0])
			if !ok {
				return codec.Variant{}, status.BadIndexRangeNoData
			}
			nv, err := codec.VariantOf(out)
			if err != nil {
				return codec.Variant{}, status.BadIndexRangeInvalid
			}
			return nv, status.Good
		case r.n == 2:
			return subElements(flat, r.dims[0], r.dims[1])
		}
		return codec.Variant{}, status.BadIndexRangeInvalid
	}
	if r.n != len(dims) {
		return codec.Variant{}, status.BadIndexRangeInvalid
	}
	return subMatrix(flat, dims, r)
}

// subString returns the characters lo..hi of s.
func subString(s string, sp span) (string, bool) {
	n := utf8.RuneCountInString(s)
	lo, hi, ok := sp.clip(n)
	if !ok {
		return "", false
	}
	i, start, end := 0, len(s), len(s)
	for off := range s {
		if i == lo {
			start = off
		}
		if i == hi {
			end = off
			break
		}
		i++
	}
	return s[start:end], true
}

// subElements applies the second span inside each selected String or ByteString.
func subElements(flat any, outer, inner span) (codec.Variant, status.Code) {
	switch a := flat.(type) {
	case []string:
		lo, hi, ok := outer.clip(len(a))
		if !ok {
			return codec.Variant{}, status.BadIndexRangeNoData
		}
		out := make([]string, 0, hi-lo)
		for _, s := range a[lo:hi] {
			sub, ok := subString(s, inner)
			if !ok {
				return codec.Variant{}, status.BadIndexRangeNoData
			}
			out = append(out, sub)
		}
		return codec.MustVariant(out), status.Good
	case [][]byte:
		lo, hi, ok := outer.clip(len(a))
		if !ok {
			return codec.Variant{}, status.BadIndexRangeNoData
		}
		out := make([][]byte, 0, hi-lo)
		for _, b := range a[lo:hi] {
			l, h, ok := inner.clip(len(b))
			if !ok {
				return codec.Variant{}, status.BadIndexRangeNoData
			}
			out = append(out, b[l:h])
		}
		return codec.MustVariant(out), status.Good
	}
	return codec.Variant{}, status.BadIndexRangeInvalid
}

// sliceAny returns flat[sp] for any slice type a Variant holds.
func sliceAny(flat any, sp span) (any, bool) {
	switch a := flat.(type) {
	case []bool:
		return sub(a, sp)
	case []int8:
		return sub(a, sp)
	case []byte:
		return sub(a, sp)
	case []int16:
		return sub(a, sp)
	case []uint16:
		return sub(a, sp)
	case []int32:
		return sub(a, sp)
	case []uint32:
		return sub(a, sp)
	case []int64:
		return sub(a, sp)
	case []uint64:
		return sub(a, sp)
	case []float32:
		return sub(a, sp)
	case []float64:
		return sub(a, sp)
	case []string:
		return sub(a, sp)
	case []codec.DateTime:
		return sub(a, sp)
	case []codec.Guid:
		return sub(a, sp)
	case [][]byte:
		return sub(a, sp)
	case []codec.NodeId:
		return sub(a, sp)
	case []codec.ExpandedNodeId:
		return sub(a, sp)
	case []status.Code:
		return sub(a, sp)
	case []codec.QualifiedName:
		return sub(a, sp)
	case []codec.LocalizedText:
		return sub(a, sp)
	case []codec.ExtensionObject:
		return sub(a, sp)
	case []codec.DataValue:
		return sub(a, sp)
	case []codec.Variant:
		return sub(a, sp)
	case []codec.DiagnosticInfo:
		return sub(a, sp)
	}
	return nil, false
}

func sub[T any](a []T, sp span) (any, bool) {
	lo, hi, ok := sp.clip(len(a))
	if !ok {
		return nil, false
	}
	return a[lo:hi:hi], true
}

// subMatrix selects a block of a multi-dimensional array.
func subMatrix(flat any, dims []int32, r *numericRange) (codec.Variant, status.Code) {
	var lo, hi [maxRangeDims]int
	outDims := make([]int32, len(dims))
	for d := range dims {
		l, h, ok := r.dims[d].clip(int(dims[d]))
		if !ok {
			return codec.Variant{}, status.BadIndexRangeNoData
		}
		lo[d], hi[d] = l, h
		outDims[d] = int32(h - l)
	}
	var out any
	switch a := flat.(type) {
	case []bool:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []int8:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []byte:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []int16:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []uint16:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []int32:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []uint32:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []int64:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []uint64:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []float32:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []float64:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []string:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	case []codec.Variant:
		out = gather(a, dims, lo[:len(dims)], hi[:len(dims)])
	default:
		return codec.Variant{}, status.BadIndexRangeInvalid
	}
	v, err := codec.NewMatrix(out, outDims)
	if err != nil {
		return codec.Variant{}, status.BadIndexRangeInvalid
	}
	return v, status.Good
}

// gather copies the block lo..hi (exclusive) of the row-major array a with dims.
func gather[T any](a []T, dims []int32, lo, hi []int) []T {
	n := 1
	for d := range dims {
		n *= hi[d] - lo[d]
	}
	out := make([]T, 0, n)
	idx := make([]int, len(dims))
	copy(idx, lo)
	for {
		off := 0
		for d := range dims {
			off = off*int(dims[d]) + idx[d]
		}
		out = append(out, a[off])
		d := len(dims) - 1
		for d >= 0 {
			idx[d]++
			if idx[d] < hi[d] {
				break
			}
			idx[d] = lo[d]
			d--
		}
		if d < 0 {
			return out
		}
	}
}

// replaceRange returns v's array with the elements that sp selects replaced by those of
// w (Part 4 §5.10.4), for one-dimensional arrays. w must be an array of the same type
// and exactly the selected length.
func replaceRange(v, w *codec.Variant, r *numericRange) (codec.Variant, status.Code) {
	if r.n != 1 || !v.IsArray() || len(v.Dimensions()) != 1 {
		return codec.Variant{}, status.BadIndexRangeInvalid
	}
	if !w.IsArray() || w.Type() != v.Type() || len(w.Dimensions()) != 1 {
		return codec.Variant{}, status.BadTypeMismatch
	}
	cur := v.Value()
	sel, ok := sliceAny(cur, r.dims[0])
	if !ok || r.dims[0].hi >= uint32(v.Dimensions()[0]) {
		return codec.Variant{}, status.BadIndexRangeNoData
	}
	if sliceLenOf(sel) != int(w.Dimensions()[0]) {
		return codec.Variant{}, status.BadIndexRangeDataMismatch
	}
	out, ok := spliceAny(cur, w.Value(), int(r.dims[0].lo))
	if !ok {
		return codec.Variant{}, status.BadTypeMismatch
	}
	nv, err := codec.VariantOf(out)
	if err != nil {
		return codec.Variant{}, status.BadTypeMismatch
	}
	return nv, status.Good
}

func sliceLenOf(x any) int {
	v, err := codec.VariantOf(x)
	if err != nil || !v.IsArray() {
		return -1
	}
	return int(v.Dimensions()[0])
}

// spliceAny returns a copy of cur with w written from index at.
func spliceAny(cur, w any, at int) (any, bool) {
	switch a := cur.(type) {
	case []bool:
		return splice(a, w, at)
	case []int8:
		return splice(a, w, at)
	case []byte:
		return splice(a, w, at)
	case []int16:
		return splice(a, w, at)
	case []uint16:
		return splice(a, w, at)
	case []int32:
		return splice(a, w, at)
	case []uint32:
		return splice(a, w, at)
	case []int64:
		return splice(a, w, at)
	case []uint64:
		return splice(a, w, at)
	case []float32:
		return splice(a, w, at)
	case []float64:
		return splice(a, w, at)
	case []string:
		return splice(a, w, at)
	case []codec.DateTime:
		return splice(a, w, at)
	case []codec.Guid:
		return splice(a, w, at)
	case [][]byte:
		return splice(a, w, at)
	case []codec.NodeId:
		return splice(a, w, at)
	case []status.Code:
		return splice(a, w, at)
	case []codec.QualifiedName:
		return splice(a, w, at)
	case []codec.LocalizedText:
		return splice(a, w, at)
	case []codec.ExtensionObject:
		return splice(a, w, at)
	case []codec.Variant:
		return splice(a, w, at)
	}
	return nil, false
}

func splice[T any](a []T, w any, at int) (any, bool) {
	ws, ok := w.([]T)
	if !ok {
		return nil, false
	}
	out := make([]T, len(a))
	copy(out, a)
	copy(out[at:], ws)
	return out, true
}
