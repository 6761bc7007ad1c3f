package processhost

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/plugins/wire"
)

func TestLinesSplitAndParse(t *testing.T) {
	rec := &recorder{}
	l := newLines(slog.New(rec))
	// Lines arrive in pieces, several in one write, and one without its newline.
	for _, w := range []string{
		`{"time":"x","level":"WARN","msg":"hot",`, `"temp":71}` + "\n" + "plain text\r\n\n",
		"panic: boom\n\ngoroutine 1 [running]:\n", `{"level":"INFO","msg":"after"}` + "\n", "no newline",
	} {
		n, err := l.Write([]byte(w))
		require.NoError(t, err)
		require.Equal(t, len(w), n)
	}
	l.flush()
	var got []string
	for _, r := range rec.records {
		got = append(got, r.level.String()+" "+r.msg)
	}
	require.Equal(t, []string{
		"WARN hot", "INFO plain text", "ERROR panic: boom", "ERROR goroutine 1 [running]:", "INFO after", "ERROR no newline",
	}, got)
	require.Equal(t, float64(71), rec.records[0].attrs["temp"])
}

func TestLinesCutLongLines(t *testing.T) {
	rec := &recorder{}
	l := newLines(slog.New(rec))
	long := strings.Repeat("x", 3*wire.MaxLogLine)
	_, _ = l.Write([]byte(long[:wire.MaxLogLine-10]))
	_, _ = l.Write([]byte(long[wire.MaxLogLine-10:] + "\nnext\n"))
	require.Len(t, rec.records, 2)
	require.Len(t, rec.records[0].msg, wire.MaxLogLine)
	require.Equal(t, "next", rec.records[1].msg)
}

// FuzzLines writes data in pieces cut at the offsets cuts picks and checks that every
// complete line that is not blank is logged once, whatever the cuts.
func FuzzLines(f *testing.F) {
	f.Add([]byte("a\nb\n"), []byte{1})
	f.Add([]byte(`{"level":"ERROR","msg":"m","k":1}`+"\n"+"panic: x\n\n"), []byte{3, 7, 200})
	f.Add([]byte("\r\n\n{\n{}\n"), []byte{})
	f.Add(bytes.Repeat([]byte("y"), wire.MaxLogLine+5), []byte{255, 255})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		rec := &recorder{}
		l := newLines(slog.New(rec))
		rest := data
		for _, c := range cuts {
			n := min(int(c), len(rest))
			_, _ = l.Write(rest[:n])
			rest = rest[n:]
		}
		_, _ = l.Write(rest)
		want := 0
		complete := data[:bytes.LastIndexByte(data, '\n')+1]
		for _, line := range bytes.Split(complete, []byte("\n")) {
			line = bytes.TrimRight(line[:min(len(line), wire.MaxLogLine)], "\r")
			if len(bytes.TrimSpace(line)) > 0 {
				want++
			}
		}
		require.Len(t, rec.records, want)
	})
}
