package nodeset_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodeset"
	"uastack.dev/pkg/ua"
)

const (
	diFile   = "testdata/Opc.Ua.Di.NodeSet2.xml"
	pumpFile = "testdata/uastack.Pump.NodeSet2.xml"
	diURI    = "http://opcfoundation.org/UA/DI/"
	pumpURI  = "urn:uastack:test:pump"
)

// load loads files in order into a Loader for a server that has namespaces already.
func load(t testing.TB, namespaces []string, files ...string) (*nodeset.Loader, []*nodeset.Result) {
	t.Helper()
	l := nodeset.NewLoader(namespaces)
	var out []*nodeset.Result
	for _, name := range files {
		f, err := os.Open(name)
		require.NoError(t, err)
		r, err := l.Load(f, name)
		f.Close()
		require.NoError(t, err)
		out = append(out, r)
	}
	return l, out
}

func byID(r *nodeset.Result, id codec.NodeId) *nodeset.Node {
	for i := range r.Nodes {
		if r.Nodes[i].NodeId == id {
			return &r.Nodes[i]
		}
	}
	return nil
}

func TestLoadDI(t *testing.T) {
	l, rs := load(t, []string{"http://opcfoundation.org/UA/", "urn:uastack:demo"}, diFile)
	r := rs[0]
	require.Equal(t, []string{"http://opcfoundation.org/UA/", "urn:uastack:demo", diURI}, l.Namespaces())
	require.Equal(t, "1.04.0", l.Models()[diURI])
	require.Len(t, r.Nodes, 412)

	// DeviceType, in the server's namespace 2, abstract, below ComponentType.
	dt := byID(r, codec.NewNumericNodeId(2, 1002))
	require.NotNil(t, dt)
	require.Equal(t, ua.NodeClassObjectType, dt.NodeClass)
	require.Equal(t, codec.QualifiedName{NamespaceIndex: 2, Name: "DeviceType"}, dt.BrowseName)
	require.True(t, dt.IsAbstract)
	require.Contains(t, dt.References, nodeset.Reference{ReferenceTypeId: codec.NewNumericNodeId(0, 45),
		TargetId: codec.NewNumericNodeId(2, 15063), IsForward: false})

	// A Method's InputArguments: ExtensionObjects read into the generated Argument.
	var args *nodeset.Node
	for i := range r.Nodes {
		if r.Nodes[i].BrowseName.Name == "InputArguments" && !r.Nodes[i].Value.IsNull() {
			args = &r.Nodes[i]
			break
		}
	}
	require.NotNil(t, args)
	xs, ok := args.Value.Value().([]codec.ExtensionObject)
	require.True(t, ok, "%v", args.Value)
	a, ok := xs[0].Value.(*ua.Argument)
	require.True(t, ok, "%T", xs[0].Value)
	require.NotEmpty(t, a.Name)
	require.False(t, a.DataType.IsNull())

	// DI's structures have definitions and types to register.
	require.Len(t, r.Types, 3)
	p := byID(r, codec.NewNumericNodeId(2, 6525)) // ParameterResultDataType
	require.NotNil(t, p)
	def := p.DataTypeDefinition.Value().(codec.ExtensionObject).Value.(*ua.StructureDefinition)
	require.Equal(t, codec.NewNumericNodeId(2, 6554), def.DefaultEncodingId)
	require.Equal(t, "NodePath", def.Fields[0].Name)
	require.Equal(t, int32(1), def.Fields[0].ValueRank)
}

func TestLoadPumpOnDI(t *testing.T) {
	l, rs := load(t, nil, diFile, pumpFile)
	require.Equal(t, []string{"http://opcfoundation.org/UA/", diURI, pumpURI}, l.Namespaces())
	r := rs[1]
	// The file's namespace 1 is the server's 2, its 2 (DI) the server's 1.
	pump := byID(r, codec.NewNumericNodeId(2, 6001))
	require.NotNil(t, pump)
	require.Contains(t, pump.References, nodeset.Reference{ReferenceTypeId: codec.NewNumericNodeId(0, 35),
		TargetId: codec.NewNumericNodeId(1, 5001), IsForward: false}, "organized by DI's DeviceSet")
	sn := byID(r, codec.NewNumericNodeId(2, 6002))
	require.Equal(t, codec.QualifiedName{NamespaceIndex: 1, Name: "SerialNumber"}, sn.BrowseName)
	require.Equal(t, "SN-0042", sn.Value.Value())
	require.Equal(t, codec.LocalizedText{Locale: "en", Text: "uastack pumps"}, byID(r, codec.NewNumericNodeId(2, 6003)).Value.Value())
	health := byID(r, codec.NewNumericNodeId(2, 6005))
	require.Equal(t, codec.NewNumericNodeId(1, 6244), health.DataType)

	speed := byID(r, codec.NewNumericNodeId(2, 6007))
	require.True(t, speed.Historizing)
	require.Equal(t, uint8(3), speed.AccessLevel)
	require.Equal(t, uint8(1), byID(r, codec.NewNumericNodeId(2, 6008)).AccessLevel, "AccessLevel defaults to CurrentRead")

	settings := byID(r, codec.NewNumericNodeId(2, 6006))
	x := settings.Value.Value().(codec.ExtensionObject)
	s, ok := x.Value.(*codec.DynamicStructure)
	require.True(t, ok, "%T", x.Value)
	require.Equal(t, codec.NewNumericNodeId(2, 5001), s.TypeInfo().BinaryEncoding)
	field := func(name string) any {
		v, ok := s.Field(name)
		require.True(t, ok, name)
		return v.Value()
	}
	require.Equal(t, 1450.5, field("Speed"))
	require.Equal(t, "main pump", field("Label"))
	require.Equal(t, int32(2), field("Mode"))
	require.Equal(t, int32(0), field("Health"))
	require.Equal(t, []float64{100, 200.25}, field("Setpoints"))
	require.Equal(t, &ua.Range{Low: 0, High: 3000}, field("Limits").(codec.ExtensionObject).Value)

	// The value encodes in binary and decodes back through the registered type.
	require.Len(t, r.Types, 1)
	require.NoError(t, codec.RegisterDynamic(r.Types[0]))
	e := codec.NewEncoder(nil)
	e.Variant(&settings.Value)
	require.NoError(t, e.Err())
	d := codec.NewDecoder(e.Bytes())
	var back codec.Variant
	d.Variant(&back)
	require.NoError(t, d.Err())
	bs := back.Value().(codec.ExtensionObject).Value.(*codec.DynamicStructure)
	require.Equal(t, s.Fields[:2], bs.Fields[:2])

	mode := byID(r, codec.NewNumericNodeId(2, 3002))
	enum := mode.DataTypeDefinition.Value().(codec.ExtensionObject).Value.(*ua.EnumDefinition)
	require.Equal(t, "Automatic", enum.Fields[2].Name)
	require.Equal(t, int64(2), enum.Fields[2].Value)
}

