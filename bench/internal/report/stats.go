package report

import (
	"slices"
	"time"
)

// Percentiles returns the given quantiles (0 < q ≤ 1) of d, sorting d in place; zero when d
// is empty.
func Percentiles(d []time.Duration, qs ...float64) []time.Duration {
	out := make([]time.Duration, len(qs))
	if len(d) == 0 {
		return out
	}
	slices.Sort(d)
	for i, q := range qs {
		k := int(q*float64(len(d))+0.5) - 1
		out[i] = d[min(max(k, 0), len(d)-1)]
	}
	return out
}

// Median returns the median of v (the mean of the middle two for an even count), sorting
// a copy; zero when v is empty.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
