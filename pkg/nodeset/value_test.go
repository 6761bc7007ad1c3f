package nodeset_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodeset"
	"uastack.dev/pkg/status"
)

// TestValues reads a Variable of each built-in type in its XML encoding (Part 6 §5.3.1),
// in a file whose namespace 1 is the server's 2, so that NodeIds and QualifiedNames in
// values are mapped too.
func TestValues(t *testing.T) {
	guid, err := codec.ParseGuid("72962B91-FA75-4AE6-8D28-B404DC7DAF63")
	require.NoError(t, err)
	cases := []struct {
		xml  string
		want any
	}{
		{`<Boolean>true</Boolean>`, true},
		{`<SByte>-8</SByte>`, int8(-8)},
		{`<Byte>200</Byte>`, byte(200)},
		{`<Int16>-300</Int16>`, int16(-300)},
		{`<UInt16>60000</UInt16>`, uint16(60000)},
		{`<Int32>-70000</Int32>`, int32(-70000)},
		{`<UInt32>4000000000</UInt32>`, uint32(4000000000)},
		{`<Int64>-9000000000</Int64>`, int64(-9000000000)},
		{`<UInt64>18000000000000000000</UInt64>`, uint64(18000000000000000000)},
		{`<Float>1.5</Float>`, float32(1.5)},
		{`<Double>-INF</Double>`, math.Inf(-1)},
		{`<String> spaced </String>`, " spaced "},
		{`<DateTime>2024-05-06T07:08:09.5Z</DateTime>`, codec.DateTimeOf(time.Date(2024, 5, 6, 7, 8, 9, 500_000_000, time.UTC))},
		{`<Guid><String>72962B91-FA75-4AE6-8D28-B404DC7DAF63</String></Guid>`, guid},
		{`<ByteString>AAEC
		  /w==</ByteString>`, []byte{0, 1, 2, 255}},
		{`<NodeId><Identifier>ns=1;s=Pump</Identifier></NodeId>`, codec.NewStringNodeId(2, "Pump")},
		{`<ExpandedNodeId><Identifier>i=85</Identifier></ExpandedNodeId>`, codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, 85)}},
		{`<StatusCode><Code>2147483648</Code></StatusCode>`, status.Code(0x80000000)},
		{`<QualifiedName><NamespaceIndex>1</NamespaceIndex><Name>Speed</Name></QualifiedName>`, codec.QualifiedName{NamespaceIndex: 2, Name: "Speed"}},
		{`<LocalizedText><Locale>de</Locale><Text>Pumpe</Text></LocalizedText>`, codec.LocalizedText{Locale: "de", Text: "Pumpe"}},
		{`<ListOfInt32><Int32>1</Int32><Int32>-2</Int32></ListOfInt32>`, []int32{1, -2}},
		{`<ListOfString><String>a</String><String>b</String></ListOfString>`, []string{"a", "b"}},
		{`<ListOfQualifiedName><QualifiedName><NamespaceIndex>1</NamespaceIndex><Name>x</Name></QualifiedName></ListOfQualifiedName>`, []codec.QualifiedName{{NamespaceIndex: 2, Name: "x"}}},
		{`<ListOfVariant><Variant><Value><Int32>5</Int32></Value></Variant><Variant><Value><String>s</String></Value></Variant></ListOfVariant>`, []codec.Variant{codec.Int32Variant(5), codec.StringVariant("s")}},
	}
	var b strings.Builder
	b.WriteString(`<UANodeSet xmlns="http://opcfoundation.org/UA/2011/03/UANodeSet.xsd"><NamespaceUris><Uri>urn:values</Uri></NamespaceUris>`)
	for i, tc := range cases {
		fmt.Fprintf(&b, `<UAVariable NodeId="ns=1;i=%d" BrowseName="1:v%d"><Value>%s</Value></UAVariable>`, i+1, i, tc.xml)
	}
	b.WriteString(`</UANodeSet>`)
	l := nodeset.NewLoader([]string{"http://opcfoundation.org/UA/", "urn:other"})
	r, err := l.Load(strings.NewReader(b.String()), "values.xml")
	require.NoError(t, err)
	for i, tc := range cases {
		n := r.Nodes[i]
		require.Equal(t, codec.NewNumericNodeId(2, uint32(i+1)), n.NodeId)
		require.Equal(t, tc.want, n.Value.Value(), "%s", tc.xml)
	}
}
