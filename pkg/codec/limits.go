package codec

import (
	"math"
	"math/bits"
)

// Limits bound what a Decoder accepts. They are checked before any buffer or slice is made.
// A zero field means "use the default".
type Limits struct {
	MaxStringLength     int // bytes in a String or XmlElement
	MaxByteStringLength int // bytes in a ByteString
	MaxArrayLength      int // elements in one array
	MaxMessageSize      int // bytes in one message given to a Decoder
	MaxDepth            int // nesting of Variants, DiagnosticInfos, ExtensionObjects and structures

	// MaxDecodeMultiple bounds the memory a message takes once decoded, as a multiple of
	// its size on the wire: each array counts its elements at their size in memory, and
	// each string, byte string and value the decoder allocates counts too (see
	// Decoder.Charge). A Variant, DataValue or DiagnosticInfo takes one byte on the wire
	// and 48 to 80 in memory, so without this bound an array of them decodes to 50–90
	// times its wire size. A message over its budget fails with BadEncodingLimitsExceeded
	// before the allocation that would exceed it.
	MaxDecodeMultiple int
	// MinDecodeBudget is the memory any message may take once decoded, however few bytes
	// it has: short messages (a header and a few fields) have the highest ratios and cost
	// nothing to allow.
	MinDecodeBudget int
}

// DefaultLimits are generous enough for any conforming peer and small enough that a
// hostile message cannot make the decoder commit much memory.
var DefaultLimits = Limits{
	MaxStringLength:     1 << 20,
	MaxByteStringLength: 16 << 20,
	MaxArrayLength:      1 << 20,
	MaxMessageSize:      64 << 20,
	MaxDepth:            100,
	MaxDecodeMultiple:   DefaultDecodeMultiple,
	MinDecodeBudget:     1 << 20,
}

// DefaultDecodeMultiple is the MaxDecodeMultiple of DefaultLimits. The messages of the
// benchmarks take 1.2 (a Write of arrays) to 4.5 (a Write of 1,000 timestamped Doubles)
// bytes in memory per byte on the wire, a Read of 1,000 nodes 4, a Publish response 3.2;
// the most compact bulk request, a Write of Booleans without timestamps, takes 9, and
// with a server's usual operation limits stays under MinDecodeBudget anyway
// (TestDecodeMultipleHeadroom in pkg/ua measures them). 12 admits all of them and holds a
// 16 MiB request to 192 MiB of decoded values, where arrays of one-byte DataValues would
// otherwise take 1.4 GB.
const DefaultDecodeMultiple = 12

func (l Limits) withDefaults() Limits {
	if l.MaxStringLength <= 0 {
		l.MaxStringLength = DefaultLimits.MaxStringLength
	}
	if l.MaxByteStringLength <= 0 {
		l.MaxByteStringLength = DefaultLimits.MaxByteStringLength
	}
	if l.MaxArrayLength <= 0 {
		l.MaxArrayLength = DefaultLimits.MaxArrayLength
	}
	if l.MaxMessageSize <= 0 {
		l.MaxMessageSize = DefaultLimits.MaxMessageSize
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxDecodeMultiple <= 0 {
		l.MaxDecodeMultiple = DefaultLimits.MaxDecodeMultiple
	}
	if l.MinDecodeBudget <= 0 {
		l.MinDecodeBudget = DefaultLimits.MinDecodeBudget
	}
	return l
}

// decodeBudget returns the bytes of memory a message of size bytes may take once decoded.
// Reset calls it for every message, so it multiplies with an overflow check instead of
// dividing.
func (l *Limits) decodeBudget(size int) int {
	hi, lo := bits.Mul64(uint64(size), uint64(l.MaxDecodeMultiple))
	if hi != 0 || lo > math.MaxInt {
		return math.MaxInt
	}
	return max(int(lo), l.MinDecodeBudget)
}
