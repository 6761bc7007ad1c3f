package nodeset_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodeset"
)

// FuzzLoad: a file that does not load fails with an *Error (file and line), never a
// panic; every value of a file that loads encodes in binary.
//
//	go test -run='^$' -fuzz='^FuzzLoad$' -fuzztime=2m ./pkg/nodeset
func FuzzLoad(f *testing.F) {
	pump, err := os.ReadFile(pumpFile)
	if err != nil {
		f.Fatal(err)
	}
	// The pump model without DI: its own types and values, and a few small files.
	alone := strings.NewReplacer(
		`<RequiredModel ModelUri="http://opcfoundation.org/UA/DI/" Version="1.04.0" />`, "",
		`ns=2;i=6244`, "i=6", `ns=2;i=1002`, "i=58", `ns=2;i=5001`, "i=85").Replace(string(pump))
	f.Add([]byte(alone))
	f.Add([]byte(`<UANodeSet><NamespaceUris><Uri>urn:a</Uri></NamespaceUris><UAVariable NodeId="ns=1;s=v" BrowseName="1:v" DataType="i=12" ValueRank="1"><Value><ListOfString><String>a</String></ListOfString></Value></UAVariable></UANodeSet>`))
	f.Add([]byte(`<UANodeSet><UAVariable NodeId="i=1;" BrowseName="x"><Value><ExtensionObject><TypeId><Identifier>i=297</Identifier></TypeId><Body><Argument><Name>a</Name><DataType><Identifier>i=12</Identifier></DataType><ValueRank>-1</ValueRank></Argument></Body></ExtensionObject></Value></UAVariable></UANodeSet>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := nodeset.NewLoader(nil)
		r, err := l.Load(strings.NewReader(string(data)), "f.xml")
		if err != nil {
			var ne *nodeset.Error
			if !errors.As(err, &ne) || !strings.HasPrefix(err.Error(), "f.xml") {
				t.Fatalf("error %v (%T) does not name the file", err, err)
			}
			return
		}
		e := codec.NewEncoder(nil)
		for i := range r.Nodes {
			e.Reset(nil)
			e.Variant(&r.Nodes[i].Value)
			e.Variant(&r.Nodes[i].DataTypeDefinition)
			if e.Err() != nil {
				t.Fatalf("value of %v does not encode: %v (%v)", r.Nodes[i].NodeId, e.Err(), r.Nodes[i].Value)
			}
		}
	})
}
