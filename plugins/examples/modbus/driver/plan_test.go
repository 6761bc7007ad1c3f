package driver

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	pts := []Point{
		0: {Name: "h0", Table: Holding, Address: 0, Type: Uint16},
		1: {Name: "h1", Table: Holding, Address: 1, Type: Uint32}, // 1-2
		2: {Name: "h3", Table: Holding, Address: 3, Type: Int16},
		3: {Name: "h10", Table: Holding, Address: 10, Type: Uint16}, // a gap before it
		4: {Name: "h2", Table: Holding, Address: 2, Type: Uint16},   // inside h1
		5: {Name: "i0", Table: Input, Address: 0, Type: Uint16},     // another table
		6: {Name: "c0", Table: Coil, Address: 0, Type: Bool},
		7: {Name: "c1", Table: Coil, Address: 1, Type: Bool},
	}
	reqs := plan(pts, []int{3, 7, 2, 0, 1, 5, 6, 4, 0})
	require.Equal(t, []request{
		{table: Holding, start: 0, count: 4, points: []int{0, 1, 4, 2}},
		{table: Holding, start: 10, count: 1, points: []int{3}},
		{table: Coil, start: 0, count: 2, points: []int{6, 7}},
		{table: Input, start: 0, count: 1, points: []int{5}},
	}, reqs)

	// 130 contiguous registers take two requests of at most 125; 2001 coils, two of at
	// most 2000. A 32-bit value never straddles two requests.
	var many []Point
	var idx []int
	for a := range 65 {
		many = append(many, Point{Name: "r", Table: Holding, Address: uint16(2 * a), Type: Float32})
		idx = append(idx, len(many)-1)
	}
	for a := range 2001 {
		many = append(many, Point{Name: "c", Table: Coil, Address: uint16(a), Type: Bool})
		idx = append(idx, len(many)-1)
	}
	reqs = plan(many, idx)
	require.Len(t, reqs, 4)
	require.Equal(t, [3]int{int(Holding), 0, 124}, [3]int{int(reqs[0].table), int(reqs[0].start), int(reqs[0].count)})
	require.Equal(t, [3]int{int(Holding), 124, 6}, [3]int{int(reqs[1].table), int(reqs[1].start), int(reqs[1].count)})
	require.Equal(t, [3]int{int(Coil), 0, 2000}, [3]int{int(reqs[2].table), int(reqs[2].start), int(reqs[2].count)})
	require.Equal(t, [3]int{int(Coil), 2000, 1}, [3]int{int(reqs[3].table), int(reqs[3].start), int(reqs[3].count)})
}

func TestConvert(t *testing.T) {
	t.Parallel()
	p := func(ty Type) Point { return Point{Name: "p", Table: Holding, Type: ty} }
	for _, tc := range []struct {
		ty   Type
		in   any
		want any    // nil: an error
		err  string // "range" or "type"
	}{
		{Uint16, 65535, uint16(65535), ""},
		{Uint16, uint8(7), uint16(7), ""},
		{Uint16, 65536, nil, "range"},
		{Uint16, -1, nil, "range"},
		{Uint16, 12.0, uint16(12), ""},
		{Uint16, 12.5, nil, "type"},
		{Uint16, math.NaN(), nil, "type"},
		{Uint16, true, nil, "type"},
		{Uint16, "1", nil, "type"},
		{Int16, -32768, int16(-32768), ""},
		{Int16, int64(32768), nil, "range"},
		{Int16, uint64(math.MaxUint64), nil, "range"},
		{Int16, -1.0, int16(-1), ""},
		{Uint32, uint32(math.MaxUint32), uint32(math.MaxUint32), ""},
		{Uint32, int64(math.MaxUint32 + 1), nil, "range"},
		{Uint32, float32(-3), nil, "range"},
		{Int32, int32(math.MinInt32), int32(math.MinInt32), ""},
		{Int32, int64(math.MinInt32 - 1), nil, "range"},
		{Int32, 1e300, nil, "range"},
		{Float32, 1.5, float32(1.5), ""},
		{Float32, 7, float32(7), ""},
		{Float32, uint16(3), float32(3), ""},
		{Float32, 1e39, nil, "range"},
		{Float32, math.Inf(-1), float32(math.Inf(-1)), ""},
		{Float32, false, nil, "type"},
		{Bool, true, true, ""},
		{Bool, 1, nil, "type"},
	} {
		got, err := convert(p(tc.ty), tc.in)
		switch tc.err {
		case "":
			require.NoError(t, err, "%v %T %v", tc.ty, tc.in, tc.in)
			require.Equal(t, tc.want, got, "%v %T %v", tc.ty, tc.in, tc.in)
		case "range":
			var re *RangeError
			require.ErrorAs(t, err, &re, "%v %T %v", tc.ty, tc.in, tc.in)
		case "type":
			var te *TypeError
			require.ErrorAs(t, err, &te, "%v %T %v", tc.ty, tc.in, tc.in)
		}
	}
}

func TestDecodeEncode(t *testing.T) {
	t.Parallel()
	for _, order := range []WordOrder{HighFirst, LowFirst} {
		for _, v := range []any{uint32(0xdeadbeef), int32(-2), float32(-1.25), uint16(0xbeef), int16(-300)} {
			ty := map[string]Type{"uint32": Uint32, "int32": Int32, "float32": Float32, "uint16": Uint16, "int16": Int16}[typeName(v)]
			p := Point{Name: "p", Table: Holding, Type: ty}
			regs := registers(p, v, order)
			require.Len(t, regs, int(p.Width()))
			require.Equal(t, v, decode(p, order, regs))
		}
	}
	require.Equal(t, []uint16{0xdead, 0xbeef}, encode32(0xdeadbeef, HighFirst))
	require.Equal(t, []uint16{0xbeef, 0xdead}, encode32(0xdeadbeef, LowFirst))
	require.True(t, same(float32(math.NaN()), float32(math.NaN())))
	require.False(t, same(float32(0), float32(math.Copysign(0, -1))))
	require.False(t, same(uint16(1), int16(1)))
}

func typeName(v any) string {
	switch v.(type) {
	case uint32:
		return "uint32"
	case int32:
		return "int32"
	case float32:
		return "float32"
	case uint16:
		return "uint16"
	}
	return "int16"
}
