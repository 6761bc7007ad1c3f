package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

func init() {
	register("browse", &command{
		synopsis: "[node]",
		summary:  "show the hierarchy below a node (default Objects) as a tree, or --flat as a table",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			o := &browseOptions{}
			fs.IntVar(&o.depth, "depth", 1, "levels to descend (0: no limit)")
			fs.BoolVar(&o.flat, "flat", false, "one row per reference instead of a tree")
			fs.BoolVar(&o.all, "all", false, "follow every reference, not only hierarchical ones")
			fs.UintVar(&o.max, "max", 0, "references per Browse call before continuing with BrowseNext (0: the server decides)")
			return o.run
		},
	})
}

type browseOptions struct {
	depth int
	flat  bool
	all   bool
	max   uint
}

// browseRow is one reference met while browsing.
type browseRow struct {
	Depth         int    `json:"depth"`
	Parent        string `json:"parent"`
	ReferenceType string `json:"referenceType"`
	NodeID        string `json:"nodeId"`
	BrowseName    string `json:"browseName"`
	DisplayName   string `json:"displayName"`
	NodeClass     string `json:"nodeClass"`
	TypeDef       string `json:"typeDefinition,omitempty"`
}

func (o *browseOptions) run(ctx context.Context, e *env, args []string) error {
	if len(args) > 1 {
		return usagef("browse takes at most one node")
	}
	if o.depth < 0 {
		return usagef("--depth must be 0 or more")
	}
	start := "Objects"
	if len(args) == 1 {
		start = args[0]
	}
	c, err := e.dial(ctx)
	if err != nil {
		return err
	}
	root, err := e.parseNode(ctx, start)
	if err != nil {
		return err
	}
	refType := codec.NewNumericNodeId(0, id.HierarchicalReferences)
	if o.all {
		refType = codec.NodeId{}
	}
	var rows []browseRow
	// A node seen once is not descended into again: the hierarchy may have cycles.
	seen := map[codec.NodeId]bool{root: true}
	var walk func(node codec.NodeId, depth int) error
	walk = func(node codec.NodeId, depth int) error {
		rctx, cancel := e.requestContext(ctx)
		defer cancel()
		bd := ua.BrowseDescription{NodeId: node, BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeId: refType,
			IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}
		// Collect all children first: descending while the iterator holds a
		// continuation point would hold one per level.
		var children []ua.ReferenceDescription
		for ref, err := range c.References(rctx, bd, uint32(o.max)) {
			if err != nil {
				return fmt.Errorf("browse %s: %w", node, err)
			}
			children = append(children, ref)
		}
		for _, ref := range children {
			rows = append(rows, browseRow{
				Depth: depth, Parent: node.String(), ReferenceType: refTypeName(ref.ReferenceTypeId),
				NodeID: ref.NodeId.String(), BrowseName: formatQualifiedName(ref.BrowseName),
				DisplayName: ref.DisplayName.Text, NodeClass: ref.NodeClass.String(),
			})
			if !ref.TypeDefinition.IsNull() {
				rows[len(rows)-1].TypeDef = refTypeName(ref.TypeDefinition.NodeId)
			}
			child := ref.NodeId.NodeId
			if ref.NodeId.ServerIndex != 0 || ref.NodeId.NamespaceURI != "" || seen[child] {
				continue
			}
			seen[child] = true
			if o.depth == 0 || depth+1 < o.depth {
				if err := walk(child, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, 0); err != nil {
		return err
	}
	if e.g.json {
		return e.writeJSON(struct {
			Node       string      `json:"node"`
			References []browseRow `json:"references"`
		}{root.String(), rows})
	}
	if o.flat {
		t := newTable(e.stdout, "NODEID", "BROWSENAME", "CLASS", "REFERENCE", "TYPE", "PARENT")
		for _, r := range rows {
			t.add(r.NodeID, r.BrowseName, r.NodeClass, r.ReferenceType, r.TypeDef, r.Parent)
		}
		return t.flush()
	}
	fmt.Fprintln(e.stdout, root.String())
	for _, r := range rows {
		fmt.Fprintf(e.stdout, "%s%s (%s, %s) %s\n", strings.Repeat("  ", r.Depth+1), r.BrowseName, r.NodeClass, r.ReferenceType, r.NodeID)
	}
	return nil
}

// refTypeName names a namespace 0 node by its symbolic name ("Organizes"), any
// other by its NodeId.
func refTypeName(n codec.NodeId) string {
	if n.Namespace() == 0 && n.Type() == codec.IDNumeric {
		if s := id.Name(n.IntID()); s != "" {
			return s
		}
	}
	return n.String()
}
