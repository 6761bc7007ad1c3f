package history_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/history/historytest"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua/id"
)

func sec(s int) codec.DateTime { return historytest.T0 + codec.DateTime(s)*historytest.Sec }

func raw(s int, x float64, c status.Code) codec.DataValue {
	return codec.DataValue{Value: codec.DoubleVariant(x), Status: c, SourceTimestamp: sec(s)}
}

// series is the raw data of the aggregate tables: a Good, an Uncertain and a Bad value
// in the first interval of 10 s, two Good ones in the second, one in the third and
// nothing after 25 s.
var series = []codec.DataValue{
	raw(0, 10, status.Good), raw(2, 20, status.Good), raw(5, 30, status.Uncertain), raw(7, 40, status.Bad),
	raw(10, 20, status.Good), raw(15, 40, status.Good), raw(25, 10, status.Good),
}

type want struct {
	x    any // float64, int32, or nil for no value
	code status.Code
	at   int // SourceTimestamp in seconds
}

const (
	calc = history.Calculated
	unc  = status.UncertainDataSubNormal
)

// TestAggregates checks each aggregate over series against figures computed by hand
// (the comments show the sums).
func TestAggregates(t *testing.T) {
	agg := func(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }
	sloped := history.DefaultConfig
	sloped.UseSlopedExtrapolation = true
	uncBad := history.DefaultConfig
	uncBad.TreatUncertainAsBad = true
	pctBad := history.DefaultConfig
	pctBad.PercentDataBad = 25
	pctGood := history.DefaultConfig
	pctGood.PercentDataGood = 75
	for _, tc := range []struct {
		name string
		agg  uint32
		cfg  history.Config
		end  int
		want []want
	}{
		// (10+20+30)/3; 3 of 4 usable: Uncertain. (20+40)/2. 10.
		{"Average", id.AggregateFunction_Average, history.DefaultConfig, 30, []want{{20.0, unc | calc, 0}, {30.0, calc, 10}, {10.0, calc, 20}}},
		// Uncertain as Bad: (10+20)/2, 2 of 4 usable.
		{"AverageUncertainAsBad", id.AggregateFunction_Average, uncBad, 30, []want{{15.0, unc | calc, 0}, {30.0, calc, 10}, {10.0, calc, 20}}},
		// 1 of 4 Bad reaches PercentDataBad 25.
		{"AveragePercentBad", id.AggregateFunction_Average, pctBad, 30, []want{{nil, status.Bad, 0}, {30.0, calc, 10}, {10.0, calc, 20}}},
		// 3 of 4 usable reaches PercentDataGood 75.
		{"AveragePercentGood", id.AggregateFunction_Average, pctGood, 30, []want{{20.0, calc, 0}, {30.0, calc, 10}, {10.0, calc, 20}}},
		{"Count", id.AggregateFunction_Count, history.DefaultConfig, 30, []want{{int32(3), unc | calc, 0}, {int32(2), calc, 10}, {int32(1), calc, 20}}},
		// The minimum at the interval's start is Raw, unless a Bad value was skipped.
		{"Minimum", id.AggregateFunction_Minimum, history.DefaultConfig, 30, []want{{10.0, unc | calc, 0}, {20.0, status.Good, 10}, {10.0, calc, 20}}},
		{"Maximum", id.AggregateFunction_Maximum, history.DefaultConfig, 30, []want{{30.0, unc | calc, 0}, {40.0, calc, 10}, {10.0, calc, 20}}},
		// Start and End: the raw values with their own times and status.
		{"Start", id.AggregateFunction_Start, history.DefaultConfig, 30, []want{{10.0, status.Good, 0}, {20.0, status.Good, 10}, {10.0, status.Good, 25}}},
		{"End", id.AggregateFunction_End, history.DefaultConfig, 30, []want{{40.0, status.Bad, 7}, {40.0, status.Good, 15}, {10.0, status.Good, 25}}},
		// Raw at 0 and 10; at 20 on the line from 40@15 to 10@25.
		{"Interpolative", id.AggregateFunction_Interpolative, history.DefaultConfig, 30, []want{{10.0, status.Good, 0}, {20.0, status.Good, 10}, {25.0, history.Interpolated, 20}}},
		// [0,10): (10+20)/2*2 + (20+30)/2*3 + (30+20)/2*5 = 230 (the Bad 40@7 skipped) / 10.
		// [10,20): (20+40)/2*5 + (40+25)/2*5 = 312.5. [20,30): (25+10)/2*5 + 10*5 (stepped
		// extrapolation, Uncertain) = 137.5.
		{"TimeAverage", id.AggregateFunction_TimeAverage, history.DefaultConfig, 30, []want{{23.0, unc | calc, 0}, {31.25, calc, 10}, {13.75, unc | calc, 20}}},
		{"Total", id.AggregateFunction_Total, history.DefaultConfig, 30, []want{{230.0, unc | calc, 0}, {312.5, calc, 10}, {137.5, unc | calc, 20}}},
		// Sloped extrapolation past 10@25 on the line from 40@15: -5 at 30; (10-5)/2*5 = 12.5.
		{"TimeAverageSloped", id.AggregateFunction_TimeAverage, sloped, 30, []want{{23.0, unc | calc, 0}, {31.25, calc, 10}, {10.0, unc | calc, 20}}},
		// [20,25) is short: Partial; (25+10)/2*5 / 5.
		{"TimeAveragePartial", id.AggregateFunction_TimeAverage, history.DefaultConfig, 25, []want{{23.0, unc | calc, 0}, {31.25, calc, 10}, {17.5, calc | history.Partial, 20}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ivs, code := history.Intervals(sec(0), sec(tc.end), 10_000)
			require.Equal(t, status.Good, code)
			out, code := history.Process(agg(tc.agg), series, ivs, 10*historytest.Sec, tc.cfg)
			require.Equal(t, status.Good, code)
			require.Len(t, out, len(tc.want))
			for i, w := range tc.want {
				require.Equal(t, w.code, out[i].Status, "interval %d: %v", i, out[i].Status)
				require.Equal(t, sec(w.at), out[i].SourceTimestamp, "interval %d", i)
				if w.x == nil {
					require.True(t, out[i].Value.IsNull())
					continue
				}
				if f, ok := w.x.(float64); ok {
					require.InDelta(t, f, out[i].Value.Value().(float64), 1e-9, "interval %d", i)
					continue
				}
				require.Equal(t, w.x, out[i].Value.Value(), "interval %d", i)
			}
		})
	}
}

