package report

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWriteAll(t *testing.T) {
	t.Parallel()
	r := New("demo")
	r.Add(Row{Name: "uastack None", Values: []Value{{Name: "reads/s", Value: 123456.7, Unit: "1/s"}, {Name: "p50", Value: 0.25, Unit: "ms"}}})
	r.Add(Row{Name: "echo", Values: []Value{{Name: "reads/s", Value: 200000, Unit: "1/s"}}})
	r.Note("ratio %.2f", 0.62)
	r.AddChart(Chart{Name: "demo-scale", Title: "Reads/s by clients", XLabel: "clients", YLabel: "Reads/s", Series: []Series{
		{Name: "uastack", Points: []Point{{1, 1000}, {10, 9000}, {100, 40000}}},
		{Name: "echo <ceiling>", Points: []Point{{1, 2000}, {10, 15000}, {100, 60000}}},
	}})
	dir := t.TempDir()
	paths, err := r.WriteAll(dir)
	require.NoError(t, err)
	require.Len(t, paths, 3)

	md, err := os.ReadFile(filepath.Join(dir, "demo.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "| | reads/s (1/s) | p50 (ms) |")
	require.Contains(t, string(md), "| uastack None | 123,457 | 0.250 |")
	require.Contains(t, string(md), "| echo | 200,000 | – |")
	require.Contains(t, string(md), "- ratio 0.62")
	require.Contains(t, string(md), r.Command)

	js, err := os.ReadFile(filepath.Join(dir, "demo.json"))
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(js, &back))
	require.Equal(t, r.Rows, back.Rows)
	require.Equal(t, r.Machine, back.Machine)
	require.Positive(t, back.Machine.Cores)

	svg, err := os.ReadFile(filepath.Join(dir, "demo-scale.svg"))
	require.NoError(t, err)
	// Well-formed XML with two polylines and escaped legend text.
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	polylines := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			require.ErrorContains(t, err, "EOF")
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	require.Equal(t, 2, polylines)
	require.Contains(t, string(svg), "echo &lt;ceiling&gt;")
	require.Contains(t, string(svg), ">clients<")
	require.Contains(t, string(svg), `text-anchor="middle">20</text>`, "x ticks print as round numbers")
}

func TestFormatNumber(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]string{0: "0", 334120: "334,120", -1234.4: "-1,234", 2.912: "2.91", 0.03512: "0.0351", 12.35: "12.3", 999.4: "999"} {
		require.Equal(t, want, FormatNumber(v), "%v", v)
	}
}

func TestTicks(t *testing.T) {
	t.Parallel()
	tk := ticks(0, 334000)
	require.Equal(t, 0.0, tk[0])
	require.GreaterOrEqual(t, tk[len(tk)-1], 334000.0)
	require.LessOrEqual(t, len(tk), 8)
}

func TestPercentiles(t *testing.T) {
	t.Parallel()
	d := make([]time.Duration, 100)
	for i := range d {
		d[i] = time.Duration(100-i) * time.Millisecond
	}
	p := Percentiles(d, 0.5, 0.9, 0.99)
	require.Equal(t, []time.Duration{50 * time.Millisecond, 90 * time.Millisecond, 99 * time.Millisecond}, p)
	require.Equal(t, 2.5, Median([]float64{4, 1, 2, 3}))
}

func TestProgressQuiet(t *testing.T) {
	t.Parallel()
	p := NewProgress(true)
	p.Stage("x")
	p.Update(0.5)
	p.Done()
	require.Nil(t, p.w)
}

// TestMainEndsOnSIGTERM runs a suite in a child process (this test binary again) that waits
// on its context, and terminates the child: the context is cancelled, the suite returns,
// and its temporary folder is removed, as the servers it started would be stopped.
func TestMainEndsOnSIGTERM(t *testing.T) {
	if os.Getenv("UASTACK_REPORT_MAIN_CHILD") == "1" {
		Main("sigterm", t.TempDir(), func(ctx context.Context, dir string) (*Report, error) {
			fmt.Println(dir)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainEndsOnSIGTERM$")
	cmd.Env = append(os.Environ(), "UASTACK_REPORT_MAIN_CHILD=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	dir := strings.TrimSpace(line)
	require.DirExists(t, dir)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &ee)
	require.Equal(t, 1, ee.ExitCode(), "the suite failed with its context's error, not killed by the signal")
	require.NoDirExists(t, dir)
}

// TestHistogram: values fall in round bins from zero, and the SVG is well-formed XML
// with a bar per filled bin and the marks in its legend; WriteAll writes it.
func TestHistogram(t *testing.T) {
	t.Parallel()
	values := []float64{0, 40, 90, 110, 120, 480, 1999}
	h := NewHistogram("fail", "Failover <times>", "time (ms)", "sessions", values, 20)
	require.Equal(t, 100.0, h.Width, "1999/20 rounds up to 100")
	require.Len(t, h.Counts, 20)
	require.Equal(t, 3, h.Counts[0])
	require.Equal(t, 2, h.Counts[1])
	require.Equal(t, 1, h.Counts[4])
	require.Equal(t, 1, h.Counts[19])
	sum := 0
	for _, c := range h.Counts {
		sum += c
	}
	require.Equal(t, len(values), sum)
	h.Marks = []Mark{{Name: "p99", X: 1523.7}, {Name: "bar", X: 2000}}

	r := New("demo")
	r.AddHistogram(h)
	dir := t.TempDir()
	paths, err := r.WriteAll(dir)
	require.NoError(t, err)
	require.Contains(t, paths, filepath.Join(dir, "fail.svg"))
	svg, err := os.ReadFile(filepath.Join(dir, "fail.svg"))
	require.NoError(t, err)
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	bars := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			require.ErrorContains(t, err, "EOF")
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && a.Value == "bin" {
					bars++
				}
			}
		}
	}
	require.Equal(t, 4, bars, "one bar per filled bin")
	require.Contains(t, string(svg), "Failover &lt;times&gt;")
	require.Contains(t, string(svg), ">p99 1,520<")
	require.Contains(t, string(svg), ">bar 2,000<")
	js, err := os.ReadFile(filepath.Join(dir, "demo.json"))
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(js, &back))
	require.Equal(t, r.Histograms, back.Histograms)

	empty := NewHistogram("none", "", "", "", nil, 10)
	require.Equal(t, []int{0}, empty.Counts)
	require.NotEmpty(t, empty.SVG())
}
