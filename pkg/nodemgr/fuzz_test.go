package nodemgr

// The fuzz target for frames, the one decoder of this package that reads bytes from
// another process or a guest. The property: decoding never panics and fails only with
// the StatusCodes Frame.Decode names; a frame that decodes re-encodes without error,
// decodes again to an equal frame (also into a frame that holds a full body of the
// kind, which must be overwritten), and re-encodes to the same bytes.
//
// The seed corpus is the encoding of every sample frame, added here and kept in
// testdata/fuzz/FuzzDecodeFrame (regenerate with -update); crashers found later go in
// the same folder and run as regression tests with plain `go test`. Run with
//
//	go test -run='^$' -fuzz='^FuzzDecodeFrame$' -fuzztime=5m ./pkg/nodemgr

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

var update = flag.Bool("update", false, "rewrite the seed corpus in testdata/fuzz/FuzzDecodeFrame")

// seedDir holds the seed corpus and crashers of FuzzDecodeFrame.
var seedDir = filepath.Join("testdata", "fuzz", "FuzzDecodeFrame")

// fuzzErrors are the failures Frame.Decode may report.
var fuzzErrors = []status.Code{
	status.BadDecodingError, status.BadEncodingLimitsExceeded,
	status.BadProtocolVersionUnsupported, status.BadServiceUnsupported,
}

func FuzzDecodeFrame(f *testing.F) {
	samples := sampleFrames()
	full := map[Kind]Body{}
	for _, s := range samples {
		f.Add(encodeFrame(f, &s.frame))
		if _, seen := full[s.frame.Kind]; !seen && s.frame.Body != nil {
			full[s.frame.Kind] = s.frame.Body
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var f1 Frame
		if err := f1.Decode(data, codec.Limits{}); err != nil {
			for _, c := range fuzzErrors {
				if errors.Is(err, c) {
					return
				}
			}
			t.Fatalf("decode failed with %v; want one of %v", err, fuzzErrors)
		}
		b1, err := f1.AppendBinary(nil)
		if err != nil {
			t.Fatalf("encoding a decoded frame failed: %v\nframe: %+v", err, f1)
		}
		var f2 Frame
		if err := f2.Decode(b1, codec.Limits{}); err != nil {
			t.Fatalf("decoding the re-encoded frame failed: %v\nbytes: % x", err, b1)
		}
		if !equalBits(f1, f2) {
			t.Fatalf("frame changed through encode and decode\nfirst:  %+v\nsecond: %+v\nbytes: % x", f1.Body, f2.Body, b1)
		}
		b2, err := f2.AppendBinary(nil)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not canonical (%v)\nfirst:  % x\nsecond: % x", err, b1, b2)
		}
		if body := full[f1.Kind]; body != nil {
			// Decode into a copy of a full body: reuse must overwrite everything.
			f3 := Frame{Body: cloneBody(t, f1.Kind, body)}
			if err := f3.Decode(b1, codec.Limits{}); err != nil || !equalBits(f1, f3) {
				t.Fatalf("decoding into a full body differs (%v)\nwant: %+v\ngot:  %+v", err, f1.Body, f3.Body)
			}
		}
	})
}

// cloneBody returns a deep copy of body, a body of kind k, through its encoding.
func cloneBody(t testing.TB, k Kind, body Body) Body {
	t.Helper()
	b := encodeFrame(t, &Frame{Kind: k, Body: body})
	var f Frame
	if err := f.Decode(b, codec.Limits{}); err != nil {
		t.Fatalf("clone: %v", err)
	}
	return f.Body
}

// seedFileName names the corpus file of a sample frame.
func seedFileName(name string) string {
	return "seed-" + strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(strings.ToLower(name))
}

// corpusFile is the text of a corpus file holding one []byte argument, in the format
// of `go test fuzz v1`.
func corpusFile(b []byte) string {
	return "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
}

// TestSeedCorpus: the seed files are the encodings of the sample frames as they are
// now, so that the fuzzer starts from every kind. Run with -update after changing an
// encoding or the samples.
func TestSeedCorpus(t *testing.T) {
	t.Parallel()
	if *update {
		require.NoError(t, os.MkdirAll(seedDir, 0o755))
	}
	for _, s := range sampleFrames() {
		path := filepath.Join(seedDir, seedFileName(s.name))
		want := corpusFile(encodeFrame(t, &s.frame))
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "missing seed %s: run go test -run TestSeedCorpus -update", path)
		require.Equal(t, want, string(got), fmt.Sprintf("stale seed %s: run go test -run TestSeedCorpus -update", path))
	}
}
