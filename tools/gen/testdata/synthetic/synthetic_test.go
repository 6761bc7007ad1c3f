package ua

// Checks of the generated code for the synthetic schema: TestTypesCompileAndRoundTrip in
// tools/gen copies this file next to the generated package and runs it.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

func decode(t *testing.T, v codec.Structure, b []byte) error {
	t.Helper()
	d := codec.NewDecoder(b)
	v.DecodeBinary(d)
	if d.Err() == nil {
		require.Zero(t, d.Remaining())
	}
	return d.Err()
}

func TestSyntheticOptionalFields(t *testing.T) {
	count := int32(3)
	v := WithOptional{Id: 7, Count: &count}
	wire := []byte{
		0x01, 0x00, 0x00, 0x00, // EncodingMask: Count
		0x07, 0x00, 0x00, 0x00, // Id
		0x03, 0x00, 0x00, 0x00, // Count
		0x00, // Label: empty LocalizedText
	}
	require.Equal(t, wire, encodeBinary(t, &v))

	// Decoding over a value with every optional field set clears the absent ones.
	var got WithOptional
	randomizeWithOptional(newRand(t.Name()), &got, 2)
	got.Texts, got.Inner = []string{"old"}, &Inner{Code: 1}
	require.NoError(t, decode(t, &got, wire))
	require.Equal(t, v, got)

	// A present empty array is not an absent one.
	v = WithOptional{Texts: []string{}}
	wire = []byte{0x02, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x00, 0x00, 0x00}
	require.Equal(t, wire, encodeBinary(t, &v))
	got = WithOptional{}
	require.NoError(t, decode(t, &got, wire))
	require.NotNil(t, got.Texts)
	require.Empty(t, got.Texts)

	// A present array that is null on the wire decodes as present and empty.
	wire = []byte{0x02, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x00}
	got = WithOptional{}
	require.NoError(t, decode(t, &got, wire))
	require.Equal(t, []string{}, got.Texts)

	// Part 6 §5.2.7: bits no field is assigned must be 0.
	wire = []byte{0x40, 0, 0, 0, 0, 0, 0, 0, 0x00}
	require.ErrorIs(t, decode(t, new(WithOptional), wire), status.BadDecodingError)
}

// TestSyntheticOptionalBudget checks that the value an optional field points to counts
// against the decode budget: a null Variant is one byte on the wire and 48 in memory.
func TestSyntheticOptionalBudget(t *testing.T) {
	wire := []byte{
		0x08, 0x00, 0x00, 0x00, // EncodingMask: Value
		0x07, 0x00, 0x00, 0x00, // Id
		0x00, // Value: null Variant
		0x00, // Label: empty LocalizedText
	}
	for _, tc := range []struct {
		multiple int
		want     error
	}{{4, status.BadEncodingLimitsExceeded}, {5, nil}} {
		d := codec.NewDecoderLimits(wire, codec.Limits{MaxDecodeMultiple: tc.multiple, MinDecodeBudget: 1})
		var got WithOptional
		got.DecodeBinary(d)
		if tc.want == nil {
			require.NoError(t, d.Err(), "%d× of 10 bytes holds the Variant", tc.multiple)
			require.NotNil(t, got.Value)
			continue
		}
		require.ErrorIs(t, d.Err(), tc.want, "%d× of 10 bytes does not hold the Variant", tc.multiple)
	}
}

func TestSyntheticUnion(t *testing.T) {
	// Only the selected field is written; the others are ignored.
	v := Choice{SwitchField: 1, Number: 5, Texts: []string{"x"}}
	wire := []byte{0x01, 0, 0, 0, 0x05, 0, 0, 0}
	require.Equal(t, wire, encodeBinary(t, &v))
	got := Choice{SwitchField: 2, Texts: []string{"old"}, Inner: Inner{Code: 9}}
	require.NoError(t, decode(t, &got, wire))
	require.Equal(t, Choice{SwitchField: 1, Number: 5}, got)

	// A selected null array stays null.
	v = Choice{SwitchField: 2}
	wire = []byte{0x02, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	require.Equal(t, wire, encodeBinary(t, &v))
	require.NoError(t, decode(t, &got, wire))
	require.Equal(t, v, got)

	// The null union.
	require.Equal(t, []byte{0, 0, 0, 0}, encodeBinary(t, &Choice{}))

	// Part 6 §5.2.8: a switch value beyond the fields is an error both ways.
	e := codec.NewEncoder(nil)
	(&Choice{SwitchField: 6}).EncodeBinary(e)
	require.ErrorIs(t, e.Err(), status.BadEncodingError)
	require.ErrorIs(t, decode(t, new(Choice), []byte{0x06, 0, 0, 0}), status.BadDecodingError)
}

func TestSyntheticRecursionDepth(t *testing.T) {
	nest := func(n int) *Tree {
		v := &Tree{}
		for range n {
			v = &Tree{Children: []Tree{*v}}
		}
		return v
	}
	var got Tree
	require.NoError(t, decode(t, &got, encodeBinary(t, nest(50))))
	require.Equal(t, *nest(50), got)
	require.ErrorIs(t, decode(t, new(Tree), encodeBinary(t, nest(150))), status.BadEncodingLimitsExceeded)
}

func TestSyntheticEnumerations(t *testing.T) {
	require.Equal(t, "Blue", ColourBlue.String())
	require.Equal(t, "Blue", ColourName(5))
	require.Empty(t, ColourName(2))
	require.Equal(t, "Fast|Safe", (FlagsFast | FlagsSafe).String())
	require.Equal(t, "None", Flags(0).String())
	var temperature Celsius = 21.5
	require.Equal(t, 21.5, temperature)

	// An option set of 16 bits takes two bytes.
	flags := FlagsSafe
	require.Equal(t, []byte{0x20, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0x00},
		encodeBinary(t, &WithOptional{Flags: &flags}))
}
