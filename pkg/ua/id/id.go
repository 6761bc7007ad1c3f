// Package id holds the numeric NodeIds that OPC UA reserves in namespace 0,
// as untyped constants named by their SymbolicName (e.g. id.Boolean,
// id.ReadRequest_Encoding_DefaultBinary), and lookups of their names and
// NodeClasses. The constants and tables are generated from NodeIds.csv by
// tools/gen.
package id

import (
	"cmp"
	"slices"
)

// nodeClass indexes nodeClassNames; a byte keeps the table small.
type nodeClass uint8

// node is one row of NodeIds.csv. Fields are ordered to avoid padding.
type node struct {
	name  string
	id    uint32
	class nodeClass
}

// find returns the table row for n by binary search over the sorted array,
// which the linker lays out statically, so nothing is built at start-up.
func find(n uint32) (node, bool) {
	i, ok := slices.BinarySearchFunc(nodes[:], n, func(e node, n uint32) int {
		return cmp.Compare(e.id, n)
	})
	if !ok {
		return node{}, false
	}
	return nodes[i], true
}

// Name returns the SymbolicName of the namespace-0 NodeId n, or "" if n is
// not a standard id.
func Name(n uint32) string {
	e, _ := find(n)
	return e.name
}

// NodeClassOf returns the NodeClass of the namespace-0 NodeId n as written in
// NodeIds.csv (e.g. "DataType", "Variable"), or "" if n is not a standard id.
// It is not called NodeClass because id.NodeClass is the NodeClass DataType.
func NodeClassOf(n uint32) string {
	e, ok := find(n)
	if !ok {
		return ""
	}
	return nodeClassNames[e.class]
}
