package status

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTable(t *testing.T) {
	require.Len(t, codeInfos, 271, "StatusCode.csv 1.05.03 has 271 codes")
	good, uncertain, bad := 0, 0, 0
	for i, e := range codeInfos {
		// Binary search needs strictly increasing codes.
		if i > 0 {
			require.Less(t, codeInfos[i-1].code, e.code, "at index %d", i)
		}
		require.Equal(t, e.code, e.code.Sub(), "%s has info bits set", e.name)
		require.NotEmpty(t, e.name)
		require.NotEmpty(t, e.description, e.name)
		switch {
		case e.code.IsGood():
			good++
		case e.code.IsUncertain():
			uncertain++
		case e.code.IsBad():
			bad++
		}
	}
	// Counts from the schema README's sanity check.
	require.Equal(t, 32, good)
	require.Equal(t, 18, uncertain)
	require.Equal(t, 221, bad)
}

func TestKnownCodes(t *testing.T) {
	tests := []struct {
		code Code
		want uint32
		name string
	}{
		{Good, 0x00000000, "Good"},
		{Uncertain, 0x40000000, "Uncertain"},
		{Bad, 0x80000000, "Bad"},
		{BadDecodingError, 0x80070000, "BadDecodingError"},
		{BadEncodingLimitsExceeded, 0x80080000, "BadEncodingLimitsExceeded"},
		{BadInternalError, 0x80020000, "BadInternalError"},
		{GoodCascadeNotInvited, 0x04030000, "GoodCascadeNotInvited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, uint32(tt.code))
			require.Equal(t, tt.name, tt.code.Name())
			require.NotEmpty(t, tt.code.Description())
		})
	}
	require.Equal(t, "Decoding halted because of invalid data in the stream.", BadDecodingError.Description())
}

func TestSeverity(t *testing.T) {
	tests := []struct {
		code                   Code
		good, uncertain, isBad bool
	}{
		{Good, true, false, false},
		{GoodClamped, true, false, false},
		{0x0000FFFF, true, false, false},
		{Uncertain, false, true, false},
		{UncertainNoCommunicationLastUsableValue, false, true, false},
		{0x7FFFFFFF, false, true, false},
		{Bad, false, false, true},
		{BadDecodingError, false, false, true},
		{0xC0000000, false, false, true}, // reserved severity 11 counts as bad
		{0xFFFFFFFF, false, false, true},
	}
	for _, tt := range tests {
		require.Equal(t, tt.good, tt.code.IsGood(), "IsGood %#08x", uint32(tt.code))
		require.Equal(t, tt.uncertain, tt.code.IsUncertain(), "IsUncertain %#08x", uint32(tt.code))
		require.Equal(t, tt.isBad, tt.code.IsBad(), "IsBad %#08x", uint32(tt.code))
	}
}

func TestSub(t *testing.T) {
	require.Equal(t, BadDecodingError, Code(0x800704FF).Sub())
	require.Equal(t, Good, Code(0x00008000).Sub())
	require.Equal(t, BadDecodingError, BadDecodingError.Sub())
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		code Code
		want string
	}{
		{BadDecodingError, "BadDecodingError (0x80070000)"},
		{BadEncodingLimitsExceeded, "BadEncodingLimitsExceeded (0x80080000)"},
		{Good, "Good (0x00000000)"},
		// Info bits set: the name is that of the code without them.
		{0x80070400, "BadDecodingError (0x80070400)"},
		// Not a standard code, with or without info bits.
		{0x80FF0000, "StatusCode(0x80FF0000)"},
		{0x80FF0012, "StatusCode(0x80FF0012)"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.code.Error())
		require.Equal(t, tt.want, tt.code.String())
	}
}

func TestUnknownName(t *testing.T) {
	require.Empty(t, Code(0x80FF0000).Name())
	require.Empty(t, Code(0x80FF0000).Description())
	// Name is exact: info bits make the code non-standard.
	require.Empty(t, Code(0x80070400).Name())
	require.Equal(t, "BadDecodingError", Code(0x80070400).Sub().Name())
}

func TestIsError(t *testing.T) {
	var err error = BadDecodingError
	require.True(t, errors.Is(err, BadDecodingError))
	require.False(t, errors.Is(err, BadEncodingLimitsExceeded))
	var code Code
	require.True(t, errors.As(err, &code))
	require.Equal(t, BadDecodingError, code)
}
