package codec_test

// The decode budget (Limits.MaxDecodeMultiple): every value that takes more memory than
// wire bytes is charged, so that a message decodes to at most a bounded multiple of its
// size, measured against what the allocator really hands out.

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

// binAmplifiers are the values whose memory exceeds their wire size most: each is one
// element of a Variant array of its type, or (for the boxed scalars) a Variant inside an
// array of Variants.
var binAmplifiers = []struct {
	name string
	typ  codec.TypeID
	elem []byte
}{
	{"Variant null", codec.TypeVariant, []byte{0x00}},
	{"DataValue mask 0", codec.TypeDataValue, []byte{0x00}},
	{"DiagnosticInfo mask 0", codec.TypeDiagnosticInfo, []byte{0x00}},
	{"DiagnosticInfo with an inner one", codec.TypeDiagnosticInfo, []byte{0x40, 0x00}},
	{"LocalizedText mask 0", codec.TypeLocalizedText, []byte{0x00}},
	{"ExtensionObject null", codec.TypeExtensionObject, []byte{0x00, 0x00, 0x00}},
	{"ExpandedNodeId two-byte", codec.TypeExpandedNodeId, []byte{0x00, 0x00}},
	{"NodeId two-byte", codec.TypeNodeId, []byte{0x00, 0x00}},
	{"QualifiedName null", codec.TypeQualifiedName, []byte{0x00, 0x00, 0xff, 0xff, 0xff, 0xff}},
	{"ByteString null", codec.TypeByteString, []byte{0xff, 0xff, 0xff, 0xff}},
	{"String of one byte", codec.TypeString, []byte{0x01, 0x00, 0x00, 0x00, 'x'}},
	{"Variant DataValue", codec.TypeVariant, []byte{0x17, 0x00}},
	{"Variant DiagnosticInfo", codec.TypeVariant, []byte{0x19, 0x00}},
	{"Variant LocalizedText", codec.TypeVariant, []byte{0x15, 0x00}},
	{"Variant ExtensionObject", codec.TypeVariant, []byte{0x16, 0x00, 0x00, 0x00}},
	{"Variant ExpandedNodeId", codec.TypeVariant, []byte{0x12, 0x00, 0x00}},
	{"Variant Guid", codec.TypeVariant, append([]byte{0x0e}, make([]byte, 16)...)},
	{"Variant empty array", codec.TypeVariant, []byte{0x98, 0x00, 0x00, 0x00, 0x00}},
	{"Variant matrix", codec.TypeVariant, binCat([]byte{0xc6}, binI32(1), binI32(7), binI32(2), binI32(1), binI32(1))},
	{"ExtensionObject with a body", codec.TypeExtensionObject,
		binCat([]byte{0x01, binNS, 0x02, 0x00, 0x01}, binI32(9), binI32(0), []byte{0xff, 0xff, 0xff, 0xff, 0x00})},
}

// binAmplifiedArray returns a Variant array of n copies of elem.
func binAmplifiedArray(t codec.TypeID, elem []byte, n int) []byte {
	return binCat([]byte{0x80 | byte(t)}, binI32(int32(n)), bytes.Repeat(elem, n))
}

// binAllocated returns the bytes the allocator handed out while decode ran. Callers must
// not run in parallel with other tests.
func binAllocated(decode func()) int {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	decode()
	runtime.ReadMemStats(&after)
	return int(after.TotalAlloc - before.TotalAlloc)
}

// binBudgetSlack is what the allocator may add to the charged bytes: size classes round
// an allocation up by at most 1/8, and the Variant decoded into lives on the heap.
func binBudgetSlack(budget int) int { return budget/8 + 512 }

// TestDecodeBudgetAmplifiers decodes an array of each amplifying value with budgets of
// MaxDecodeMultiple times its size: one under what it takes fails with
// BadEncodingLimitsExceeded having allocated no more than that budget, and one at what it
// takes succeeds, so nothing is charged twice.
func TestDecodeBudgetAmplifiers(t *testing.T) {
	// Not parallel: it reads the allocation counters of the process.
	const n = 20000
	for _, tc := range binAmplifiers {
		wire := binAmplifiedArray(tc.typ, tc.elem, n)
		var v codec.Variant
		open := codec.Limits{MaxDecodeMultiple: 1 << 10, MinDecodeBudget: 1}
		taken := binAllocated(func() {
			_, err := binDecodeVariant(wire, open)
			require.NoError(t, err, tc.name)
		})
		fits := (taken + len(wire) - 1) / len(wire)
		_, err := binDecodeVariant(wire, codec.Limits{MaxDecodeMultiple: fits, MinDecodeBudget: 1})
		require.NoError(t, err, "%s: %d× does not fit what it allocates", tc.name, fits)

		multiple := taken / len(wire)
		if multiple < 2 {
			t.Logf("%-34s %6.1f× its wire size", tc.name, float64(taken)/float64(len(wire)))
			continue
		}
		tight := codec.Limits{MaxDecodeMultiple: multiple / 2, MinDecodeBudget: 1}
		spent := binAllocated(func() {
			d := codec.NewDecoderLimits(wire, tight)
			d.Variant(&v)
			require.Equal(t, errLimits, d.Err(), tc.name)
		})
		budget := tight.MaxDecodeMultiple * len(wire)
		require.LessOrEqual(t, spent, budget+binBudgetSlack(budget), "%s: allocated beyond the budget", tc.name)
		t.Logf("%-34s %6.1f× its wire size; at %d× it fails after %d of %d bytes",
			tc.name, float64(taken)/float64(len(wire)), tight.MaxDecodeMultiple, spent, budget)
	}
}

