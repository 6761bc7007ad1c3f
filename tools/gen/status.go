package main

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// statusRow is one line of StatusCode.csv: Name,0xHEXVALUE,"Description".
type statusRow struct {
	name        string
	code        uint32
	description string
}

// genStatus writes status/status_gen.go: a Code constant per standard
// StatusCode and a table sorted by code for the hand-written lookups in
// status/status.go.
func genStatus(schemaDir, outDir string) error {
	const file = "StatusCode.csv"
	records, err := readCSV(schemaDir, file, 3)
	if err != nil {
		return err
	}
	rows := make([]statusRow, 0, len(records))
	seenName := map[string]bool{}
	seenCode := map[uint32]bool{}
	for i, rec := range records {
		name, description := rec[0], strings.TrimSpace(rec[2])
		if !strings.HasPrefix(rec[1], "0x") {
			return fmt.Errorf("%s line %d: code %q is not 0x-prefixed hex", file, i+1, rec[1])
		}
		n, err := strconv.ParseUint(rec[1][2:], 16, 32)
		if err != nil {
			return fmt.Errorf("%s line %d: bad code %q: %w", file, i+1, rec[1], err)
		}
		if err := checkExportedName(file, name); err != nil {
			return err
		}
		// Keep in step with the exported names in pkg/status/status.go.
		if err := checkNoClash(file, name, "Code"); err != nil {
			return err
		}
		code := uint32(n)
		if seenName[name] || seenCode[code] {
			return fmt.Errorf("%s line %d: duplicate name %q or code 0x%08X", file, i+1, name, code)
		}
		seenName[name], seenCode[code] = true, true
		rows = append(rows, statusRow{name: name, code: code, description: description})
	}
	slices.SortFunc(rows, func(a, b statusRow) int { return cmp.Compare(a.code, b.code) })

	var b bytes.Buffer
	b.WriteString("package status\n\n")
	fmt.Fprintf(&b, "// The standard StatusCodes from %s, sorted by value.\n", file)
	b.WriteString("const (\n")
	for i, r := range rows {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "// %s: %s\n", r.name, oneLine(r.description))
		fmt.Fprintf(&b, "%s Code = 0x%08X\n", r.name, r.code)
	}
	b.WriteString(")\n\n")

	b.WriteString("// codeInfos holds every standard StatusCode sorted by code, for binary search.\n")
	b.WriteString("var codeInfos = [...]codeInfo{\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "{%s, %q, %q},\n", r.name, r.name, r.description)
	}
	b.WriteString("}\n")

	return writeGoFile(outDir, "status/status_gen.go", file, b.Bytes())
}

// oneLine folds line breaks so text can sit in a // comment.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
