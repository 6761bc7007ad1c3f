package main

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// nodeIDRow is one line of NodeIds.csv: SymbolicName,NumericId,NodeClass.
type nodeIDRow struct {
	name  string
	id    uint32
	class string
}

// genIDs writes ua/id/ids_gen.go: a constant per namespace-0 NodeId and a
// table sorted by id for the lookups in the hand-written ua/id/id.go.
func genIDs(schemaDir, outDir string) error {
	const file = "NodeIds.csv"
	records, err := readCSV(schemaDir, file, 3)
	if err != nil {
		return err
	}
	rows := make([]nodeIDRow, 0, len(records))
	seenName := map[string]bool{}
	seenID := map[uint32]bool{}
	classSet := map[string]bool{}
	for i, rec := range records {
		name, class := rec[0], rec[2]
		n, err := strconv.ParseUint(rec[1], 10, 32)
		if err != nil {
			return fmt.Errorf("%s line %d: bad id %q: %w", file, i+1, rec[1], err)
		}
		if err := checkExportedName(file, name); err != nil {
			return err
		}
		// Keep in step with the exported names in pkg/ua/id/id.go.
		if err := checkNoClash(file, name, "Name", "NodeClassOf"); err != nil {
			return err
		}
		if err := checkExportedName(file, class); err != nil {
			return err
		}
		id := uint32(n)
		if seenName[name] || seenID[id] {
			return fmt.Errorf("%s line %d: duplicate name %q or id %d", file, i+1, name, id)
		}
		seenName[name], seenID[id] = true, true
		classSet[class] = true
		rows = append(rows, nodeIDRow{name: name, id: id, class: class})
	}
	slices.SortFunc(rows, func(a, b nodeIDRow) int { return cmp.Compare(a.id, b.id) })

	classes := make([]string, 0, len(classSet))
	for c := range classSet {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	if len(classes) > 255 {
		return fmt.Errorf("%s: %d node classes do not fit the uint8 index", file, len(classes))
	}

	var b bytes.Buffer
	b.WriteString("package id\n\n")
	fmt.Fprintf(&b, "// Numeric NodeIds of namespace 0, named by their SymbolicName in %s.\n", file)
	b.WriteString("const (\n")
	for i, r := range rows {
		// gofmt pads a run of lines to its longest name; a blank line between
		// runs of the same first name segment keeps the padding, and the file,
		// small.
		if i > 0 && firstSegment(r.name) != firstSegment(rows[i-1].name) {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s = %d\n", r.name, r.id)
	}
	b.WriteString(")\n\n")

	b.WriteString("// Indexes into nodeClassNames, one per NodeClass found in the file.\n")
	b.WriteString("const (\n")
	for i, c := range classes {
		fmt.Fprintf(&b, "class%s nodeClass = %d\n", c, i)
	}
	b.WriteString(")\n\n")

	b.WriteString("// nodeClassNames holds the NodeClass names, indexed by nodeClass.\n")
	b.WriteString("var nodeClassNames = [...]string{\n")
	for _, c := range classes {
		fmt.Fprintf(&b, "class%s: %q,\n", c, c)
	}
	b.WriteString("}\n\n")

	b.WriteString("// nodes holds every NodeId sorted by id, for binary search.\n")
	b.WriteString("var nodes = [...]node{\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "{%q, %d, class%s},\n", r.name, r.id, r.class)
	}
	b.WriteString("}\n")

	return writeGoFile(outDir, "ua/id/ids_gen.go", file, b.Bytes())
}

// firstSegment returns name up to its first underscore, e.g. "ServerType"
// for "ServerType_ServerStatus".
func firstSegment(name string) string {
	first, _, _ := strings.Cut(name, "_")
	return first
}