// TestDecodeBudgetDefault checks that DefaultLimits stop the amplifiers: an array of
// one-byte DataValues of 1 MiB, which would decode to 88 MiB, fails once it passes
// DefaultDecodeMultiple times its size.
func TestDecodeBudgetDefault(t *testing.T) {
	wire := binAmplifiedArray(codec.TypeDataValue, []byte{0x00}, 1<<20)
	var err error
	spent := binAllocated(func() { _, err = binDecodeVariant(wire, codec.Limits{}) })
	require.Equal(t, errLimits, err)
	budget := codec.DefaultDecodeMultiple * len(wire)
	require.LessOrEqual(t, spent, budget+binBudgetSlack(budget))

	// MinDecodeBudget admits a short message whatever its ratio.
	_, err = binDecodeVariant(binAmplifiedArray(codec.TypeDataValue, []byte{0x00}, 1000), codec.Limits{})
	require.NoError(t, err)
}

// TestDecodeBudgetPerMessage checks that the budget belongs to one message: it grows with
// the bytes given to the Decoder, and Reset and SetLimits start it afresh.
func TestDecodeBudgetPerMessage(t *testing.T) {
	t.Parallel()
	one := binAmplifiedArray(codec.TypeVariant, []byte{0x00}, 100)
	l := codec.Limits{MinDecodeBudget: 1}
	for l.MaxDecodeMultiple = 1; ; l.MaxDecodeMultiple++ {
		if _, err := binDecodeVariant(one, l); err == nil {
			break
		}
	}
	need := l.MaxDecodeMultiple

	// Two values in twice the bytes have twice the budget.
	d := codec.NewDecoderLimits(binCat(one, one), l)
	var v codec.Variant
	d.Variant(&v)
	d.Variant(&v)
	require.NoError(t, d.Err(), "two values in twice the bytes")

	// Reset gives the next message a budget of its own.
	for range 3 {
		d.Reset(one)
		d.Variant(&v)
		require.NoError(t, d.Err(), "Reset starts the budget afresh")
	}

	// SetLimits recomputes the budget of the message being decoded: the defaults admit
	// one by MinDecodeBudget, one multiple less than it needs does not.
	d = codec.NewDecoder(one)
	l.MaxDecodeMultiple = need - 1
	d.SetLimits(l)
	d.Variant(&v)
	require.Equal(t, errLimits, d.Err(), "SetLimits recomputes the budget")
}

// TestCharge checks the budget arithmetic Charge and SizedArrayLength share.
func TestCharge(t *testing.T) {
	t.Parallel()
	d := codec.NewDecoderLimits(make([]byte, 10), codec.Limits{MaxDecodeMultiple: 10, MinDecodeBudget: 1})
	require.True(t, d.Charge(60))
	require.True(t, d.Charge(40))
	require.NoError(t, d.Err())
	require.False(t, d.Charge(1), "the budget is 10 × 10 bytes")
	require.Equal(t, errLimits, d.Err())

	d = codec.NewDecoderLimits(make([]byte, 10), codec.Limits{MinDecodeBudget: 1})
	require.False(t, d.Charge(-1), "a negative charge (an overflowed product) never fits")

	// An array of 3 elements of 50 bytes: 150 bytes, over a budget of 12 × 8.
	d = codec.NewDecoderLimits(binCat(binI32(3), []byte{1, 2, 3, 4}), codec.Limits{MinDecodeBudget: 1})
	require.Equal(t, -1, d.SizedArrayLength(1, 50))
	require.Equal(t, errLimits, d.Err())
	d.Reset(binCat(binI32(3), []byte{1, 2, 3, 4}))
	require.Equal(t, 3, d.SizedArrayLength(1, 30))
	require.NoError(t, d.Err())
}
