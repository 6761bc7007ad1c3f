package nodesets_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/nodeset/nodesettest"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/nodesets"
)

var diFile = filepath.Join("..", "..", "..", "..", "pkg", "nodeset", "testdata", "Opc.Ua.Di.NodeSet2.xml")

// generated writes a generated model of n nodes into a temporary file.
func generated(b testing.TB, n int) string {
	name := filepath.Join(b.TempDir(), "generated.xml")
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := nodesettest.Generate(f, n); err != nil {
		b.Fatal(err)
	}
	return name
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkStartModels loads DI, and a generated model of 100,000 nodes, from their
// files into a fresh address space as the server does at start; heap-B/node is the live
// heap the address space grew by, per node, once the files' records are gone.
//
//	go test -run='^$' -bench=BenchmarkStartModels -benchmem ./services/server/internal/nodesets
func BenchmarkStartModels(b *testing.B) {
	for _, tc := range []struct {
		name string
		file string
	}{{"DI", diFile}, {"generated100k", generated(b, 100_000)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var nodes int
			var perNode float64
			for b.Loop() {
				b.StopTimer()
				before := heapInUse()
				b.StartTimer()
				set, err := nodesets.Load([]string{addrspace.NamespaceURI0}, []string{tc.file}, nil)
				if err != nil {
					b.Fatal(err)
				}
				space := addrspace.New(set.Namespaces()...)
				nodes = set.Len()
				if err := set.Install(space); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				perNode = float64(heapInUse()-before) / float64(nodes)
				runtime.KeepAlive(space)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
			b.ReportMetric(perNode, "heap-B/node")
		})
	}
}

// BenchmarkBrowseAfterModels browses BaseDataVariableType's subtypes (a type tree walk
// every generic client makes) once the generated model's 80,000 Variables point to it by
// HasTypeDefinition.
//
//	go test -run='^$' -bench=BenchmarkBrowseAfterModels -benchmem ./services/server/internal/nodesets
func BenchmarkBrowseAfterModels(b *testing.B) {
	set, err := nodesets.Load([]string{addrspace.NamespaceURI0}, []string{generated(b, 100_000)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	space := addrspace.New(set.Namespaces()...)
	if err := set.Install(space); err != nil {
		b.Fatal(err)
	}
	op := &nodemgr.BrowseOp{
		Items: []ua.BrowseDescription{{NodeId: codec.NewNumericNodeId(0, id.BaseDataVariableType), BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeId: codec.NewNumericNodeId(0, id.HasSubtype), ResultMask: uint32(ua.BrowseResultMaskAll)}},
		Results: make([]nodemgr.BrowseResult, 1),
	}
	b.ReportAllocs()
	for b.Loop() {
		space.Browse(context.Background(), op, func() {})
		if op.Results[0].Status != 0 || len(op.Results[0].References) == 0 {
			b.Fatalf("browse: %v, %d references", op.Results[0].Status, len(op.Results[0].References))
		}
	}
}
