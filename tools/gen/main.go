// Command gen generates Go code for the uastack packages from the official
// OPC UA schema files (NodeIds.csv, StatusCode.csv, AttributeIds.csv, ...).
//
// Run it from the repository root:
//
//	go run ./tools/gen [-schema DIR] [-out DIR]
//
// Each generator is a step. Steps in other files register themselves with
//
//	func init() { steps = append(steps, genSomething) }
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// step generates one or more files under outDir (the pkg module root) from
// the schema files in schemaDir.
type step func(schemaDir, outDir string) error

// steps lists every generator step in the order they run. Other files add
// theirs in init(), which runs after this variable is initialised.
var steps = []step{genIDs, genStatus, genAttrs}

// Defaults are relative to the repository root (the directory with go.work).
const (
	defaultSchemaDir = "../shared/opcua/schema"
	defaultOutDir    = "pkg"
)

func main() {
	schemaDir := flag.String("schema", defaultSchemaDir, "directory with the OPC UA schema files (the default is relative to the repo root, not the working directory)")
	outDir := flag.String("out", defaultOutDir, "root of the pkg module to write into (the default is relative to the repo root, not the working directory)")
	flag.Parse()

	// Resolve defaults against the repo root so the command also works when
	// started from a subdirectory (e.g. by go generate); explicit flags are
	// taken as given.
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["schema"] || !set["out"] {
		root, err := findRepoRoot()
		if err != nil {
			fail(err)
		}
		if !set["schema"] {
			*schemaDir = filepath.Join(root, defaultSchemaDir)
		}
		if !set["out"] {
			*outDir = filepath.Join(root, defaultOutDir)
		}
	}

	if err := runSteps(*schemaDir, *outDir); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

// runSteps runs all registered steps, stopping at the first error.
func runSteps(schemaDir, outDir string) error {
	if fi, err := os.Stat(schemaDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("schema directory %q not found", schemaDir)
	}
	for _, s := range steps {
		if err := s(schemaDir, outDir); err != nil {
			return err
		}
	}
	return nil
}

// findRepoRoot walks up from the working directory to the directory that
// holds go.work.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repo root not found: no go.work in the working directory or its parents")
		}
		dir = parent
	}
}
