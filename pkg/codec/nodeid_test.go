package codec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// binNodeIdCases are NodeId rows (Part 6 §5.2.2.9), including the compact form chosen at
// each boundary of the numeric ranges.
var binNodeIdCases = []binCase[codec.NodeId]{
	// Two-byte form: namespace 0 and an identifier up to 255 (§5.2.2.9 example i=72).
	{name: "two-byte i=72", val: codec.NewNumericNodeId(0, 72), wire: []byte{
		0x00, // encoding: two-byte
		0x48, // identifier
	}},
	{name: "null NodeId", val: codec.NodeId{}, wire: []byte{0x00, 0x00}},
	{name: "two-byte upper bound i=255", val: codec.NewNumericNodeId(0, 255), wire: []byte{0x00, 0xFF}},
	// Four-byte form: namespace up to 255 and an identifier up to 65535.
	{name: "four-byte i=256", val: codec.NewNumericNodeId(0, 256), wire: []byte{
		0x01,       // encoding: four-byte
		0x00,       // namespace (one byte)
		0x00, 0x01, // identifier (UInt16)
	}},
	{name: "four-byte ns=5;i=1025", val: codec.NewNumericNodeId(5, 1025), wire: []byte{ // §5.2.2.9 example
		0x01,       // encoding: four-byte
		0x05,       // namespace
		0x01, 0x04, // identifier 1025
	}},
	{name: "four-byte ns=1;i=0", val: codec.NewNumericNodeId(1, 0), wire: []byte{0x01, 0x01, 0x00, 0x00}},
	{name: "four-byte upper bound ns=255;i=65535", val: codec.NewNumericNodeId(255, 65535), wire: []byte{0x01, 0xFF, 0xFF, 0xFF}},
	// Numeric form for everything else.
	{name: "numeric ns=256;i=1", val: codec.NewNumericNodeId(256, 1), wire: []byte{
		0x02,       // encoding: numeric
		0x00, 0x01, // namespace (UInt16)
		0x01, 0x00, 0x00, 0x00, // identifier (UInt32)
	}},
	{name: "numeric ns=1;i=65536", val: codec.NewNumericNodeId(1, 65536), wire: []byte{
		0x02,       // encoding: numeric
		0x01, 0x00, // namespace
		0x00, 0x00, 0x01, 0x00, // identifier 65536
	}},
	{name: "numeric ns=0;i=65536", val: codec.NewNumericNodeId(0, 65536), wire: []byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00}},
	{name: "numeric ns=65535;i=4294967295", val: codec.NewNumericNodeId(65535, 4294967295), wire: []byte{0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
	// String form (§5.2.2.9 example ns=1;s=Hot水).
	{name: "string ns=1;s=Hot水", val: codec.NewStringNodeId(1, "Hot水"), wire: []byte{
		0x03,       // encoding: string
		0x01, 0x00, // namespace
		0x06, 0x00, 0x00, 0x00, // length
		'H', 'o', 't', 0xE6, 0xB0, 0xB4, // UTF-8
	}},
	{name: "string null", val: codec.NewStringNodeId(1, ""), wire: []byte{
		0x03,       // encoding: string
		0x01, 0x00, // namespace
		0xFF, 0xFF, 0xFF, 0xFF, // identifier: null
	}},
	// Guid form.
	{name: "guid", val: codec.NewGuidNodeId(2, binGuidExample), wire: binCat(
		[]byte{0x04},       // encoding: guid
		[]byte{0x02, 0x00}, // namespace
		binGuidExampleWire, // identifier
	)},
	{name: "guid zero", val: codec.NewGuidNodeId(0, codec.Guid{}), wire: binCat([]byte{0x04, 0x00, 0x00}, make([]byte, 16))},
	// Opaque (ByteString) form.
	{name: "opaque", val: codec.NewOpaqueNodeId(3, []byte{0xDE, 0xAD, 0xBE, 0xEF}), wire: []byte{
		0x05,       // encoding: ByteString
		0x03, 0x00, // namespace
		0x04, 0x00, 0x00, 0x00, // length
		0xDE, 0xAD, 0xBE, 0xEF, // identifier
	}},
	{name: "opaque null", val: codec.NewOpaqueNodeId(3, nil), wire: []byte{0x05, 0x03, 0x00, 0xFF, 0xFF, 0xFF, 0xFF}},
	// Decoders accept forms larger than needed; encoders always write the compact one.
	{name: "i=72 in four-byte form", val: codec.NewNumericNodeId(0, 72), wire: []byte{0x01, 0x00, 0x48, 0x00}, canon: []byte{0x00, 0x48}},
	{name: "i=72 in numeric form", val: codec.NewNumericNodeId(0, 72), wire: []byte{0x02, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00}, canon: []byte{0x00, 0x48}},
	{name: "ns=5;i=1025 in numeric form", val: codec.NewNumericNodeId(5, 1025), wire: []byte{0x02, 0x05, 0x00, 0x01, 0x04, 0x00, 0x00}, canon: []byte{0x01, 0x05, 0x01, 0x04}},
	// An empty String or ByteString identifier is the same null identifier as a null one.
	{name: "string empty", val: codec.NewStringNodeId(1, ""), wire: []byte{0x03, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00},
		canon: []byte{0x03, 0x01, 0x00, 0xFF, 0xFF, 0xFF, 0xFF}},
	{name: "opaque empty", val: codec.NewOpaqueNodeId(3, nil), wire: []byte{0x05, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00},
		canon: []byte{0x05, 0x03, 0x00, 0xFF, 0xFF, 0xFF, 0xFF}},
}

func TestBinaryNodeId(t *testing.T) {
	t.Parallel()
	binRunTable(t, binNodeIdCodec, binNodeIdCases)
}

// binExpandedNodeIdCases are ExpandedNodeId rows (Part 6 §5.2.2.10).
var binExpandedNodeIdCases = []binCase[codec.ExpandedNodeId]{
	{name: "no flags", val: codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, 85)}, wire: []byte{
		0x00, // encoding: two-byte, no flags
		0x55, // identifier 85
	}},
	{name: "NamespaceUri flag", val: codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, 1234), NamespaceURI: "urn:x"}, wire: []byte{
		0x81,       // encoding: four-byte | NamespaceUri flag
		0x00,       // namespace: 0 beside a URI
		0xD2, 0x04, // identifier 1234
		0x05, 0x00, 0x00, 0x00, 'u', 'r', 'n', ':', 'x', // NamespaceUri
	}},
	{name: "ServerIndex flag", val: codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(2, 85), ServerIndex: 3}, wire: []byte{
		0x41,       // encoding: four-byte | ServerIndex flag
		0x02,       // namespace
		0x55, 0x00, // identifier
		0x03, 0x00, 0x00, 0x00, // ServerIndex
	}},
	{name: "both flags", val: codec.ExpandedNodeId{NodeId: codec.NewStringNodeId(0, "a"), NamespaceURI: "u", ServerIndex: 1}, wire: []byte{
		0xC3,       // encoding: string | NamespaceUri | ServerIndex
		0x00, 0x00, // namespace
		0x01, 0x00, 0x00, 0x00, 'a', // identifier
		0x01, 0x00, 0x00, 0x00, 'u', // NamespaceUri
		0x01, 0x00, 0x00, 0x00, // ServerIndex
	}},
	{name: "guid with both flags", val: codec.ExpandedNodeId{NodeId: codec.NewGuidNodeId(0, binGuidExample), NamespaceURI: "u", ServerIndex: 0xFFFFFFFF}, wire: binCat(
		[]byte{0xC4, 0x00, 0x00},            // encoding: guid | both flags; namespace
		binGuidExampleWire,                  // identifier
		[]byte{0x01, 0x00, 0x00, 0x00, 'u'}, // NamespaceUri
		[]byte{0xFF, 0xFF, 0xFF, 0xFF},      // ServerIndex
	)},
	// "If it is specified, then the NamespaceIndex inside the NodeId shall be ignored."
	{name: "NamespaceIndex beside a URI is ignored", val: codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, 5), NamespaceURI: "urn:x"}, wire: []byte{
		0x81,       // encoding: four-byte | NamespaceUri
		0x07,       // namespace 7: ignored
		0x05, 0x00, // identifier
		0x05, 0x00, 0x00, 0x00, 'u', 'r', 'n', ':', 'x',
	}, canon: []byte{0x80, 0x05, 0x05, 0x00, 0x00, 0x00, 'u', 'r', 'n', ':', 'x'}},
	// Table 15: NamespaceUri "Not present if null or Empty", ServerIndex "Not present if 0".
	{name: "empty NamespaceUri", val: codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(1, 5)}, wire: []byte{
		0x81, 0x01, 0x05, 0x00, // four-byte | NamespaceUri; ns=1;i=5
		0x00, 0x00, 0x00, 0x00, // NamespaceUri: empty
	}, canon: []byte{0x01, 0x01, 0x05, 0x00}},
	{name: "null NamespaceUri", val: codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(1, 5)}, wire: []byte{
		0x81, 0x01, 0x05, 0x00, // four-byte | NamespaceUri; ns=1;i=5
		0xFF, 0xFF, 0xFF, 0xFF, // NamespaceUri: null
	}, canon: []byte{0x01, 0x01, 0x05, 0x00}},
	{name: "zero ServerIndex", val: codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, 5)}, wire: []byte{
		0x40, 0x05, // two-byte | ServerIndex
		0x00, 0x00, 0x00, 0x00, // ServerIndex 0
	}, canon: []byte{0x00, 0x05}},
}

