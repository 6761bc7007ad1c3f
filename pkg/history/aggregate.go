package history

import (
	"math"
	"slices"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// Aggregates are the AggregateFunctions (Part 13 §5.4.3) Process computes, by NodeId.
var Aggregates = []codec.NodeId{
	codec.NewNumericNodeId(0, id.AggregateFunction_Interpolative),
	codec.NewNumericNodeId(0, id.AggregateFunction_Average),
	codec.NewNumericNodeId(0, id.AggregateFunction_TimeAverage),
	codec.NewNumericNodeId(0, id.AggregateFunction_Total),
	codec.NewNumericNodeId(0, id.AggregateFunction_Minimum),
	codec.NewNumericNodeId(0, id.AggregateFunction_Maximum),
	codec.NewNumericNodeId(0, id.AggregateFunction_Count),
	codec.NewNumericNodeId(0, id.AggregateFunction_Start),
	codec.NewNumericNodeId(0, id.AggregateFunction_End),
}

// Config is the AggregateConfiguration of a processed read (Part 4 §7.22.4).
type Config struct {
	TreatUncertainAsBad    bool
	PercentDataBad         uint8
	PercentDataGood        uint8
	UseSlopedExtrapolation bool
}

// DefaultConfig is the server's AggregateConfiguration (Part 13 §4.2.1.2 defaults):
// an interval is Good only when all its data is, Bad when all is.
var DefaultConfig = Config{PercentDataBad: 100, PercentDataGood: 100}

// ConfigOf returns the configuration a client asked for: the server's defaults when it
// says so. BadAggregateConfigurationRejected when the percentages cannot hold together.
func ConfigOf(c *ua.AggregateConfiguration) (Config, status.Code) {
	if c.UseServerCapabilitiesDefaults {
		return DefaultConfig, status.Good
	}
	cfg := Config{TreatUncertainAsBad: c.TreatUncertainAsBad, PercentDataBad: c.PercentDataBad,
		PercentDataGood: c.PercentDataGood, UseSlopedExtrapolation: c.UseSlopedExtrapolation}
	if cfg.PercentDataBad > 100 || cfg.PercentDataGood > 100 || int(cfg.PercentDataGood) < 100-int(cfg.PercentDataBad) {
		return Config{}, status.BadAggregateConfigurationRejected
	}
	return cfg, status.Good
}

// Intervals returns the processing intervals of [start, end) every interval ms (Part
// 13 §5.4.2.2): one interval for 0 or an interval past the range, the last one shorter
// when the range is not a multiple. start after end gives the intervals of [end, start)
// newest first. BadInvalidArgument for equal times or a negative interval.
func Intervals(start, end codec.DateTime, intervalMs float64) ([][2]codec.DateTime, status.Code) {
	if start == end || intervalMs < 0 || math.IsNaN(intervalMs) {
		return nil, status.BadInvalidArgument
	}
	lo, hi := min(start, end), max(start, end)
	step := codec.DateTime(intervalMs * 10_000)
	if step <= 0 || step > hi-lo {
		step = hi - lo
	}
	n := (hi - lo + step - 1) / step
	out := make([][2]codec.DateTime, 0, n)
	for t := lo; t < hi; t += step {
		out = append(out, [2]codec.DateTime{t, min(t+step, hi)})
	}
	if end < start {
		slices.Reverse(out)
	}
	return out, status.Good
}

// Process computes the aggregate agg over each of intervals (from Intervals) from
// values: the raw values of the whole range in time order, with its bounding values
// (a raw read with Bounds; those with BadBoundNotFound are ignored). full is the length
// of a whole interval: a shorter one is Partial. It returns one value per interval,
// with the StatusCode and historian bits Part 13 §5.4.3 gives the aggregate, or
// BadAggregateNotSupported.
func Process(agg codec.NodeId, values []codec.DataValue, intervals [][2]codec.DateTime, full codec.DateTime, cfg Config) ([]codec.DataValue, status.Code) {
	fn, ok := aggregateFuncs[agg]
	if !ok || agg.Namespace() != 0 {
		return nil, status.BadAggregateNotSupported
	}
	vals := make([]codec.DataValue, 0, len(values))
	for _, v := range values {
		if v.Status.Sub() != status.BadBoundNotFound {
			vals = append(vals, v)
		}
	}
	out := make([]codec.DataValue, len(intervals))
	for i, iv := range intervals {
		w := window{all: vals, start: iv[0], end: iv[1], cfg: cfg}
		w.lo, _ = slices.BinarySearchFunc(vals, iv[0], func(v codec.DataValue, t codec.DateTime) int { return cmpTime(v.SourceTimestamp, t) })
		w.hi, _ = slices.BinarySearchFunc(vals, iv[1], func(v codec.DataValue, t codec.DateTime) int { return cmpTime(v.SourceTimestamp, t) })
		out[i] = fn(&w)
		out[i].SourceTimestamp = pickTime(out[i].SourceTimestamp, iv[0])
		out[i].ServerTimestamp = out[i].SourceTimestamp
		if iv[1]-iv[0] < full && partialApplies(agg) {
			out[i].Status |= Partial
		}
	}
	return out, status.Good
}

func pickTime(t, def codec.DateTime) codec.DateTime {
	if t != 0 {
		return t
	}
	return def
}

func cmpTime(a, b codec.DateTime) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// window is one interval over all values: all[lo:hi] lie in [start, end).
type window struct {
	all        []codec.DataValue
	lo, hi     int
	start, end codec.DateTime
	cfg        Config
}

func (w *window) in() []codec.DataValue { return w.all[w.lo:w.hi] }

// usable reports whether v enters a calculation: Good, or Uncertain unless treated as
// Bad.
func (w *window) usable(v *codec.DataValue) bool {
	return v.Status.IsGood() || v.Status.IsUncertain() && !w.cfg.TreatUncertainAsBad
}

// partialApplies: the aggregates whose summary sets Partial for a short interval.
func partialApplies(agg codec.NodeId) bool {
	switch agg.IntID() {
	case id.AggregateFunction_TimeAverage, id.AggregateFunction_Total, id.AggregateFunction_Minimum, id.AggregateFunction_Maximum:
		return true
	}
	return false
}

var aggregateFuncs = map[codec.NodeId]func(*window) codec.DataValue{
	codec.NewNumericNodeId(0, id.AggregateFunction_Interpolative): interpolative,
	codec.NewNumericNodeId(0, id.AggregateFunction_Average):       average,
	codec.NewNumericNodeId(0, id.AggregateFunction_TimeAverage):   timeAverage,
	codec.NewNumericNodeId(0, id.AggregateFunction_Total):         total,
	codec.NewNumericNodeId(0, id.AggregateFunction_Minimum):       func(w *window) codec.DataValue { return extreme(w, -1) },
	codec.NewNumericNodeId(0, id.AggregateFunction_Maximum):       func(w *window) codec.DataValue { return extreme(w, 1) },
	codec.NewNumericNodeId(0, id.AggregateFunction_Count):         count,
	codec.NewNumericNodeId(0, id.AggregateFunction_Start):         startValue,
	codec.NewNumericNodeId(0, id.AggregateFunction_End):           endValue,
}

func noData() codec.DataValue { return codec.DataValue{Status: status.BadNoData} }

// percentValues is the StatusCode of a count-based aggregate (Part 13 §5.3): Bad when
// the share of unusable values reaches PercentDataBad, Good when the usable share
// reaches PercentDataGood, else Uncertain_DataSubNormal.
func (w *window) percentValues() status.Code {
	n := w.hi - w.lo
	if n == 0 {
		return status.BadNoData
	}
	good := 0
	for _, v := range w.in() {
		if w.usable(&v) {
			good++
		}
	}
	switch {
	case (n-good)*100 >= int(w.cfg.PercentDataBad)*n && good < n:
		return status.Bad
	case good*100 >= int(w.cfg.PercentDataGood)*n:
		return status.Good
	}
	return status.UncertainDataSubNormal
}

// number is v as a float64; ok is false for a value that is not a number.
func number(v *codec.Variant) (float64, bool) {
	if v.IsArray() {
		return 0, false
	}
	switch x := v.Value().(type) {
	case int8:
		return float64(x), true
	case uint8:
		return float64(x), true
	case int16:
		return float64(x), true
	case uint16:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// average is the mean of the usable values (Part 13 §5.4.3.5).
func average(w *window) codec.DataValue {
	code := w.percentValues()
	if code == status.BadNoData || code == status.Bad {
		return codec.DataValue{Status: code}
	}
	sum, n := 0.0, 0
	for _, v := range w.in() {
		if x, ok := number(&v.Value); ok && w.usable(&v) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return codec.DataValue{Status: status.BadAggregateInvalidInputs}
	}
	return codec.DataValue{Value: codec.DoubleVariant(sum / float64(n)), Status: code | Calculated}
}

// count is the number of usable values (Part 13 §5.4.3.25).
func count(w *window) codec.DataValue {
	code := w.percentValues()
	if code == status.BadNoData {
		code = status.Good
	}
	n := 0
	for _, v := range w.in() {
		if w.usable(&v) {
			n++
		}
	}
	return codec.DataValue{Value: codec.Int32Variant(int32(n)), Status: code | Calculated}
}

// extreme is Minimum (sign -1) or Maximum (1) of the usable values (Part 13
// §5.4.3.10-11): Raw when it lies at the interval's start, MultiValue when it occurs
// more than once, Uncertain_DataSubNormal when unusable values were skipped.
func extreme(w *window, sign float64) codec.DataValue {
	var (
		best    *codec.DataValue
		bx      float64
		times   int
		skipped bool
	)
	in := w.in()
	for i := range in {
		v := &in[i]
		x, ok := number(&v.Value)
		if !ok || !w.usable(v) {
			skipped = true
			continue
		}
		switch {
		case best == nil || (x-bx)*sign > 0:
			best, bx, times = v, x, 1
		case x == bx:
			times++
		}
	}
	if best == nil {
		return noData()
	}
	code := status.Good
	if skipped {
		code = status.UncertainDataSubNormal
	}
	if best.SourceTimestamp != w.start || skipped {
		code |= Calculated
	}
	if times > 1 {
		code |= MultiValue
	}
	return codec.DataValue{Value: best.Value, Status: code}
}

// startValue is the first value of the interval with its own timestamp and status
// (Part 13 §5.4.3.19); endValue the last.
func startValue(w *window) codec.DataValue {
	if w.hi == w.lo {
		return noData()
	}
	return w.all[w.lo]
}

func endValue(w *window) codec.DataValue {
	if w.hi == w.lo {
		return noData()
	}
	return w.all[w.hi-1]
}

// bound is the interpolated bounding value at t (Part 13 §3.1.8): the usable value
// at t, else a line between the nearest usable values around t, else extrapolated
// from before t (stepped, or sloped when configured) as Uncertain_DataSubNormal.
// Bad values skipped make it Uncertain_DataSubNormal; with nothing before t it is
// BadNoData.
func (w *window) bound(t codec.DateTime) (x float64, code status.Code, raw bool) {
	i, _ := slices.BinarySearchFunc(w.all, t, func(v codec.DataValue, t codec.DateTime) int { return cmpTime(v.SourceTimestamp, t) })
	skipped := false
	if i < len(w.all) && w.all[i].SourceTimestamp == t && w.usable(&w.all[i]) {
		if x, ok := number(&w.all[i].Value); ok {
			return x, w.all[i].Status, true
		}
	}
	p := i - 1
	for ; p >= 0; p-- {
		if _, ok := number(&w.all[p].Value); ok && w.usable(&w.all[p]) {
			break
		}
		skipped = true
	}
	if p < 0 {
		return 0, status.BadNoData, false
	}
	px, _ := number(&w.all[p].Value)
	n := i
	for ; n < len(w.all); n++ {
		if _, ok := number(&w.all[n].Value); ok && w.usable(&w.all[n]) && w.all[n].SourceTimestamp > t {
			break
		}
		if w.all[n].SourceTimestamp > t {
			skipped = true
		}
	}
	code = status.Good
	if skipped || w.all[p].Status.IsUncertain() {
		code = status.UncertainDataSubNormal
	}
	if n >= len(w.all) {
		x = px
		if w.cfg.UseSlopedExtrapolation {
			q := p - 1
			for ; q >= 0; q-- {
				if _, ok := number(&w.all[q].Value); ok && w.usable(&w.all[q]) {
					break
				}
			}
			if q >= 0 {
				qx, _ := number(&w.all[q].Value)
				x = line(w.all[q].SourceTimestamp, qx, w.all[p].SourceTimestamp, px, t)
			}
		}
		return x, status.UncertainDataSubNormal, false
	}
	nx, _ := number(&w.all[n].Value)
	if w.all[n].Status.IsUncertain() {
		code = status.UncertainDataSubNormal
	}
	return line(w.all[p].SourceTimestamp, px, w.all[n].SourceTimestamp, nx, t), code, false
}

// line is the value at t on the line through (t0, x0) and (t1, x1).
func line(t0 codec.DateTime, x0 float64, t1 codec.DateTime, x1 float64, t codec.DateTime) float64 {
	if t1 == t0 {
		return x1
	}
	return x0 + (x1-x0)*float64(t-t0)/float64(t1-t0)
}

// interpolative is the interpolated bounding value at the interval's start (Part 13
// §5.4.3.4): Raw when a value lies there, else Interpolated.
func interpolative(w *window) codec.DataValue {
	x, code, raw := w.bound(w.start)
	if code.IsBad() {
		return codec.DataValue{Status: code}
	}
	if !raw {
		code |= Interpolated
	}
	return codec.DataValue{Value: codec.DoubleVariant(x), Status: code}
}

// timeAverage is the area under the sloped lines from the interpolated start bound
// through the usable values to the interpolated end bound, over the interval's length
// (Part 13 §5.4.3.6). Without a start bound it starts at the first value.
func timeAverage(w *window) codec.DataValue {
	area, code, ok := w.area()
	if !ok {
		return codec.DataValue{Status: code}
	}
	return codec.DataValue{Value: codec.DoubleVariant(area / float64(w.end-w.start)), Status: code | Calculated}
}

// total is TimeAverage times the interval in seconds (Part 13 §5.4.3.8).
func total(w *window) codec.DataValue {
	area, code, ok := w.area()
	if !ok {
		return codec.DataValue{Status: code}
	}
	return codec.DataValue{Value: codec.DoubleVariant(area / 1e7), Status: code | Calculated}
}

// area integrates the interval in value × 100 ns.
func (w *window) area() (float64, status.Code, bool) {
	type point struct {
		t codec.DateTime
		x float64
	}
	var pts []point
	code := status.Good
	if x, c, _ := w.bound(w.start); !c.IsBad() {
		pts = append(pts, point{w.start, x})
		if c.IsUncertain() {
			code = status.UncertainDataSubNormal
		}
	}
	for _, v := range w.in() {
		x, ok := number(&v.Value)
		switch {
		case !ok || !w.usable(&v):
			code = status.UncertainDataSubNormal
		case v.SourceTimestamp > w.start:
			pts = append(pts, point{v.SourceTimestamp, x})
			if v.Status.IsUncertain() {
				code = status.UncertainDataSubNormal
			}
		}
	}
	if len(pts) == 0 {
		return 0, status.BadNoData, false
	}
	if x, c, _ := w.bound(w.end); !c.IsBad() {
		pts = append(pts, point{w.end, x})
		if c.IsUncertain() {
			code = status.UncertainDataSubNormal
		}
	}
	area := 0.0
	for i := 1; i < len(pts); i++ {
		area += (pts[i].x + pts[i-1].x) / 2 * float64(pts[i].t-pts[i-1].t)
	}
	return area, code, true
}

// AtTime is the value at t for ReadAtTime (Part 11 §6.5.5) from the values around t (a
// raw read of [t, t+1) with Bounds): the raw value at t; else, with simple bounds, the
// value before t held (stepped); else the interpolated bounding value (Part 13 §3.1.8),
// stepped for values that are not numbers. Values not taken from the raw value at t
// carry the Interpolated bit and the time t; BadNoData when nothing lies before t.
func AtTime(values []codec.DataValue, t codec.DateTime, simple bool) codec.DataValue {
	vals := make([]codec.DataValue, 0, len(values))
	for _, v := range values {
		if v.Status.Sub() != status.BadBoundNotFound {
			vals = append(vals, v)
		}
	}
	i, _ := slices.BinarySearchFunc(vals, t, func(v codec.DataValue, t codec.DateTime) int { return cmpTime(v.SourceTimestamp, t) })
	if i < len(vals) && vals[i].SourceTimestamp == t {
		return vals[i]
	}
	if i == 0 {
		return codec.DataValue{Status: status.BadNoData, SourceTimestamp: t}
	}
	prev := vals[i-1]
	if _, numeric := number(&prev.Value); simple || !numeric {
		return codec.DataValue{Value: prev.Value, Status: prev.Status | Interpolated, SourceTimestamp: t}
	}
	w := window{all: vals, cfg: DefaultConfig}
	x, code, _ := w.bound(t)
	if code.IsBad() {
		return codec.DataValue{Status: code, SourceTimestamp: t}
	}
	return codec.DataValue{Value: codec.DoubleVariant(x), Status: code | Interpolated, SourceTimestamp: t}
}