// TestLoadErrors: each broken file names its file and line, a missing model its URI.
func TestLoadErrors(t *testing.T) {
	pump, err := os.ReadFile(pumpFile)
	require.NoError(t, err)
	di, err := os.ReadFile(diFile)
	require.NoError(t, err)
	lineOf := func(doc, s string) int { return strings.Count(doc[:strings.Index(doc, s)], "\n") + 1 }
	cases := map[string]struct {
		doc  string
		want string
	}{
		"bad XML": {
			doc:  strings.Replace(string(pump), "</DisplayName>\n    <Description>A pump", "</Display>\n    <Description>A pump", 1),
			want: "pump.xml:" + strconv.Itoa(lineOf(string(pump), "<DisplayName>Pump1")) + ": ",
		},
		"unknown alias": {
			doc:  strings.Replace(string(pump), `DataType="PumpSettings" AccessLevel`, `DataType="PumpSetting" AccessLevel`, 1),
			want: "pump.xml:" + strconv.Itoa(lineOf(string(pump), `<UAVariable NodeId="ns=1;i=6006"`)) + `: unknown alias "PumpSetting"`,
		},
		"bad value": {
			doc:  strings.Replace(string(pump), "<Int32 xmlns=\"http://opcfoundation.org/UA/2008/02/Types.xsd\">3</Int32>", "<Int32 xmlns=\"http://opcfoundation.org/UA/2008/02/Types.xsd\">three</Int32>", 1),
			want: "pump.xml:" + strconv.Itoa(lineOf(string(pump), ">3</Int32>")) + `: Int32 "three"`,
		},
		"bad structure field": {
			doc:  strings.Replace(string(pump), "<Speed>1450.5</Speed>", "<Speed>fast</Speed>", 1),
			want: "pump.xml:" + strconv.Itoa(lineOf(string(pump), "<Speed>1450.5</Speed>")) + `: Double "fast"`,
		},
		"namespace index beyond the table": {
			doc:  strings.Replace(string(pump), `ReferenceType="HasTypeDefinition">ns=1;i=1001`, `ReferenceType="HasTypeDefinition">ns=7;i=1001`, 1),
			want: "pump.xml:" + strconv.Itoa(lineOf(string(pump), `ReferenceType="HasTypeDefinition">ns=1;i=1001`)) + ": namespace index 7",
		},
		"not a nodeset": {doc: "<Other/>", want: "pump.xml:1: root element is Other"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := nodeset.NewLoader(nil)
			_, err := l.Load(strings.NewReader(string(di)), "di.xml")
			require.NoError(t, err)
			_, err = l.Load(strings.NewReader(tc.doc), "pump.xml")
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			var ne *nodeset.Error
			require.True(t, errors.As(err, &ne))
		})
	}

	t.Run("missing required model", func(t *testing.T) {
		l := nodeset.NewLoader(nil)
		_, err := l.Load(strings.NewReader(string(pump)), "pump.xml")
		require.ErrorIs(t, err, nodeset.ErrMissingModel)
		require.Contains(t, err.Error(), "pump.xml:"+strconv.Itoa(lineOf(string(pump), `<RequiredModel ModelUri="http://opcfoundation.org/UA/DI/"`)))
		require.Contains(t, err.Error(), "http://opcfoundation.org/UA/DI/")
	})
	t.Run("required model too old", func(t *testing.T) {
		l := nodeset.NewLoader(nil)
		_, err := l.Load(strings.NewReader(strings.Replace(string(di), `Version="1.05.01"`, `Version="1.06.00"`, 1)), "di.xml")
		require.ErrorContains(t, err, "requires 1.06.00")
	})
	t.Run("model loaded twice", func(t *testing.T) {
		l := nodeset.NewLoader(nil)
		_, err := l.Load(strings.NewReader(string(di)), "di.xml")
		require.NoError(t, err)
		_, err = l.Load(strings.NewReader(string(di)), "di2.xml")
		require.ErrorContains(t, err, "is loaded already")
	})
}
