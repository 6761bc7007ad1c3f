package nodeset_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"testing"

	"uastack.dev/pkg/nodeset"
	"uastack.dev/pkg/nodeset/nodesettest"
)

// benchDocs are DI and a generated model of 100,000 nodes.
func benchDocs(b *testing.B) []struct {
	name string
	doc  []byte
} {
	di, err := os.ReadFile(diFile)
	if err != nil {
		b.Fatal(err)
	}
	var gen bytes.Buffer
	if err := nodesettest.Generate(&gen, 100_000); err != nil {
		b.Fatal(err)
	}
	return []struct {
		name string
		doc  []byte
	}{{"DI", di}, {"generated100k", gen.Bytes()}}
}

// BenchmarkXMLTokens is the ceiling of BenchmarkLoad: encoding/xml's tokenizer alone
// (RawToken, as the loader reads) over the same documents.
//
//	go test -run='^$' -bench='BenchmarkXMLTokens|BenchmarkLoad' -benchmem ./pkg/nodeset
func BenchmarkXMLTokens(b *testing.B) {
	for _, tc := range benchDocs(b) {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.doc)))
			for b.Loop() {
				d := xml.NewDecoder(bytes.NewReader(tc.doc))
				for {
					_, err := d.RawToken()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkLoad reads DI and a generated model of 100,000 nodes into node records.
func BenchmarkLoad(b *testing.B) {
	for _, tc := range benchDocs(b) {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.doc)))
			nodes := 0
			for b.Loop() {
				r, err := nodeset.NewLoader(nil).Load(bytes.NewReader(tc.doc), tc.name)
				if err != nil {
					b.Fatal(err)
				}
				nodes = len(r.Nodes)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
		})
	}
}
