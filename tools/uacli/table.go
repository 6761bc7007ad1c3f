package main

import (
	"io"
	"strings"
	"text/tabwriter"
)

// table writes aligned columns: a header row, then one row per add.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.add(header...)
	return t
}

// add writes one row; tabs and newlines inside a cell are replaced so that the
// columns stay aligned.
func (t *table) add(cells ...string) {
	for i, c := range cells {
		cells[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
	}
	_, _ = io.WriteString(t.tw, strings.Join(cells, "\t")+"\n")
}

func (t *table) flush() error { return t.tw.Flush() }
