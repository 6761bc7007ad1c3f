package addrspace

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
)

func TestParseNumericRange(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want status.Code
		dims []span
	}{
		{"0", status.Good, []span{{0, 0}}},
		{"1:2", status.Good, []span{{1, 2}}},
		{"1:2,0:3", status.Good, []span{{1, 2}, {0, 3}}},
		{"4294967295", status.Good, []span{{4294967295, 4294967295}}},
		{"0,0,0,0,0,0,0,0", status.Good, []span{{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}}},
		{"", status.BadIndexRangeInvalid, nil},
		{"0,0,0,0,0,0,0,0,0", status.BadIndexRangeInvalid, nil},
		{"4294967296", status.BadIndexRangeInvalid, nil},
		{"2:2", status.BadIndexRangeInvalid, nil},
		{"2:1", status.BadIndexRangeInvalid, nil},
		{":1", status.BadIndexRangeInvalid, nil},
		{"1::2", status.BadIndexRangeInvalid, nil},
		{"1:2:3", status.BadIndexRangeInvalid, nil},
		{"1;2", status.BadIndexRangeInvalid, nil},
		{"+1", status.BadIndexRangeInvalid, nil},
		{"1 ", status.BadIndexRangeInvalid, nil},
		{",1", status.BadIndexRangeInvalid, nil},
	}
	for _, tc := range cases {
		r, c := parseNumericRange(tc.in)
		require.Equal(t, tc.want, c, "%q", tc.in)
		if c == status.Good {
			require.Equal(t, tc.dims, r.dims[:r.n], "%q", tc.in)
		}
	}
}

// FuzzParseNumericRange checks that parsing never panics and that what parses prints
// back to the same text.
func FuzzParseNumericRange(f *testing.F) {
	for _, s := range []string{"0", "1:2", "1:2,0:3", "", "2:1", "99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, c := parseNumericRange(s)
		if c != status.Good {
			require.Equal(t, status.BadIndexRangeInvalid, c)
			return
		}
		parts := make([]string, r.n)
		for i, d := range r.dims[:r.n] {
			require.Less(t, d.lo, d.hi+1)
			parts[i] = strconv.FormatUint(uint64(d.lo), 10)
			if d.hi != d.lo {
				parts[i] += ":" + strconv.FormatUint(uint64(d.hi), 10)
			}
		}
		// Leading zeros parse but do not print back; compare numerically.
		r2, c2 := parseNumericRange(strings.Join(parts, ","))
		require.Equal(t, status.Good, c2)
		require.Equal(t, r, r2)
	})
}