func TestBinaryExpandedNodeId(t *testing.T) {
	t.Parallel()
	binRunTable(t, binExpandedNodeIdCodec, binExpandedNodeIdCases)

	// The encoder writes NamespaceIndex 0 beside a NamespaceUri (§5.2.2.10).
	e := codec.NewEncoder(nil)
	e.ExpandedNodeId(codec.ExpandedNodeId{NodeId: codec.NewStringNodeId(9, "a"), NamespaceURI: "u"})
	require.Equal(t, []byte{0x83, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 'a', 0x01, 0x00, 0x00, 0x00, 'u'}, e.Bytes())
	// An empty NamespaceUri is left out and the NamespaceIndex kept.
	e.Reset(nil)
	e.ExpandedNodeId(codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(9, 1), NamespaceURI: codec.EmptyString})
	require.Equal(t, []byte{0x01, 0x09, 0x01, 0x00}, e.Bytes())
}

func TestDecodeNodeIdRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wire []byte
	}{
		{"NamespaceUri flag in a NodeId", []byte{0x80, 0x05, 0x01, 0x00, 0x00, 0x00, 'u'}},
		{"ServerIndex flag in a NodeId", []byte{0x40, 0x05, 0x01, 0x00, 0x00, 0x00}},
		{"encoding 0x06", []byte{0x06, 0x00, 0x00, 0x00, 0x00}},
		{"encoding 0x3F", []byte{0x3F, 0x00, 0x00, 0x00, 0x00}},
		{"encoding 0x10", []byte{0x10, 0x00, 0x00}},
	} {
		d := codec.NewDecoder(tc.wire)
		require.Equal(t, codec.NodeId{}, d.NodeId(), tc.name)
		require.Equal(t, error(status.BadDecodingError), d.Err(), tc.name)
	}
	// Unknown encodings fail in ExpandedNodeIds as well.
	d := codec.NewDecoder([]byte{0x86, 0x00, 0x00})
	require.Equal(t, codec.ExpandedNodeId{}, d.ExpandedNodeId())
	require.Equal(t, error(status.BadDecodingError), d.Err())
}

