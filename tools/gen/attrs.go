package main

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

// attrRow is one line of AttributeIds.csv: Name,Id.
type attrRow struct {
	name string
	id   uint32
}

// maxAttrID bounds the ids, because the name table is an array indexed by
// id; the spec's ids are small and dense (1..27).
const maxAttrID = 1024

// genAttrs writes ua/attr/attr_gen.go: an ID constant per node attribute
// and a name table indexed by ID for the hand-written ua/attr/attr.go.
func genAttrs(schemaDir, outDir string) error {
	const file = "AttributeIds.csv"
	records, err := readCSV(schemaDir, file, 2)
	if err != nil {
		return err
	}
	rows := make([]attrRow, 0, len(records))
	seenName := map[string]bool{}
	seenID := map[uint32]bool{}
	for i, rec := range records {
		name := rec[0]
		n, err := strconv.ParseUint(rec[1], 10, 32)
		if err != nil {
			return fmt.Errorf("%s line %d: bad id %q: %w", file, i+1, rec[1], err)
		}
		if n == 0 || n > maxAttrID {
			return fmt.Errorf("%s line %d: id %d outside 1..%d", file, i+1, n, maxAttrID)
		}
		if err := checkExportedName(file, name); err != nil {
			return err
		}
		// Keep in step with the exported names in pkg/ua/attr/attr.go.
		if err := checkNoClash(file, name, "ID", "Valid"); err != nil {
			return err
		}
		id := uint32(n)
		if seenName[name] || seenID[id] {
			return fmt.Errorf("%s line %d: duplicate name %q or id %d", file, i+1, name, id)
		}
		seenName[name], seenID[id] = true, true
		rows = append(rows, attrRow{name: name, id: id})
	}
	slices.SortFunc(rows, func(a, b attrRow) int { return cmp.Compare(a.id, b.id) })

	var b bytes.Buffer
	b.WriteString("package attr\n\n")
	fmt.Fprintf(&b, "// The node attribute ids from %s.\n", file)
	b.WriteString("const (\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "// %s is the id of the %s attribute.\n", r.name, r.name)
		fmt.Fprintf(&b, "%s ID = %d\n", r.name, r.id)
	}
	b.WriteString(")\n\n")

	b.WriteString("// names holds the attribute names indexed by ID; unused ids are \"\".\n")
	b.WriteString("var names = [...]string{\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s: %q,\n", r.name, r.name)
	}
	b.WriteString("}\n")

	return writeGoFile(outDir, "ua/attr/attr_gen.go", file, b.Bytes())
}
