package nodeset_test

import (
	"bytes"
	"os"
	"testing"

	"uastack.dev/pkg/nodeset"
	"uastack.dev/pkg/nodeset/nodesettest"
)

// BenchmarkLoad reads DI and a generated model of 100,000 nodes into node records.
//
//	go test -run='^$' -bench=BenchmarkLoad -benchmem ./pkg/nodeset
func BenchmarkLoad(b *testing.B) {
	di, err := os.ReadFile(diFile)
	if err != nil {
		b.Fatal(err)
	}
	var gen bytes.Buffer
	if err := nodesettest.Generate(&gen, 100_000); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		doc  []byte
	}{{"DI", di}, {"generated100k", gen.Bytes()}} {
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
