package ua

// Table tests over every generated structure (allTypes, generated with the types). They
// hold for any schema the generator accepts; the checks that are specific to namespace 0
// are in schema_test.go.

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

const (
	valuesPerType = 20
	randomDepth   = 3
)

// newRand returns a generator seeded by the test and type name, so that each type's
// values do not depend on which other types run.
func newRand(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(20240601, h.Sum64()))
}

// prefixLengths returns the lengths of the truncations of an n-byte encoding to try:
// all of them for short encodings, the first 32 and 32 more at random for long ones.
func prefixLengths(r *rand.Rand, n int) []int {
	var out []int
	for i := 0; i < n && i < 32; i++ {
		out = append(out, i)
	}
	if n > 64 {
		for range 32 {
			out = append(out, 32+r.IntN(n-32))
		}
	} else {
		for i := 32; i < n; i++ {
			out = append(out, i)
		}
	}
	return out
}

func encodeBinary(t *testing.T, v codec.Structure) []byte {
	t.Helper()
	e := codec.NewEncoder(nil)
	v.EncodeBinary(e)
	require.NoError(t, e.Err())
	return append([]byte(nil), e.Bytes()...)
}

func TestBinaryRoundTrip(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, allTypes)
	for _, tc := range allTypes {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRand(t.Name())
			for i := range valuesPerType {
				v := tc.random(r, randomDepth)
				b := encodeBinary(t, v)

				got := tc.info.New()
				d := codec.NewDecoder(b)
				got.DecodeBinary(d)
				require.NoError(t, d.Err(), "value %d", i)
				require.Zero(t, d.Remaining(), "value %d: bytes left over", i)
				require.Equal(t, v, got, "value %d", i)
				require.Equal(t, b, encodeBinary(t, got), "value %d re-encodes differently", i)

				// Decoding into a value that holds something else must overwrite all of it.
				reused := tc.random(r, randomDepth)
				d.Reset(b)
				reused.DecodeBinary(d)
				require.NoError(t, d.Err())
				require.Equal(t, v, reused, "value %d decoded over another value", i)

				for _, n := range prefixLengths(r, len(b)) {
					d := codec.NewDecoder(b[:n])
					tc.info.New().DecodeBinary(d)
					require.Error(t, d.Err(), "value %d: the first %d of %d bytes decoded without error", i, n, len(b))
				}
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := newRand(t.Name())
	for _, tc := range allTypes {
		info := tc.info
		require.Equal(t, tc.name, info.Name)
		v := info.New()
		require.IsType(t, tc.random(r, 0), v, tc.name)
		require.Same(t, info, v.TypeInfo(), tc.name)
		if info.BinaryEncoding.IsNull() && info.XMLEncoding.IsNull() && info.JSONEncoding.IsNull() {
			continue // nothing to decode it by, so it is not registered
		}
		for _, id := range []codec.NodeId{info.DataType, info.BinaryEncoding, info.XMLEncoding, info.JSONEncoding} {
			if !id.IsNull() {
				require.Same(t, info, codec.LookupType(id), "%s under %s", tc.name, id)
			}
		}
	}
}

// jsonCall runs f and turns a panic into an error, so that one unimplemented or broken
// JSON method fails the test instead of killing the test binary.
func jsonCall(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	f()
	return nil
}

func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, verbose := range []bool{false, true} {
		name := map[bool]string{false: "compact", true: "verbose"}[verbose]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range allTypes {
				r := newRand(t.Name() + tc.name)
				for i := range valuesPerType {
					v := tc.random(r, randomDepth)
					var out bytes.Buffer
					err := jsonCall(func() {
						e := codec.NewJSONEncoder(&out, verbose)
						v.EncodeJSON(e)
						// The encoder may buffer and may record errors; the contract does
						// not require either, so use them only when they exist.
						if f, ok := any(e).(interface{ Flush() error }); ok {
							require.NoError(t, f.Flush())
						}
						if f, ok := any(e).(interface{ Err() error }); ok {
							require.NoError(t, f.Err())
						}
					})
					require.NoError(t, err, "%s value %d: encode", tc.name, i)

					got := tc.info.New()
					d := codec.NewJSONDecoder(out.Bytes())
					err = jsonCall(func() { got.DecodeJSON(d) })
					require.NoError(t, err, "%s value %d: decode %s", tc.name, i, out.Bytes())
					require.NoError(t, d.Err(), "%s value %d: decode %s", tc.name, i, out.Bytes())
					require.Equal(t, v, got, "%s value %d from %s", tc.name, i, out.Bytes())
				}
			}
		})
	}
}

// FuzzDecodeBinary decodes any generated structure, chosen by the first two bytes, from
// the rest. Whatever decodes must re-encode without error to bytes that decode again and
// re-encode identically.
func FuzzDecodeBinary(f *testing.F) {
	r := newRand("FuzzDecodeBinary")
	for i := 0; i < len(allTypes); i += 7 {
		b := []byte{byte(i), byte(i >> 8)}
		e := codec.NewEncoder(nil)
		allTypes[i].random(r, 2).EncodeBinary(e)
		f.Add(append(b, e.Bytes()...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 2 {
			return
		}
		tc := allTypes[(int(b[0])|int(b[1])<<8)%len(allTypes)]
		v := tc.info.New()
		d := codec.NewDecoder(b[2:])
		v.DecodeBinary(d)
		if d.Err() != nil {
			return
		}
		first := encodeBinary(t, v)
		again := tc.info.New()
		d.Reset(first)
		again.DecodeBinary(d)
		require.NoError(t, d.Err(), "%s: decode of the re-encoding", tc.name)
		require.Zero(t, d.Remaining())
		require.Equal(t, first, encodeBinary(t, again), "%s does not re-encode canonically", tc.name)
	})
}