func TestNodeIdAccessors(t *testing.T) {
	t.Parallel()
	n := codec.NewGuidNodeId(4, binGuidExample)
	require.Equal(t, codec.IDGuid, n.Type())
	require.Equal(t, uint16(4), n.Namespace())
	require.Equal(t, binGuidExample, n.GuidID())
	require.Equal(t, "", n.StringID())
	require.Nil(t, n.OpaqueID())
	require.Zero(t, n.IntID())

	o := codec.NewOpaqueNodeId(1, []byte{1, 2})
	b := o.OpaqueID()
	b[0] = 9
	require.Equal(t, []byte{1, 2}, o.OpaqueID(), "OpaqueID returns a copy")

	for _, n := range []codec.NodeId{
		{}, codec.NewNumericNodeId(0, 0), codec.NewStringNodeId(0, ""), codec.NewStringNodeId(0, codec.EmptyString),
		codec.NewGuidNodeId(0, codec.Guid{}), codec.NewOpaqueNodeId(0, nil), codec.NewOpaqueNodeId(0, []byte{}),
	} {
		require.True(t, n.IsNull(), "%v", n)
	}
	for _, n := range []codec.NodeId{
		codec.NewNumericNodeId(1, 0), codec.NewNumericNodeId(0, 1), codec.NewStringNodeId(0, "a"), codec.NewGuidNodeId(0, binGuidExample),
	} {
		require.False(t, n.IsNull(), "%v", n)
	}
	require.True(t, codec.NewNumericNodeId(1, 2).Equal(codec.MustParseNodeId("ns=1;i=2")))
}

