package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// syntheticDir holds a small schema with what namespace 0 lacks: optional fields, a
// union, a recursive structure, an option set of 16 bits, an opaque type used as a field.
const syntheticDir = "testdata/synthetic"

func TestTypesModel(t *testing.T) {
	m, err := loadModel(syntheticDir)
	require.NoError(t, err)
	require.Equal(t, []string{"StatusCode"}, m.skipped)
	require.Len(t, m.opaques, 1)
	require.Equal(t, "float64", m.opaques[0].base.goType, "Celsius is a Double")
	require.Len(t, m.enums, 2)
	require.Len(t, m.structs, 4)

	byName := map[string]*structType{}
	for _, s := range m.structs {
		byName[s.name] = s
	}
	opt := byName["WithOptional"]
	require.Equal(t, optionalStruct, opt.kind)
	var got []string
	for _, f := range opt.fields {
		got = append(got, f.name+" "+f.goType())
	}
	require.Equal(t, []string{
		"Id uint32", "Count *int32", "Texts []string", "Inner *Inner", "Value *codec.Variant",
		"Colour *Colour", "Flags *Flags", "Label codec.LocalizedText",
	}, got)
	require.Equal(t, uint32(0x3f), optionalMask(opt))
	// Mask, Id and Label: absent optional fields take no bytes.
	require.Equal(t, 4+4+1, opt.minSize)

	choice := byName["Choice"]
	require.Equal(t, unionStruct, choice.kind)
	require.Equal(t, "SwitchField", choice.switchName)
	require.Equal(t, "Temperature", choice.fields[5].name)
	require.Equal(t, "float64", choice.fields[5].goType(), "the opaque Celsius resolves to its base")
	require.Equal(t, 4, choice.minSize)

	require.True(t, byName["Tree"].recursive)
	require.False(t, opt.recursive)
}

// TestTypesCompileAndRoundTrip generates the synthetic schema into a scratch module,
// adds package ua's generic round-trip tests and the synthetic checks, and runs them
// with the go command. This is what exercises the generated code for optional fields,
// unions and recursion.
func TestTypesCompileAndRoundTrip(t *testing.T) {
	root, err := findRepoRoot()
	require.NoError(t, err)
	goCmd, err := exec.LookPath("go")
	require.NoError(t, err, "the go command is needed to compile the generated code")

	mod := t.TempDir()
	require.NoError(t, genTypes(syntheticDir, mod))
	pkgDir := filepath.Join(root, "pkg")
	copyFile(t, filepath.Join(pkgDir, "go.sum"), filepath.Join(mod, "go.sum"))
	for _, name := range []string{"random_test.go", "roundtrip_test.go"} {
		copyFile(t, filepath.Join(pkgDir, "ua", name), filepath.Join(mod, "ua", name))
	}
	copyFile(t, filepath.Join(syntheticDir, "synthetic_test.go"), filepath.Join(mod, "ua", "synthetic_test.go"))
	goMod := "module synthetic.test\n\ngo 1.26\n\n" +
		"require (\n\tgithub.com/stretchr/testify v1.12.1\n\tuastack.dev/pkg v0.0.0\n)\n\n" +
		"replace uastack.dev/pkg => " + filepath.ToSlash(pkgDir) + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(goMod), 0o644))

	tests := []string{"TestBinaryRoundTrip", "TestJSONRoundTrip", "TestRegistry", "FuzzDecodeBinary", "TestSyntheticOptionalFields",
		"TestSyntheticOptionalBudget", "TestSyntheticUnion", "TestSyntheticRecursionDepth", "TestSyntheticEnumerations"}
	cmd := exec.Command(goCmd, "test", "-count=1", "-v", "-run", "^("+strings.Join(tests, "|")+")$", "./ua")
	cmd.Dir = mod
	// Offline, outside the workspace, letting go fill in the scratch module's go.mod.
	goFlags := strings.TrimSpace(os.Getenv("GOFLAGS") + " -mod=mod")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+goFlags, "GOPROXY=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go test in the generated module:\n%s", out)
	for _, name := range tests {
		require.Contains(t, string(out), "--- PASS: "+name+" ", "%s did not run", name)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
	require.NoError(t, os.WriteFile(to, b, 0o644))
}

func TestTypesRejectBadSchemas(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(syntheticDir, bsdFile))
	require.NoError(t, err)
	tests := []struct {
		name, old, new, wantErr string
	}{
		{"mask not 32 bits", `Name="Reserved1" TypeName="opc:Bit" Length="26"`, `Name="Reserved1" TypeName="opc:Bit" Length="25"`, "EncodingMask has 32"},
		{"unknown field type", `Name="Code" TypeName="opc:Int32"`, `Name="Code" TypeName="tns:Missing"`, "not supported"},
		{"missing length field", `LengthField="NoOfChildren"`, `LengthField="NoOfKids"`, "does not exist"},
		{"switch value twice", `SwitchValue="5"`, `SwitchValue="4"`, "appears twice"},
		{"enum value twice", `Name="Blue" Value="5"`, `Name="Blue" Value="1"`, "appears twice"},
		{"option not a bit", `Name="Safe" Value="2"`, `Name="Safe" Value="3"`, "not a single bit"},
		{"field named like a method", `Name="Label" TypeName="opc:String"`, `Name="TypeInfo" TypeName="opc:String"`, "clashes"},
		{"type defined twice", `StructuredType Name="Tree"`, `StructuredType Name="Inner"`, "defined twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Contains(t, string(base), tt.old)
			dir := t.TempDir()
			for _, f := range []string{nodeIDsFile, nodeSetFile} {
				copyFile(t, filepath.Join(syntheticDir, f), filepath.Join(dir, f))
			}
			bad := strings.Replace(string(base), tt.old, tt.new, 1)
			require.NoError(t, os.WriteFile(filepath.Join(dir, bsdFile), []byte(bad), 0o644))
			_, err := loadModel(dir)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
