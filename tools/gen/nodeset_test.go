package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

func parseValueXML(t *testing.T, s string) *xmlElem {
	t.Helper()
	e, err := parseXMLTree(strings.NewReader(s))
	require.NoError(t, err)
	return e
}

func TestXMLToVariant(t *testing.T) {
	t.Parallel()
	const ns = ` xmlns="http://opcfoundation.org/UA/2008/02/Types.xsd"`
	cases := []struct {
		xml  string
		want codec.Variant
	}{
		{`<Int32` + ns + `>-7</Int32>`, codec.Int32Variant(-7)},
		{`<Boolean` + ns + `>true</Boolean>`, codec.BooleanVariant(true)},
		{`<String` + ns + `></String>`, codec.StringVariant(codec.EmptyString)},
		{`<ListOfString` + ns + `><String>a</String><String/></ListOfString>`, codec.MustVariant([]string{"a", codec.EmptyString})},
		{`<ListOfLocalizedText` + ns + `><LocalizedText><Locale>en</Locale><Text>x</Text></LocalizedText></ListOfLocalizedText>`,
			codec.MustVariant([]codec.LocalizedText{{Locale: "en", Text: "x"}})},
		{`<ByteString` + ns + `>AAEC
  Aw==</ByteString>`, codec.ByteStringVariant([]byte{0, 1, 2, 3})},
		{`<ExtensionObject` + ns + `><TypeId><Identifier>i=297</Identifier></TypeId><Body><Argument>
			<Name>N</Name><DataType><Identifier>i=7</Identifier></DataType><ValueRank>1</ValueRank>
			<ArrayDimensions><UInt32>0</UInt32></ArrayDimensions></Argument></Body></ExtensionObject>`,
			codec.MustVariant(&ua.Argument{Name: "N", DataType: codec.NewNumericNodeId(0, 7), ValueRank: 1, ArrayDimensions: []uint32{0}})},
	}
	for _, c := range cases {
		got, err := xmlToVariant(parseValueXML(t, c.xml))
		require.NoError(t, err, c.xml)
		gotBytes, err := encodeVariant(got)
		require.NoError(t, err)
		wantBytes, err := encodeVariant(c.want)
		require.NoError(t, err)
		require.Equal(t, wantBytes, gotBytes, c.xml)
	}
}

// Values the generator cannot convert are errors, never silently dropped.
func TestXMLToVariantRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`<XmlElement>x</XmlElement>`,
		`<ListOfByte><Byte>1</Byte></ListOfByte>`,
		`<Int32>x</Int32>`,
		`<ListOfInt32><String>x</String></ListOfInt32>`,
		`<ExtensionObject><TypeId><Identifier>i=297</Identifier></TypeId><Body><Argument><Bogus/></Argument></Body></ExtensionObject>`,
		`<ExtensionObject><TypeId><Identifier>i=297</Identifier></TypeId><Body><EUInformation/></Body></ExtensionObject>`,
		`<ExtensionObject><TypeId><Identifier>i=1</Identifier></TypeId><Body><Argument/></Body></ExtensionObject>`,
	} {
		_, err := xmlToVariant(parseValueXML(t, s))
		require.Error(t, err, s)
	}
}

func TestQuoteBinary(t *testing.T) {
	t.Parallel()
	var all []byte
	for i := range 256 {
		all = append(all, byte(i))
	}
	for _, s := range []string{"", "plain", `q"\`, string(all), "\u00e9\r\n"} {
		got, err := strconv.Unquote(quoteBinary(s))
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
}

func TestNodeSetModel(t *testing.T) {
	t.Parallel()
	const doc = `<UANodeSet>
  <Aliases><Alias Alias="HasSubtype">i=45</Alias><Alias Alias="Organizes">i=35</Alias></Aliases>
  <UAReferenceType NodeId="i=35" BrowseName="Organizes"><DisplayName>Organizes</DisplayName></UAReferenceType>
  <UAReferenceType NodeId="i=45" BrowseName="HasSubtype"><DisplayName>HasSubtype</DisplayName>
    <InverseName>SubtypeOf</InverseName></UAReferenceType>
  <UAObject NodeId="i=84" BrowseName="0:Root"><DisplayName>Root</DisplayName>
    <References><Reference ReferenceType="Organizes">i=85</Reference>
      <Reference ReferenceType="Organizes">i=85</Reference></References></UAObject>
  <UAObject NodeId="i=85" BrowseName="Objects"><DisplayName>Objects</DisplayName></UAObject>
</UANodeSet>`
	root, err := parseXMLTree(strings.NewReader(doc))
	require.NoError(t, err)
	m, err := buildNodeSetModel(root)
	require.NoError(t, err)
	require.Equal(t, "Root", m.byID[84].browseName)
	require.Equal(t, []nsRef{{typ: 35, target: 85, forward: true}}, m.byID[84].refs, "the duplicate is dropped")
	require.Equal(t, []nsRef{{typ: 35, target: 84, forward: false}}, m.byID[85].refs, "the inverse is added")
	require.Equal(t, "SubtypeOf", m.byID[45].inverseName.Text)

	_, err = m.parseNumericID("ns=1;i=5")
	require.Error(t, err)
	_, err = m.parseNumericID("s=Foo")
	require.Error(t, err)

	m.byID[85].refs = append(m.byID[85].refs, nsRef{typ: 35, target: 99, forward: true})
	require.Error(t, m.completeReferences(), "a dangling target is an error")
}