func TestNodeIdText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		id   codec.NodeId
	}{
		{"i=85", codec.NewNumericNodeId(0, 85)},
		{"ns=2;i=4294967295", codec.NewNumericNodeId(2, 4294967295)},
		{"ns=10;s=Hello:World", codec.NewStringNodeId(10, "Hello:World")},
		{"s=a;b=c", codec.NewStringNodeId(0, "a;b=c")},
		{"ns=1;s=Hot水", codec.NewStringNodeId(1, "Hot水")},
		{"g=72962B91-FA75-4AE6-8D28-B404DC7DAF63", codec.NewGuidNodeId(0, binGuidExample)},
		{"ns=1;b=3q2+7w==", codec.NewOpaqueNodeId(1, []byte{0xDE, 0xAD, 0xBE, 0xEF})},
	} {
		got, err := codec.ParseNodeId(tc.text)
		require.NoError(t, err, tc.text)
		require.Equal(t, tc.id, got, tc.text)
		require.Equal(t, tc.text, tc.id.String())
	}
	// ns=0 is accepted and left out when formatting; Guids parse in either case.
	require.Equal(t, codec.NewNumericNodeId(0, 1), codec.MustParseNodeId("ns=0;i=1"))
	require.Equal(t, codec.NewGuidNodeId(0, binGuidExample), codec.MustParseNodeId("g=72962b91-fa75-4ae6-8d28-b404dc7daf63"))

	for _, s := range []string{"", "i", "i=", "x=1", "ns=1", "ns=;i=1", "ns=65536;i=1", "ns=-1;i=1", "i=-1", "i=4294967296",
		"g=72962B91", "b=!!", "ns=1i=2"} {
		_, err := codec.ParseNodeId(s)
		require.Error(t, err, "%q", s)
	}
	require.Panics(t, func() { codec.MustParseNodeId("bogus") })

	for _, tc := range []struct {
		id   codec.ExpandedNodeId
		text string
	}{
		{codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(2, 5)}, "ns=2;i=5"},
		{codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(2, 5), ServerIndex: 1}, "svr=1;ns=2;i=5"},
		{codec.ExpandedNodeId{NodeId: codec.NewStringNodeId(2, "x"), NamespaceURI: "urn:a", ServerIndex: 3}, "svr=3;nsu=urn:a;s=x"},
	} {
		require.Equal(t, tc.text, tc.id.String())
	}
	require.True(t, codec.ExpandedNodeId{}.IsNull())
	require.False(t, codec.ExpandedNodeId{ServerIndex: 1}.IsNull())
}