func TestAggregateEdges(t *testing.T) {
	ivs, _ := history.Intervals(sec(0), sec(30), 10_000)
	_, code := history.Process(codec.NewNumericNodeId(0, id.AggregateFunction_Range), series, ivs, 10*historytest.Sec, history.DefaultConfig)
	require.Equal(t, status.BadAggregateNotSupported, code)
	out, _ := history.Process(codec.NewNumericNodeId(0, id.AggregateFunction_Average), nil, ivs, 10*historytest.Sec, history.DefaultConfig)
	require.Equal(t, status.BadNoData, out[0].Status)
	out, _ = history.Process(codec.NewNumericNodeId(0, id.AggregateFunction_Interpolative), series[4:], ivs, 10*historytest.Sec, history.DefaultConfig)
	require.Equal(t, status.BadNoData, out[0].Status, "before the start of data")

	_, code = history.Intervals(sec(5), sec(5), 1000)
	require.Equal(t, status.BadInvalidArgument, code)
	one, _ := history.Intervals(sec(0), sec(25), 0)
	require.Equal(t, [][2]codec.DateTime{{sec(0), sec(25)}}, one)
	rev, _ := history.Intervals(sec(25), sec(0), 10_000)
	require.Equal(t, [][2]codec.DateTime{{sec(20), sec(25)}, {sec(10), sec(20)}, {sec(0), sec(10)}}, rev)
}

func TestAtTime(t *testing.T) {
	around := func(at int) []codec.DataValue {
		// What a raw read of [at, at+1) with bounds returns from series.
		var out []codec.DataValue
		for i, v := range series {
			if v.SourceTimestamp >= sec(at) {
				if i > 0 && v.SourceTimestamp != sec(at) {
					out = append(out, series[i-1])
				}
				return append(out, v)
			}
		}
		return append(out, series[len(series)-1], codec.DataValue{Status: status.BadBoundNotFound, SourceTimestamp: sec(at) + 1})
	}
	v := history.AtTime(around(10), sec(10), false)
	require.Equal(t, 20.0, v.Value.Value())
	require.Equal(t, status.Good, v.Status, "a raw value at the time")
	v = history.AtTime(around(20), sec(20), false)
	require.Equal(t, 25.0, v.Value.Value(), "40@15 to 10@25")
	require.Equal(t, history.Interpolated, v.Status)
	require.Equal(t, sec(20), v.SourceTimestamp)
	v = history.AtTime(around(20), sec(20), true)
	require.Equal(t, 40.0, v.Value.Value(), "simple bounds hold the value before")
	v = history.AtTime(around(40), sec(40), false)
	require.Equal(t, 10.0, v.Value.Value(), "extrapolated past the end")
	require.Equal(t, unc|history.Interpolated, v.Status)
	v = history.AtTime([]codec.DataValue{{Status: status.BadBoundNotFound, SourceTimestamp: sec(-1)}, series[0]}, sec(-1), false)
	require.Equal(t, status.BadNoData, v.Status)
}
