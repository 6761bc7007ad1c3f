// Package nodesets loads the information models of UANodeSet XML files into the
// server's address space at start: the files of addressSpace.nodesets, then the models
// node managers ship (nodemgr.Modeler). Reading a file is package nodeset's; this
// package turns its records into the Space's nodes and registers the structures the
// models define with the codec, so that clients can read and write their values.
package nodesets

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"runtime/debug"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/nodeset"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/addrspace"
)

// Set is the models read for one server, ready to be added to its address space.
type Set struct {
	loader  *nodeset.Loader
	results []*nodeset.Result
}

// Load reads files, then the models of each manager that is a nodemgr.Modeler, into a
// Set for a server whose NamespaceArray starts with namespaces. An error names the file
// (or model) and line; a missing required model is named too (nodeset.ErrMissingModel).
func Load(namespaces []string, files []string, managers []nodemgr.Manager) (*Set, error) {
	s := &Set{loader: nodeset.NewLoader(namespaces)}
	// A document met again is loaded once: two managers of one plugin ship the same
	// model, and a manager may ship a companion specification a file loads too. Another
	// document of a model loaded already is still refused by the loader.
	seen := map[[sha256.Size]byte]bool{}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("addressSpace.nodesets: %w", err)
		}
		seen[sha256.Sum256(b)] = true
		if err := s.load(b, name); err != nil {
			return nil, fmt.Errorf("addressSpace.nodesets: %w", err)
		}
	}
	for _, m := range managers {
		mm, ok := m.(nodemgr.Modeler)
		if !ok {
			continue
		}
		for _, model := range mm.Models() {
			sum := sha256.Sum256(model.NodeSet)
			if seen[sum] {
				continue
			}
			seen[sum] = true
			if err := s.load(model.NodeSet, model.Name); err != nil {
				return nil, fmt.Errorf("node manager model: %w", err)
			}
		}
	}
	return s, nil
}

func (s *Set) load(b []byte, name string) error {
	r, err := s.loader.Load(bytes.NewReader(b), name)
	if err != nil {
		return err
	}
	s.results = append(s.results, r)
	return nil
}

// Namespaces returns the NamespaceArray with the models' namespaces: the server's
// address space serves them.
func (s *Set) Namespaces() []string { return s.loader.Namespaces() }

// Len returns the number of nodes the Set holds.
func (s *Set) Len() int {
	n := 0
	for _, r := range s.results {
		n += len(r.Nodes)
	}
	return n
}

// edge is a reference in its forward direction.
type edge struct {
	source, typ, target codec.NodeId
}

// Install registers the models' structures with the codec and adds their nodes to
// space, which must serve the Set's Namespaces; the Set is empty afterwards. A reference that a file gives at both
// its ends is added once; one from a node outside the models (the Objects folder, a type
// of namespace 0) is added from the model's end.
func (s *Set) Install(space *addrspace.Space) error {
	for _, r := range s.results {
		for _, t := range r.Types {
			if err := codec.RegisterDynamic(t); err != nil {
				return fmt.Errorf("%s: structure %s: %w", r.File, t.Info().Name, err)
			}
		}
	}
	ours := make(map[codec.NodeId]bool, s.Len())
	for _, r := range s.results {
		for i := range r.Nodes {
			ours[r.Nodes[i].NodeId] = true
		}
	}
	// Each reference once, kept by its source when that is a node of the models, else
	// by the node that gives it, as an inverse reference; AddNode records the other end.
	owned := make(map[codec.NodeId][]addrspace.Reference, s.Len())
	seen := make(map[edge]bool, 2*s.Len())
	for _, r := range s.results {
		for i := range r.Nodes {
			n := &r.Nodes[i]
			for _, ref := range n.References {
				e := edge{n.NodeId, ref.ReferenceTypeId, ref.TargetId}
				if !ref.IsForward {
					e = edge{ref.TargetId, ref.ReferenceTypeId, n.NodeId}
				}
				if seen[e] {
					continue
				}
				seen[e] = true
				if ours[e.source] {
					owned[e.source] = append(owned[e.source], addrspace.Reference{ReferenceTypeId: e.typ, TargetId: e.target, IsForward: true})
				} else {
					owned[e.target] = append(owned[e.target], addrspace.Reference{ReferenceTypeId: e.typ, TargetId: e.source, IsForward: false})
				}
			}
		}
	}
	seen = nil
	for _, r := range s.results {
		for i := range r.Nodes {
			n := &r.Nodes[i]
			node := addrspace.Node{
				NodeId: n.NodeId, NodeClass: n.NodeClass, BrowseName: n.BrowseName,
				DisplayName: n.DisplayName, Description: n.Description, WriteMask: n.WriteMask,
				IsAbstract: n.IsAbstract, Symmetric: n.Symmetric, InverseName: n.InverseName,
				ContainsNoLoops: n.ContainsNoLoops, EventNotifier: n.EventNotifier,
				DataType: n.DataType, ValueRank: n.ValueRank, ArrayDimensions: n.ArrayDimensions,
				AccessLevel: n.AccessLevel, MinimumSamplingInterval: n.MinimumSamplingInterval,
				Historizing: n.Historizing, Executable: n.Executable,
				AccessRestrictions: n.AccessRestrictions, Value: n.Value,
				DataTypeDefinition: n.DataTypeDefinition, References: owned[n.NodeId],
			}
			if n.NodeClass == ua.NodeClassVariable {
				node.UserAccessDenied = n.AccessLevel &^ n.UserAccessLevel
			}
			if err := space.AddNode(node); err != nil {
				return fmt.Errorf("%s:%d: %w", n.File, n.Line, err)
			}
		}
	}
	// The records are in the Space now. A large model leaves hundreds of megabytes of
	// garbage from its XML, which a server that just started would otherwise keep
	// resident until the heap grows back to it.
	large := s.Len() >= freeAfter
	s.results = nil
	if large {
		debug.FreeOSMemory()
	}
	return nil
}

// freeAfter is the size of a model after whose install the memory of reading it is
// given back to the operating system at once.
const freeAfter = 10_000
