// Package report is the harness the bench suites share: a Report records the machine, the
// commit and the exact command of a run and holds its measurements as rows of named,
// unit-carrying values; it writes them as a Markdown table (ready to paste into
// bench/RESULTS.md), as JSON, and, for scaling suites, as an SVG line chart. Progress draws a
// one-line progress bar on stderr for long runs.
//
// Typical use:
//
//	r := report.New("read")
//	r.Add(report.Row{Name: "uastack None", Values: []report.Value{
//		{Name: "reads/s", Value: 123456, Unit: "1/s"},
//	}})
//	paths, err := r.WriteAll("bench/out")
//
// A Report is not safe for concurrent use; Progress is.
package report
