package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Machine describes where a run took place.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
	OS         string `json:"os"`
}

// Value is one measurement: a name ("reads/s"), a number and its unit ("1/s", "µs", "B").
type Value struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// Row is one line of results: a subject (for example "uastack None") and its values.
type Row struct {
	Name   string  `json:"name"`
	Values []Value `json:"values"`
}

// Get returns the value called name and whether the row has it.
func (r Row) Get(name string) (float64, bool) {
	for _, v := range r.Values {
		if v.Name == name {
			return v.Value, true
		}
	}
	return 0, false
}

// Point is one sample of a Series: X is the scale parameter, Y the measured value.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Series is one line of a Chart.
type Series struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
}

// Chart is a line chart of a scaling suite: one series per subject over the scale parameter.
type Chart struct {
	Name   string   `json:"name"` // file name stem, e.g. "read-clients"
	Title  string   `json:"title"`
	XLabel string   `json:"xLabel"`
	YLabel string   `json:"yLabel"`
	Series []Series `json:"series"`
}

// Report is the result of one run of one suite.
type Report struct {
	Suite   string    `json:"suite"`
	Started time.Time `json:"started"`
	Machine Machine   `json:"machine"`
	Commit  string    `json:"commit,omitempty"`
	Command string    `json:"command"`
	Rows    []Row     `json:"rows"`
	Notes   []string  `json:"notes,omitempty"`
	Charts  []Chart   `json:"charts,omitempty"`
	// Histograms are distributions of one quantity each (histogram.go).
	Histograms []Histogram `json:"histograms,omitempty"`
}

// New starts a Report for suite, recording the machine, the commit (if git is available) and
// the command line of this process.
func New(suite string) *Report {
	return &Report{
		Suite:   suite,
		Started: time.Now().UTC(),
		Machine: ThisMachine(),
		Commit:  Commit(),
		Command: CommandLine(),
	}
}

// Add appends a row.
func (r *Report) Add(row Row) { r.Rows = append(r.Rows, row) }

// Note appends a free-text line printed under the table (a bar met or missed, a caveat).
func (r *Report) Note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// AddChart appends a chart; WriteAll writes one SVG file per chart.
func (r *Report) AddChart(c Chart) { r.Charts = append(r.Charts, c) }

// Row returns the row called name, or false.
func (r *Report) Row(name string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Name == name {
			return row, true
		}
	}
	return Row{}, false
}

// ThisMachine describes the running machine.
func ThisMachine() Machine {
	return Machine{
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Go:         runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
	}
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// Commit returns the short commit hash of the working tree, with "+dirty" when it has
// uncommitted changes, or "" when git is unavailable.
func Commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+dirty"
	}
	return c
}

// CommandLine returns this process's arguments, quoted where needed. Under `go run` the
// program name is a temporary binary; its base name is kept.
func CommandLine() string {
	args := make([]string, len(os.Args))
	for i, a := range os.Args {
		if i == 0 {
			a = filepath.Base(a)
		}
		if a == "" || strings.ContainsAny(a, " \t\"'$") {
			a = fmt.Sprintf("%q", a)
		}
		args[i] = a
	}
	return strings.Join(args, " ")
}

// Markdown renders the report as a heading, the machine and command lines, one table whose
// columns are the union of the rows' values (in first-seen order), and the notes.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", r.Suite)
	fmt.Fprintf(&b, "Machine: %s, %d cores, GOMAXPROCS=%d, %s, %s. ", r.Machine.CPU, r.Machine.Cores, r.Machine.GOMAXPROCS, r.Machine.Go, r.Machine.OS)
	if r.Commit != "" {
		fmt.Fprintf(&b, "Commit `%s`. ", r.Commit)
	}
	fmt.Fprintf(&b, "Run %s. Command:\n\n    %s\n\n", r.Started.Format(time.RFC3339), r.Command)
	type col struct{ name, unit string }
	var cols []col
	seen := map[string]bool{}
	for _, row := range r.Rows {
		for _, v := range row.Values {
			if !seen[v.Name] {
				seen[v.Name] = true
				cols = append(cols, col{v.Name, v.Unit})
			}
		}
	}
	if len(r.Rows) > 0 {
		b.WriteString("| |")
		for _, c := range cols {
			if c.unit != "" {
				fmt.Fprintf(&b, " %s (%s) |", c.name, c.unit)
			} else {
				fmt.Fprintf(&b, " %s |", c.name)
			}
		}
		b.WriteString("\n|---|")
		for range cols {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, row := range r.Rows {
			fmt.Fprintf(&b, "| %s |", row.Name)
			for _, c := range cols {
				if v, ok := row.Get(c.name); ok {
					fmt.Fprintf(&b, " %s |", FormatNumber(v))
				} else {
					b.WriteString(" – |")
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	return b.String()
}

// FormatNumber prints v with three significant digits and thousands separators for large
// values: 334,120; 2.91; 0.0351.
func FormatNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprint(v)
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		s := fmt.Sprintf("%.0f", v)
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		var out []byte
		for i := range len(s) {
			if i > 0 && (len(s)-i)%3 == 0 {
				out = append(out, ',')
			}
			out = append(out, s[i])
		}
		if neg {
			return "-" + string(out)
		}
		return string(out)
	default:
		digits := 2 - int(math.Floor(math.Log10(math.Abs(v))))
		return fmt.Sprintf("%.*f", max(digits, 0), v)
	}
}

// JSON renders the report as indented JSON.
func (r *Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// WriteAll writes <suite>.md, <suite>.json and one <name>.svg per chart and histogram into
// dir, creating it, and returns the paths written.
func (r *Report) WriteAll(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	}
	if err := write(r.Suite+".md", []byte(r.Markdown())); err != nil {
		return paths, err
	}
	js, err := r.JSON()
	if err != nil {
		return paths, err
	}
	if err := write(r.Suite+".json", append(js, '\n')); err != nil {
		return paths, err
	}
	for _, c := range r.Charts {
		if err := write(c.Name+".svg", c.SVG()); err != nil {
			return paths, err
		}
	}
	for _, h := range r.Histograms {
		if err := write(h.Name+".svg", h.SVG()); err != nil {
			return paths, err
		}
	}
	return paths, nil
}
